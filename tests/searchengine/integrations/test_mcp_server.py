"""`searchengine mcp` in a subprocess, driven by the MCP SDK's own stdio client: list the tools, search, add,
delete and info, and a bad call answered as a one-line tool error."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, MCPError
from mcp.client.stdio import StdioServerParameters, stdio_client

from searchengine.encoding.encoder import Encoder
from searchengine.engine.search_engine import SearchEngine
from tests.conftest import SENTENCES
from tests.searchengine.server.conftest import documents


@pytest.fixture
def index_path(tmp_path: Path, tiny_encoder: Encoder) -> Path:
    SearchEngine.build(documents(), tmp_path / "index", encoder=tiny_encoder).close()
    return tmp_path / "index"


async def _session_calls(index_path: Path) -> dict:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "searchengine", "mcp", "-d", str(index_path), "--precision", "fp32"],
        env=dict(os.environ),
    )
    answers: dict = {}
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        answers["tools"] = sorted(tool.name for tool in (await session.list_tools()).tools)
        answers["search"] = await session.call_tool("search", {"query": SENTENCES[1], "k": 3, "mode": "dense"})
        answers["filtered"] = await session.call_tool("search", {"query": "cat", "k": 12, "where": ["lang=en"]})
        answers["added"] = await session.call_tool(
            "add", {"documents": [{"text": "a brand new note about guitar music", "id": "n1"}], "id_field": "id"}
        )
        answers["found"] = await session.call_tool("search", {"query": "a brand new note about guitar music", "k": 1})
        answers["deleted"] = await session.call_tool("delete", {"external_ids": ["n1"]})
        answers["info"] = await session.call_tool("info", {})
        answers["bad"] = await session.call_tool("search", {"query": "cat", "where": ["year>>2"]})
        answers["unknown"] = await session.call_tool("delete", {"external_ids": ["never-added"]})
        answers["k_too_big"] = await session.call_tool("search", {"query": "cat", "k": 10**12})
        answers["no_query"] = await session.call_tool("search", {"k": 0})
        answers["misnamed"] = await session.call_tool("search", {"query": "cat", "filters": ["lang=de"]})
        answers["blank"] = await session.call_tool("search", {"query": "  ", "where": ["lang"]})  # QueryRequest's
        answers["k_as_text"] = await session.call_tool("search", {"query": "cat", "k": "3"})
        answers["where_as_text"] = await session.call_tool("search", {"query": "cat", "where": '["lang=en"]'})
        answers["resources"] = (await session.list_resources()).resources
        answers["templates"] = (await session.list_resource_templates()).resource_templates
        hit = _data(answers["search"])["hits"][0]
        answers["read"] = (await session.read_resource(f"searchengine://documents/{hit['id']}")).contents
        for name, uri in (
            ("unknown_resource", "searchengine://documents/999999"),
            ("odd", "searchengine://documents/x"),
        ):
            try:
                await session.read_resource(uri)
            except MCPError as exc:
                answers[name] = str(exc)
    return answers


def _data(result) -> dict:
    """The tool's answer as the client receives it: structured JSON (the text block holds the same)."""
    assert not result.is_error, result.content
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory, tiny_encoder: Encoder) -> dict:
    """One stdio session's answers (starting the server takes seconds), for the tests that read them."""
    path = tmp_path_factory.mktemp("mcp") / "index"
    SearchEngine.build(documents(), path, encoder=tiny_encoder).close()
    return asyncio.run(_session_calls(path))


def test_an_mcp_client_searches_adds_and_deletes(answers: dict) -> None:
    assert answers["tools"] == ["add", "delete", "info", "search"]
    hits = _data(answers["search"])["hits"]
    assert hits[0]["text"] == SENTENCES[1] and len(hits) == 3 and hits[0]["found_by"] == ["dense"]
    assert _data(answers["search"])["mode"] == "dense" and _data(answers["filtered"])["mode"] == "hybrid"
    filtered = _data(answers["filtered"])["hits"]
    assert filtered and {hit["metadata"]["lang"] for hit in filtered} == {"en"}
    assert _data(answers["added"])["added"] == 1 and _data(answers["added"])["index_size"] == len(SENTENCES) + 1
    assert _data(answers["found"])["hits"][0]["external_id"] == "n1"  # the write is seen by the next search
    assert _data(answers["deleted"])["index_size"] == len(SENTENCES)
    assert _data(answers["info"])["documents"] == len(SENTENCES)
    for bad in ("bad", "unknown", "k_too_big", "no_query", "misnamed", "blank"):
        assert answers[bad].is_error and len(answers[bad].content) == 1, (bad, answers[bad].content)
        assert "\n" not in answers[bad].content[0].text and "pydantic.dev" not in answers[bad].content[0].text
    assert answers["k_too_big"].content[0].text.endswith("k: Input should be less than or equal to 1000")
    assert "query: Field required (and 1 more problems)" in answers["no_query"].content[0].text
    assert "unknown argument 'filters'; search takes query, k, mode, where" in answers["misnamed"].content[0].text
    assert "year>>2" in answers["bad"].content[0].text
    assert "never-added" in answers["unknown"].content[0].text
    assert answers["blank"].content[0].text.endswith(": the query is empty; say what to search for")


