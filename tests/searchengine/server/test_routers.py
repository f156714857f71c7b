"""Adding an HTTP endpoint is two files: a router module under searchengine/server/routes/ (here, the toy router
below, built on the dependencies every route shares) and one entry in ROUTERS of searchengine.server.app. With
them the app answers it, behind the same API-key check as the built-in reads."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import APIRouter, Depends
from fastapi.testclient import TestClient

from searchengine.server import app as server_app
from searchengine.server.app import ROUTERS, ServerSettings, create_app
from searchengine.server.served_index import ServedIndex
from searchengine.server.state import Index, answer, check_reads
from tests.conftest import SENTENCES

router = APIRouter()


@router.get("/count", dependencies=[Depends(check_reads)])
async def count(index: Index) -> dict[str, Any]:
    """How many documents the index holds."""
    return {"documents": await answer(index.reader.run(lambda engine: engine.info().documents))}


def test_a_mounted_router_answers(served: ServedIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_app, "ROUTERS", (*ROUTERS, router))  # the one entry in searchengine/server/app.py
    with TestClient(create_app(served)) as client:
        assert client.get("/count").json() == {"documents": len(SENTENCES)}
        assert client.get("/health").json() == {"status": "ok"}
    with TestClient(create_app(served, ServerSettings(api_key="secret", api_key_for="all"))) as client:
        assert client.get("/count").status_code == 401
        assert client.get("/count", headers={"Authorization": "Bearer secret"}).status_code == 200
