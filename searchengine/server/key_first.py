"""An ASGI middleware that checks the API key of a request with a body before the body is used: a request without
the right key gets 401 whatever its body holds (bad JSON included), and a body with a wrong key is never kept or
parsed, only read and thrown away up to a bound so the client reads its 401 (refused_body.py). (FastAPI reads and
parses a body before it runs a route's dependencies, the key check among them.)"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from searchengine.server.refused_body import discard_body, discardable

KeyCheck = Callable[..., Awaitable[None]]
"""A FastAPI dependency `check(authorization=HEADER)` that raises HTTPException(401) without the right key."""

BODILESS = ("GET", "HEAD", "OPTIONS")


class KeyFirst:
    """Runs `check_for(method, path)` (the key check a request to that path needs, None for none) on the
    Authorization header of every request that may carry a body, and answers a refusal with `refuse(exc, path)`,
    once it has read and thrown away at most `discard_bytes` of the body (one that is declared larger is not read,
    and the connection is closed on it). The routes keep their own key dependency, which also guards the requests
    without a body."""

    def __init__(
        self,
        app: ASGIApp,
        check_for: Callable[[str, str], KeyCheck | None],
        refuse: Callable[[HTTPException, str], Response],
        discard_bytes: int,
    ) -> None:
        self.app = app
        self.check_for = check_for
        self.refuse = refuse
        self.discard_bytes = discard_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in BODILESS:
            check = self.check_for(scope["method"], scope["path"])
            if check is not None:
                header = dict(scope["headers"]).get(b"authorization")
                try:
                    await check(authorization=None if header is None else header.decode("latin-1"))
                except HTTPException as exc:
                    if discardable(dict(scope["headers"]), self.discard_bytes):
                        await discard_body(receive, self.discard_bytes)
                    await self.refuse(exc, scope["path"])(scope, receive, send)
                    return
        await self.app(scope, receive, send)
