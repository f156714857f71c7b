"""GET /search (one query) and POST /search (a batch): `searchengine query --json` over HTTP."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from searchengine.engine.hit_records import result_record
from searchengine.engine.query_request import RESCORE_LIMIT, QueryRequest
from searchengine.engine.search import Hit
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError
from searchengine.server.limits import MAX_FILTERS, MAX_K
from searchengine.server.metrics import ServerMetrics
from searchengine.server.models import (
    ALL_SHARDS_HELP,
    HIGHLIGHT_HELP,
    MIN_SCORE_HELP,
    MODE_FIELD_HELP,
    RESCORE_HELP,
    ModeName,
    QueryResult,
    SearchRequest,
    SearchResults,
)
from searchengine.server.reader import SearchOptions
from searchengine.server.served_index import ServedIndex
from searchengine.server.shard_answers import shards_record
from searchengine.server.state import Index, Metrics, answer, check_reads

router = APIRouter(dependencies=[Depends(check_reads)])


@router.get("/search", response_model=QueryResult)
async def search(
    index: Index,
    metrics: Metrics,
    q: Annotated[str, Query(description="What to search for.")],
    k: Annotated[int, Query(ge=1, le=MAX_K, description="Number of results.")] = 10,
    where: Annotated[list[str], Query(max_length=MAX_FILTERS, description="Filters FIELD OP VALUE.")] = [],  # noqa: B006
    mode: Annotated[ModeName | None, Query(description=MODE_FIELD_HELP)] = None,
    rerank: Annotated[str | None, Query(description="A cross-encoder the server was started with.")] = None,
    rerank_top: Annotated[int | None, Query(ge=1, le=MAX_K)] = None,
    min_score: Annotated[float | None, Query(allow_inf_nan=False, description=MIN_SCORE_HELP)] = None,
    highlight: Annotated[bool, Query(description=HIGHLIGHT_HELP)] = False,
    rescore: Annotated[int | None, Query(ge=0, le=RESCORE_LIMIT, description=RESCORE_HELP)] = None,
    all_shards: Annotated[bool, Query(description=ALL_SHARDS_HELP)] = False,
) -> dict[str, Any]:
    """The k documents that best match `q`, best first (`searchengine query "q" --json`)."""
    request = SearchRequest.model_construct(  # the values were checked as query parameters
        queries=[q],
        k=k,
        where=where,
        mode=mode,
        rerank=rerank,
        rerank_top=rerank_top,
        min_score=min_score,
        highlight=highlight,
        rescore=rescore,
        all_shards=all_shards,
    )
    return (await _search(index, metrics, request))[0]


@router.post("/search", response_model=SearchResults)
async def search_many(index: Index, metrics: Metrics, request: SearchRequest) -> dict[str, Any]:
    """Several queries with the same options, answered as one batch (`searchengine query --file --json`); or a
    search by `vector` (SearchEngine.search_by_vector)."""
    if request.vector is not None:
        return {"results": [await _search_by_vector(index, request)]}
    return {"results": await _search(index, metrics, request)}


async def _search_by_vector(index: ServedIndex, request: SearchRequest) -> dict[str, Any]:
    """The k documents nearest to `request.vector`, on a reader thread (read as any other read, not batched)."""
    vector, k, where, floor = request.vector, request.k, list(request.where), request.min_score

    def search(engine: SearchEngine) -> list[Hit]:
        hits = engine.search_by_vector(vector, k, where)
        if floor is not None:
            hits[:] = [hit for hit in hits if hit.score >= floor]  # in place: a cluster's ShardedHits stays one
        return hits

    hits = await answer(index.reader.run(search))
    return {**result_record(None, "dense", hits), **shards_record(hits)}


async def _search(index: ServedIndex, metrics: ServerMetrics, request: SearchRequest) -> list[dict[str, Any]]:
    """The results of `request`'s queries; what can be refused is refused before they wait in the reader's queue,
    where a bad query would fail the other clients' queries batched with it."""
    asked = QueryRequest(
        request.queries, request.k, tuple(request.where), request.mode, None, request.rerank, request.rerank_top,
        request.min_score, request.highlight, request.mode_options, request.rescore, request.all_shards
    )
    rerank = asked.rerank
    if rerank is not None and rerank not in index.rerank:
        offered = f"only with {', '.join(index.rerank)}" if index.rerank else "with no cross-encoder"
        raise SearchEngineError(
            f"this server reranks {offered}, not {rerank!r}; start it with --rerank {rerank} to offer that one"
        )
    top = asked.depth if rerank else None
    mode = asked.mode or index.reader.default_mode
    chosen = tuple(sorted((asked.mode_options or {}).items()))
    options = SearchOptions(
        asked.k, asked.where, mode, rerank, top, asked.min_score, asked.highlight, chosen, asked.rescore,
        asked.all_shards,
    )
    start = time.perf_counter()
    results = await answer(index.reader.search(request.queries, options))
    metrics.observe_search(mode, len(request.queries), time.perf_counter() - start, index.path.name)
    reranked = {"model": rerank, "top": top} if rerank else None
    return [
        {**result_record(query, mode, hits, reranked), **shards_record(hits)}
        for query, hits in zip(request.queries, results)
    ]
