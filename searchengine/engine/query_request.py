"""QueryRequest: one search as every front end asks for it (the Python API, `searchengine query`, the server's
/search, the MCP search tool), checked once when it is made, so that a rule holds in all of them. What depends on
the index (a mode that needs its keyword index, a cross-encoder it may load) is checked when it is answered
(IndexReader.answer)."""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from searchengine.engine.count_argument import count_argument
from searchengine.engine.filters import Filters, conditions_of
from searchengine.engine.fusion import Fusion
from searchengine.engine.mode_registry import RetrievalMode, mode_named, mode_names
from searchengine.engine.modes import SearchMode
from searchengine.engine.queries import check_queries
from searchengine.errors import SearchEngineError
from searchengine.indexer.query.filter_sql import Filter

if TYPE_CHECKING:  # the cross-encoder (torch, transformers) is imported only when something reranks
    from searchengine.encoding.cross_encoder import CrossEncoder

DEFAULT_RERANK_TOP = 100
"""Candidates the bi-encoder retrieves for a cross-encoder to rerank, unless told otherwise."""

RERANK_TOP_ALONE = "rerank_top says how many candidates a cross-encoder rescores; add rerank=MODEL"
"""Why a request with rerank_top and no rerank is refused (rerank_top alone would be silently ignored)."""


def check_fusion(fusion: Fusion | None, mode: RetrievalMode, named: str) -> None:
    """Refuse a `fusion` for a mode that fuses nothing, where it would be silently ignored; `named` says how the
    request chose the mode, e.g. "mode='dense'"."""
    if fusion is not None and not mode.fuses:
        fusing = " or ".join(repr(name) for name in mode_names() if mode_named(name).fuses)
        raise SearchEngineError(
            f"fusion sets how {fusing} search fuses its two sides, and {named} fuses nothing: "
            f"add mode={fusing}, or drop fusion"
        )


class SearchOptions(TypedDict, total=False):
    """The keyword options of `SearchEngine.search` and `search_batch`: the QueryRequest fields beyond the
    queries, k and the filters."""

    mode: SearchMode | None
    fusion: Fusion | None
    rerank: str | Path | CrossEncoder | None
    rerank_top: int
    min_score: float | None
    highlight: bool
    mode_options: Mapping[str, Any] | None
    rescore: int | None
    all_shards: bool


RESCORE_LIMIT = 100_000
"""The most candidates a query may rescore from the originals (each is one row read from disk)."""


