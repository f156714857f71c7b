"""Each integration imported without its library: an ImportError (and SearchEngineError) of one line naming the
extra to install; and the core package never imports any of them."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("module", "library", "extra"),
    [
        ("searchengine.integrations.langchain", "langchain_core", "langchain"),
        ("searchengine.integrations.llamaindex", "llama_index", "llamaindex"),
        ("searchengine.integrations.mcp_server", "mcp", "mcp"),
    ],
)
def test_a_missing_library_names_its_extra(module: str, library: str, extra: str) -> None:
    script = (
        f"import sys; sys.modules[{library!r}] = None\n"
        "from searchengine.errors import SearchEngineError\n"
        f"try:\n    import {module}\n"
        "except ImportError as exc:\n    assert isinstance(exc, SearchEngineError); print(exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith(f"needs the optional '{extra}' extra: pip install 'searchengine[{extra}]'")


def test_the_core_imports_no_integration_library() -> None:
    script = (
        "import sys, searchengine.cli, searchengine.server.app, searchengine.engine.search_engine\n"
        "print(sorted(m for m in ('mcp', 'langchain_core', 'llama_index', 'openai') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
