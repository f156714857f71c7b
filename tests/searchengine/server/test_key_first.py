"""KeyFirst on a real server (uvicorn, over a socket), not the test client: a wrong key with a large body gets its
401 and searchengine.Client its ApiKeyError. KeyFirst refused before reading the body, so the server answered
while the client was still sending, the client's socket failed first (connection reset, broken pipe) and Client
said the server could not be reached. Then how much of a refused body KeyFirst reads, at most, on its own."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from searchengine.indexer.tables.documents import Document

from searchengine.errors import ApiKeyError
from searchengine.server.app import create_app
from searchengine.server.client import Client
from searchengine.server.error_responses import refusal
from searchengine.server.key_first import KeyFirst
from searchengine.server.limits import MAX_BODY_BYTES
from searchengine.server.served_index import ServedIndex
from searchengine.server.settings import ServerSettings
from searchengine.server.state import require_key
from tests.searchengine.server.conftest import running

LARGE = b"x" * (MAX_BODY_BYTES - 2**10)
"""A body just under the limit: one the server would take with the right key, past what a socket's buffers hold."""
WRONG = "the API key is wrong: send the header 'Authorization: Bearer KEY'"


@pytest.fixture
def keyed_url(served: ServedIndex) -> Iterator[str]:
    with running(create_app(served, ServerSettings(api_key="s3cret", api_key_for="all"))) as url:
        yield url


@pytest.mark.parametrize("path", ["/documents", "/search", "/v1/embeddings"])
def test_a_wrong_key_with_a_large_body_is_answered_401(keyed_url: str, path: str) -> None:
    headers = {"Content-Type": "application/json", "Authorization": "Bearer nope"}
    for _ in range(2):  # the server answers the next request on as before
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(keyed_url + path, LARGE, headers), timeout=60)
        error = json.loads(refused.value.read())["error"]
        assert refused.value.code == 401 and WRONG in str(error), error


def test_the_client_says_its_key_is_wrong_not_that_the_server_is_unreachable(keyed_url: str) -> None:
    text = "word " * (MAX_BODY_BYTES // 5 - 2**12)
    with pytest.raises(ApiKeyError, match="the API key is wrong"):
        Client(keyed_url, api_key="nope").add([Document(text, external_id="large")])
    assert Client(keyed_url, api_key="s3cret").add([Document("a small one", external_id="small")]).added == 1


async def _refused(headers: dict[bytes, bytes], body: int, most: int = 1000) -> tuple[int, list[int]]:
    """KeyFirst (at most `most` bytes of a refused body read) refusing a request without a key whose body of `body`
    bytes comes in chunks of 100: how many bytes it read, and the statuses it sent."""
    read, sent = 0, []

    async def receive() -> dict[str, Any]:
        nonlocal read
        chunk = min(100, body - read)
        read += chunk
        return {"type": "http.request", "body": b"x" * chunk, "more_body": read < body}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            sent.append(message["status"])

    async def never(*_: Any) -> None:  # noqa: ANN401 (an ASGI app's arguments)
        raise AssertionError("a refused request reached the app")

    check = lambda _method, _path: lambda authorization: require_key("s3cret", "writes", authorization)  # noqa: E731
    scope = {"type": "http", "method": "POST", "path": "/documents", "headers": list(headers.items())}
    await KeyFirst(never, check, refusal, discard_bytes=most)(scope, receive, send)
    return read, sent


async def test_a_refused_body_is_read_up_to_the_bound_and_no_further() -> None:
    assert await _refused({b"content-length": b"900"}, 900) == (900, [401])
    assert await _refused({}, 5000) == (1100, [401])  # streamed: read until past the bound, then the 401
    assert await _refused({b"content-length": b"5000"}, 5000) == (0, [401])  # declared over it: none read
    assert await _refused({b"content-length": b"900", b"expect": b"100-continue"}, 900) == (0, [401])
