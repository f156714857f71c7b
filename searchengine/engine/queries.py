"""The one check of what a search is asked for, made by the engine and, before a query waits in a queue, by the
server, the MCP tools and the CLI: each query is a non-empty str of valid Unicode."""

from __future__ import annotations

from collections.abc import Sequence

from searchengine.errors import SearchEngineError


def check_queries(queries: Sequence[object]) -> None:
    """Raise SearchEngineError naming the first query that is empty, not a str, or not valid Unicode."""
    from searchengine.indexer.tables.store import lone_surrogate  # not at import: the CLI imports this module to start

    for number, query in enumerate(queries, start=1):
        which = "the query" if len(queries) == 1 else f"query number {number}"
        if not isinstance(query, str) or not query.strip():
            shown = "is empty" if isinstance(query, str) else f"is a {type(query).__name__}, not a str"
            raise SearchEngineError(f"{which} {shown}; say what to search for")
        code = lone_surrogate(query)
        if code is not None:
            if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, kept by Python as a surrogate escape
                problem = f"the byte 0x{code - 0xDC00:02x}, which is not UTF-8; use a UTF-8 terminal or text"
            else:
                problem = f"a lone surrogate (\\u{code:04x}), half of a character; send valid Unicode"
            raise SearchEngineError(f"{which} holds {problem}")
