"""Adding a file format is two files: a module with an `extract(data, name)` function (here, the toy card format
below) and one line in searchengine.reading.formats. With them `searchengine index FOLDER` reads the new files
beside the built-in ones, with their title and metadata, and searches find them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.reading.extracted import Extracted
from searchengine.reading.formats import EXTRACTORS
from searchengine.reading.text import decoded


def extract_card(data: bytes, name: str) -> Extracted:
    """A card: `key: value` lines (its title and metadata), a blank line, then its paragraphs."""
    header, _, body = decoded(data, name).partition("\n\n")
    fields = dict(line.split(": ", 1) for line in header.splitlines())
    extracted = Extracted(title=fields.pop("title", None), metadata=fields)
    for paragraph in body.split("\n\n"):
        extracted.add_block(paragraph)
    return extracted


def test_a_registered_format_is_read_by_index_folder(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(EXTRACTORS, ".card", ("card", extract_card))  # the one line in reading/formats.py
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "piano.card").write_text(
        "title: Piano lessons\ncolour: blue\n\nscales every morning\n\nthen a song", encoding="utf-8"
    )
    (folder / "weather.txt").write_text("rain and snow in the city\n", encoding="utf-8")
    (folder / "ignored.unknown").write_text("not read\n", encoding="utf-8")
    runner = CliRunner()
    index = ["-d", str(tmp_path / "index")]
    result = runner.invoke(app, ["index", str(folder), *index, "--model", str(tiny_model), "-q"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["query", "scales", *index, "--mode", "keyword", "--json"])
    assert result.exit_code == 0, result.output
    hits = json.loads(result.output)["hits"]
    card = [hit for hit in hits if hit["metadata"].get("format") == "card"]
    assert len(card) == 1, hits
    assert card[0]["metadata"]["title"] == "Piano lessons" and card[0]["metadata"]["colour"] == "blue"
    assert card[0]["text"] == "scales every morning\n\nthen a song"
    everything = runner.invoke(app, ["query", "song rain", *index, "--mode", "keyword", "--json", "-k", "10"])
    formats = {hit["metadata"]["format"] for hit in json.loads(everything.output)["hits"]}
    assert formats == {"card", "text"}
