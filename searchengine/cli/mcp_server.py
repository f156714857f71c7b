"""`searchengine mcp`: one index as an MCP server, over stdio or streamable HTTP, for agents and chat clients (the
'mcp' extra)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import typer

from searchengine.cli.errors import user_errors
from searchengine.cli.options import (
    BackendOption,
    IndexDirOption,
    PrecisionOption,
    ThreadsOption,
    api_key_option,
    host_option,
    port_option,
)
from searchengine.errors import SearchEngineError


def mcp(
    index_dir: Path | None = IndexDirOption,
    http: bool = typer.Option(
        False, "--http", help="Serve over streamable HTTP at http://HOST:PORT/mcp instead of stdin and stdout."
    ),
    host: str = host_option("With --http: the address to listen on."),
    port: int = port_option(8001, "With --http: the port (0: any free one)."),
    api_key: str | None = api_key_option(
        "With --http: require 'Authorization: Bearer KEY' on every request (the tools can write); over stdio "
        "the client that starts the command is the only one it answers.",
    ),
    precision: str = PrecisionOption,
    backend: str = BackendOption,
    threads: int | None = ThreadsOption,
) -> None:
    """Serve an index to MCP clients (Claude Desktop, agents): tools search, add, delete and info.

    Over stdin and stdout by default: the client starts this command itself (docs/integrations.md shows its
    configuration). With --http, a server that clients connect to at http://HOST:PORT/mcp; Ctrl+C stops it.

    Needs the MCP SDK: pip install 'searchengine\\[mcp]' (the 'mcp' extra).

    Examples:

      searchengine mcp -d ~/indexes/notes

      searchengine mcp -d ~/indexes/notes --http --port 8001 --api-key "$(cat key.txt)"
    """
    from searchengine.encoding.speed import EncoderSpeed
    from searchengine.engine.search_engine import default_index_dir

    target = index_dir or default_index_dir()
    with user_errors(target):
        if api_key is not None and not api_key.strip():
            raise SearchEngineError("--api-key is empty (is $SEARCHENGINE_API_KEY set to nothing?); give a key")
        if not http and (host != "127.0.0.1" or port != 8001):
            raise SearchEngineError("--host and --port are for --http (over stdio the client starts the server)")
        from searchengine.integrations.mcp_server import mcp_http_app, mcp_server
        from searchengine.server.listener import is_loopback, listening_socket
        from searchengine.server.served_index import ServedIndex

        listener = listening_socket(host, port) if http else None
        try:
            with contextlib.redirect_stdout(sys.stderr):  # stdout may carry the protocol: loading prints nothing there
                index = ServedIndex(target, speed=EncoderSpeed(precision, backend, threads))
        except BaseException:
            if listener is not None:
                listener.close()
            raise
    try:
        if listener is None:
            mcp_server(index).run("stdio")
            return
        import uvicorn

        address, bound_port = listener.getsockname()[:2]
        url = f"http://{'[' + address + ']' if ':' in address else address}:{bound_port}/mcp"
        typer.echo(f"Serving {target} to MCP clients at {url}", err=True)
        if not is_loopback(host) and api_key is None:
            typer.echo(
                f"Warning: listening on {host} without --api-key: anyone who reaches it can add and delete.", err=True
            )
        app = mcp_http_app(index, host, api_key)
        try:
            uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5)).run(
                sockets=[listener]
            )
        except KeyboardInterrupt:
            typer.echo("Stopped.", err=True)
    finally:
        index.close()
        if listener is not None:
            listener.close()
