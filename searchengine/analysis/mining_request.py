"""What a paraphrase-mining request may ask for: a pair count and/or a similarity threshold, and the method that
finds the pairs (searchengine.analysis.paraphrase_mining). Free of numpy and FAISS, so the command line can list
the methods cheaply."""

from __future__ import annotations

from typing import Literal, get_args

from searchengine.errors import SearchEngineError

MiningMethod = Literal["auto", "exact", "ann"]
"""exact: every pair scored, in blocks; ann: each text's nearest neighbours from the FAISS index; auto: exact up
to EXACT_MINING_LIMIT vectors, else ann."""
METHODS: tuple[str, ...] = get_args(MiningMethod)
DEFAULT_TOP = 20
"""Pairs returned when neither a count nor a threshold is given."""
EXACT_MINING_LIMIT = 50_000
"""Up to this many vectors `auto` mines exactly (about n^2/2 dot products); above it through the FAISS index."""


SCORE_TOLERANCE = 1e-6
"""How far below a threshold a pair may score and still count. The inner product of float32 unit vectors is
exact to a few of float32's 6e-8 steps, so a text and its exact duplicate can score 0.99999994, and `--threshold 1`
missed exact duplicates (the same text embedded in two batches of different padding differs by about as much)."""


def score_floor(threshold: float) -> float:
    """The lowest score a pair may have to count as scoring at least `threshold` (SCORE_TOLERANCE below it)."""
    return threshold - SCORE_TOLERANCE


def check_request(top: int | None, threshold: float | None) -> int | None:
    """Validate a mining request; returns the pair count to keep (DEFAULT_TOP when neither is given)."""
    if threshold is not None and not 0.0 < threshold <= 1.0:
        raise SearchEngineError(f"the threshold is a cosine similarity in (0, 1], not {threshold}; e.g. 0.9")
    if top is not None and top < 1:
        raise SearchEngineError(f"top must be at least 1, not {top}")
    return DEFAULT_TOP if top is None and threshold is None else top


def choose_method(count: int, method: MiningMethod = "auto") -> str:
    """'exact' or 'ann' for an index of `count` vectors; 'auto' is exact up to EXACT_MINING_LIMIT."""
    if method not in METHODS:
        raise SearchEngineError(f"unknown mining method {method!r}; choose one of: {', '.join(METHODS)}")
    if method != "auto":
        return method
    return "exact" if count <= EXACT_MINING_LIMIT else "ann"
