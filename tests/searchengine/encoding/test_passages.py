"""Splitting long texts into passages: token windows, overlap, sentence ends, whole words, unicode."""

from __future__ import annotations

import random

import pytest

from searchengine import SearchEngineError
from searchengine.encoding.encoder import Encoder
from searchengine.encoding.passages import check_overlap, default_overlap, passage_spans
from tests.conftest import WORDS


def _tokens(encoder: Encoder, text: str) -> int:
    return len(encoder.tokenizer(text, add_special_tokens=False)["input_ids"])


def _words(count: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(count))


def _sentences(count: int, length: int = 9, seed: int = 0) -> str:
    return " ".join(_words(length, seed + i).capitalize() + "." for i in range(count))


def _covered(spans: list[tuple[int, int]], text: str) -> None:
    """The spans run in order from the text's first to its last character, each overlapping or meeting the next."""
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    for (start, end), (next_start, next_end) in zip(spans, spans[1:]):
        assert start < next_start <= end + 1 and end < next_end


def test_a_text_that_fits_is_one_passage_of_all_of_it(tiny_encoder: Encoder) -> None:
    text = "the cat sat on the mat"
    assert passage_spans(tiny_encoder.tokenizer, [text, "x"], 20, 4) == [[(0, len(text))], [(0, 1)]]


def test_windows_fit_and_cover_the_text_with_the_overlap_asked(tiny_encoder: Encoder) -> None:
    text = _words(300)  # no sentence ends: every window is cut by tokens alone
    [spans] = passage_spans(tiny_encoder.tokenizer, [text], 40, 8)
    assert len(spans) > 5
    _covered(spans, text)
    assert all(_tokens(tiny_encoder, text[start:end]) <= 40 for start, end in spans)
    for (_, end), (next_start, _) in zip(spans, spans[1:-1]):
        assert _tokens(tiny_encoder, text[next_start:end]) == 8  # whole words here, one token each
    assert _tokens(tiny_encoder, text[spans[-2][0] :]) > 40  # the last window ends the text and is full
    assert _tokens(tiny_encoder, text[spans[-1][0] :]) == 40


def test_the_last_window_is_a_full_one_at_a_sentence_start_if_one_is_near(tiny_encoder: Encoder) -> None:
    text = _sentences(9, length=4) + " " + _words(5)  # 45 tokens + 5 more: the tail would be a scrap
    [spans] = passage_spans(tiny_encoder.tokenizer, [text], 40, 8)
    assert len(spans) == 2 and spans[-1][1] == len(text)
    assert text[spans[-1][0]].isupper() and 36 <= _tokens(tiny_encoder, text[spans[-1][0] :]) <= 40


def test_no_overlap_makes_adjacent_windows(tiny_encoder: Encoder) -> None:
    text = _words(200)
    [spans] = passage_spans(tiny_encoder.tokenizer, [text], 40, 0)
    _covered(spans, text)
    assert all(text[end] == " " and next_start == end + 1 for (_, end), (next_start, _) in zip(spans, spans[1:-1]))


def test_window_ends_snap_back_to_a_sentence_end(tiny_encoder: Encoder) -> None:
    text = _sentences(40)  # sentences of 10 tokens: one ends in the last quarter of every window
    [spans] = passage_spans(tiny_encoder.tokenizer, [text], 40, 8)
    _covered(spans, text)
    assert all(text[end - 1] == "." for _, end in spans)


def test_windows_start_at_a_sentence_in_the_first_half_of_the_overlap(tiny_encoder: Encoder) -> None:
    text = _sentences(100, length=3)  # sentences of 4 tokens: one starts in the first half of every overlap
    [spans] = passage_spans(tiny_encoder.tokenizer, [text], 40, 8)
    _covered(spans, text)
    assert all(text[start].isupper() for start, _ in spans)
    for (_, end), (next_start, _) in zip(spans, spans[1:-1]):  # the last window ends the text: see below
        assert 4 <= _tokens(tiny_encoder, text[next_start:end]) <= 8


def test_windows_never_split_a_word(tiny_encoder: Encoder) -> None:
    text = " ".join(["extraordinarily", "complicated", "xylophones"] * 60)  # words of many word pieces each
    [spans] = passage_spans(tiny_encoder.tokenizer, [text], 30, 6)
    _covered(spans, text)
    for start, end in spans:
        assert start == 0 or text[start - 1] == " "
        assert end == len(text) or text[end] == " "
        assert _tokens(tiny_encoder, text[start:end]) <= 30


