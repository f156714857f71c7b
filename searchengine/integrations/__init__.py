"""Adapters to other tools' interfaces, one module each, each imported only when used and needing its own extra:
an MCP server (`mcp_server`, searchengine[mcp]), a LangChain vector store (`langchain`, searchengine[langchain])
and a LlamaIndex vector store (`llamaindex`, searchengine[llamaindex])."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from searchengine.errors import SearchEngineError

T = TypeVar("T")


class MissingExtra(SearchEngineError, ImportError):
    """An integration's library is not installed: an ImportError to Python code, one line to the command line.
    Made from its message, as every SearchEngineError is (searchengine.Client raises the class a server names);
    `of` writes it."""

    @classmethod
    def of(cls, what: str, extra: str) -> MissingExtra:
        """The error for `what`, which needs the extra `extra`."""
        return cls(f"{what} needs the optional '{extra}' extra: pip install 'searchengine[{extra}]'")


def id_list(ids: Iterable[T]) -> list[T]:
    """`ids` as a list; a lone string is refused, where list() would read "abc" as the ids a, b and c (and a delete
    would remove those three documents)."""
    if isinstance(ids, (str, bytes)):
        raise SearchEngineError(f"give a list of ids, not the string {ids!r}; write [{ids!r}]")
    return list(ids)
