"""PromptBERT's analysis: anisotropy, the biased-token rule, the representations, and the `analyze` CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.encoding.encoder import Encoder
from searchengine.errors import SearchEngineError
from searchengine.evaluation.anisotropy import (
    REPRESENTATIONS,
    analyze,
    anisotropy,
    biased_token_ids,
    read_sentences,
    represent,
    tokenize,
)
from searchengine.evaluation.labelled_data import RatedPair

runner = CliRunner()


@pytest.fixture(scope="module")
def tiny_encoder(tiny_model: Path) -> Encoder:
    """The analysis reads every layer of the torch model; fp32 so the representations match their definitions."""
    return Encoder(tiny_model, backend="torch", precision="fp32")


def test_anisotropy_of_identical_opposite_and_orthogonal_vectors() -> None:
    same = np.tile([[0.3, -1.0, 2.0]], (5, 1))
    assert anisotropy(same, pairs=1000) == pytest.approx(1.0)
    assert anisotropy(same * np.arange(1, 6)[:, None], pairs=0) == pytest.approx(1.0)  # scale does not matter
    assert anisotropy(np.array([[1.0, 0.0], [-2.0, 0.0]]), pairs=50) == pytest.approx(-1.0)  # never a row with itself
    assert anisotropy(np.eye(4), pairs=0) == pytest.approx(0.0)
    assert anisotropy(np.eye(4), pairs=500) == pytest.approx(0.0)


def test_sampled_anisotropy_is_seeded_and_close_to_the_exact_mean() -> None:
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(300, 16)) + 0.5  # shifted: mean cosine clearly above 0
    exact = anisotropy(vectors, pairs=0)
    # the exact all-pairs mean, computed the slow way
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = unit @ unit.T
    assert exact == pytest.approx((cosines.sum() - np.trace(cosines)) / (300 * 299))
    assert anisotropy(vectors, pairs=20_000, seed=3) == anisotropy(vectors, pairs=20_000, seed=3)
    assert anisotropy(vectors, pairs=20_000, seed=3) == pytest.approx(exact, abs=0.01)


def test_anisotropy_needs_two_vectors() -> None:
    with pytest.raises(SearchEngineError, match="at least 2"):
        anisotropy(np.ones((1, 3)))


def test_biased_token_rule(tiny_encoder: Encoder) -> None:
    tokenizer = tiny_encoder.tokenizer
    ids = tokenize(tiny_encoder, ["the cat sat.", "the dog ran!", "the sun rose"])
    biased = biased_token_ids(tokenizer, ids, top_frequent=1)

    def token(text: str) -> int:
        return tokenizer.convert_tokens_to_ids(text)

    # [CLS], [SEP] and 'the' occur 3 times each; ties go to the lower id, [CLS] (2) comes first.
    assert biased.frequent == ["[CLS]"]
    for name in ("[CLS]", "[SEP]", "[PAD]", ".", "!", "##a", "##."):
        assert token(name) in biased.ids, name
    for name in ("the", "cat", "sun", "a"):
        assert token(name) not in biased.ids, name
    with_the = biased_token_ids(tokenizer, ids, top_frequent=3)
    assert set(with_the.frequent) == {"[CLS]", "[SEP]", "the"} and token("the") in with_the.ids
    # of 17 tokens, 3 [CLS] + 3 [SEP] + 3 'the' + '.' + '!' are biased
    assert with_the.data_share == pytest.approx(11 / 17)
    assert with_the.by_rule["uppercase"] == 0  # the tiny vocabulary is lowercase


def test_representations_match_their_definitions(tiny_encoder: Encoder) -> None:
    texts = ["the cat sat on the mat", "the .", "a storm brought cold wind"]
    the = tiny_encoder.tokenizer.convert_tokens_to_ids("the")
    period = tiny_encoder.tokenizer.convert_tokens_to_ids(".")
    biased = frozenset({the, period, *tiny_encoder.tokenizer.all_special_ids})
    result = represent(tiny_encoder, texts, biased, batch_size=2)
    assert set(result.vectors) == set(REPRESENTATIONS)
    weights = tiny_encoder.model.get_input_embeddings().weight.detach().numpy()
    ids = tokenize(tiny_encoder, texts)
    for row, tokens in enumerate(ids):
        np.testing.assert_allclose(result.vectors["static_avg"][row], weights[tokens].mean(axis=0), atol=1e-5)
    kept = [t for t in ids[0] if t not in biased]  # cat sat on mat
    assert len(kept) == 4
    np.testing.assert_allclose(result.vectors["static_avg_unbiased"][0], weights[kept].mean(axis=0), atol=1e-5)
    # "the ." is all biased: it keeps all of its tokens
    assert result.fallback_sentences == 1
    np.testing.assert_allclose(result.vectors["static_avg_unbiased"][1], result.vectors["static_avg"][1], atol=1e-6)
    # last_avg is the tiny model's own (mean) pooling, before normalisation
    last = result.vectors["last_avg"] / np.linalg.norm(result.vectors["last_avg"], axis=1, keepdims=True)
    np.testing.assert_allclose(last, tiny_encoder.encode(texts), atol=1e-5)
    with torch.no_grad():
        layers = tiny_encoder.model(torch.tensor([ids[2]]), output_hidden_states=True).hidden_states
    np.testing.assert_allclose(result.vectors["cls"][2], layers[-1][0, 0].numpy(), atol=1e-5)
    np.testing.assert_allclose(result.vectors["embedding_layer_avg"][2], layers[0][0].mean(0).numpy(), atol=1e-5)
    first_last = ((layers[0][0] + layers[-1][0]) / 2).mean(0).numpy()
    np.testing.assert_allclose(result.vectors["first_last_avg"][2], first_last, atol=1e-5)


def test_bf16_representations_are_float32_and_close_to_fp32(tiny_model: Path, tiny_encoder: Encoder) -> None:
    texts = ["the cat sat on the mat", "a storm brought cold wind", "how do i reset my password"]
    exact = represent(tiny_encoder, texts).vectors
    bf16 = represent(Encoder(tiny_model, backend="torch", precision="bf16"), texts).vectors
    for name in REPRESENTATIONS:
        assert bf16[name].dtype == np.float32, name
        norms = np.linalg.norm(bf16[name], axis=1) * np.linalg.norm(exact[name], axis=1)
        assert ((bf16[name] * exact[name]).sum(1) / norms).min() > 0.99, name


def test_analyze_reports_every_representation(tiny_encoder: Encoder, sentences: list[str]) -> None:
    pairs = [RatedPair(a, b, s) for a, b, s in zip(sentences, sentences[1:] + sentences[:1], np.linspace(0, 1, 12))]
    report = analyze(tiny_encoder, sentences, pairs, pairs=2000, seed=0, top_frequent=5)
    assert set(report.anisotropy) == set(report.sts_spearman) == set(REPRESENTATIONS)
    assert all(-1 <= value <= 1 for value in report.anisotropy.values())
    assert all(-100 <= value <= 100 for value in report.sts_spearman.values())
    assert {"the", "[CLS]", "[SEP]"} <= set(report.as_dict()["biased_tokens"]["top_frequent"])
    assert (
        analyze(tiny_encoder, sentences, pairs=2000, seed=0).anisotropy
        == analyze(tiny_encoder, sentences, pairs=2000, seed=0).anisotropy
    )


def test_read_sentences(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "s.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("one\n\n  two  \nthree\n")
    assert read_sentences(path) == ["one", "two", "three"]
    assert read_sentences(path, limit=2) == ["one", "two"]
    (tmp_path / "one.txt").write_text("only\n\n", encoding="utf-8")
    with pytest.raises(SearchEngineError, match="one.txt: 1 non-empty lines"):
        read_sentences(tmp_path / "one.txt")
    with pytest.raises(SearchEngineError, match="missing.txt: no such file"):
        read_sentences(tmp_path / "missing.txt")


def test_cli_end_to_end(tmp_path: Path, tiny_model: Path, sentences: list[str]) -> None:
    data = tmp_path / "sentences.txt"
    data.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    sts = tmp_path / "sts.tsv"
    rows = [f"{score}\t{a}\t{b}" for score, a, b in zip([0, 1, 2, 3, 4, 5], sentences[:6], sentences[6:])]
    sts.write_text("score\tsentence1\tsentence2\n" + "\n".join(rows) + "\n", encoding="utf-8")
    args = ["analyze", "--model", tiny_model, "--data", data, "--sts", sts, "--pairs", "500", "--top-frequent", "3"]
    result = runner.invoke(app, [str(a) for a in [*args, "--json"]])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert set(payload["representations"]) == set(REPRESENTATIONS)
    assert all("sts_spearman" in row and "anisotropy" in row for row in payload["representations"].values())
    assert payload["sentences"] == 12 and payload["sts_pairs"] == 6 and payload["anisotropy_pairs"] == 500
    assert len(payload["biased_tokens"]["top_frequent"]) == 3
    text = runner.invoke(app, [str(a) for a in args])
    assert text.exit_code == 0, text.output
    assert "static_avg_unbiased" in text.output and "STS Spearman" in text.output and "Biased tokens" in text.output
    missing = runner.invoke(app, ["analyze", "--model", str(tiny_model), "--data", str(tmp_path / "none.txt")])
    assert missing.exit_code == 1 and missing.output.strip() == f"Error: {tmp_path / 'none.txt'}: no such file"
