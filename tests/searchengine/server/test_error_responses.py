"""The status of each kind of error: the request's fault is 400, a full disk or a file the server may not write is
the server's to fix (507, 500), so a client or proxy does not take it for its own mistake."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from searchengine.indexer.errors import (
    IndexerError,
    IndexLockedError,
    StorageFullError,
    StoragePermissionError,
    UnknownDocumentError,
)

from searchengine.errors import SearchEngineError
from searchengine.server.error_responses import add_error_handlers


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (SearchEngineError("k must be 1 to 1000"), 400),
        (IndexerError("a filter names no field"), 400),
        (UnknownDocumentError("no document 7"), 404),
        (IndexLockedError("being written by process 12"), 409),
        (StorageFullError("no space left on device writing documents.db"), 507),
        (StoragePermissionError("cannot open the lock file .lock (Permission denied)"), 500),
    ],
)
def test_each_kind_of_error_has_its_status_and_one_line(error: SearchEngineError, status: int) -> None:
    app = FastAPI()
    add_error_handlers(app)

    @app.get("/fails")
    def fails() -> None:
        raise error

    answer = TestClient(app).get("/fails")
    assert answer.status_code == status
    assert answer.json() == {"error": str(error)}
