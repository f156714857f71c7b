"""Readers of labelled pairs and triplets: every bad row is one error naming the file and line."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from searchengine.errors import SearchEngineError
from searchengine.evaluation.labelled_data import NLI_LABELS, read_labelled_pairs, read_scored_pairs, read_triplets


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_scored_pairs_are_scaled_to_unit_range(tmp_path: Path) -> None:
    pairs = read_scored_pairs(write(tmp_path / "s.tsv", 'score\tsentence1\tsentence2\n5.0\ta\tb\n\n1.5\t"quoted\tc\n'))
    assert [(p.first, p.second, p.score) for p in pairs] == [("a", "b", 1.0), ('"quoted', "c", 0.3)]


def test_a_byte_order_mark_is_not_part_of_the_header(tmp_path: Path) -> None:
    """A UTF-8 file saved with a byte-order mark (Excel, Notepad) was refused: "the header is '\\ufeffscore...'"."""
    path = tmp_path / "s.tsv"
    path.write_text("score\tsentence1\tsentence2\n4\ta\tb\n", encoding="utf-8-sig")
    assert [(p.first, p.score) for p in read_scored_pairs(path)] == [("a", 0.8)]


def test_gzip_and_labels(tmp_path: Path) -> None:
    path = tmp_path / "nli.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("premise\thypothesis\tlabel\np\th\tNeutral\n")
    assert read_labelled_pairs(path)[0].label == NLI_LABELS.index("neutral")
    triplets = read_triplets(write(tmp_path / "t.tsv", "anchor\tpositive\tnegative\na\tp\tn\n"))
    assert (triplets[0].anchor, triplets[0].negative) == ("a", "n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty"),
        ("sentence1\tsentence2\tscore\n1\ta\tb\n", r"s.tsv:1: the header"),
        ("score\tsentence1\tsentence2\n", "no rows"),
        ("score\tsentence1\tsentence2\n1\ta\n", r"s.tsv:2: 2 tab-separated fields"),
        ("score\tsentence1\tsentence2\n1\ta\tb\n7\ta\tb\n", r"s.tsv:3: score 7.0 is outside 0..5"),
        ("score\tsentence1\tsentence2\nhigh\ta\tb\n", r"s.tsv:2: score 'high' is not a number"),
        ("score\tsentence1\tsentence2\n1\t \tb\n", r"s.tsv:2: an empty field"),
    ],
)
def test_bad_scored_files(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SearchEngineError, match=message):
        read_scored_pairs(write(tmp_path / "s.tsv", text))


@pytest.mark.parametrize("max_score", [0.0, -1.0, float("nan"), float("inf")])
def test_a_scale_with_no_largest_score_above_0_is_refused(tmp_path: Path, max_score: float) -> None:
    """max_score 0 divided a score of 0 by it: a ZeroDivisionError traceback from `eval sts` and `train sbert-sts`."""
    path = write(tmp_path / "s.tsv", "score\tsentence1\tsentence2\n0\ta\tb\n")
    with pytest.raises(SearchEngineError, match=f"a number above 0, not {max_score:g}"):
        read_scored_pairs(path, max_score)


def test_unknown_label_binary_and_missing(tmp_path: Path) -> None:
    with pytest.raises(SearchEngineError, match=r"n.tsv:2: unknown label 'maybe'"):
        read_labelled_pairs(write(tmp_path / "n.tsv", "premise\thypothesis\tlabel\np\th\tmaybe\n"))
    binary = tmp_path / "b.tsv"
    binary.write_bytes(b"premise\thypothesis\tlabel\n\xff\xfe\x00\tx\ty\n")
    with pytest.raises(SearchEngineError, match="not UTF-8"):
        read_labelled_pairs(binary)
    with pytest.raises(SearchEngineError, match="no such file"):
        read_triplets(tmp_path / "missing.tsv")