def test_arguments_are_held_to_the_schema_and_documents_are_resources(answers: dict) -> None:
    """k "3" was read as 3 although the schema says integer; the documents were not offered as resources."""
    for refused, message in (("k_as_text", "k: Input should be a valid integer"), ("where_as_text", "where: Input")):
        assert answers[refused].is_error and answers[refused].content[0].text.startswith(message), answers[refused]
    listed = {resource.uri: resource for resource in answers["resources"]}
    assert len(listed) == len(SENTENCES) and {resource.name for resource in listed.values()} == {
        f"doc-{n}" for n in range(len(SENTENCES))
    }
    assert [template.uri_template for template in answers["templates"]] == ["searchengine://documents/{document_id}"]
    [content] = answers["read"]
    record = json.loads(content.text)
    assert content.mime_type == "application/json" and record["text"] == SENTENCES[1]
    assert record["external_id"] == "doc-1" and record["metadata"] == {"lang": "en", "year": 2001}
    assert listed[str(content.uri)].name == "doc-1" and record["source"] == "fixture.jsonl" and record["line"] == 2
    assert "no document has id '999999'" in answers["unknown_resource"] and "'x'" in answers["odd"]


@pytest.mark.parametrize("command", [["mcp"], ["serve", "--mcp"]])
def test_without_the_sdk_the_command_names_the_extra(index_path: Path, command: list[str]) -> None:
    hide_sdk = "import sys; sys.modules['mcp'] = None; from searchengine.cli import app; app()"
    result = subprocess.run(
        [sys.executable, "-c", hide_sdk, *command, "-d", str(index_path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "Error: searchengine mcp needs the optional 'mcp' extra: pip install 'searchengine[mcp]'"
    ]


def test_the_help_names_the_extra_whole() -> None:
    from typer.testing import CliRunner

    from searchengine.cli import app

    result = CliRunner().invoke(app, ["mcp", "--help"], terminal_width=200)
    assert result.exit_code == 0 and "pip install 'searchengine[mcp]'" in result.output


async def _http_search(url: str, key: str | None) -> list[str]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as client,
        streamable_http_client(f"{url}/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("search", {"query": SENTENCES[2], "k": 2, "mode": "dense"})
        return [hit["text"] for hit in _data(result)["hits"]]


def test_over_streamable_http_behind_an_api_key(index_path: Path, tiny_encoder: Encoder) -> None:
    import httpx

    from searchengine.integrations.mcp_server import mcp_http_app
    from searchengine.server.served_index import ServedIndex
    from tests.searchengine.server.conftest import running

    served = ServedIndex(index_path, encoder=tiny_encoder)
    try:
        with running(mcp_http_app(served, api_key="sesame")) as url:
            assert asyncio.run(_http_search(url, "sesame"))[0] == SENTENCES[2]
            refused = httpx.post(f"{url}/mcp", json={}, headers={"Authorization": "Bearer wrong"})
            assert refused.status_code == 401 and refused.json()["error"].startswith("the API key is wrong")
            assert httpx.post(f"{url}/mcp", json={}).status_code == 401
    finally:
        served.close()


def test_host_and_port_without_http_are_refused(index_path: Path) -> None:
    from typer.testing import CliRunner

    from searchengine.cli import app

    result = CliRunner().invoke(app, ["mcp", "-d", str(index_path), "--port", "9000"])
    assert result.exit_code == 1 and "--host and --port are for --http" in result.output


def test_serve_answers_mcp_beside_the_http_api_behind_its_key(index_path: Path, tiny_encoder: Encoder) -> None:
    """`serve --mcp`: the SDK's streamable HTTP at /mcp of the HTTP API's app, on the same served index."""
    import httpx

    from searchengine.integrations.mcp_server import add_mcp_route
    from searchengine.server.app import ServerSettings, create_app
    from searchengine.server.served_index import ServedIndex
    from tests.searchengine.server.conftest import running

    served = ServedIndex(index_path, encoder=tiny_encoder)
    try:
        app = create_app(served, ServerSettings(api_key="sesame"))
        add_mcp_route(app, served, api_key="sesame")
        with running(app) as url:
            assert asyncio.run(_http_search(url, "sesame"))[0] == SENTENCES[2]
            assert httpx.post(f"{url}/mcp", json={}).status_code == 401  # the tools write: the key guards them
            searched = httpx.get(f"{url}/search", params={"q": SENTENCES[2], "k": 1, "mode": "dense"})
            assert searched.status_code == 200 and SENTENCES[2] in searched.text  # the HTTP API, without a key
            assert httpx.get(f"{url}/nowhere").json()["error"].startswith("no such endpoint")
    finally:
        served.close()


def test_the_serve_command_offers_mcp_on_its_own_route(index_path: Path, tmp_path: Path) -> None:
    from tests.serving import serve_process

    with serve_process(["-d", str(index_path), "--mcp", "--precision", "fp32"], tmp_path / "serve.log") as url:
        assert asyncio.run(_http_search(url, None))[0] == SENTENCES[2]
    assert f"MCP at {url}/mcp" in (tmp_path / "serve.log").read_text()
