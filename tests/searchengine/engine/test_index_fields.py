"""Indexes on metadata fields through the engine and `searchengine filter-index`: made and dropped in a commit
that readers pick up, kept up to date by later adds, and the same hits with and without them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from searchengine.indexer.tables.store import Document
from typer.testing import CliRunner

from searchengine import BuildSettings, SearchEngine, SearchEngineError
from searchengine.cli import app
from searchengine.encoding.encoder import Encoder

TOPICS = ["cat", "dog", "rain", "snow", "bread", "soup", "piano", "guitar"]
WHERE = [["lang=fr"], ["year>=2004", "lang=en"], ["year in 2001,2007"], ["lang=de"]]


def _documents(start: int, count: int) -> list[Document]:
    return [
        Document(
            f"{TOPICS[i % 8]} {TOPICS[(i * 3) % 8]} note {i}",
            metadata={"year": 2000 + i % 10, "lang": ["en", "fr", "de"][i % 3]},
            external_id=f"doc-{i}",
        )
        for i in range(start, start + count)
    ]


def _hits(engine: SearchEngine) -> list[list[tuple[int, str]]]:
    return [
        [(hit.id, hit.text) for hit in engine.search("cat dog note", k=5, where=where, mode=mode)]
        for where in WHERE
        for mode in ("dense", "keyword")
    ]


def test_indexed_fields_give_the_same_hits_and_follow_later_adds(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = SearchEngine.build(_documents(0, 40), tmp_path / "idx", BuildSettings(index="Flat"), encoder=tiny_encoder)
    before = _hits(engine)
    assert engine.index_fields(["year", "lang"]) == ["year", "lang"]
    assert engine.indexed_fields() == ["lang", "year"]
    assert _hits(engine) == before
    other = SearchEngine.open(tmp_path / "idx", encoder=tiny_encoder)  # another process's view of the same index
    assert other.indexed_fields() == ["lang", "year"]
    engine.add(_documents(40, 20))
    assert other.refresh()
    assert _hits(other) == _hits(engine)
    assert {hit.metadata["lang"] for hit in other.search("note 55", k=60, where=["lang=de"])} == {"de"}
    assert len(other.documents(where=["lang=de", "year=2005"])) == len(
        [i for i in range(60) if i % 3 == 2 and i % 10 == 5]
    )
    assert engine.index_fields(["lang"], drop=True) == ["lang"]
    assert engine.indexed_fields() == ["year"]
    with pytest.raises(SearchEngineError, match="as a list"):
        engine.index_fields("year")


def test_the_command_indexes_reports_and_drops(tmp_path: Path, tiny_model: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"text": d.text, **d.metadata}) + "\n" for d in _documents(0, 12)), encoding="utf-8"
    )
    runner = CliRunner()
    target = tmp_path / "idx"
    assert (
        runner.invoke(app, ["index", str(corpus), "-d", str(target), "--model", str(tiny_model), "-q"]).exit_code == 0
    )
    made = runner.invoke(app, ["filter-index", "year", "lang", "-d", str(target)])
    assert made.exit_code == 0, made.output
    assert made.stdout.splitlines() == ["Indexed year, lang.", "Indexed fields: lang, year."]
    again = runner.invoke(app, ["filter-index", "year", "-d", str(target)])
    assert again.stdout.splitlines() == ["Already indexed: year.", "Indexed fields: lang, year."]
    dropped = runner.invoke(app, ["filter-index", "lang", "colour", "--drop", "-d", str(target)])
    assert dropped.stdout.splitlines() == [
        "Dropped the index on lang.",
        "Not indexed: colour.",
        "Indexed fields: year.",
    ]
    refused = runner.invoke(app, ["filter-index", "text", "-d", str(target)])
    assert refused.exit_code != 0
    assert "'text' is a column of every document, not a metadata field" in refused.output
    assert "Traceback" not in refused.output
