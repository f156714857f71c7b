"""Vectors a caller brings: the embeddings of an add (`SearchEngine.add(embeddings=...)`, POST /documents, the
LangChain and LlamaIndex stores) and the vector of a search by vector, checked against the index and put in its
space.

A vector given to the index, like one taken out of it (`SearchEngine.encode`, `stored_vectors`), is in the index's
own space: the model's output, whitened when the index fitted a transform (whitening-k), then L2-normalised. On an
index without whitening that is the model's output itself, so vectors of the index's model (or of `encode`) work as
they are; on a whitened index, make them with `encode` (its dimension is the index's, k, not the model's). A given
vector is never whitened again; it is normalised, so the search scores stay cosines."""

from __future__ import annotations

import numpy as np

from searchengine.engine.embedding import to_index_vectors
from searchengine.errors import SearchEngineError


def given_vectors(
    vectors: object, dimension: int, count: int | None = None, what: str = "embeddings", one: bool = False
) -> np.ndarray:
    """`vectors` (a 2-D array or a list of lists of numbers) as the index stores them: checked to be `count` rows
    (when given) of `dimension` finite numbers, none all zeros, then L2-normalised; else one SearchEngineError
    naming the problem, `what` (one vector's name where `one`, so the sentence says "has", not "have")."""
    try:
        array = _as_float32(vectors, what, one)
    except (TypeError, ValueError):
        raise SearchEngineError(f"{what} must be lists of numbers of the same length ({dimension} each)") from None
    if array.ndim != 2:
        raise SearchEngineError(f"{what} must be a list of vectors (2-D), each of {dimension} numbers; got {array.ndim}-D")
    if count is not None and len(array) != count:
        raise SearchEngineError(f"{len(array)} {what} for {count} documents: give one vector per document")
    if array.shape[1] != dimension:
        raise SearchEngineError(
            f"{what} {'has' if one else 'have'} {array.shape[1]} numbers{'' if one else ' each'}, but this index's "
            f"vectors have {dimension}: make {'it' if one else 'them'} with "
            "the index's model (SearchEngine.encode gives them as the index stores them)"
        )
    if not np.isfinite(array).all():
        raise SearchEngineError(
            f"{what} {'holds' if one else 'hold'} a NaN or an infinity (or a number beyond float32's 3.4e38): every "
            "number must be finite"
        )
    largest = np.abs(array).max(axis=1, keepdims=True)
    if not largest.all():
        zeros = "is all zeros" if one else "hold a vector of zeros"
        raise SearchEngineError(f"{what} {zeros}, which has no direction to compare by cosine")
    # Each row divided by its largest number first: the same direction, and a norm that can be taken (the squares of
    # 1e19 overflow float32, and normalising such a row stored zeros; those of 1e-30 underflow to a norm of 0).
    return to_index_vectors(array / largest, None)


def given_vector(vector: object, dimension: int) -> np.ndarray:
    """One search vector as a 1 x `dimension` row in the index's space (given_vectors says what is refused)."""
    try:
        array = _as_float32(vector, "the vector", one=True)
    except (TypeError, ValueError):
        raise SearchEngineError(f"the vector must be a list of {dimension} numbers") from None
    if array.ndim != 1:
        raise SearchEngineError(f"the vector must be one list of {dimension} numbers, not {array.ndim}-D")
    return given_vectors(array[None, :], dimension, 1, "the vector", one=True)


def _as_float32(values: object, what: str, one: bool = False) -> np.ndarray:
    """`values` as a float32 array, complex numbers refused in one line naming `what` (an array of them, or a list
    of numpy's complex scalars: the cast would drop their imaginary parts, with a warning only); a float beyond
    float32 becomes an infinity, which the caller refuses, and an integer beyond any float is refused here (numpy
    raised OverflowError; `one`: `what` names one vector, as in given_vectors). TypeError or ValueError where
    `values` are not numbers."""
    try:
        with np.errstate(over="ignore"):
            array = values if isinstance(values, np.ndarray) else np.asarray(values)
            if array.dtype.kind == "c":
                raise SearchEngineError(f"{what} must be real numbers, not complex ones")
            return array.astype(np.float32, copy=False)
    except OverflowError:
        raise SearchEngineError(
            f"{what} {'holds' if one else 'hold'} a number beyond float32's 3.4e38: every number "
            "must be finite"
        ) from None
