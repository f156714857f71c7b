"""Maximal marginal relevance (the "mmr" retrieval mode): the k documents, among the `fetch_k` nearest to the
query by cosine, that are each near the query and unlike those picked before them, picked greedily by
lambda_mult x cosine(query, d) - (1 - lambda_mult) x max cosine(d, picked), over the stored vectors (nothing is
re-encoded; a document split into passages by the vector of the passage it matched by). LangChain's
`max_marginal_relevance_search` and LlamaIndex's MMR query mode, in the engine."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from searchengine.engine.mode_registry import RankRequest, RetrievalMode
from searchengine.errors import SearchEngineError

if TYPE_CHECKING:  # listing the modes (the CLI's help) imports neither numpy nor the search
    import numpy as np

    from searchengine.engine.search import Scored
    from searchengine.indexer.tables.store import DocumentStore

DEFAULT_FETCH_K = 20
"""Candidates MMR picks from unless told otherwise (LangChain's default)."""
DEFAULT_LAMBDA_MULT = 0.5
"""How much nearness to the query weighs against unlikeness to the picked (1: nearness alone), LangChain's default."""


class MaximalMarginalRelevance(RetrievalMode):
    name = "mmr"
    description = (
        f"by meaning, diversified: maximal marginal relevance over the fetch_k nearest (default {DEFAULT_FETCH_K}, "
        f"lambda_mult {DEFAULT_LAMBDA_MULT})"
    )
    label = "mmr (diverse cosine)"
    score_name = "cosine"
    short_score_name = "cos"
    sides = ("dense",)
    side_scores = ()

    def check_options(self, options: Mapping[str, Any]) -> None:
        """fetch_k: a count; lambda_mult: a number from 0 to 1; nothing else."""
        mmr_options(options)

    def rank(self, request: RankRequest) -> list[list[Scored]]:
        """Each query's k picks, in the order picked, each scored by its cosine to the query."""
        from searchengine.engine.search import dense_rankings

        fetch_k, lambda_mult = mmr_options(request.options)
        depth = min(max(fetch_k, request.k), request.searchable)
        candidates = dense_rankings(
            request.vectors, request.store, request.query_vectors, depth, request.allowed, request.excluded
        )
        return [
            _picked(row, request.vectors.reconstruct(matched_vector_ids(request.store, row)), request.k, lambda_mult)
            if row
            else []
            for row in candidates
        ]


def matched_vector_ids(store: DocumentStore, row: list[Scored]) -> np.ndarray:
    """The vector id of the passage each candidate matched by: a document's own id, or for a document split into
    passages the id of the passage its span names (its best), so that how unlike the picked ones a candidate is
    is judged by the part of it that made it a candidate, as its score is."""
    import numpy as np

    split = [scored.id for scored in row if scored.span is not None]
    by_span: dict[tuple[int, tuple[int, int]], int] = {}
    if split:
        passages = store.passages.of_vectors([*split, *store.passages.extra_ids_of(split)])
        by_span = {(document, (start, end)): vector for vector, (document, start, end) in passages.items()}
    return np.asarray(
        [scored.id if scored.span is None else by_span.get((scored.id, scored.span), scored.id) for scored in row],
        dtype=np.int64,
    )


def mmr_options(options: Mapping[str, Any]) -> tuple[int, float]:
    """(fetch_k, lambda_mult) from `options`, defaults where missing; SearchEngineError for anything else."""
    unknown = set(options) - {"fetch_k", "lambda_mult"}
    if unknown:
        raise SearchEngineError(f"mode mmr takes fetch_k and lambda_mult, not {', '.join(sorted(unknown))}")
    fetch_k = options.get("fetch_k", DEFAULT_FETCH_K)
    if isinstance(fetch_k, bool) or not isinstance(fetch_k, int) or fetch_k < 1:
        raise SearchEngineError(f"fetch_k must be a whole number of at least 1, not {fetch_k!r}")
    lambda_mult = options.get("lambda_mult", DEFAULT_LAMBDA_MULT)
    if isinstance(lambda_mult, bool) or not isinstance(lambda_mult, (int, float)) or not 0 <= lambda_mult <= 1:
        raise SearchEngineError(f"lambda_mult must be a number from 0 to 1, not {lambda_mult!r}")
    if isinstance(lambda_mult, float) and not math.isfinite(lambda_mult):
        raise SearchEngineError(f"lambda_mult must be a number from 0 to 1, not {lambda_mult!r}")
    return fetch_k, float(lambda_mult)


def _picked(row: list[Scored], vectors: np.ndarray, k: int, lambda_mult: float) -> list[Scored]:
    """The k of `row` (candidates with their cosines to the query, best first) that MMR picks, in order."""
    import numpy as np

    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    relevance = np.asarray([scored.score for scored in row], dtype=np.float32)
    similarity = vectors @ vectors.T
    picked: list[int] = [0]  # the nearest first, as any lambda picks it
    closest = similarity[0].copy()
    while len(picked) < min(k, len(row)):
        value = lambda_mult * relevance - (1 - lambda_mult) * closest
        value[picked] = -np.inf
        best = int(np.argmax(value))
        picked.append(best)
        closest = np.maximum(closest, similarity[best])
    return [row[i] for i in picked]
