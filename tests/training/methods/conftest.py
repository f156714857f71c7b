"""Tiny labelled files in the ../shared/data layouts, for training a few steps on the tiny model."""

from __future__ import annotations

from pathlib import Path

import pytest

TOPICS = [
    ("the cat sat on the mat", "a cat sat on a mat", "the rocket flew to the moon"),
    ("how do i reset my password", "reset my account password", "the king of the empire"),
    ("rain and snow in the city", "cold storm with snow", "bread in the oven"),
    ("the team will win the game", "our team can win", "a bug in the python code"),
    ("stock price fell", "the market fell", "a dog ran in the garden"),
    ("music on the piano", "play a song on the guitar", "the train ticket"),
]


def write(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def nli_file(tmp_path: Path) -> Path:
    rows = [f"{a}\t{p}\tentailment" for a, p, _ in TOPICS] + [f"{a}\t{n}\tcontradiction" for a, _, n in TOPICS]
    rows += [f"{p}\t{n}\tneutral" for _, p, n in TOPICS]
    return write(tmp_path / "nli.tsv", "premise\thypothesis\tlabel", rows)


@pytest.fixture
def sts_file(tmp_path: Path) -> Path:
    rows = [f"4.8\t{a}\t{p}" for a, p, _ in TOPICS] + [f"0.2\t{a}\t{n}" for a, _, n in TOPICS]
    return write(tmp_path / "sts.tsv", "score\tsentence1\tsentence2", rows)


@pytest.fixture
def triplet_file(tmp_path: Path) -> Path:
    return write(tmp_path / "triplets.tsv", "anchor\tpositive\tnegative", ["\t".join(t) for t in TOPICS])


@pytest.fixture
def sentence_file(tmp_path: Path) -> Path:
    path = tmp_path / "sentences.txt"
    path.write_text("\n".join(text for topic in TOPICS for text in topic) + "\n", encoding="utf-8")
    return path
