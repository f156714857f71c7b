"""Search modes: dense (cosine of the encoded query), keyword (BM25 of its words) and hybrid (the two fused),
and the default of each, chosen by measurement (docs/retrieval.md)."""

from __future__ import annotations

from typing import Literal

from searchengine.engine.fusion import Fusion

SearchMode = Literal["dense", "keyword", "hybrid"]
SEARCH_MODES: tuple[SearchMode, ...] = ("dense", "keyword", "hybrid")
DEFAULT_MODE: SearchMode = "hybrid"
DEFAULT_FUSION = Fusion("bounded", dense_weight=0.5, depth=100)
"""Min-max fusion with equal weights: of the fusions tried, the best average nDCG@10 over NFCorpus and ArguAna
among those not tuned on them (docs/retrieval.md)."""
MODE_HELP = (
    "dense: by meaning (cosine of the encoded query); keyword: by the query's words (BM25, Porter stemming, any "
    "word may match, a repeated word counts each time); hybrid: both, fused "
    f"({DEFAULT_FUSION.describe()} candidates of each side), the best of the three by nDCG@10 on NFCorpus (0.353 "
    "against 0.321 keyword and 0.316 dense) and ArguAna (0.535 against 0.501 dense and 0.477 keyword; "
    "docs/retrieval.md)."
)
MODE_DEFAULT_NOTE = f"{DEFAULT_MODE}; dense on an index without a keyword index"
