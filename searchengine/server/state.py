"""What every route shares, as FastAPI dependencies: the served index, the server's settings and its metrics (kept
on `app.state` by create_app), the API-key checks, and awaiting the reader's and writer's futures."""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Annotated, Any

from fastapi import Depends, Header, HTTPException, Request
from fastapi.concurrency import contextmanager_in_threadpool

from searchengine.errors import UnknownCollectionError
from searchengine.server.metrics import ServerMetrics
from searchengine.server.served_index import ServedIndex
from searchengine.server.settings import ServerSettings


async def served_index(request: Request) -> AsyncIterator[ServedIndex]:
    """The index a request is for: the collection its path names (/collections/NAME/...), kept open while it is
    answered, else the one index this app answers for. A coroutine, as the other dependencies of the routes are:
    FastAPI runs a plain function on a worker thread, one hop each; only a collection is opened (which may load
    its model) and let go on one."""
    async with _index_for(request) as index:
        yield index


async def named_or_one_index(request: Request) -> AsyncIterator[ServedIndex | None]:
    """As served_index, but None for a request to a server of collections that names none (its /v1/models,
    /v1/embeddings and /metrics answer for the server as a whole)."""
    if request.app.state.index is None and request.path_params.get("collection") is None:
        yield None
        return
    async with _index_for(request) as index:
        yield index


def _index_for(request: Request) -> AbstractAsyncContextManager[ServedIndex]:
    """served_index's index, held for an `async with`: the collection opened and let go on a worker thread."""
    name = request.path_params.get("collection")
    if name is not None:
        return contextmanager_in_threadpool(request.app.state.collections.opened(name))
    if request.app.state.index is None:
        raise UnknownCollectionError(
            "this server holds collections: name one, as in /collections/NAME/search (GET /collections lists them)"
        )
    return nullcontext(request.app.state.index)


async def server_settings(request: Request) -> ServerSettings:
    """The settings this app was started with."""
    return request.app.state.settings


async def server_metrics(request: Request) -> ServerMetrics:
    """The app's counters and histograms (GET /metrics shows them)."""
    return request.app.state.metrics


Index = Annotated[ServedIndex, Depends(served_index)]
MaybeIndex = Annotated[ServedIndex | None, Depends(named_or_one_index)]
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


async def check_reads(
    request: Request, settings: Settings, authorization: Annotated[str | None, Header()] = None
) -> None:
    """The key check of searches, /info and the embeddings (a key only when it guards all, or the collection has
    keys)."""
    await require_access(settings, request.path_params.get("collection"), False, authorization)


async def check_writes(
    request: Request, settings: Settings, authorization: Annotated[str | None, Header()] = None
) -> None:
    """The key check of adds and deletes."""
    await require_access(settings, request.path_params.get("collection"), True, authorization)


async def require_access(settings: ServerSettings, collection: str | None, writes: bool, authorization: str | None) -> None:
    """Let a request through to `collection` (None: the server's one index, or the server as a whole) with the
    server-wide key its use needs, or, for a collection with keys of its own, one of them (a read-write one to
    write); else HTTPException(401). A collection's key opens no other collection."""
    server_key, guarded = (settings.api_key, "writes") if writes else (settings.read_key, "searches")
    own = settings.collection_keys.get(collection, {}) if collection is not None else {}
    if not own:
        await require_key(server_key, guarded, authorization)
        return
    scheme, _, given = (authorization or "").partition(" ")
    given = given.strip() if scheme.lower() == "bearer" else ""
    admin = settings.api_key  # the server-wide key opens every collection, for reads too
    if given and admin is not None and hmac.compare_digest(given.encode(), admin.encode()):
        return
    for key, may_write in own.items():
        if given and hmac.compare_digest(given.encode(), key.encode()):
            if may_write or not writes:
                return
            problem = f"this key of collection {collection!r} is read-only"
            break
    else:
        problem = f"collection {collection!r} needs one of its API keys" if not given else "the API key is wrong"
    raise HTTPException(
        401, f"{problem}: send the header 'Authorization: Bearer KEY'", headers={"WWW-Authenticate": "Bearer"}
    )


async def answer(future: Any) -> Any:  # noqa: ANN401 (a concurrent.futures.Future of any result)
    """The result of a future of the reader or writer thread, awaited without blocking the event loop."""
    return await asyncio.wrap_future(future)
