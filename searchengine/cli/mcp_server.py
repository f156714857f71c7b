"""`searchengine mcp`: one index as an MCP server over stdio, for agents and chat clients (the 'mcp' extra)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from searchengine.cli.errors import user_errors
from searchengine.cli.options import BackendOption, IndexDirOption, PrecisionOption, ThreadsOption


def mcp(
    index_dir: Path | None = IndexDirOption,
    precision: str = PrecisionOption,
    backend: str = BackendOption,
    threads: int | None = ThreadsOption,
) -> None:
    """Serve an index to an MCP client (Claude Desktop, an agent) over stdin and stdout: tools search, add, delete
    and info. The client starts this command itself; docs/integrations.md shows its configuration.

    Needs the MCP SDK: pip install 'searchengine\\[mcp]' (the 'mcp' extra).

    Examples:

      searchengine mcp -d ~/indexes/notes
    """
    from searchengine.encoding.encoder import EncoderSpeed
    from searchengine.engine.search_engine import default_index_dir

    target = index_dir or default_index_dir()
    with user_errors(target):
        from searchengine.integrations.mcp_server import mcp_server
        from searchengine.server.served_index import ServedIndex

        with contextlib.redirect_stdout(sys.stderr):  # stdout carries the protocol: loading a model prints nothing there
            index = ServedIndex(target, speed=EncoderSpeed(precision, backend, threads))
    try:
        mcp_server(index).run("stdio")
    finally:
        index.close()
