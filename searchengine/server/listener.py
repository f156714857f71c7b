"""The server's listening socket, made before uvicorn starts: a busy port is one clear error, port 0 picks a free
one, and clients that connect while the model loads wait in the backlog instead of being refused."""

from __future__ import annotations

import ipaddress
import os
import socket

from searchengine.errors import SearchEngineError


def listening_socket(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """A TCP socket listening on host:port. Made with IPPROTO_TCP named, so that asyncio sets TCP_NODELAY on the
    connections it accepts (it checks the protocol number): without it, each response waits for the client's
    delayed ACK (Nagle's algorithm), measured in docs/benchmarks.md#what-made-these-numbers."""
    if not host.strip():  # bind("") listens on every interface: not what an empty value asks for
        raise SearchEngineError(
            "--host is empty, which would listen on every interface; give an address: 127.0.0.1 for this machine "
            "only, 0.0.0.0 for every interface"
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(backlog)
    except OSError as exc:
        listener.close()
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise SearchEngineError(f"cannot listen on {host}:{port} ({reason}); choose another --port or --host") from None
    return listener


EVERY_INTERFACE = frozenset({"0.0.0.0", "::"})
"""Hosts a server listens on to take connections on every interface, which no client can connect to by that name."""


def http_url(host: str, port: int, every_interface_as: str | None = None) -> str:
    """http://HOST:PORT, an IPv6 address in brackets as URLs write it; a host of EVERY_INTERFACE written as
    `every_interface_as` where given (an address a client can reach that server at)."""
    if every_interface_as is not None and host in EVERY_INTERFACE:
        host = every_interface_as
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def is_loopback(host: str) -> bool:
    """Whether `host` reaches this machine only (127.0.0.1, ::1, localhost): elsewhere a server warns without a key."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
