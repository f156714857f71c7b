"""Streaming covariance and the BERT-whitening transform (Su et al., 2021)."""

from __future__ import annotations

import numpy as np
import pytest
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.vectors.whitening import CovarianceAccumulator, Whitening


def _accumulate(data: np.ndarray, sizes: list[int]) -> CovarianceAccumulator:
    """Feed `data` in consecutive chunks of the given sizes (the last chunk takes the rest)."""
    statistics = CovarianceAccumulator(data.shape[1])
    start = 0
    for size in sizes:
        statistics.update(data[start : start + size])
        start += size
    statistics.update(data[start:])
    return statistics


def _anisotropic(n: int, scales: list[float], seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian data with standard deviation scales[i] along the i-th column of a random rotation.

    Returns (data, rotation); the rotation's columns are the principal axes in decreasing variance order.
    """
    rng = np.random.default_rng(seed)
    dimension = len(scales)
    rotation, _ = np.linalg.qr(rng.standard_normal((dimension, dimension)))
    latent = rng.standard_normal((n, dimension)) * np.asarray(scales)
    return latent @ rotation.T + rng.normal(3.0, 1.0, dimension), rotation


# ---------------------------------------------------------------------------------------------------------
# CovarianceAccumulator
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sizes",
    [
        [1, 7, 0, 30, 2, 60],  # uneven, with an empty chunk in the middle
        [150],  # one chunk holds everything
        [3] * 49,  # many small chunks
        [1] * 149,  # one row at a time
    ],
)
def test_accumulator_matches_numpy_whatever_the_chunking(sizes: list[int]) -> None:
    rng = np.random.default_rng(1)
    # A large offset makes a naive sum-of-squares formula lose precision; the pairwise update must not.
    data = rng.standard_normal((150, 6)) * [1.0, 2.0, 0.5, 3.0, 1.0, 0.1] + 1000.0
    statistics = _accumulate(data, sizes)
    assert statistics.count == 150
    np.testing.assert_allclose(statistics.mean, data.mean(axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(statistics.covariance(), np.cov(data, rowvar=False, bias=True), rtol=1e-9, atol=1e-10)


def test_accumulator_single_row_chunk_first() -> None:
    """A first chunk of one row gives that row as the mean and a zero covariance; later chunks build on it."""
    data = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0], [5.0, 8.0, -1.0]])
    statistics = CovarianceAccumulator(3)
    statistics.update(data[:1])
    assert statistics.count == 1
    np.testing.assert_array_equal(statistics.mean, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(statistics.covariance(), np.zeros((3, 3)))
    statistics.update(data[1:2])
    statistics.update(data[2:])
    np.testing.assert_allclose(statistics.mean, [3.0, 4.0, 1.0], rtol=0, atol=1e-14)
    np.testing.assert_allclose(statistics.covariance(), np.cov(data, rowvar=False, bias=True), rtol=1e-12, atol=1e-14)


def test_accumulator_works_in_float64_for_float32_input() -> None:
    rng = np.random.default_rng(2)
    data = rng.standard_normal((40, 4)).astype(np.float32)
    statistics = _accumulate(data, [13, 5])
    assert statistics.mean.dtype == np.float64
    assert statistics.covariance().dtype == np.float64
    exact = data.astype(np.float64)
    np.testing.assert_allclose(statistics.covariance(), np.cov(exact, rowvar=False, bias=True), rtol=1e-10, atol=1e-12)


def test_accumulator_empty_has_zero_statistics() -> None:
    statistics = CovarianceAccumulator(2)
    statistics.update(np.zeros((0, 2)))
    assert statistics.count == 0
    np.testing.assert_array_equal(statistics.covariance(), np.zeros((2, 2)))


# ---------------------------------------------------------------------------------------------------------
# Whitening.fit / apply
# ---------------------------------------------------------------------------------------------------------


def test_full_whitening_gives_identity_covariance_and_zero_mean() -> None:
    """The defining property: with k = d the whitened fit data has mean 0 and covariance I."""
    data, _ = _anisotropic(2000, [5.0, 3.0, 2.0, 1.0, 0.5, 0.25, 0.1, 0.05])
    whitening = Whitening.fit(_accumulate(data, [100, 33, 900]), k=8)
    assert whitening.k == 8
    assert whitening.fit_count == 2000
    whitened = whitening.apply(data)
    assert whitened.shape == (2000, 8)
    assert whitened.dtype == np.float32
    np.testing.assert_allclose(whitened.mean(axis=0), np.zeros(8), atol=1e-4)
    np.testing.assert_allclose(np.cov(whitened.astype(np.float64), rowvar=False, bias=True), np.eye(8), atol=1e-3)


def test_whitening_k_keeps_the_top_variance_directions() -> None:
    scales = [6.0, 4.0, 3.0, 0.5, 0.3, 0.2, 0.1, 0.05]
    data, rotation = _anisotropic(3000, scales, seed=3)
    k = 3
    whitening = Whitening.fit(_accumulate(data, [1, 999]), k=k)
    whitened = whitening.apply(data)
    assert whitened.shape == (3000, k)
    assert whitening.matrix.shape == (8, k)
    # Each kept column has unit variance and the columns are uncorrelated.
    np.testing.assert_allclose(np.cov(whitened.astype(np.float64), rowvar=False, bias=True), np.eye(k), atol=1e-3)
    # The kept directions span the three high-variance axes: the matrix has (almost) nothing along the others.
    low_variance_axes = rotation[:, k:]
    leak = np.abs(low_variance_axes.T @ whitening.matrix).max()
    assert leak < 0.02 * np.abs(whitening.matrix).max()
    # Moving a point along a discarded low-variance axis barely changes its whitened vector.
    moved = whitening.apply(data[:5] + 0.5 * low_variance_axes[:, -1])
    np.testing.assert_allclose(moved, whitened[:5], atol=0.02)


def test_whitening_scales_each_direction_to_unit_variance() -> None:
    """On axis-aligned data the transform divides each kept axis by its standard deviation."""
    rng = np.random.default_rng(4)
    data = rng.standard_normal((5000, 3))
    data = (data - data.mean(0)) / data.std(0)  # exactly zero mean, unit variance per column
    data = data * [10.0, 1.0, 0.1] + [1.0, 2.0, 3.0]
    whitening = Whitening.fit(_accumulate(data, [2500]), k=1)
    # Only the first axis (std 10) is kept, up to sign.
    np.testing.assert_allclose(np.abs(whitening.matrix[:, 0]), [0.1, 0.0, 0.0], atol=5e-3)
    np.testing.assert_allclose(whitening.mean, [1.0, 2.0, 3.0], atol=1e-5)


@pytest.mark.parametrize("k", [0, -1, 9])
def test_fit_rejects_k_outside_1_to_d(k: int) -> None:
    data, _ = _anisotropic(100, [1.0] * 8)
    with pytest.raises(IndexerError, match=str(k)):
        Whitening.fit(_accumulate(data, []), k=k)


@pytest.mark.parametrize("count", [0, 1, 3, 4])
def test_fit_needs_more_samples_than_k(count: int) -> None:
    data, _ = _anisotropic(count, [1.0] * 6)
    with pytest.raises(IndexerError, match="more than 4"):
        Whitening.fit(_accumulate(data, []), k=4)


def test_fit_with_just_enough_samples_works() -> None:
    """k + 1 points in general position span k directions after centring."""
    data, _ = _anisotropic(5, [1.0] * 4)
    whitening = Whitening.fit(_accumulate(data, []), k=4)
    whitened = whitening.apply(data).astype(np.float64)
    np.testing.assert_allclose(np.cov(whitened, rowvar=False, bias=True), np.eye(4), atol=1e-3)


def test_fit_rejects_rank_deficient_data() -> None:
    """Data in a 3-dimensional subspace of R^8 cannot be whitened to more than 3 directions."""
    rng = np.random.default_rng(5)
    data = (rng.standard_normal((500, 3)) @ rng.standard_normal((3, 8))).astype(np.float32)
    statistics = _accumulate(data, [250])
    with pytest.raises(IndexerError, match="fewer than 4 directions"):
        Whitening.fit(statistics, k=4)
    assert Whitening.fit(statistics, k=3).k == 3


def test_fit_rejects_constant_data() -> None:
    statistics = _accumulate(np.ones((50, 4)), [])
    with pytest.raises(IndexerError):
        Whitening.fit(statistics, k=1)


# ---------------------------------------------------------------------------------------------------------
# save / load
# ---------------------------------------------------------------------------------------------------------


def test_save_load_round_trip(tmp_path) -> None:
    data, _ = _anisotropic(400, [4.0, 2.0, 1.0, 0.5, 0.2, 0.1])
    whitening = Whitening.fit(_accumulate(data, [77]), k=4)
    path = tmp_path / "whitening.safetensors"
    whitening.save(path)
    loaded = Whitening.load(path)
    assert loaded.k == 4
    assert loaded.fit_count == 400
    np.testing.assert_array_equal(loaded.mean, whitening.mean)
    np.testing.assert_array_equal(loaded.matrix, whitening.matrix)
    queries = np.random.default_rng(6).standard_normal((10, 6))
    np.testing.assert_array_equal(loaded.apply(queries), whitening.apply(queries))


def _saved(tmp_path) -> bytes:
    data, _ = _anisotropic(100, [2.0, 1.0, 0.5])
    path = tmp_path / "good.safetensors"
    Whitening.fit(_accumulate(data, []), k=2).save(path)
    return path.read_bytes()


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda good: good[: len(good) // 2],  # truncated in the tensor data
        lambda good: good[:12],  # truncated in the header
        lambda good: b"",
        lambda good: b"this is not a safetensors file at all\n" * 10,
        lambda good: bytes(range(256)) * 4,
    ],
    ids=["truncated-data", "truncated-header", "empty", "text", "binary-garbage"],
)
def test_load_of_a_damaged_file_raises_indexer_error(tmp_path, corrupt) -> None:
    path = tmp_path / "whitening.safetensors"
    path.write_bytes(corrupt(_saved(tmp_path)))
    with pytest.raises(IndexerError, match="whitening file"):
        Whitening.load(path)


def test_load_of_a_missing_file_raises_indexer_error(tmp_path) -> None:
    with pytest.raises(IndexerError):
        Whitening.load(tmp_path / "absent.safetensors")


def test_load_of_a_safetensors_file_without_the_tensors_raises_indexer_error(tmp_path) -> None:
    from safetensors.numpy import save_file

    path = tmp_path / "foreign.safetensors"
    save_file({"weight": np.zeros((2, 2), dtype=np.float32)}, str(path))
    with pytest.raises(IndexerError):
        Whitening.load(path)
