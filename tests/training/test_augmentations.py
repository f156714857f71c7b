"""Each ConSERT augmentation: what it changes and what it must keep."""

from __future__ import annotations

import pytest
import torch
from searchengine.training.augmentations import (
    Augmentation,
    element_dropout,
    embed_view,
    feature_cutoff,
    shuffled_position_ids,
    token_cutoff,
)
from searchengine.training.sentence_model import SentenceModel

from searchengine.errors import SearchEngineError

MASK = torch.tensor([[1, 1, 1, 1, 1, 1, 0, 0], [1, 1, 1, 0, 0, 0, 0, 0]])


def test_shuffle_permutes_inner_tokens_only() -> None:
    torch.manual_seed(0)
    positions = shuffled_position_ids(MASK)
    first = positions[0].tolist()
    assert first[0] == 0 and first[5] == 5, "[CLS] and [SEP] keep their positions"
    assert sorted(first[1:5]) == [1, 2, 3, 4], "inner tokens get a permutation of their own positions"
    assert first[6:] == [6, 7], "padding is untouched"
    assert positions[1].tolist() == list(range(8)), "one inner token has nothing to swap with"
    assert any(shuffled_position_ids(MASK)[0, 1:5].tolist() != [1, 2, 3, 4] for _ in range(20))


def test_token_cutoff_zeroes_whole_real_tokens() -> None:
    torch.manual_seed(0)
    embeddings = torch.ones(2, 8, 4)
    out = token_cutoff(embeddings, MASK, rate=0.3)
    zeroed = out.abs().sum(-1) == 0
    assert zeroed[0].sum().item() == 2  # ceil(0.3 * 6)
    assert zeroed[1].sum().item() == 1  # ceil(0.3 * 3)
    assert not zeroed[:, 6:].any() and not zeroed[1, 3:].any(), "padding is never cut"
    kept = ~zeroed
    assert torch.equal(out[kept], embeddings[kept]), "other tokens are unchanged"


def test_feature_cutoff_zeroes_the_same_dimensions_for_every_token() -> None:
    torch.manual_seed(0)
    embeddings = torch.randn(2, 8, 10) + 5
    out = feature_cutoff(embeddings, rate=0.2)
    for row in range(2):
        zero_columns = (out[row] == 0).all(dim=0)
        assert zero_columns.sum().item() == 2
        assert torch.equal(out[row][:, ~zero_columns], embeddings[row][:, ~zero_columns])


def test_element_dropout_zeroes_without_rescaling() -> None:
    torch.manual_seed(0)
    embeddings = torch.full((4, 50, 20), 3.0)
    out = element_dropout(embeddings, rate=0.1)
    dropped = (out == 0).float().mean().item()
    assert 0.07 < dropped < 0.13
    assert set(out.unique().tolist()) == {0.0, 3.0}


def test_parse_names_rates_and_errors() -> None:
    assert Augmentation.parse("feature-cutoff:0.3") == Augmentation("feature_cutoff", 0.3)
    assert Augmentation.parse("token_cutoff") == Augmentation("token_cutoff", 0.15)
    with pytest.raises(SearchEngineError, match="unknown augmentation"):
        Augmentation.parse("synonyms")
    with pytest.raises(SearchEngineError, match="must lie in"):
        Augmentation.parse("dropout:1.5")


def test_views_change_the_sentence_vector_and_none_does_not(tiny_model) -> None:
    model = SentenceModel(tiny_model).eval()
    features = model.tokenize(["the cat sat on the mat with a dog", "rain and snow in the city"])
    with torch.no_grad():
        plain = model(features)
        assert torch.equal(embed_view(model, features, Augmentation("none")), plain)
        torch.manual_seed(1)
        for name in ("shuffle", "token_cutoff", "feature_cutoff", "dropout"):
            view = embed_view(model, features, Augmentation.parse(name))
            assert not torch.allclose(view, plain), name
        assert torch.equal(model(features), plain), "the embedding hook is removed after the view"
