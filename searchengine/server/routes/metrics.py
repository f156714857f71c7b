"""GET /metrics: the server's requests, latencies, searches by mode, and the index's documents, segments, merges
and queued writes, in Prometheus' text format (searchengine.server.metrics), with the API key of searches. On a
server of collections, GET /metrics covers every collection (its series labelled `collection`), and
GET /collections/NAME/metrics that one's; a scrape opens no collection and keeps none open."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from searchengine.errors import UnknownCollectionError
from searchengine.server.collections import Collections, checked_name
from searchengine.server.metrics import CONTENT_TYPE, ServerMetrics
from searchengine.server.state import Metrics, answer, check_reads

router = APIRouter(dependencies=[Depends(check_reads)])


@router.get("/metrics", response_class=Response)
async def metrics(request: Request, recorded: Metrics) -> Response:
    """Everything this server measures, for a Prometheus scrape."""
    collections = request.app.state.collections
    if collections is None:
        text = recorded.render(await answer(request.app.state.index.gauges()))
    else:
        text = await _collections_text(collections, recorded, request.path_params.get("collection"))
    return Response(text, media_type=CONTENT_TYPE)


async def _collections_text(collections: Collections, recorded: ServerMetrics, only: str | None) -> bytes:
    """The metrics of every collection, or of the collection `only` (UnknownCollectionError when there is none)."""
    documents = {name: manifest.count.documents for name, manifest in collections.manifests().items()}
    if only is not None and checked_name(only) not in documents:
        raise UnknownCollectionError(f"no collection named {only!r}; GET /collections lists them")
    with collections.held_open() as held:
        gauges = {name: await answer(index.gauges()) for name, index in held.items() if only in (None, name)}
    return recorded.render_collections(gauges, documents, only)
