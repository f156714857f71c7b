"""Search modes: dense (cosine of the encoded query), keyword (BM25 of its words) and hybrid (the two fused),
and the default of each, chosen by measurement (docs/retrieval.md)."""

from __future__ import annotations

from typing import Literal

from searchengine.engine.fusion import Fusion

SearchMode = Literal["dense", "keyword", "hybrid"]
SEARCH_MODES: tuple[SearchMode, ...] = ("dense", "keyword", "hybrid")
DEFAULT_MODE: SearchMode = "hybrid"
DEFAULT_FUSION = Fusion("bounded", dense_weight=0.5, depth=100)
"""Bounded fusion with equal weights: each side on a scale fixed before the query, so a fused score means the same
from one query to the next. Against min-max (the default before it) it kept nDCG@10 on NFCorpus and ArguAna
(0.3586 against 0.3535, 0.5363 against 0.5336) and made the top score tell queries with an answer in the corpus
from queries without one (AUC 0.93 and 0.89 on the held-back halves, against 0.68 and 0.18); equal weights are
the plain setting, not the best one measured (docs/retrieval.md)."""
MODE_HELP = (
    "dense: by meaning (cosine of the encoded query); keyword: by the query's words (BM25, Porter stemming, any "
    "word may match, a repeated word counts each time); hybrid: both, fused "
    f"({DEFAULT_FUSION.describe()} candidates of each side), the best of the three by nDCG@10 on NFCorpus (0.359 "
    "against 0.322 keyword and 0.317 dense) and ArguAna (0.536 against 0.503 dense and 0.477 keyword; "
    "docs/retrieval.md)."
)
MODE_DEFAULT_NOTE = f"{DEFAULT_MODE}; dense on an index without a keyword index"
