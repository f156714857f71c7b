"""`searchengine adapt` through typer's test runner: it trains, re-indexes and says so; bad requests are one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.searchengine.cli.test_cli import assert_one_line_error, run

FAST = ("--steps", "2", "--batch-size", "4", "--max-seq-length", "32", "-q")


@pytest.fixture
def index_dir(tmp_path: Path, tiny_model: Path, sentences: list[str]) -> Path:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    result = run("index", corpus, "-d", tmp_path / "idx", "--model", tiny_model)
    assert result.exit_code == 0, result.output
    return tmp_path / "idx"


def test_adapt_reindexes_with_the_adapted_model(index_dir: Path, sentences: list[str]) -> None:
    result = run("adapt", "-d", index_dir, "--method", "simcse", *FAST)
    assert result.exit_code == 0, result.output
    assert "simcse: 2 steps" in result.output and f"Re-indexed {len(sentences)} documents" in result.output
    spec = json.loads((index_dir / "manifest.json").read_text())["model"]["spec"]
    assert spec.startswith("./adapted-simcse.") and (index_dir / spec).is_dir()  # inside the index, relative to it
    query = run("query", sentences[4], "-k", "1", "-d", index_dir, "--json")
    assert json.loads(query.output)["hits"][0]["text"] == sentences[4]


def test_adapt_refuses_a_method_that_needs_labels(index_dir: Path) -> None:
    assert_one_line_error(run("adapt", "-d", index_dir, "--method", "sbert-nli", *FAST), "choose one of")


def test_pseudo_queries_without_enough_sentences_is_one_line(index_dir: Path) -> None:
    result = run("adapt", "-d", index_dir, *FAST)  # one-sentence texts and no title field: no pair to train on
    assert_one_line_error(result, f"the documents of index {index_dir}: 0 document(s) give a pseudo-query")
    assert ".scratch" not in result.output, "named after the index, not after its documents' copy, deleted by now"


def test_adapt_without_an_index_is_one_line(tmp_path: Path) -> None:
    assert_one_line_error(run("adapt", "-d", tmp_path / "nothing", *FAST), "no index at")
