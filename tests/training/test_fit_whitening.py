"""Whitening(-k) fitted on a corpus and saved as a Dense module: identity covariance on its fit data, the index's
own fit (one implementation), an exact save/load round trip, and one clear error for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file
from searchengine.indexer.vectors.whitening import CovarianceAccumulator, Whitening
from searchengine.training.fit_whitening import fit_whitening

from searchengine.encoding.encoder import Encoder
from searchengine.encoding.model_source import DENSE_MODULE_TYPE, locate_model
from searchengine.errors import SearchEngineError
from tests.training.postprocessing_data import word_salad, write_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.txt", 300)


@pytest.fixture(scope="module")
def fit_texts(corpus: Path) -> list[str]:
    return list(dict.fromkeys(corpus.read_text(encoding="utf-8").split("\n")[:-1]))


@pytest.mark.parametrize("k", [31, 8])
def test_identity_covariance_on_the_fit_data(
    tiny_model: Path, corpus: Path, fit_texts: list[str], tmp_path: Path, k: int
) -> None:
    # The tiny model's LayerNorm has no learnt gain or bias, so its pooled vectors sum to 0: 31 of 32 directions.
    report = fit_whitening(base=tiny_model, corpus=corpus, out=tmp_path / "w", k=k, progress=False)
    assert (report.input_dimension, report.output_dimension, report.texts) == (32, k, len(fit_texts))
    encoder = Encoder(tmp_path / "w", precision="fp32")
    assert encoder.dimension == k
    vectors = encoder.encode(fit_texts, pre_normalize=True).astype(np.float64)
    assert np.abs(vectors.mean(axis=0)).max() < 1e-4
    assert np.abs(np.cov(vectors.T, bias=True) - np.eye(k)).max() < 1e-3


def test_the_index_whitening_fit_and_an_exact_round_trip(
    tiny_model: Path, tiny_encoder: Encoder, corpus: Path, fit_texts: list[str], tmp_path: Path
) -> None:
    fit_whitening(base=tiny_model, corpus=corpus, out=tmp_path / "w", k=16, progress=False)
    base = tiny_encoder.encode(fit_texts, pre_normalize=True)
    statistics = CovarianceAccumulator(32)
    statistics.update(base)
    reference = Whitening.fit(statistics, 16)
    # The saved Dense is the index's transform: weight W^T, bias -mu W, stored as float32.
    tensors = load_file(str(tmp_path / "w" / "2_Dense" / "model.safetensors"))
    assert np.abs(tensors["linear.weight"] - reference.matrix.T).max() < 1e-4 * np.abs(reference.matrix).max()
    ours = Encoder(tmp_path / "w", precision="fp32")
    assert np.abs(ours.encode(fit_texts, pre_normalize=True) - reference.apply(base)).max() < 1e-3
    # Save -> load reproduces embeddings exactly: the same folder loaded twice, and a copy of it.
    again = Encoder(tmp_path / "w", precision="fp32").encode(fit_texts[:20])
    assert np.array_equal(ours.encode(fit_texts[:20]), again)
    modules = json.loads((tmp_path / "w" / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[-1] for m in modules] == ["Transformer", "Pooling", "Dense", "Normalize"]
    assert modules[2]["type"] == DENSE_MODULE_TYPE and [m["idx"] for m in modules] == [0, 1, 2, 3]
    assert locate_model(tmp_path / "w").fingerprint() != locate_model(tiny_model).fingerprint()


def test_default_k_is_every_direction_the_embeddings_span(
    tiny_model: Path, corpus: Path, fit_texts: list[str], tmp_path: Path
) -> None:
    """The tiny model's vectors span 31 of 32 dimensions: whitening all 32 would divide by ~0, so 31 are kept."""
    report = fit_whitening(base=tiny_model, corpus=corpus, out=tmp_path / "w", progress=False)
    assert (report.method, report.output_dimension) == ("whitening", 31)
    vectors = Encoder(tmp_path / "w", precision="fp32").encode(fit_texts, pre_normalize=True).astype(np.float64)
    assert np.abs(np.cov(vectors.T, bias=True) - np.eye(31)).max() < 1e-3
    with pytest.raises(SearchEngineError, match=r"span fewer than 32 directions.*at most 31"):
        fit_whitening(base=tiny_model, corpus=corpus, out=tmp_path / "w32", k=32, progress=False)
    assert not (tmp_path / "w32").exists()


@pytest.mark.parametrize(
    ("k", "count", "message"),
    [(33, 300, "between 1 and the embedding dimension 32, not 33"), (0, 300, "not 0"), (20, 20, "more than 20")],
)
def test_bad_k_is_one_clear_error(tiny_model: Path, tmp_path: Path, k: int, count: int, message: str) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(word_salad(count)) + "\n", encoding="utf-8")
    with pytest.raises(SearchEngineError, match=message):
        fit_whitening(base=tiny_model, corpus=corpus, out=tmp_path / "w", k=k, progress=False)


def test_empty_corpus_and_missing_base(tiny_model: Path, corpus: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(SearchEngineError, match="no texts to fit on"):
        fit_whitening(base=tiny_model, corpus=empty, out=tmp_path / "w", k=4, progress=False)
    with pytest.raises(SearchEngineError, match="does not exist"):
        fit_whitening(base=tmp_path / "no-such-model", corpus=corpus, out=tmp_path / "w", k=4, progress=False)
    with pytest.raises(SearchEngineError, match="does not exist"):
        fit_whitening(base=tiny_model, corpus=tmp_path / "missing.txt", out=tmp_path / "w", k=4, progress=False)
