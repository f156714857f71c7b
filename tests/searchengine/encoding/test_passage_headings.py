"""A passage's heading embedded with it: which heading a passage gets, the text embedded, and the window left for
the passage once the heading's tokens are counted."""

from __future__ import annotations

import random

from searchengine.encoding.encoder import Encoder
from searchengine.encoding.passage_headings import HEADING_SHARE, fit_headings, heading_at, with_heading
from searchengine.encoding.passages import passage_spans
from tests.conftest import WORDS


def _tokens(encoder: Encoder, text: str) -> int:
    return len(encoder.tokenizer(text, add_special_tokens=False)["input_ids"])


def _words(count: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(count))


def test_a_passage_gets_the_heading_of_the_part_it_starts_in() -> None:
    headings = ((0, "Guide"), (40, "Guide › Install"), (90, "Guide › Use"))
    assert [heading_at(headings, start) for start in (0, 39, 40, 89, 90, 500)] == [
        "Guide",
        "Guide",
        "Guide › Install",
        "Guide › Install",
        "Guide › Use",
        "Guide › Use",
    ]
    assert heading_at(((10, "Late"),), 0) is None and heading_at((), 0) is None


def test_the_heading_goes_on_a_line_of_its_own_and_never_twice() -> None:
    assert with_heading("Guide › Install", "Run the installer.") == "Guide › Install\nRun the installer."
    assert with_heading("Bread", "Bread and butter, the first passage of a titled record") == (
        "Bread and butter, the first passage of a titled record"
    )
    assert with_heading(None, "alone") == "alone" and with_heading("", "alone") == "alone"


def test_the_window_leaves_room_for_the_longest_heading_counted_in_tokens(tiny_encoder: Encoder) -> None:
    short, longer = _words(3, 1), _words(7, 2)
    windows, headings = fit_headings(tiny_encoder.tokenizer, [((0, short), (50, longer)), (), ((0, "  "),)], 60)
    assert windows == [60 - _tokens(tiny_encoder, longer) - 1, 60, 60]
    assert headings == [((0, short), (50, longer)), (), ()]  # a blank heading is none


def test_a_heading_longer_than_its_share_is_cut_to_its_first_tokens(tiny_encoder: Encoder) -> None:
    tokens = 60
    long = _words(40, 3)
    [window], [[(start, cut)]] = fit_headings(tiny_encoder.tokenizer, [((0, long),)], tokens)
    assert start == 0 and long.startswith(cut) and _tokens(tiny_encoder, cut) == tokens // HEADING_SHARE - 1
    assert window == tokens - tokens // HEADING_SHARE


def test_each_text_is_cut_to_its_own_window(tiny_encoder: Encoder) -> None:
    text = _words(200, 4)
    [wide, narrow] = passage_spans(tiny_encoder.tokenizer, [text, text], [60, 40], 15)
    assert len(narrow) > len(wide)
    assert max(_tokens(tiny_encoder, text[start:end]) for start, end in narrow) <= 40
    assert max(_tokens(tiny_encoder, text[start:end]) for start, end in wide) <= 60
