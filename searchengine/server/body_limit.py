"""An ASGI middleware that refuses request bodies over a size limit with 413, without keeping them (what is left
of one is read and thrown away, so the client reads the 413), and keeps the body it read as `request.state.body`."""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from searchengine.server.error_responses import error_response
from searchengine.server.refused_body import discard_body, discardable

DISCARDED_BODIES = 8
"""How many limits' worth of a refused body is read and thrown away before the 413 is sent (refused_body.py: so
the client reads the 413, not a reset connection); a body declared larger is not read, and one that streams past it
is cut off."""


class BodyLimit:
    """Reads each request body up to `max_bytes` and hands it on; a larger one (by its Content-Length, or as it
    streams in) gets 413 and a one-line JSON error (searchengine.server.error_responses)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send, more=discardable(headers, DISCARDED_BODIES * self.max_bytes))
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(scope, receive, send, more=message.get("more_body", False))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        whole = b"".join(chunks)
        scope.setdefault("state", {})["body"] = whole  # request.state.body: what an error handler may look at again
        body: dict[str, Any] | None = {"type": "http.request", "body": whole, "more_body": False}

        async def replay() -> Message:
            nonlocal body
            if body is None:
                return await receive()  # after the body: wait for the client to go away
            message, body = body, None
            return message

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, *, more: bool) -> None:
        if more:  # what is left of the body is read first, and thrown away
            await discard_body(receive, DISCARDED_BODIES * self.max_bytes)
        megabytes = self.max_bytes / (1024 * 1024)
        message = f"the request body is larger than {megabytes:g} MiB; send fewer documents or queries at once"
        response = error_response(413, message, {"Connection": "close"}, scope["path"])
        await response(scope, receive, send)
