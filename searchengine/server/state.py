"""What every route shares, as FastAPI dependencies: the served index, the server's settings and its metrics (kept
on `app.state` by create_app), the API-key checks, and awaiting the reader's and writer's futures."""

from __future__ import annotations

import asyncio
import hmac
from typing import Annotated, Any

from fastapi import Depends, Header, HTTPException, Request

from searchengine.server.metrics import ServerMetrics
from searchengine.server.served_index import ServedIndex
from searchengine.server.settings import ServerSettings


def served_index(request: Request) -> ServedIndex:
    """The index this app answers for."""
    return request.app.state.index


def server_settings(request: Request) -> ServerSettings:
    """The settings this app was started with."""
    return request.app.state.settings


def server_metrics(request: Request) -> ServerMetrics:
    """The app's counters and histograms (GET /metrics shows them)."""
    return request.app.state.metrics


Index = Annotated[ServedIndex, Depends(served_index)]
Settings = Annotated[ServerSettings, Depends(server_settings)]
Metrics = Annotated[ServerMetrics, Depends(server_metrics)]


async def require_key(key: str | None, guarded: str, authorization: str | None = None) -> None:
    """Let a request through when `key` is None or its Authorization header carries it; else HTTPException(401)
    saying what is missing. KeyFirst runs it before a body is read, the routes' dependencies after."""
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


async def check_reads(settings: Settings, authorization: Annotated[str | None, Header()] = None) -> None:
    """The key check of searches, /info and the embeddings (a key only when it guards all)."""
    await require_key(settings.read_key, "searches", authorization)


async def check_writes(settings: Settings, authorization: Annotated[str | None, Header()] = None) -> None:
    """The key check of adds and deletes."""
    await require_key(settings.api_key, "writes", authorization)


async def answer(future: Any) -> Any:  # noqa: ANN401 (a concurrent.futures.Future of any result)
    """The result of a future of the reader or writer thread, awaited without blocking the event loop."""
    return await asyncio.wrap_future(future)
