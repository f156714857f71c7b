"""Hybrid search's fusion: one ranking from the dense (cosine) and keyword (BM25) candidate lists.

Three ways, each with a weight for the dense side (the keyword side gets 1 - weight):

- bounded: each side on a scale fixed before the query, so a fused score means the same from one query to the
  next: the cosine clipped at 0 (0..1), and BM25 divided by the most any document can reach for the query's words
  (`keyword_bound`, from their IDFs alone: searchengine.indexer.query.keyword_query.bm25_bound); a document scores
  weight * dense + (1 - weight) * keyword, 0 for a side whose list lacks it. Bruch et al. 2023 ("An Analysis of
  Fusion Functions for Hybrid Retrieval") fuse by a convex combination of theoretical min-max scores (TM2C2), but
  still divide by each list's observed best; here neither bound depends on what the query found. A query with no
  good answer therefore scores low (docs/retrieval.md, "Scores that mean the same for every query").
- rrf, reciprocal rank fusion: a document scores weight / (rrf_k + rank) from each list it is in (rank 1 = first);
  only the ranks count, so the two sides' score scales never meet.
- minmax: each list's scores are scaled to 0..1 (best 1, worst of the list 0; a list whose scores are all equal
  gives each 1), and a document scores weight * dense + (1 - weight) * keyword, 0 for a side whose list lacks it.
  Its best hit scores 0.5 or more for any query, nonsense included.

All read the top `depth` candidates of each side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from searchengine.errors import SearchEngineError

FusionMethod = Literal["bounded", "rrf", "minmax"]
FUSION_METHODS: tuple[FusionMethod, ...] = ("bounded", "rrf", "minmax")
Ranked = Sequence[tuple[int, float]]
"""(document id, score) best first: one side's candidates."""


@dataclass(frozen=True)
class Fusion:
    """How hybrid search fuses the two sides' candidates (see the module's docstring)."""

    method: FusionMethod = "bounded"
    dense_weight: float = 0.5
    """The dense side's share (0..1); the keyword side has 1 - dense_weight."""
    rrf_k: int = 60
    """RRF's rank offset: larger flattens the difference between the first ranks and the later ones."""
    depth: int = 100
    """Candidates taken from each side (at least the k asked for)."""

    def __post_init__(self) -> None:
        if self.method not in FUSION_METHODS:
            raise SearchEngineError(f"unknown fusion {self.method!r}; use one of {', '.join(FUSION_METHODS)}")
        if not 0.0 <= self.dense_weight <= 1.0:
            raise SearchEngineError(f"the dense weight must be between 0 and 1, not {self.dense_weight}")
        if self.rrf_k < 0:
            raise SearchEngineError(f"the RRF k must be 0 or more, not {self.rrf_k}")
        if self.depth < 1:
            raise SearchEngineError(f"the fusion depth must be at least 1, not {self.depth}")

    def describe(self) -> str:
        """The settings in one phrase, e.g. 'rrf k=60, dense weight 0.5, depth 100'."""
        method = f"rrf k={self.rrf_k}" if self.method == "rrf" else self.method
        return f"{method}, dense weight {self.dense_weight:g}, depth {self.depth}"


def fuse(dense: Ranked, keyword: Ranked, fusion: Fusion, keyword_bound: float = 0.0) -> list[tuple[int, float]]:
    """Every candidate of either list as (id, fused score), best first; ties go to the one ranked higher on
    either side, then to the smaller id. `keyword_bound` is the most BM25 any document can reach for the query
    (DocumentStore.keyword_bound), which bounded fusion divides by; the other methods ignore it."""
    weights = (fusion.dense_weight, 1.0 - fusion.dense_weight)
    if fusion.method == "rrf":
        parts = [
            {doc: 1.0 / (fusion.rrf_k + rank) for rank, (doc, _) in enumerate(side, 1)} for side in (dense, keyword)
        ]
    elif fusion.method == "bounded":
        parts = [{doc: max(0.0, min(1.0, score)) for doc, score in dense}, bounded_keyword(keyword, keyword_bound)]
    else:
        parts = [min_max(side) for side in (dense, keyword)]
    best_rank = {doc: rank for rank, (doc, _) in enumerate(keyword)}
    for rank, (doc, _) in enumerate(dense):
        if rank < best_rank.get(doc, rank + 1):
            best_rank[doc] = rank
    (dense_weight, keyword_weight), (dense_part, keyword_part) = weights, parts
    ranked = sorted(
        (-(dense_weight * dense_part.get(doc, 0.0) + keyword_weight * keyword_part.get(doc, 0.0)), rank, doc)
        for doc, rank in best_rank.items()
    )  # one tuple a candidate, ordered as (-score, best rank, id), with no Python key function called per item
    return [(doc, -negated) for negated, _, doc in ranked]


def min_max(side: Ranked) -> dict[int, float]:
    """Each candidate's score scaled to 0..1 over its list (the best 1, the worst 0; all 1 when all are equal)."""
    if not side:
        return {}
    values = [score for _, score in side]
    low, high = min(values), max(values)
    if high == low:
        return {doc: 1.0 for doc, _ in side}
    return {doc: (score - low) / (high - low) for doc, score in side}


def bounded_keyword(side: Ranked, bound: float) -> dict[int, float]:
    """Each candidate's BM25 over `bound`, the most the query's words let any document reach (0..1; 0 for every
    candidate when the bound is 0, a query without searchable words)."""
    if bound <= 0:
        return {doc: 0.0 for doc, _ in side}
    return {doc: max(0.0, min(1.0, score / bound)) for doc, score in side}
