"""GET /metrics: the server's requests, latencies, searches by mode, and the index's documents, segments, merges
and queued writes, in Prometheus' text format (searchengine.server.metrics), with the API key of searches."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import Response

from searchengine.server.metrics import CONTENT_TYPE
from searchengine.server.state import Index, Metrics, answer, check_reads

router = APIRouter(dependencies=[Depends(check_reads)])


@router.get("/metrics", response_class=Response)
async def metrics(index: Index, recorded: Metrics) -> Response:
    """Everything this server measures, for a Prometheus scrape."""
    return Response(recorded.render(await answer(index.gauges())), media_type=CONTENT_TYPE)
