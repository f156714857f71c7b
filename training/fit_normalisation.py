"""The BERT-flow paper's two baselines (Li et al., 2020, section 5), fitted on a corpus and saved as the model's
Dense module (a linear map, so sentence-transformers runs it too):

* SN, standard normalisation: x -> (x - mean) / std, per dimension. A dimension that does not vary (std below
  1e-6 of the median std; all-MiniLM-L6-v2 has 3 such of 384) is set to 0 instead of divided by ~0.
* NATSV, nulling away the top-k singular vectors: x -> x (I - V_k V_k^T), V_k the top-k right singular vectors
  of the (n, d) embedding matrix. As in the paper the matrix is NOT centred by default (the top singular direction
  of raw embeddings is close to their common mean direction, which is what it removes); `centre=True` subtracts
  the corpus mean first and nulls the top-k principal directions instead (Mu & Viswanath's all-but-the-top).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from searchengine.indexer.vectors.whitening import CovarianceAccumulator
from searchengine.training.postprocessing import (
    FitReport,
    corpus_vectors,
    load_base,
    read_texts,
    write_model_with_module,
)

from searchengine.encoding.model_source import DENSE_MODULE_TYPE
from searchengine.encoding.model_transforms import write_dense_module
from searchengine.errors import SearchEngineError

CONSTANT_FRACTION = 1e-6


def _statistics(
    encoder,  # noqa: ANN001
    texts: list[str],
    progress: bool,
    what: str,
    vectors: np.ndarray | None,  # noqa: ANN001
) -> CovarianceAccumulator:
    statistics = CovarianceAccumulator(encoder.dimension)
    for chunk in corpus_vectors(encoder, texts, progress, what, vectors):
        statistics.update(chunk)
    return statistics


def fit_sn(
    *,
    base: str | Path | None,
    corpus: str | Path,
    out: str | Path,
    device: str | None = None,
    batch_size: int = 64,
    progress: bool = True,
    vectors: np.ndarray | None = None,
) -> FitReport:
    """Write `out` = `base` + standard normalisation fitted on `corpus` (`vectors`: as in fit_whitening)."""
    started = time.perf_counter()
    encoder = load_base(base, device, batch_size)
    texts = read_texts(corpus)
    if len(texts) < 2:
        raise SearchEngineError(f"standard normalisation needs at least 2 distinct texts, but {corpus} has 1")
    statistics = _statistics(encoder, texts, progress, "SN", vectors)
    std = np.sqrt(np.diag(statistics.covariance()))
    constant = std <= np.median(std) * CONSTANT_FRACTION
    if constant.all():
        raise SearchEngineError(f"the embeddings of {corpus} do not vary; there is nothing to normalise")
    scale = np.where(constant, 0.0, 1.0 / np.where(constant, 1.0, std))
    weight = np.diag(scale)
    bias = -statistics.mean * scale
    folder = write_model_with_module(
        encoder,
        out,
        DENSE_MODULE_TYPE,
        "Dense",
        lambda path: write_dense_module(path, weight, bias),
        {
            "method": "sn",
            "corpus": str(corpus),
            "texts": len(texts),
            "base": encoder.source.spec,
            "constant_dimensions": np.flatnonzero(constant).tolist(),
        },
    )
    d = encoder.dimension
    return FitReport(
        "sn",
        Path(out),
        encoder.source.spec,
        str(corpus),
        len(texts),
        d,
        d,
        folder,
        time.perf_counter() - started,
        {"constant_dimensions": np.flatnonzero(constant).tolist()},
    )


def fit_natsv(
    *,
    base: str | Path | None,
    corpus: str | Path,
    out: str | Path,
    k: int = 1,
    centre: bool = False,
    device: str | None = None,
    batch_size: int = 64,
    progress: bool = True,
    vectors: np.ndarray | None = None,
) -> FitReport:
    """Write `out` = `base` + NATSV nulling the top-`k` singular directions of `corpus`'s embeddings (`vectors`:
    as in fit_whitening)."""
    started = time.perf_counter()
    encoder = load_base(base, device, batch_size)
    dimension = encoder.dimension
    if not 1 <= k < dimension:
        raise SearchEngineError(
            f"NATSV k must be at least 1 and below the embedding dimension {dimension} (k={dimension} would null "
            f"every direction), not {k}"
        )
    texts = read_texts(corpus)
    if len(texts) < k + (1 if centre else 0):
        raise SearchEngineError(
            f"NATSV with k={k} needs at least {k + int(centre)} distinct texts, but {corpus} has "
            f"{len(texts)}; use a smaller k or a larger file"
        )
    statistics = _statistics(encoder, texts, progress, "NATSV", vectors)
    mean = statistics.mean
    # X^T X / n: the covariance, plus mean mean^T when not centring; its eigenvectors are X's right singular vectors.
    moment = statistics.covariance() if centre else statistics.covariance() + np.outer(mean, mean)
    eigenvalues, eigenvectors = np.linalg.eigh(moment)
    order = np.argsort(eigenvalues)[::-1]
    if eigenvalues[order[k - 1]] <= max(eigenvalues[order[0]], 1e-30) * 1e-12:
        raise SearchEngineError(f"the embeddings of {corpus} span fewer than {k} directions; use a smaller k")
    top = eigenvectors[:, order[:k]]
    projection = np.eye(dimension) - top @ top.T  # symmetric, so it is its own transpose
    bias = -projection @ mean if centre else np.zeros(dimension)
    singular_share = eigenvalues[order[:k]].sum() / eigenvalues.sum()
    method = f"natsv-{k}" + ("-centred" if centre else "")
    folder = write_model_with_module(
        encoder,
        out,
        DENSE_MODULE_TYPE,
        "Dense",
        lambda path: write_dense_module(path, projection, bias),
        {
            "method": method,
            "k": k,
            "centre": centre,
            "corpus": str(corpus),
            "texts": len(texts),
            "base": encoder.source.spec,
            "energy_removed": float(singular_share),
        },
    )
    return FitReport(
        method,
        Path(out),
        encoder.source.spec,
        str(corpus),
        len(texts),
        dimension,
        dimension,
        folder,
        time.perf_counter() - started,
        {"energy_removed": float(singular_share)},
    )
