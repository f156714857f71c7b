"""Adding a retrieval mode is one file: the toy mode below is one class and one `register_mode` call, and
SearchEngine.search ranks with it by name, with no other change; once removed, its name is refused again."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchengine import SearchEngine
from searchengine.cli import app
from searchengine.engine.mode_registry import MODES, RankRequest, RetrievalMode, register_mode
from searchengine.engine.search import Scored
from searchengine.errors import SearchEngineError

TEXTS = ["a piano song", "the cat sat on the mat", "rain in the city", "stocks fell", "a dog ran", "an oven"]


class OldestFirst(RetrievalMode):
    """The documents the filters let through in the order they were added, whatever the query: a ranking no
    built-in mode gives."""

    name = "oldest-first"
    description = "the documents in the order they were added"
    label = "oldest first"
    score_name = "age score"
    short_score_name = "age"
    sides = ("keyword",)
    side_scores = ()

    def rank(self, request: RankRequest) -> list[list[Scored]]:
        ids = request.store.documents.ids() if request.matching is None else request.matching
        first = sorted(int(document_id) for document_id in ids)[: request.k]
        return [
            [Scored(document_id, 1.0 / (place + 1), ("keyword",)) for place, document_id in enumerate(first)]
            for _ in request.texts
        ]


def test_a_registered_mode_ranks_the_engines_searches(tmp_path: Path, tiny_model: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    index = tmp_path / "index"
    result = CliRunner().invoke(app, ["index", str(corpus), "-d", str(index), "--model", str(tiny_model), "-q"])
    assert result.exit_code == 0, result.output
    mode = register_mode(OldestFirst())  # the one registration
    try:
        with SearchEngine.open(index) as engine:
            hits = engine.search("a dog", k=3, mode="oldest-first")
    finally:
        del MODES[mode.name]
    assert [hit.text for hit in hits] == TEXTS[:3] and [hit.score for hit in hits] == [1.0, 0.5, 1.0 / 3]
    with SearchEngine.open(index) as engine, pytest.raises(SearchEngineError, match="unknown search mode"):
        engine.search("a dog", mode="oldest-first")
