"""The built-in retrieval modes: dense (cosine of the encoded query), keyword (BM25 of its words) and hybrid (the two
fused), registered in searchengine.engine.mode_registry, and the default of each setting, chosen by measurement
(docs/retrieval.md). Reranking by a cross-encoder is no mode: it is a stage after any of them
(SearchEngine.search_batch)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchengine.engine.fusion import Fusion
from searchengine.engine.mmr import MaximalMarginalRelevance
from searchengine.engine.mode_registry import MODES, RankRequest, RetrievalMode, register_mode

if TYPE_CHECKING:  # each mode imports its search when it ranks: listing the modes (the CLI's help) stays light
    from searchengine.engine.search import Scored

SearchMode = str
"""The name of a registered retrieval mode (searchengine.engine.mode_registry)."""
DEFAULT_MODE: SearchMode = "hybrid"
DEFAULT_FUSION = Fusion("bounded", dense_weight=0.5, depth=100)
"""Bounded fusion with equal weights: each side on a scale fixed before the query, so a fused score means the same
from one query to the next. Against min-max (the default before it) it kept nDCG@10 on NFCorpus and ArguAna
(0.3586 against 0.3535, 0.5363 against 0.5336) and made the top score tell queries with an answer in the corpus
from queries without one (AUC 0.93 and 0.89 on the held-back halves, against 0.68 and 0.18); equal weights are
the plain setting, not the best one measured (docs/retrieval.md)."""


class DenseMode(RetrievalMode):
    name = "dense"
    description = "by meaning (cosine of the encoded query)"
    label = "dense (cosine)"
    score_name = "cosine"
    short_score_name = "cos"
    sides = ("dense",)
    side_scores = ()

    def rank(self, request: RankRequest) -> list[list[Scored]]:
        """The nearest documents by cosine; a document split into passages scores by its best passage."""
        from searchengine.engine.search import dense_rankings

        return dense_rankings(
            request.vectors,
            request.store,
            request.query_vectors,
            min(request.k, request.searchable),
            request.allowed,
            request.excluded,
        )


class KeywordMode(RetrievalMode):
    name = "keyword"
    description = "by the query's words (BM25, Porter stemming, any word may match, a repeated word counts each time)"
    label = "keyword (BM25)"
    score_name = "keyword score"
    short_score_name = "bm25"
    sides = ("keyword",)
    side_scores = ("keyword",)

    def rank(self, request: RankRequest) -> list[list[Scored]]:
        """The best documents by BM25, each scored on the 0..1 scale of the most the query's words allow."""
        from searchengine.engine.hybrid import keyword_rankings

        return keyword_rankings(request.store, request.texts, request.k, request.matching)


class HybridMode(RetrievalMode):
    name = "hybrid"
    description = (
        f"both, fused ({DEFAULT_FUSION.describe()} candidates of each side), the best of the three by nDCG@10 on "
        "NFCorpus (0.359 against 0.322 keyword and 0.317 dense) and ArguAna (0.536 against 0.503 dense and 0.477 "
        "keyword; docs/retrieval.md)"
    )
    label = "hybrid (dense + keyword)"
    score_name = "fused score"
    short_score_name = "fused"
    sides = ("dense", "keyword")
    side_scores = ("dense", "keyword")

    def rank(self, request: RankRequest) -> list[list[Scored]]:
        """The fusion of each query's dense and keyword candidates (`request.fusion`), with both sides' scores."""
        from searchengine.engine.hybrid import hybrid_rankings

        return hybrid_rankings(
            request.vectors,
            request.store,
            request.texts,
            request.query_vectors,
            request.k,
            request.fusion,
            request.searchable,
            request.allowed,
            request.excluded,
        )


for _mode in (DenseMode(), KeywordMode(), HybridMode(), MaximalMarginalRelevance()):
    register_mode(_mode)

MODE_HELP = "; ".join(f"{mode.name}: {mode.description}" for mode in MODES.values()) + "."
MODE_DEFAULT_NOTE = f"{DEFAULT_MODE}; dense on an index without a keyword index"
