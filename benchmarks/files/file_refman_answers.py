"""The whole R manuals, scored again with R's reference manual counted where it answers too.

benchmarks/files/file_search.py counts one place as a question's answer: the manual section it was written from. With
`--whole`, R's reference manual (refman.pdf: the help page of every base function) joins the seven manuals, and
its help pages answer several of the questions as well: "how should I cite R in a paper" is what `citation()`'s
help page is for. A hit there counted as a miss, for every mode alike, but not equally often: keyword search finds
function names and ranks help pages high.

This script adds, per question, the help pages of the base functions that the answering section itself names
(benchmarks/files/file_refman_answers.jsonl: the rule, not a reading of any mode's hits, decides which), finds their
pages by refman.pdf's running headers (each page's first line names the help topic on it), and scores the indexes
`file_search.py --whole` kept under --work both ways: the answer section alone, and the section or one of those
help pages. The judgement was added after the whole-corpus run showed hybrid behind dense there; it is a second
reading of the same hits, not a new run.

Usage (after benchmarks/files/file_search.py --whole has built the indexes under /tmp/filebench-whole):
  .venv/bin/python benchmarks/files/file_refman_answers.py --work /tmp/filebench-whole \
      --out benchmarks/files/results/file_whole_refman.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.files.file_extractors import EXTRACTORS
from benchmarks.files.file_search import (
    CORPORA,
    MODES,
    MRR_AT,
    RECALL_AT,
    Location,
    Question,
    folder_hit_location,
    line_location,
    read_questions,
)
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results

HERE = Path(__file__).resolve().parent
REFMAN = "refman.pdf"
INDEXES = {
    "searchengine index DIR": ("folder-index-passage-headings", folder_hit_location),
    **{
        f"converter ({extractor}, one JSON line per page, {setting})": (
            f"{extractor}/index-{folder}",
            lambda hit: line_location(hit.external_id, True),
        )
        for extractor in EXTRACTORS["pdf"]
        for setting, folder in (("--passages", "passages"), ("no passages", "no_passages"))
    },
}
"""The indexes of the r-manuals corpus that file_search.py --whole may have kept, by what they are."""


def help_topic_pages(refman: Path) -> dict[str, list[int]]:
    """Pages (from 1, as a viewer counts) by the help topic their running header names: the first line of the
    page's text without the page number before or after it ("2090 citation" and "citation 2091" are both
    `citation`; `log1p` keeps its digit)."""
    from pypdf import PdfReader

    pages: dict[str, list[int]] = {}
    for number, page in enumerate(PdfReader(refman).pages, start=1):
        first = (page.extract_text() or "").strip().split("\n", 1)[0]
        pages.setdefault(re.sub(r"^\d+\s+|\s+\d+$", "", first.strip()), []).append(number)
    return pages


def refman_answers(path: Path, topics: dict[str, list[int]]) -> dict[str, set[int]]:
    """Question -> the refman pages of the help topics the file names for it (a topic not found is an error)."""
    answers = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        missing = [topic for topic in row["topics"] if topic not in topics]
        if missing:
            raise SystemExit(f"{path}: no refman page is headed {', '.join(missing)}")
        answers[row["question"]] = {page for topic in row["topics"] for page in topics[topic]}
    return answers


def first_rank(question: Question, extra: set[int], ranking: list[Location]) -> int | None:
    """The rank of the first hit in 10 on the question's section, or on one of the `extra` refman pages."""
    for rank, (file, page) in enumerate(ranking[:MRR_AT], 1):
        if question.answered_by(file, page) or (file == REFMAN and page in extra):
            return rank
    return None


def scores(ranks: list[int | None]) -> dict[str, float]:
    """recall@5 and MRR@10 of the first-answer ranks (None: no answer in the top 10)."""
    return {
        f"recall@{RECALL_AT}": sum(rank is not None and rank <= RECALL_AT for rank in ranks) / len(ranks),
        f"mrr@{MRR_AT}": sum(1.0 / rank for rank in ranks if rank is not None) / len(ranks),
    }


def score_index(index: Path, locate: Any, questions: list[Question], answers: dict[str, set[int]]) -> dict:
    """Each mode's ranks and scores, by the section alone and by the section or the refman help pages."""
    from searchengine import SearchEngine

    engine = SearchEngine.open(index)
    texts = [question.question for question in questions]
    result = {}
    for mode in MODES:
        rankings = [[locate(hit) for hit in hits] for hits in engine.search_batch(texts, MRR_AT, mode=mode)]
        alone = [first_rank(q, set(), ranking) for q, ranking in zip(questions, rankings)]
        either = [first_rank(q, answers.get(q.question, set()), ranking) for q, ranking in zip(questions, rankings)]
        refman_hits = [sum(file == REFMAN for file, _ in ranking[:RECALL_AT]) for ranking in rankings]
        result[mode] = {
            "section": {**scores(alone), "ranks": alone},
            "section or help page": {**scores(either), "ranks": either},
            "refman hits in the top 5": sum(refman_hits),
        }
    engine.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="the --work folder of file_search.py --whole")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    parser.add_argument("--questions", type=Path, default=HERE / "file_questions.jsonl")
    parser.add_argument("--answers", type=Path, default=HERE / "file_refman_answers.jsonl")
    args = parser.parse_args()
    corpus = CORPORA["r-manuals"]
    questions = [question for question in read_questions(args.questions) if question.corpus == corpus.name]
    answers = refman_answers(args.answers, help_topic_pages(corpus.root / REFMAN))
    load = os.getloadavg()
    indexes = {}
    for name, (folder, locate) in INDEXES.items():
        index = args.work / corpus.name / folder
        if (index / "manifest.json").is_file():
            print(f"scoring {name}", file=sys.stderr, flush=True)
            indexes[name] = score_index(index, locate, questions, answers)
    if not indexes:
        raise SystemExit(f"no r-manuals index under {args.work}: run benchmarks/files/file_search.py --whole first")
    record = {
        **run_record(load),
        "questions": [question.question for question in questions],
        "refman_pages": {question: sorted(pages) for question, pages in answers.items()},
        "indexes": indexes,
    }
    write_results(args.out, record)
    for name, modes in indexes.items():
        for mode, scored in modes.items():
            section, either = scored["section"], scored["section or help page"]
            print(
                f"{name} | {mode}: recall@5 {section['recall@5']:.3f} -> {either['recall@5']:.3f}, "
                f"MRR@10 {section['mrr@10']:.3f} -> {either['mrr@10']:.3f}"
            )
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
