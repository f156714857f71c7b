"""Fit BERT-whitening(-k) on a corpus and save it as the model's Dense module.

The fit is the index's own (`indexer.vectors.whitening.CovarianceAccumulator` + `Whitening.fit`): x -> (x - mu) W with
W = U[:, :k] diag(1/sqrt(lambda)), saved as sentence-transformers' Dense y = x W' + b with W' = W^T and b = -mu W.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.vectors.whitening import CovarianceAccumulator, Whitening
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


def fit_whitening(
    *,
    base: str | Path | None,
    corpus: str | Path,
    out: str | Path,
    k: int | None = None,
    device: str | None = None,
    batch_size: int = 64,
    progress: bool = True,
    vectors: np.ndarray | None = None,
) -> FitReport:
    """Write `out` = `base` + whitening-k fitted on `corpus`.

    k=None keeps every direction the embeddings span (Whitening.max_k): not always every dimension, e.g.
    all-MiniLM-L6-v2's pooled vectors span 381 of 384, and whitening the other 3 would divide by ~0.

    `vectors`: the corpus's pre-Normalize vectors if already computed (training.postprocessing.embed_all)."""
    started = time.perf_counter()
    encoder = load_base(base, device, batch_size)
    dimension = encoder.dimension
    if k is not None and not 1 <= k <= dimension:
        raise SearchEngineError(f"whitening k must be between 1 and the embedding dimension {dimension}, not {k}")
    texts = read_texts(corpus)
    if k is not None and len(texts) <= k:
        raise SearchEngineError(
            f"whitening-k {k} needs more than {k} distinct texts to fit, but {corpus} has {len(texts)}; "
            "use a smaller k or a larger file"
        )
    statistics = CovarianceAccumulator(dimension)
    for chunk in corpus_vectors(encoder, texts, progress, "whitening", vectors):
        statistics.update(chunk)
    method = "whitening" if k is None else f"whitening-{k}"
    if k is None:
        k = Whitening.max_k(statistics)
        if k == 0:
            raise SearchEngineError(f"the embeddings of {corpus} do not vary (one distinct text?); nothing to whiten")
    try:
        whitening = Whitening.fit(statistics, k)
    except IndexerError as exc:
        raise SearchEngineError(str(exc)) from None
    weight = whitening.matrix.T.astype("float64")
    bias = -(whitening.mean.astype("float64") @ whitening.matrix.astype("float64"))
    folder = write_model_with_module(
        encoder,
        out,
        DENSE_MODULE_TYPE,
        "Dense",
        lambda path: write_dense_module(path, weight, bias),
        {"method": method, "k": k, "corpus": str(corpus), "texts": len(texts), "base": encoder.source.spec},
    )
    return FitReport(
        method,
        Path(out),
        encoder.source.spec,
        str(corpus),
        len(texts),
        dimension,
        k,
        folder,
        time.perf_counter() - started,
    )
