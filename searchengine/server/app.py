"""The FastAPI app over a ServedIndex: search, info, add and delete as JSON, the search page at /.

Every error is `{"error": "one line"}`: 400 for a bad request, 401 without the API key, 404 for an unknown id or
path, 409 while another process writes the index, 413 for an oversize body."""

from __future__ import annotations

import asyncio
import hmac
from dataclasses import asdict, dataclass
from importlib.resources import files
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi_offline import FastAPIOffline
from starlette.exceptions import HTTPException as StarletteHTTPException

from searchengine.engine.corpus import JsonFields, document_from_record
from searchengine.engine.filters import conditions_of
from searchengine.engine.hit_records import result_record
from searchengine.engine.mode_registry import MODES, RetrievalMode
from searchengine.engine.search_engine import DEFAULT_RERANK_TOP, SearchEngine
from searchengine.errors import SearchEngineError
from searchengine.indexer.errors import IndexLockedError, UnknownDocumentError
from searchengine.server.body_limit import BodyLimit
from searchengine.server.embeddings import embeddings_router
from searchengine.server.key_first import KeyFirst
from searchengine.server.limits import (
    MAX_BODY_BYTES,
    MAX_DOCUMENTS,
    MAX_EMBEDDING_INPUTS,
    MAX_FILTERS,
    MAX_K,
    MAX_QUERIES,
)
from searchengine.server.models import (
    HIGHLIGHT_HELP,
    MIN_SCORE_HELP,
    MODE_FIELD_HELP,
    AddedOut,
    DeletedOut,
    DocumentsRequest,
    ErrorOut,
    ModeName,
    QueryResult,
    SearchRequest,
    SearchResults,
)
from searchengine.server.reader import SearchOptions
from searchengine.server.served_index import ServedIndex

API_KEY_SCOPES = ("writes", "all")


@dataclass(frozen=True)
class ServerSettings:
    api_key: str | None = None
    """Required as `Authorization: Bearer KEY` on what `api_key_for` names; None: no key anywhere."""
    api_key_for: Literal["writes", "all"] = "writes"
    """"writes": POST /documents and DELETE; "all": every endpoint but /health and the static page and docs."""
    max_body_bytes: int = MAX_BODY_BYTES


