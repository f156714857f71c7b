"""benchmarks/files/file_refman_answers.py: help pages found by a PDF's running headers, and a hit counted on the
question's section or on one of those pages, on a tiny PDF written here."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from tests.searchengine.reading.made_files import pdf_bytes

REPOSITORY = Path(__file__).resolve().parents[3]


@pytest.fixture
def refman():  # noqa: ANN201 (a module)
    return importlib.import_module("benchmarks.files.file_refman_answers")


def test_help_pages_are_found_by_their_running_headers(tmp_path: Path, refman) -> None:  # noqa: ANN001
    pdf = tmp_path / "refman.pdf"
    pdf.write_bytes(pdf_bytes(["2090 citation", "citation 2091", "1626 lm", "NA 417", "log1p 380"]))
    topics = refman.help_topic_pages(pdf)
    assert topics == {"citation": [1, 2], "lm": [3], "NA": [4], "log1p": [5]}
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"question": "cite R", "topics": ["citation", "NA"]}) + "\n", encoding="utf-8")
    assert refman.refman_answers(answers, topics) == {"cite R": {1, 2, 4}}
    answers.write_text(json.dumps({"question": "cite R", "topics": ["cite"]}) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="no refman page is headed cite"):
        refman.refman_answers(answers, topics)


def test_a_hit_counts_on_the_section_or_a_named_help_page(refman) -> None:  # noqa: ANN001
    question = refman.Question("r-manuals", "cite R", "R-FAQ.pdf", (12, 12))
    ranking = [("refman.pdf", 5), ("R-intro.pdf", 2), ("refman.pdf", 2121), ("R-FAQ.pdf", 12)]
    assert refman.first_rank(question, set(), ranking) == 4
    assert refman.first_rank(question, {2121, 2122}, ranking) == 3
    assert refman.first_rank(question, {5}, [("R-FAQ.pdf", 5), ("other.pdf", 5)]) is None  # refman's pages only
    assert refman.scores([1, None, 6, 3]) == {"recall@5": 0.5, "mrr@10": pytest.approx((1 + 1 / 6 + 1 / 3) / 4)}
