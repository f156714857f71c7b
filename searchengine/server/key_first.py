"""An ASGI middleware that checks the API key of a request with a body before the body is read: a request without
the right key gets 401 whatever its body holds (bad JSON included), and a large body with a wrong key is never
read or parsed. (FastAPI reads and parses a body before it runs a route's dependencies, the key check among them.)"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

KeyCheck = Callable[..., Awaitable[None]]
"""A FastAPI dependency `check(authorization=HEADER)` that raises HTTPException(401) without the right key."""

BODILESS = ("GET", "HEAD", "OPTIONS")


class KeyFirst:
    """Runs `check_for(method, path)` (the key check a request to that path needs, None for none) on the
    Authorization header of every request that may carry a body, and answers a refusal with `refuse(exc, path)`. The
    routes keep their own key dependency, which also guards the requests without a body."""

    def __init__(
        self,
        app: ASGIApp,
        check_for: Callable[[str, str], KeyCheck | None],
        refuse: Callable[[HTTPException, str], Response],
    ) -> None:
        self.app = app
        self.check_for = check_for
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in BODILESS:
            check = self.check_for(scope["method"], scope["path"])
            if check is not None:
                header = dict(scope["headers"]).get(b"authorization")
                try:
                    await check(authorization=None if header is None else header.decode("latin-1"))
                except HTTPException as exc:
                    await self.refuse(exc, scope["path"])(scope, receive, send)
                    return
        await self.app(scope, receive, send)