def create_app(index: ServedIndex, settings: ServerSettings = ServerSettings()) -> FastAPI:
    """The app answering for `index`; the caller closes `index` when the server stops."""
    if settings.api_key_for not in API_KEY_SCOPES:
        raise SearchEngineError(f"the API key guards 'writes' or 'all', not {settings.api_key_for!r}")
    if settings.api_key is not None and not settings.api_key.strip():
        raise SearchEngineError("the API key is empty; give a non-empty key or none")
    app = FastAPIOffline(  # /docs and /redoc with their scripts served from the package, not a CDN: they work offline
        title="searchengine",
        summary="Semantic search over one index directory: the options of `searchengine query`, `add` and `delete`.",
        responses={400: {"model": ErrorOut}},
    )
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    _add_error_handlers(app)
    check_writes = _key_check(settings.api_key, "writes")
    check_reads = _key_check(settings.api_key if settings.api_key_for == "all" else None, "searches")
    # Added last, so it runs first: the key is checked before BodyLimit reads a body and FastAPI parses it.
    app.add_middleware(
        KeyFirst,
        check_for=lambda _method, path: check_writes if path.startswith("/documents") else check_reads,
        refuse=_refusal,
    )
    page = files("searchengine.server").joinpath("page.html").read_text(encoding="utf-8")
    script = files("searchengine.server").joinpath("page.js").read_text(encoding="utf-8")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def search_page() -> str:
        return page

    @app.get("/page.js", include_in_schema=False)
    async def page_script() -> Response:
        return Response(script, media_type="text/javascript")

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """ "ok", or "stale" with the reason when a newer generation of the index could not be opened."""
        problem = index.reader.problem
        return {"status": "stale", "problem": problem} if problem else {"status": "ok"}

    @app.get("/info", dependencies=[Depends(check_reads)])
    async def info() -> dict[str, Any]:
        """What the index holds (as `searchengine info` shows it), and what this server offers."""
        details = await _answer(index.reader.run(lambda engine: asdict(engine.info())))
        offered = [mode for mode in MODES.values() if details["keyword_index"] or "keyword" not in mode.sides]
        return {
            **details,
            "server": {
                "backend": index.encoder.backend,
                "precision": index.encoder.precision,
                "bulk_precision": index.encoder.bulk_precision,
                "modes": [mode.name for mode in offered],
                "mode_details": {mode.name: _mode_details(mode) for mode in offered},
                "default_mode": index.reader.default_mode,
                "rerank": list(index.rerank),
                "api_key_for": settings.api_key_for if settings.api_key else None,
                "limits": {
                    "k": MAX_K,
                    "queries": MAX_QUERIES,
                    "filters": MAX_FILTERS,
                    "documents": MAX_DOCUMENTS,
                    "embedding_inputs": MAX_EMBEDDING_INPUTS,
                    "body_bytes": settings.max_body_bytes,
                },
            },
        }

    @app.get("/search", response_model=QueryResult, dependencies=[Depends(check_reads)])
    async def search(
        q: Annotated[str, Query(description="What to search for.")],
        k: Annotated[int, Query(ge=1, le=MAX_K, description="Number of results.")] = 10,
        where: Annotated[list[str], Query(max_length=MAX_FILTERS, description="Filters FIELD OP VALUE.")] = [],  # noqa: B006
        mode: Annotated[ModeName | None, Query(description=MODE_FIELD_HELP)] = None,
        rerank: Annotated[str | None, Query(description="A cross-encoder the server was started with.")] = None,
        rerank_top: Annotated[int | None, Query(ge=1, le=MAX_K)] = None,
        min_score: Annotated[float | None, Query(allow_inf_nan=False, description=MIN_SCORE_HELP)] = None,
        highlight: Annotated[bool, Query(description=HIGHLIGHT_HELP)] = False,
    ) -> dict[str, Any]:
        """The k documents that best match `q`, best first (`searchengine query "q" --json`)."""
        return (await _search(index, [q], k, where, mode, rerank, rerank_top, min_score, highlight))[0]

    @app.post("/search", response_model=SearchResults, dependencies=[Depends(check_reads)])
    async def search_many(request: SearchRequest) -> dict[str, Any]:
        """Several queries with the same options, answered as one batch (`searchengine query --file --json`)."""
        results = await _search(
            index,
            request.queries,
            request.k,
            request.where,
            request.mode,
            request.rerank,
            request.rerank_top,
            request.min_score,
            request.highlight,
        )
        return {"results": results}

    @app.post("/documents", response_model=AddedOut, dependencies=[Depends(check_writes)])
    async def add_documents(request: DocumentsRequest) -> dict[str, Any]:
        """Add documents, or replace those whose `id_field` id is already stored (`searchengine add`)."""
        fields = JsonFields(request.text_field, request.title_field, request.id_field)
        documents = [
            document_from_record(record, f"document {number}", fields)
            for number, record in enumerate(request.documents, start=1)
        ]

        def add(engine: SearchEngine) -> dict[str, Any]:
            report = engine.add(documents, merge=False)
            return {**asdict(report), "index_size": len(engine)}

        answer = await _answer(index.writer.submit(add))
        index.writer.submit_background(lambda engine: engine.merge())  # off the request path
        return answer

    @app.delete("/documents/{document_id}", response_model=DeletedOut, dependencies=[Depends(check_writes)])
    async def delete_document(
        document_id: str,
        external: Annotated[bool, Query(description="The id is one given with id_field, not a number.")] = False,
    ) -> dict[str, Any]:
        """Delete one document by its id, or by its external id with ?external=true (`searchengine delete`)."""
        ids = [] if external else [_document_id(document_id)]

        def delete(engine: SearchEngine) -> dict[str, Any]:
            deleted = engine.delete(ids=ids, external_ids=[document_id] if external else [], merge=False)
            return {"deleted": deleted, "index_size": len(engine)}

        answer = await _answer(index.writer.submit(delete))
        index.writer.submit_background(lambda engine: engine.merge())
        return answer

    app.include_router(embeddings_router(index), dependencies=[Depends(check_reads)])
    return app


