"""Search modes: dense (cosine of the encoded query), keyword (BM25 of its words) and hybrid (the two fused),
and the default of each, chosen by measurement (docs/retrieval.md)."""

from __future__ import annotations

from typing import Literal

from searchengine.engine.fusion import Fusion

SearchMode = Literal["dense", "keyword", "hybrid"]
SEARCH_MODES: tuple[SearchMode, ...] = ("dense", "keyword", "hybrid")
DEFAULT_MODE: SearchMode = "hybrid"
DEFAULT_FUSION = Fusion()
