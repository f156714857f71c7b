"""Pseudo-queries: which (query, passage) pair a document gives, and a few steps on the tiny BERT learn."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from searchengine.training.loop import TrainingSettings
from searchengine.training.methods.pseudo_queries import (
    PseudoQueries,
    QueryPassage,
    pseudo_query,
    read_pseudo_queries,
)

from searchengine.encoding.encoder import Encoder
from searchengine.errors import SearchEngineError

BODY = "The cat sat on the mat in the garden while the dog ran down the road"


@pytest.mark.parametrize(
    ("text", "title", "pair"),
    [
        (f"Cats on mats. {BODY}.", None, QueryPassage("Cats on mats.", f"{BODY}.")),
        (f"A cat on a mat {BODY}", "A cat on a mat", QueryPassage("A cat on a mat", BODY)),
        (BODY, "Pets", QueryPassage("Pets", BODY)),  # a title the text does not start with: the text whole
        (f"Cats. {BODY}.", None, None),  # a first sentence too short to be a query
        (f"Where do cats sit? On mats. {BODY}", None, QueryPassage("Where do cats sit?", f"On mats. {BODY}")),
        ("A cat sat on the mat. It slept.", None, None),  # too little passage
        (BODY, None, None),  # one sentence: no query
        ("e.g. cats sit on mats in the sun all day long and they like it a lot", None, None),
    ],
)
def test_pseudo_query(text: str, title: str | None, pair: QueryPassage | None) -> None:
    assert pseudo_query(text, title) == pair


def test_read_pseudo_queries_takes_titles_from_a_field_and_falls_back_to_first_sentences(tmp_path: Path) -> None:
    rows = [{"text": f"A cat on a mat {BODY}", "title": "A cat on a mat"}, {"text": f"Dogs run on roads. {BODY}"}]
    data = tmp_path / "corpus.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert [pair.query for pair in read_pseudo_queries(data, "title")] == ["A cat on a mat", "Dogs run on roads."]
    with pytest.raises(SearchEngineError, match="1 document"):
        read_pseudo_queries(data)  # no title field: the first row's text is one sentence


def test_a_few_steps_lower_the_loss_and_save_a_model(tiny_model: Path, tmp_path: Path) -> None:
    topics = ["cat mat garden", "rocket moon planet", "bread oven salt", "team goal game", "storm snow wind"]
    lines = [f"The {t} story here. {BODY} {t}." for t in topics for _ in range(2)]
    data = tmp_path / "corpus.txt"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    settings = TrainingSettings(steps=24, learning_rate=2e-3, warmup=0.0, eval_every=100, progress=False)
    out = tmp_path / "model"
    report = PseudoQueries(base=tiny_model, data=data, out=out, batch_size=5).train(settings)
    assert report.steps == 24 and report.saved
    assert statistics.mean(report.losses[-6:]) < statistics.mean(report.losses[:6]), report.losses
    assert Encoder(out).encode(["the cat"]).shape == (1, 32)
