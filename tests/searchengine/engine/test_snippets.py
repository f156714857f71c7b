"""Snippets: one line per hit, whatever the text holds, cut at a word boundary to a length."""

from __future__ import annotations

import pytest

from searchengine.engine.search import Hit
from searchengine.engine.snippets import ELLIPSIS, one_line, snippet


def test_newlines_tabs_and_runs_of_spaces_become_one_space() -> None:
    assert snippet("first line\n\nsecond\tline\r\n   third") == "first line second line third"


@pytest.mark.parametrize(
    "character",
    ["\x00", "\x07", "\x1b", "\x7f", "\x85", "\u2028", "\u2029", "\u200b", "\u202e", "\u2066", "\ufeff", "\u00ad"],
)
def test_control_and_invisible_format_characters_become_a_space(character: str) -> None:
    assert snippet(f"left{character}right") == "left right"
    assert one_line(f"{character}a {character} b{character}") == "a b"


def test_a_short_text_is_shown_whole() -> None:
    assert snippet("a cat sat on the mat", max_chars=20) == "a cat sat on the mat"


def test_a_long_text_is_cut_at_a_word_boundary_within_max_chars() -> None:
    text = "the quick brown fox jumps over the lazy dog " * 10
    for max_chars in (10, 25, 50, 200):
        line = snippet(text, max_chars=max_chars)
        assert len(line) <= max_chars and line.endswith(ELLIPSIS)
        assert text.startswith(line[:-1])
        assert text[len(line) - 1] == " "  # the word before the ellipsis is whole
    assert snippet(text, max_chars=25) == "the quick brown fox…"


def test_a_word_longer_than_the_snippet_is_cut_inside() -> None:
    assert snippet("a" * 50, max_chars=10) == "a" * 9 + ELLIPSIS


def test_a_span_is_shown_with_ellipses_for_the_text_around_it() -> None:
    text = "Title of it. The passage that matched is here. And more text follows."
    start = text.index("The passage")
    end = text.index(" And")
    assert snippet(text, (start, end), 100) == f"{ELLIPSIS}The passage that matched is here.{ELLIPSIS}"
    assert snippet(text, (0, end), 100) == f"Title of it. The passage that matched is here.{ELLIPSIS}"
    assert (
        snippet(text, (start, len(text)), 100) == f"{ELLIPSIS}The passage that matched is here. And more text follows."
    )


def test_blank_text_around_a_span_adds_no_ellipsis() -> None:
    assert snippet("\n  middle  \n\n", (3, 9), 50) == "middle"


def test_a_long_run_of_whitespace_does_not_shorten_the_snippet() -> None:
    text = "start" + "\n" * 10_000 + " ".join(["word"] * 100)
    assert snippet(text, max_chars=40) == "start " + " ".join(["word"] * 6) + ELLIPSIS


def test_a_hit_shows_its_passage() -> None:
    text = "An opening sentence. The matching passage.\nThe end."
    hit = Hit(id=1, score=0.5, text=text, span=(21, 42))
    assert hit.passage == "The matching passage."
    assert hit.snippet() == f"{ELLIPSIS}The matching passage.{ELLIPSIS}"
    assert Hit(id=2, score=0.5, text=text).snippet(30) == f"An opening sentence. The{ELLIPSIS}"


def test_max_chars_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        snippet("text", max_chars=0)
