"""BodyLimit on a real server (uvicorn, over a socket), not the test client: a body over the limit gets the 413 and
its one-line error, however it is sent. The server closed the connection on the body still coming, so the client's
socket failed first (connection reset, broken pipe) and searchengine.Client said the server could not be reached."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from searchengine.indexer.tables.documents import Document

from searchengine.errors import SearchEngineError
from searchengine.server.client import Client
from searchengine.server.limits import MAX_BODY_BYTES

OVER = b"x" * (MAX_BODY_BYTES + 2**20)
"""A body 1 MiB over the limit: past what a socket's buffers hold, so the refusal cannot ride on them."""
REFUSED = "the request body is larger than 8 MiB; send fewer documents or queries at once"


def _refusal(request: urllib.request.Request) -> tuple[int, str]:
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=60)
    return refused.value.code, json.loads(refused.value.read())["error"]


def test_a_body_over_the_limit_by_its_length_is_answered_413(live_url: str) -> None:
    for _ in range(2):  # the server answers the next request as before
        request = urllib.request.Request(live_url + "/documents", OVER, {"Content-Type": "application/json"})
        assert _refusal(request) == (413, REFUSED)


def test_a_body_streamed_past_the_limit_is_answered_413(live_url: str) -> None:
    def chunks() -> Iterator[bytes]:  # twice the limit: the refusal comes while much of it is still to be sent
        for _ in range(2 * MAX_BODY_BYTES // 2**20):
            yield OVER[: 2**20]

    headers = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
    request = urllib.request.Request(live_url + "/documents", chunks(), headers)
    assert _refusal(request) == (413, REFUSED)


def test_the_client_says_a_write_over_the_limit_is_too_large_not_that_the_server_is_unreachable(live_url: str) -> None:
    with pytest.raises(SearchEngineError) as refused:
        Client(live_url).add([Document("word " * (MAX_BODY_BYTES // 5 + 2**18), external_id="too-large")])
    assert REFUSED in str(refused.value) and "\n" not in str(refused.value)
    assert Client(live_url).add([Document("a small one", external_id="small")]).added == 1
