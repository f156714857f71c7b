"""`searchengine collections list|create|delete|info` against a real server of collections (a uvicorn in a thread
serving `serve --collections FOLDER`'s app): output, --json, $SEARCHENGINE_SERVER and $SEARCHENGINE_API_KEY, and
the one-line errors of an unknown collection, an unreachable server and a key that may not create or delete."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result
from searchengine.indexer.tables.store import Document
from typer.testing import CliRunner

from searchengine import SearchEngine
from searchengine.cli import app
from searchengine.encoding.encoder import Encoder
from searchengine.server.app import ServerSettings, create_app
from searchengine.server.collection_keys import collection_keys
from searchengine.server.collections import Collections, served_collections
from searchengine.server.served_index import ServedIndex
from tests.conftest import SENTENCES
from tests.searchengine.server.conftest import running

runner = CliRunner()


def cli(*args: str, key: str | None = None, server: str | None = None) -> Result:
    """`searchengine ARGS`, with $SEARCHENGINE_API_KEY and $SEARCHENGINE_SERVER set to `key` and `server` (unset
    when None, whatever the shell running the tests has)."""
    return runner.invoke(app, list(args), env={"SEARCHENGINE_API_KEY": key, "SEARCHENGINE_SERVER": server})


def one_line_error(result: Result, *fragments: str) -> str:
    """The one-line error a refused command printed (exit code 1, no traceback), holding each fragment."""
    assert result.exit_code == 1, result.output
    message = result.output.strip()
    assert message.startswith("Error: ") and "\n" not in message and "Traceback" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    return message


@pytest.fixture
def held(tmp_path: Path, tiny_encoder: Encoder) -> Iterator[Collections]:
    """Two collections on the tiny model: "animals" (6 documents with ids) and "plants" (6)."""
    root = tmp_path / "collections"
    animals = [Document(text, external_id=f"a{n}") for n, text in enumerate(SENTENCES[:6])]
    SearchEngine.build(animals, root / "animals", encoder=tiny_encoder).close()
    SearchEngine.build(SENTENCES[6:], root / "plants", encoder=tiny_encoder).close()
    collections = served_collections(root, idle_close_s=None)
    yield collections
    collections.close()


def test_list_create_info_and_delete(held: Collections, tiny_model: Path, tiny_encoder: Encoder) -> None:
    with running(create_app(None, ServerSettings(), held)) as url:
        listed = cli("collections", "list", "--server", url)
        assert listed.exit_code == 0, listed.output
        assert listed.output.splitlines() == ["animals  6 documents", "plants   6 documents"]
        as_json = cli("collections", "list", "--json", server=url)  # the address from $SEARCHENGINE_SERVER
        assert json.loads(as_json.output) == {
            "collections": [{"name": "animals", "documents": 6}, {"name": "plants", "documents": 6}]
        }

        made = cli("collections", "create", "notes", "--model", str(tiny_model), "--server", url)
        assert made.exit_code == 0 and f"Created collection 'notes' at {url}" in made.output, made.output
        assert (held.folder / "notes").is_dir()
        assert {"name": "notes", "documents": 0} in json.loads(cli("collections", "list", "--json", server=url).output)[
            "collections"
        ]
        one_line_error(cli("collections", "create", "notes", server=url), "'notes' exists already")
        one_line_error(cli("collections", "create", ".hidden", server=url), "cannot name a collection")

        shown = cli("collections", "info", "animals", server=url)
        assert shown.exit_code == 0, shown.output
        lines = {line[:14].strip(): line[15:] for line in shown.output.splitlines()}
        assert lines["collection"] == "animals" and lines["documents"] == "6"
        assert lines["dimension"] == str(tiny_encoder.dimension)
        details = json.loads(cli("collections", "info", "notes", "--json", server=url).output)
        assert details["documents"] == 0 and details["dimension"] == tiny_encoder.dimension

        gone = cli("collections", "delete", "notes", "--server", url)
        assert gone.exit_code == 0 and "Deleted collection 'notes'" in gone.output, gone.output
        assert not (held.folder / "notes").exists()
        assert json.loads(cli("collections", "delete", "plants", "--json", server=url).output) == {"deleted": "plants"}
        assert cli("collections", "list", server=url).output.splitlines() == ["animals  6 documents"]
        for command in ("info", "delete"):
            one_line_error(
                cli("collections", command, "notes", server=url),
                f"the server at {url} has no collection named 'notes'",
                "searchengine collections list",
            )


def test_only_the_server_wide_key_creates_and_deletes(held: Collections, tiny_model: Path) -> None:
    keys = collection_keys({"animals": {"read": ["ra"], "read-write": ["wa"]}})
    with running(create_app(None, ServerSettings(api_key="admin", collection_keys=keys), held)) as url:
        for key in ("wa", "ra", None, "wrong"):
            refused = cli("collections", "create", "mine", "--model", str(tiny_model), key=key, server=url)
            one_line_error(refused, "API key", "set $SEARCHENGINE_API_KEY to the server's own key")
            one_line_error(cli("collections", "delete", "animals", key=key, server=url), "API key", "--api-key")
        assert not (held.folder / "mine").exists() and (held.folder / "animals").is_dir()
        # a collection's read key reads its own collection, and no other when that one has keys
        read = cli("collections", "info", "animals", key="ra", server=url)
        assert read.exit_code == 0 and "documents      6" in read.output, read.output
        one_line_error(cli("collections", "info", "animals", server=url), "API key", "a key it takes")
        made = cli("collections", "create", "mine", "--model", str(tiny_model), key="admin", server=url)
        assert made.exit_code == 0 and (held.folder / "mine").is_dir(), made.output
        assert cli("collections", "delete", "mine", key="admin", server=url).exit_code == 0
        assert not (held.folder / "mine").exists()


def test_a_server_it_cannot_use_is_one_line(tmp_path: Path, tiny_encoder: Encoder) -> None:
    one_line_error(cli("collections", "list"), "name the server", "--server", "$SEARCHENGINE_SERVER")
    one_line_error(
        cli("collections", "info", "news", "--server", "http://127.0.0.1:9"),
        "cannot reach a searchengine server at http://127.0.0.1:9",
        "serve --collections FOLDER",
    )
    one_line_error(cli("collections", "list", "--server", "127.0.0.1:8000"), "needs http://")
    SearchEngine.build(SENTENCES[:3], tmp_path / "one", encoder=tiny_encoder).close()
    index = ServedIndex(tmp_path / "one", encoder=tiny_encoder)
    try:
        with running(create_app(index, ServerSettings())) as url:
            one_line_error(cli("collections", "list", server=url), "serves one index, not collections")
    finally:
        index.close()


@pytest.mark.parametrize("command", ["list", "create", "delete", "info"])
def test_each_command_has_help_with_an_example(command: str) -> None:
    shown = runner.invoke(app, ["collections", command, "--help"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "searchengine collections " + command in shown.output, shown.output
    assert "--server" in shown.output and "SEARCHENGINE_SERVER" in shown.output
    group = runner.invoke(app, ["collections", "--help"], env={"COLUMNS": "200"}).output
    assert command in group and "serve --collections FOLDER" in group
