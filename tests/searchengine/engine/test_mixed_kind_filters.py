"""Issue 43's hostile repro: a field that holds a number in one document and text in others. A comparison with a
number matches only numbers in every mode (dense, keyword, hybrid) and through every front: the CLI, Python, HTTP
and MCP (SQLite orders every text above every number, so `year>=3000` returned the text years)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.engine.search_engine import SearchEngine
from searchengine.server.app import create_app
from searchengine.server.served_index import ServedIndex

MODES = ("dense", "keyword", "hybrid")
EXPECTED = {
    "year>=3000": [],
    "year>2019": ["a doc"],
    "year!=2020": [],
    "year<2020": [],
    "year<=2020": ["a doc"],
    "year=2020": ["a doc"],
    'year="2021"': ["b doc"],
    "year>=2020 or year=unknown": ["a doc", "c doc"],
}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    folder = tmp_path_factory.mktemp("mixed")
    corpus = folder / "corpus.jsonl"
    rows = [{"text": "a doc", "year": 2020}, {"text": "b doc", "year": "2021"}, {"text": "c doc", "year": "unknown"}]
    corpus.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    result = CliRunner().invoke(
        app, ["index", str(corpus), "-d", str(folder / "idx"), "--model", str(tiny_model), "-q"]
    )
    assert result.exit_code == 0, result.output
    return folder / "idx"


def _cli_texts(index_dir: Path, where: str, mode: str) -> list[str]:
    arguments = ["query", "doc", "-k", "10", "--json", "--mode", mode, "--where", where, "-d", str(index_dir)]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0, result.output
    return sorted(hit["text"] for hit in json.loads(result.stdout)["hits"])


@pytest.mark.parametrize("mode", MODES)
def test_the_cli_matches_numbers_with_numbers_only(index_dir: Path, mode: str) -> None:
    for where, expected in EXPECTED.items():
        assert _cli_texts(index_dir, where, mode) == expected, (where, mode)


def test_python_and_http_match_numbers_with_numbers_only(index_dir: Path) -> None:
    with SearchEngine.open(index_dir) as engine:
        for mode in MODES:
            for where, expected in EXPECTED.items():
                hits = engine.search("doc", k=10, where=[where], mode=mode)
                assert sorted(hit.text for hit in hits) == expected, (where, mode)
    served = ServedIndex(index_dir)
    try:
        with TestClient(create_app(served)) as client:
            for mode in MODES:
                for where, expected in EXPECTED.items():
                    response = client.get("/search", params={"q": "doc", "k": 10, "mode": mode, "where": where})
                    assert response.status_code == 200, response.text
                    assert sorted(hit["text"] for hit in response.json()["hits"]) == expected, (where, mode)
    finally:
        served.close()


async def _mcp_texts(index_dir: Path) -> dict[tuple[str, str], list[str]]:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "searchengine", "mcp", "-d", str(index_dir)], env=dict(os.environ)
    )
    found = {}
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for mode in MODES:
            for where in EXPECTED:
                result = await session.call_tool("search", {"query": "doc", "k": 10, "mode": mode, "where": [where]})
                assert not result.is_error, result.content
                found[where, mode] = sorted(hit["text"] for hit in result.structured_content["hits"])
    return found


def test_mcp_matches_numbers_with_numbers_only(index_dir: Path) -> None:
    found = asyncio.run(_mcp_texts(index_dir))
    assert found == {(where, mode): expected for mode in MODES for where, expected in EXPECTED.items()}
