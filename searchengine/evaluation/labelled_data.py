"""Readers for labelled sentence data (scored pairs, NLI pairs, triplets) in the tab-separated layout that
benchmarks/datasets/get_data.py writes (and ../shared/data has): one header line, exactly three fields per line, no quoting,
optionally gzip-compressed.

Every problem is reported as one error naming the file and line, so training and evaluation never start on
data they would silently misread."""

from __future__ import annotations

import gzip
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from searchengine.errors import SearchEngineError

NLI_LABELS = ("contradiction", "entailment", "neutral")
"""Label order of the SBERT NLI classifier (index = class id)."""


@dataclass(frozen=True)
class RatedPair:
    first: str
    second: str
    score: float
    """The gold score divided by the file's maximum, so 0..1."""


@dataclass(frozen=True)
class LabelledPair:
    premise: str
    hypothesis: str
    label: int
    """Index into NLI_LABELS."""


@dataclass(frozen=True)
class Triplet:
    anchor: str
    positive: str
    negative: str


def _rows(path: Path, header: tuple[str, str, str]) -> Iterator[tuple[int, list[str]]]:
    """Yield (line number, three fields) after checking the header; errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise SearchEngineError(f"{path}: no such file")
    opener = gzip.open if path.suffix == ".gz" else open
    expected = "<TAB>".join(header)
    try:
        # utf-8-sig: a byte-order mark (what Excel and Notepad write before UTF-8) is not part of the header
        with opener(path, "rt", encoding="utf-8-sig", newline="\n") as handle:
            first = handle.readline().rstrip("\n").rstrip("\r")
            if not first:
                raise SearchEngineError(f"{path}: the file is empty; it needs the header line '{expected}' and rows")
            if [name.strip().lower() for name in first.split("\t")] != list(header):
                raise SearchEngineError(
                    f"{path}:1: the header is {first.replace(chr(9), '<TAB>')!r}; expected '{expected}'"
                )
            count = 0
            for number, line in enumerate(handle, start=2):
                line = line.rstrip("\n").rstrip("\r")
                if not line.strip():
                    continue
                fields = line.split("\t")
                if len(fields) != 3:
                    raise SearchEngineError(
                        f"{path}:{number}: {len(fields)} tab-separated fields, expected 3 ({expected})"
                    )
                if any(not field.strip() for field in fields):
                    raise SearchEngineError(f"{path}:{number}: an empty field; every row needs {expected}")
                count += 1
                yield number, [field.strip() for field in fields]
            if count == 0:
                raise SearchEngineError(f"{path}: no rows after the header")
    except UnicodeDecodeError as exc:
        raise SearchEngineError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (OSError, EOFError) as exc:
        raise SearchEngineError(f"{path}: cannot read it ({exc})") from None


def read_scored_pairs(path: Path, max_score: float = 5.0) -> list[RatedPair]:
    """Read `score<TAB>sentence1<TAB>sentence2` rows; scores must lie in [0, max_score]."""
    if not (math.isfinite(max_score) and max_score > 0):
        raise SearchEngineError(
            f"max_score is the largest score of the data's scale (STS-B: 5), a number above 0, not {max_score:g}"
        )
    pairs = []
    for number, (score, first, second) in _rows(path, ("score", "sentence1", "sentence2")):
        try:
            value = float(score)
        except ValueError:
            raise SearchEngineError(f"{path}:{number}: score {score!r} is not a number") from None
        if not (math.isfinite(value) and 0.0 <= value <= max_score):
            raise SearchEngineError(
                f"{path}:{number}: score {value} is outside 0..{max_score:g}; for another scale, set max_score "
                "to its largest score"
            )
        pairs.append(RatedPair(first, second, value / max_score))
    return pairs


def read_labelled_pairs(path: Path) -> list[LabelledPair]:
    """Read `premise<TAB>hypothesis<TAB>label` rows with labels entailment/neutral/contradiction."""
    pairs = []
    for number, (premise, hypothesis, label) in _rows(path, ("premise", "hypothesis", "label")):
        label = label.lower()
        if label not in NLI_LABELS:
            raise SearchEngineError(
                f"{path}:{number}: unknown label {label!r}; expected one of {', '.join(NLI_LABELS)}"
            )
        pairs.append(LabelledPair(premise, hypothesis, NLI_LABELS.index(label)))
    return pairs


def read_triplets(path: Path) -> list[Triplet]:
    """Read `anchor<TAB>positive<TAB>negative` rows."""
    return [Triplet(*fields) for _, fields in _rows(path, ("anchor", "positive", "negative"))]