async def _search(
    index: ServedIndex,
    queries: list[str],
    k: int,
    where: list[str],
    mode: str | None,
    rerank: str | None,
    rerank_top: int | None,
    min_score: float | None,
    highlight: bool = False,
) -> list[dict[str, Any]]:
    for number, query in enumerate(queries, start=1):
        if not query.strip():
            which = "the query" if len(queries) == 1 else f"query {number}"
            raise SearchEngineError(f"{which} is empty; say what to search for")
    conditions_of(where)  # a filter that cannot be read fails here, before it waits in the queue
    if rerank_top is not None and rerank is None:
        raise SearchEngineError("rerank_top says how many candidates a cross-encoder rescores; add rerank=MODEL")
    if rerank is not None and rerank not in index.rerank:
        offered = f"only with {', '.join(index.rerank)}" if index.rerank else "with no cross-encoder"
        raise SearchEngineError(
            f"this server reranks {offered}, not {rerank!r}; start it with --rerank {rerank} to offer that one"
        )
    top = max(k, rerank_top or DEFAULT_RERANK_TOP) if rerank else None
    mode = mode or index.reader.default_mode
    options = SearchOptions(k, tuple(where), mode, rerank, top, min_score, highlight)
    results = await _answer(index.reader.search(queries, options))
    reranked = {"model": rerank, "top": top} if rerank else None
    return [result_record(query, mode, hits, reranked) for query, hits in zip(queries, results)]


def _mode_details(mode: RetrievalMode) -> dict[str, Any]:
    """How the search page offers a mode and what it shows of its hits."""
    return {
        "label": mode.label,
        "score_name": mode.score_name,
        "sides": list(mode.sides),
        "side_scores": list(mode.side_scores),
    }


async def _answer(future: Any) -> Any:  # noqa: ANN401 (a concurrent.futures.Future of any result)
    return await asyncio.wrap_future(future)


def _document_id(value: str) -> int:
    try:
        return int(value.removeprefix("#"))
    except ValueError:
        raise SearchEngineError(
            f"{value!r} is not a document id (a number); add ?external=true to delete by your own id"
        ) from None


def _key_check(key: str | None, guarded: str) -> Any:  # noqa: ANN401 (a FastAPI dependency)
    """A dependency that lets a request through when `key` is None or the request carries it."""

    async def check(authorization: Annotated[str | None, Header()] = None) -> None:
        if key is None:
            return
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not given:
            problem = f"this server needs an API key for {guarded}"
        elif not hmac.compare_digest(given.strip().encode(), key.encode()):
            problem = "the API key is wrong"
        else:
            return
        raise HTTPException(
            401, f"{problem}: send the header 'Authorization: Bearer KEY'", headers={"WWW-Authenticate": "Bearer"}
        )

    return check


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": _one_line(message)}, status_code=status, headers=headers)


def _refusal(exc: StarletteHTTPException) -> JSONResponse:
    return _error(exc.status_code, str(exc.detail), exc.headers)


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(SearchEngineError)
    async def user_error(_request: Request, exc: SearchEngineError) -> JSONResponse:
        status = 404 if isinstance(exc, UnknownDocumentError) else 409 if isinstance(exc, IndexLockedError) else 400
        return _error(status, str(exc))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        if "json" not in request.headers.get("content-type", "") and any(
            tuple(error.get("loc", ())) == ("body",) for error in exc.errors()
        ):
            return _error(400, "the request body must be JSON sent with the header 'Content-Type: application/json'")
        return _error(400, _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such endpoint: {request.method} {request.url.path}; the API is described at /docs"
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}; the API is described at /docs"
        return _error(exc.status_code, message, getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def internal_error(_request: Request, exc: Exception) -> JSONResponse:
        return _error(500, f"internal error ({type(exc).__name__}: {exc}); see the server's log")


def _validation_message(exc: RequestValidationError) -> str:
    """The first problem in one line, e.g. 'k: Input should be less than or equal to 1000'."""
    errors = exc.errors()
    first = errors[0]
    if first.get("type") == "json_invalid":
        return f"the request body is not valid JSON ({first.get('ctx', {}).get('error', first['msg'])})"
    place = ".".join(str(part) for part in first.get("loc", ()) if part not in ("body", "query", "path", "header"))
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{place or 'request'}: {first['msg']}{more}"
