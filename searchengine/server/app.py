"""The FastAPI app over a ServedIndex: one router per resource (searchengine.server.routes: search, documents, info,
embeddings, metrics and the search page), sharing the index, the settings, the metrics and the API-key checks as
dependencies (searchengine.server.state), with every error in one line (searchengine.server.error_responses)."""

from __future__ import annotations

import re
from functools import partial

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from searchengine.server.body_limit import BodyLimit
from searchengine.server.collections import Collections
from searchengine.server.error_responses import add_error_handlers, refusal
from searchengine.server.key_first import KeyCheck, KeyFirst
from searchengine.server.metrics import RequestMetrics, ServerMetrics
from searchengine.server.models import ErrorOut
from searchengine.server.routes import collections as collections_routes
from searchengine.server.routes import document_lookup, documents, embeddings, info, metrics, page, search
from searchengine.server.served_index import ServedIndex
from searchengine.server.settings import ServerSettings
from searchengine.server.state import require_access, require_key

ROUTERS = (
    page.router,
    info.router,
    search.router,
    documents.router,
    document_lookup.router,
    embeddings.router,
    metrics.router,
)
COLLECTION_ROUTERS = (
    info.router, search.router, documents.router, document_lookup.router, embeddings.router, metrics.router
)
"""The one-index routes each collection answers under /collections/NAME."""
COLLECTION_PATH = re.compile(r"/collections/(?P<collection>[^/]+)(?P<rest>/.*)")


def create_app(
    index: ServedIndex | None, settings: ServerSettings = ServerSettings(), collections: Collections | None = None
) -> FastAPI:
    """The app answering for `index`, or for the `collections` of a server of many (each under /collections/NAME);
    the caller closes them when the server stops."""
    app = FastAPIOffline(  # /docs and /redoc with their scripts served from the package, not a CDN: they work offline
        title="searchengine",
        summary="Semantic search over one index directory: the options of `searchengine query`, `add` and `delete`.",
        responses={400: {"model": ErrorOut}},
    )
    app.state.index = index
    app.state.settings = settings
    app.state.collections = collections
    app.state.metrics = ServerMetrics(per_collection=collections is not None)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    add_error_handlers(app)
    # Added last, so it runs first: the key is checked before BodyLimit reads a body and FastAPI parses it. A refused
    # body is read and thrown away up to one limit's worth, the largest the server would take with the key: an
    # unauthenticated client makes the server read no more than any client may, and one larger is cut off.
    app.add_middleware(
        KeyFirst, check_for=partial(_key_check_for, settings), refuse=refusal, discard_bytes=settings.max_body_bytes
    )
    app.add_middleware(RequestMetrics, metrics=app.state.metrics)  # outermost: refusals are counted too
    for router in ROUTERS:
        app.include_router(router)
    app.include_router(collections_routes.router)
    if collections is not None:
        for router in COLLECTION_ROUTERS:
            app.include_router(router, prefix="/collections/{collection}")
    return app


def _key_check_for(settings: ServerSettings, _method: str, path: str) -> KeyCheck:
    """The key check a request with a body to `path` needs: the write key under /documents, else the read key;
    under /collections/NAME, those of that collection (its own keys, or the server's), and the server's write key
    to create a collection."""
    named = COLLECTION_PATH.fullmatch(path)
    if named is not None:
        writes = named["rest"].startswith("/documents")
        return partial(require_access, settings, named["collection"], writes)
    if path.startswith(("/documents", "/collections")):
        return partial(require_key, settings.api_key, "writes")
    return partial(require_key, settings.read_key, "searches")
