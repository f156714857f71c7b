"""The BERT-flow paper's baselines as Dense modules: SN standardises each dimension, NATSV nulls the top-k
singular directions (uncentred by default, centred on request), and bad k or corpora give one clear error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from searchengine.training.fit_normalisation import fit_natsv, fit_sn

from searchengine.encoding.encoder import Encoder
from searchengine.errors import SearchEngineError
from tests.training.postprocessing_data import write_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.txt", 200)


@pytest.fixture(scope="module")
def texts(corpus: Path) -> list[str]:
    return list(dict.fromkeys(corpus.read_text(encoding="utf-8").split("\n")[:-1]))


@pytest.fixture(scope="module")
def base_vectors(tiny_encoder: Encoder, texts: list[str]) -> np.ndarray:
    return tiny_encoder.encode(texts, pre_normalize=True).astype(np.float64)


def test_sn_standardises_every_dimension(tiny_model: Path, corpus: Path, texts: list[str], tmp_path: Path) -> None:
    report = fit_sn(base=tiny_model, corpus=corpus, out=tmp_path / "sn", progress=False)
    assert (report.method, report.output_dimension) == ("sn", 32)
    vectors = Encoder(tmp_path / "sn", precision="fp32").encode(texts, pre_normalize=True).astype(np.float64)
    assert np.abs(vectors.mean(axis=0)).max() < 1e-4
    assert np.abs(vectors.std(axis=0) - 1).max() < 1e-4


@pytest.mark.parametrize("k", [1, 3])
def test_natsv_nulls_the_top_singular_directions(
    tiny_model: Path, corpus: Path, texts: list[str], base_vectors: np.ndarray, tmp_path: Path, k: int
) -> None:
    fit_natsv(base=tiny_model, corpus=corpus, out=tmp_path / "n", k=k, progress=False)
    vectors = Encoder(tmp_path / "n", precision="fp32").encode(texts, pre_normalize=True).astype(np.float64)
    _, singular_values, vt = np.linalg.svd(base_vectors, full_matrices=False)  # not centred
    top = vt[:k].T
    assert np.abs(vectors @ top).max() < 1e-4 * singular_values[0]
    assert np.abs(vectors - (base_vectors - base_vectors @ top @ top.T)).max() < 1e-4
    # The first singular direction of uncentred embeddings carries their common mean: nulling it shrinks the mean.
    assert np.linalg.norm(vectors.mean(axis=0)) < np.linalg.norm(base_vectors.mean(axis=0))


def test_natsv_centred_removes_principal_directions(
    tiny_model: Path, corpus: Path, texts: list[str], base_vectors: np.ndarray, tmp_path: Path
) -> None:
    report = fit_natsv(base=tiny_model, corpus=corpus, out=tmp_path / "n", k=2, centre=True, progress=False)
    assert report.method == "natsv-2-centred" and 0 < report.details["energy_removed"] < 1
    vectors = Encoder(tmp_path / "n", precision="fp32").encode(texts, pre_normalize=True).astype(np.float64)
    centred = base_vectors - base_vectors.mean(axis=0)
    top = np.linalg.svd(centred, full_matrices=False)[2][:2].T
    assert np.abs(vectors.mean(axis=0)).max() < 1e-4
    assert np.abs(vectors - (centred - centred @ top @ top.T)).max() < 1e-4


@pytest.mark.parametrize("k", [0, 32, 40])
def test_natsv_bad_k(tiny_model: Path, corpus: Path, tmp_path: Path, k: int) -> None:
    with pytest.raises(SearchEngineError, match=f"below the embedding dimension 32.*not {k}"):
        fit_natsv(base=tiny_model, corpus=corpus, out=tmp_path / "n", k=k, progress=False)


def test_too_few_texts(tiny_model: Path, tmp_path: Path) -> None:
    (tmp_path / "one.txt").write_text("the cat sat\nthe cat sat\n", encoding="utf-8")
    with pytest.raises(SearchEngineError, match="at least 2 distinct texts"):
        fit_sn(base=tiny_model, corpus=tmp_path / "one.txt", out=tmp_path / "sn", progress=False)
    with pytest.raises(SearchEngineError, match="at least 5 distinct texts"):
        fit_natsv(base=tiny_model, corpus=tmp_path / "one.txt", out=tmp_path / "n", k=5, progress=False)


def test_sn_sets_constant_dimensions_to_zero(
    tiny_model: Path, corpus: Path, texts: list[str], base_vectors: np.ndarray, tmp_path: Path
) -> None:
    """Real encoders have dead dimensions (all-MiniLM-L6-v2: 3 of 384); dividing by their ~0 std would turn
    rounding noise into a unit-variance feature."""
    from safetensors.numpy import load_file

    vectors = base_vectors.astype(np.float32)
    vectors[:, 5] = 0.25
    vectors[:, 9] = 1e-7 + 1e-15 * np.arange(len(vectors))
    report = fit_sn(base=tiny_model, corpus=corpus, out=tmp_path / "sn", progress=False, vectors=vectors)
    assert report.details["constant_dimensions"] == [5, 9]
    tensors = load_file(str(tmp_path / "sn" / "2_Dense" / "model.safetensors"))
    weight, bias = tensors["linear.weight"], tensors["linear.bias"]
    out = vectors @ weight.T + bias
    assert np.abs(out[:, [5, 9]]).max() < 1e-6 and np.abs(out.std(axis=0)[[0, 1, 2]] - 1).max() < 1e-3
