"""GET /health and GET /info: whether the index is current, what it holds and what this server offers."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Depends, Request

from searchengine.engine.mode_registry import MODES, RetrievalMode
from searchengine.server.limits import MAX_DOCUMENTS, MAX_EMBEDDING_INPUTS, MAX_FILTERS, MAX_K, MAX_QUERIES
from searchengine.server.served_index import ServedIndex
from searchengine.server.state import Index, Settings, answer, check_reads

router = APIRouter()


@router.get("/health")
def health(request: Request) -> dict[str, Any]:
    """ "ok", or "stale" with the reason when a newer generation of the index could not be opened; on a server of
    collections, that of the collection the path names (/collections/NAME/health), or "ok" for the server."""
    name = request.path_params.get("collection")
    if name is None and request.app.state.index is None:
        return {"status": "ok"}
    if name is None:
        return _health(request.app.state.index)
    with request.app.state.collections.opened(name) as index:
        return _health(index)


def _health(index: ServedIndex) -> dict[str, Any]:
    problem = index.reader.problem
    return {"status": "stale", "problem": problem} if problem else {"status": "ok"}


@router.get("/info", dependencies=[Depends(check_reads)])
async def info(index: Index, settings: Settings) -> dict[str, Any]:
    """What the index holds (as `searchengine info` shows it), and what this server offers."""
    details = await answer(index.reader.run(lambda engine: asdict(engine.info())))
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
            "readers": index.reader.readers,
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


def _mode_details(mode: RetrievalMode) -> dict[str, Any]:
    """How the search page offers a mode and what it shows of its hits."""
    return {
        "label": mode.label,
        "score_name": mode.score_name,
        "sides": list(mode.sides),
        "side_scores": list(mode.side_scores),
    }