@dataclass(frozen=True)
class QueryRequest:
    """The k documents that best match each query, best first; encoded and searched as one batch (reranked pairs
    scored together; the highlighted sentences of every hit embedded in one call). The stages: the mode retrieves
    (the `rerank_top` best when reranking, else k), `min_score` drops the weak, the cross-encoder reranks, and
    the hits shown are highlighted. Refused when made (SearchEngineError) if a query is empty or not valid
    Unicode, k or rerank_top is not a count, rerank_top comes without rerank, the mode is unknown, a fusion comes
    with a mode that fuses nothing, min_score is not a finite number or a filter cannot be read.

    mode: "dense" ranks by the cosine of the encoded query (meaning), "keyword" by BM25 of its words (FTS5,
    Porter stemming; any word may match), "hybrid" by the fusion of both (`fusion`, DEFAULT_FUSION when None);
    None: the index's default mode. Each hit says which sides found it (`found_by`) and gives their scores
    (`dense_score`, `keyword_score`; hybrid gives both).
    where: metadata filters that must all hold, e.g. ["lang=en", "year>=2020"] or {"lang": "en"}; they run
    inside the vector search and the keyword search, so k results come back whenever k documents match (and,
    by keyword, hold a word of the query).
    rerank: a cross-encoder (directory, Hub id or loaded CrossEncoder) that rescores the `rerank_top` best
    candidates of the mode (at least k, DEFAULT_RERANK_TOP when None, filters applied); the k best by its score
    come back, with `score` the cross-encoder's and `retrieval_score` the mode's. A loaded model is kept for later
    calls.
    min_score: leave out hits the mode scores below it, so that a query with no good answer gets none. Every
    mode scores on a scale fixed before the query: the cosine (dense), BM25 over the most the query's words
    let a document reach (keyword, 0..1), and the bounded fusion of both (hybrid, 0..1; other fusions have no
    such scale). With `rerank`, it applies to the candidates' retrieval scores, before the cross-encoder.
    highlight: give each hit its `highlight`, the sentence(s) of its passage nearest to the query (by the mode's
    measure; dense and hybrid embed each hit's sentences, at most 4 of them) and the query's words there;
    `Hit.snippet()` then shows those sentences (searchengine.engine.highlight).
    rescore: on an index whose codes are approximate (PQ, SQ8, LSH: the original vectors kept on disk beside
    them), the candidates per query each segment takes from its codes and rescores exactly from the originals
    before the k best come back (at least k; 0: the codes' own scores, except binary codes, whose k candidates are
    always scored from the originals). None: each segment type's default (100; 300 for product quantization:
    searchengine.indexer.vectors.rescore_depth). Exact index types (Flat, HNSW32) keep no originals and ignore it.
    all_shards: a whole answer or none. A cluster index with a shard that has no live copy then raises
    ShardsUnavailableError (an UnavailableError: HTTP 503) instead of answering from the other shards, flagged
    partial. One index is always whole.
    """

    queries: Sequence[str]
    k: int = 10
    where: Filters = None
    mode: SearchMode | None = None
    fusion: Fusion | None = None
    rerank: str | Path | CrossEncoder | None = None
    rerank_top: int | None = None
    min_score: float | None = None
    highlight: bool = False
    mode_options: Mapping[str, Any] | None = None
    """Options of the mode itself, such as mmr's {"fetch_k": 20, "lambda_mult": 0.5}; refused by a mode without."""
    rescore: int | None = None
    all_shards: bool = False
    conditions: list[Filter] = field(init=False, repr=False, compare=False)
    """`where` read once, as the filters every one of them must meet (what the search runs on)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", count_argument("k", self.k))  # a NumPy integer as a Python one
        if self.rerank_top is not None:
            object.__setattr__(self, "rerank_top", count_argument("rerank_top", self.rerank_top))
            if self.rerank is None:
                raise SearchEngineError(RERANK_TOP_ALONE)
        queries = self.queries
        if isinstance(queries, (str, bytes)) or not isinstance(queries, Iterable):
            shown = type(queries).__name__
            raise SearchEngineError(f"the queries are a list of str, such as ['password help'], not a {shown}")
        if not isinstance(queries, Sequence):  # a generator: read once, here
            object.__setattr__(self, "queries", list(queries))
        check_queries(self.queries)
        if self.mode_options is not None and not isinstance(self.mode_options, Mapping):
            raise SearchEngineError(f"mode_options is a dict, such as {{'fetch_k': 20}}, not {self.mode_options!r}")
        if self.mode is not None:
            mode_named(self.mode).check_options(self.mode_options or {})
            check_fusion(self.fusion, mode_named(self.mode), f"mode={self.mode!r}")
        elif self.mode_options:
            raise SearchEngineError("mode_options go with the mode they are for: add mode=NAME, e.g. mode='mmr'")
        rescore = self.rescore
        if rescore is not None:
            if isinstance(rescore, bool) or not isinstance(rescore, numbers.Integral) or not 0 <= rescore <= RESCORE_LIMIT:
                raise SearchEngineError(
                    f"rescore must be a whole number from 0 (off) to {RESCORE_LIMIT:,}, such as 100, not {rescore!r}"
                )
            object.__setattr__(self, "rescore", int(rescore))
        if not isinstance(self.all_shards, bool):
            raise SearchEngineError(f"all_shards is true or false, not {self.all_shards!r}")
        score = self.min_score
        if score is not None:
            if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
                raise SearchEngineError(f"min_score must be a number, such as 0.4, not {score!r}")
        object.__setattr__(self, "conditions", conditions_of(self.where))

    @classmethod
    def of(cls, queries: Sequence[str], k: int, where: Filters, options: SearchOptions) -> QueryRequest:
        """The request of the API's `search` and `search_batch`, whose rerank_top, when given, is a count: None is
        refused there as any other non-count is (a request's None, the other front ends' "not given", is the
        default); an option it does not know is refused in one line (it was a TypeError naming QueryRequest)."""
        unknown = [name for name in options if name not in SearchOptions.__annotations__]
        if unknown:
            raise SearchEngineError(
                f"search takes no option {unknown[0]!r}; its options: {', '.join(SearchOptions.__annotations__)}"
            )
        if "rerank_top" in options and options["rerank_top"] is None:
            count_argument("rerank_top", None)
        return cls(queries, k, where, **options)

    @property
    def depth(self) -> int:
        """How many candidates the mode retrieves per query: k, or at least rerank_top when reranking."""
        return self.k if self.rerank is None else max(self.k, self.rerank_top or DEFAULT_RERANK_TOP)


Method = TypeVar("Method", bound=Callable[..., Any])


def lists_search_options(method: Method) -> Method:
    """Make `help()` and `inspect.signature` of a method that takes `**options: Unpack[SearchOptions]` show each
    option by name, as a keyword-only parameter with QueryRequest's default (rerank_top's: DEFAULT_RERANK_TOP,
    what a request reranks without one). The method itself still takes **options, so an option left out is not
    passed at all."""
    defaults = {item.name: item.default for item in fields(QueryRequest) if item.init}
    defaults["rerank_top"] = DEFAULT_RERANK_TOP
    signature = inspect.signature(method)
    kept = [parameter for parameter in signature.parameters.values() if parameter.kind is not parameter.VAR_KEYWORD]
    options = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=defaults[name], annotation=written)
        for name, annotation in SearchOptions.__annotations__.items()
        for written in [getattr(annotation, "__forward_arg__", annotation)]  # the text, as the method's own are
    ]
    method.__signature__ = signature.replace(parameters=[*kept, *options])  # type: ignore[attr-defined]
    return method
