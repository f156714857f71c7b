"""A small client for a running `searchengine serve` (standard library only, so it starts fast): what
`searchengine query --server URL` uses."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from searchengine.errors import SearchEngineError


def search_remote(
    server: str,
    queries: list[str],
    k: int = 10,
    where: list[str] | None = None,
    rerank: str | None = None,
    rerank_top: int | None = None,
    mode: str | None = None,
    api_key: str | None = None,
    timeout: float = 120.0,
    min_score: float | None = None,
    highlight: bool = False,
    rescore: int | None = None,
) -> list[dict[str, Any]]:
    """POST /search on `server` (e.g. http://127.0.0.1:8000): one {"query", "mode", "rerank", "hits"} per query
    (`mode` None: the server's default; `min_score`, `highlight` and `rescore` as SearchEngine.search's).

    api_key: sent as a bearer token; None reads $SEARCHENGINE_API_KEY. Problems (unreachable server, a 4xx
    answer) raise SearchEngineError with the server's one-line message."""
    base = _checked_address(server)
    body = {
        "queries": queries,
        "k": k,
        "where": where or [],
        "mode": mode,
        "rerank": rerank,
        "rerank_top": rerank_top,
        "min_score": min_score,
        "highlight": highlight,
        **({"rescore": rescore} if rescore is not None else {}),
    }
    headers = {"Content-Type": "application/json"}
    key = api_key if api_key is not None else os.environ.get("SEARCHENGINE_API_KEY")
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(f"{base}/search", json.dumps(body).encode("utf-8"), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer = response.read()
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read())["error"]
        except (ValueError, KeyError, TypeError):
            message = f"{exc.code} {exc.reason}"
        raise SearchEngineError(f"the server at {base} says: {message}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise SearchEngineError(
            f"cannot reach a searchengine server at {base} ({reason}); start one with `searchengine serve` "
            "or drop --server (and $SEARCHENGINE_SERVER)"
        ) from None
    try:
        results = json.loads(answer)["results"]
        if isinstance(results, list) and all(isinstance(result, dict) for result in results):
            return results
    except (ValueError, KeyError, TypeError):
        pass
    raise SearchEngineError(
        f"{base} did not answer as a searchengine server (POST /search gave no results list): check the address, "
        "which a `searchengine serve` prints when it starts"
    )


def _checked_address(server: str) -> str:
    """`server` without a trailing slash, refused with one line unless it is an http(s) URL with a host and, if
    any, a numeric port (urllib would raise ValueError or http.client.InvalidURL only when it connects)."""
    base = server.rstrip("/")
    example = "write it as http://HOST:PORT, e.g. http://127.0.0.1:8000 or http://[::1]:8000"
    if not base.startswith(("http://", "https://")):
        raise SearchEngineError(f"the server address {server!r} needs http:// or https://; {example}")
    try:
        parts = urllib.parse.urlsplit(base)
        parts.port  # noqa: B018 (reading it checks the port: a ValueError when it is not a number from 0 to 65535)
    except ValueError as exc:
        raise SearchEngineError(f"the server address {server!r} is not a valid URL ({exc}); {example}") from None
    if not parts.hostname:
        raise SearchEngineError(f"the server address {server!r} names no host; {example}")
    return base
