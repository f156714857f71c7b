"""Adapters to other tools' interfaces, one module each, each imported only when used and needing its own extra:
an MCP server (`mcp_server`, searchengine[mcp]), a LangChain vector store (`langchain`, searchengine[langchain])
and a LlamaIndex vector store (`llamaindex`, searchengine[llamaindex])."""

from __future__ import annotations

from searchengine.errors import SearchEngineError


class MissingExtra(SearchEngineError, ImportError):
    """An integration's library is not installed: an ImportError to Python code, one line to the command line."""

    def __init__(self, what: str, extra: str) -> None:
        super().__init__(f"{what} needs the optional '{extra}' extra: pip install 'searchengine[{extra}]'")
