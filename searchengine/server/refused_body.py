"""The body of a request refused before it was read (BodyLimit's 413, KeyFirst's 401), read and thrown away before
the refusal is sent, up to a bound. A server that answered while the client was still sending its body made the
client's socket fail first (connection reset, broken pipe), so urllib and searchengine.Client said the server could
not be reached. Past the bound the connection is closed on the body, as before: a refused client may not make the
server read without end."""

from __future__ import annotations

from starlette.types import Receive


def discardable(headers: dict[bytes, bytes], most: int) -> bool:
    """Whether a refused request's body is read and thrown away before the refusal: not when the client waits for
    `100 Continue` (curl's `Expect`: it sends no body once refused), nor when it declares more than `most` bytes."""
    if headers.get(b"expect", b"").lower() == b"100-continue":
        return False
    declared = headers.get(b"content-length")
    return declared is None or (declared.isdigit() and int(declared) <= most)


async def discard_body(receive: Receive, most: int) -> None:
    """Read what is left of the request body without keeping it, up to `most` bytes (or until the client goes)."""
    read = 0
    while read <= most:
        message = await receive()
        if message["type"] == "http.disconnect" or not message.get("more_body", False):
            return
        read += len(message.get("body", b""))