def test_a_word_longer_than_half_a_window_is_cut_inside(tiny_encoder: Encoder) -> None:
    text = "the " + "a" * 90 + " cat"  # a word of 90 pieces (up to 100 characters a word is not [UNK])
    assert _tokens(tiny_encoder, text) == 92
    [spans] = passage_spans(tiny_encoder.tokenizer, [text], 30, 6)
    assert len(spans) == 4
    _covered(spans, text)
    assert all(_tokens(tiny_encoder, text[start:end]) <= 30 for start, end in spans)


def test_unicode_spans_are_character_offsets(tiny_encoder: Encoder) -> None:
    text = " ".join(f"café naïve 東京 {word} 🙂." for word in WORDS[:60])
    [spans] = passage_spans(tiny_encoder.tokenizer, [text], 40, 8)
    assert len(spans) > 3
    _covered(spans, text)
    for start, end in spans:
        assert _tokens(tiny_encoder, text[start:end]) <= 40
        assert not text[start].isspace() and not text[end - 1].isspace()


def test_the_encoder_splits_to_its_own_limit(tiny_encoder: Encoder) -> None:
    assert tiny_encoder.text_tokens == tiny_encoder.max_seq_length - 2  # [CLS] and [SEP]
    text = _words(500)
    [spans] = tiny_encoder.passage_spans([text], tiny_encoder.text_tokens, default_overlap(tiny_encoder.text_tokens))
    assert all(_tokens(tiny_encoder, text[start:end]) <= tiny_encoder.text_tokens for start, end in spans)
    with pytest.raises(SearchEngineError, match="do not fit"):
        tiny_encoder.passage_spans([text], tiny_encoder.text_tokens + 1, 4)


def test_the_default_overlap_fits_small_windows() -> None:
    assert default_overlap(254) == 32 and default_overlap(62) == 15


@pytest.mark.parametrize(("tokens", "overlap"), [(40, -1), (40, 11), (3, 0)])
def test_an_overlap_that_stalls_the_windows_is_refused(tokens: int, overlap: int) -> None:
    with pytest.raises(SearchEngineError, match="passage"):
        check_overlap(tokens, overlap)


def _structured(blocks: list[str], sections: set[int]) -> tuple[str, list[int], list[int]]:
    """Blocks joined by blank lines, with the starts of all blocks and of the blocks in `sections`."""
    text, starts = "", []
    for block in blocks:
        text += "\n\n" if text else ""
        starts.append(len(text))
        text += block
    return text, starts, [starts[i] for i in sorted(sections)]


def test_structured_passages_pack_whole_blocks_and_start_at_every_section(tiny_encoder: Encoder) -> None:
    blocks = [_words(10, seed) for seed in range(12)]  # 10 tokens each
    text, starts, sections = _structured(blocks, {0, 5})
    [spans] = passage_spans(tiny_encoder.tokenizer, [text], 32, 8, [(starts, sections)])
    assert [start for start, _ in spans] == [starts[0], starts[3], starts[5], starts[8], starts[11]]
    assert all(text[end - 1] != " " and (end == len(text) or text[end] == "\n") for _, end in spans)
    assert all(_tokens(tiny_encoder, text[start:end]) <= 32 for start, end in spans)


def test_a_block_longer_than_a_window_is_split_into_windows_of_its_own(tiny_encoder: Encoder) -> None:
    text, starts, sections = _structured([_words(5), _words(100, 1), _words(5, 2)], set())
    [spans] = passage_spans(tiny_encoder.tokenizer, [text], 32, 8, [(starts, sections)])
    assert spans[0] == (0, starts[1] - 2)  # the short first block alone: the next one does not fit beside it
    assert spans[-1] == (starts[2], len(text))
    inside = spans[1:-1]
    assert len(inside) >= 4 and inside[0][0] == starts[1] and inside[-1][1] == starts[2] - 2
    assert all(_tokens(tiny_encoder, text[start:end]) <= 32 for start, end in inside)


def test_a_structured_text_that_fits_is_one_passage(tiny_encoder: Encoder) -> None:
    text, starts, sections = _structured([_words(5), _words(5, 1)], {1})
    assert passage_spans(tiny_encoder.tokenizer, [text], 32, 8, [(starts, sections)]) == [[(0, len(text))]]
