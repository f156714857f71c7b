"""Split texts longer than the model's limit into passages that each fit it, so the whole of a long document is
searched rather than its first tokens only.

Passages are windows of at most `tokens` tokens of the model's own tokenizer (its offsets give each token's
characters). Consecutive windows share up to `overlap` tokens, so a phrase across a window's end is whole in the
next one. A window ends at a sentence end when one lies in its last quarter (a cheap regex: . ! ? or … and any
closing quotes or brackets, then whitespace), and the next one starts at the first sentence start in the first half
of the overlap when there is one. The last window ends at the text's end and starts as early as it fits, so the tail is a full
passage rather than a scrap of the last few tokens. Windows never split a word unless the word alone is longer than
half a window. A text that fits is one passage: all of it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from typing import Any

from searchengine.errors import SearchEngineError

Span = tuple[int, int]
"""Characters [start, end) of a text."""

SENTENCE_END = re.compile(r"[.!?…][\"'”’»)\]]*(?=\s)")
PASSAGES_BY_DEFAULT = False
"""Whether a new index splits long documents into passages unless told: off until a measurement shows that
passages help (not yet measured: docs/retrieval-passages.md)."""
PASSAGE_HEADINGS_BY_DEFAULT = True
"""Whether a new index with passages embeds each passage after its heading unless told (measured:
docs/files-benchmark.md)."""
DEFAULT_OVERLAP = 32
"""Tokens consecutive passages share unless told otherwise (a choice, not yet measured: docs/retrieval-passages.md),
or a quarter of the window for a model whose window is shorter than four times that."""
SNAP_FRACTION = 0.25
"""A window's end moves back to a sentence end found in its last quarter, never further."""


def default_overlap(tokens: int) -> int:
    """The overlap of passages of `tokens` tokens unless told otherwise."""
    return min(DEFAULT_OVERLAP, tokens // 4)


def check_overlap(tokens: int, overlap: int) -> None:
    """Refuse an overlap that would keep windows from moving forward by at least a quarter of a window."""
    if tokens < 4:
        raise SearchEngineError(f"passages need at least 4 tokens of text each; this model allows {tokens}")
    if not 0 <= overlap <= tokens // 4:
        raise SearchEngineError(
            f"the passage overlap must be between 0 and a quarter of the {tokens}-token window ({tokens // 4}), "
            f"not {overlap}"
        )


def check_window(tokens: int | Sequence[int], text_tokens: int) -> None:
    """Refuse passage windows longer than the `text_tokens` of text one vector of the model holds."""
    longest = tokens if isinstance(tokens, int) else max(tokens, default=0)
    if longest > text_tokens:
        raise SearchEngineError(f"passages of {longest} tokens do not fit this model's {text_tokens}")


Structure = tuple[Sequence[int], Sequence[int]]
"""A text's block starts and section starts (characters), from its file's extractor (searchengine/reading)."""


def passage_spans(
    tokenizer: Any,  # noqa: ANN401
    texts: Sequence[str],
    tokens: int | Sequence[int],
    overlap: int,
    structures: Sequence[Structure | None] | None = None,
) -> list[list[Span]]:
    """For each text, the character spans of its passages, in order: [(0, len(text))] when the text's tokens
    (special tokens left out) fit in `tokens` (one window for all texts, or one per text: shorter where a heading
    is embedded with each passage, its overlap then at most a quarter of its window). `tokenizer` is a Hugging
    Face fast tokenizer. A text with a structure is cut along it (`_structured_spans`); one without, into
    overlapping windows."""
    if isinstance(tokens, int):
        check_overlap(tokens, overlap)
        windows = [tokens] * len(texts)
    else:
        windows = list(tokens)
        for window in set(windows):
            check_overlap(window, min(overlap, window // 4))
    if not texts:  # an add whose documents were all upserts of the same text (new metadata only) embeds nothing
        return []
    encodings = tokenizer(list(texts), add_special_tokens=False, return_offsets_mapping=True).encodings
    structures = structures or [None] * len(texts)
    return [
        _structured_spans(text, encoding.offsets, encoding.word_ids, window, min(overlap, window // 4), structure)
        if structure is not None and structure[0]
        else _spans(text, encoding.offsets, encoding.word_ids, window, min(overlap, window // 4))
        for text, encoding, structure, window in zip(texts, encodings, structures, windows)
    ]


def _structured_spans(
    text: str,
    offsets: Sequence[Span],
    words: Sequence[int | None],
    tokens: int,
    overlap: int,
    structure: Structure,
) -> list[Span]:
    """Passages along a document's structure: whole blocks packed in order while they fit in `tokens`, a new
    passage at every section start (a heading or a page), and a block longer than a window split into overlapping
    windows of its own. Blocks are whole, so passages do not overlap."""
    count = len(offsets)
    if count <= tokens:
        return [(0, len(text))]
    starts = [start for start, _ in offsets]
    ends = [end for _, end in offsets]
    first_tokens = sorted({bisect.bisect_left(starts, block) for block in structure[0]} | {0})
    units = [(a, b) for a, b in zip(first_tokens, [*first_tokens[1:], count]) if a < b]
    hard = {bisect.bisect_left(starts, section) for section in structure[1]}
    spans: list[Span] = []
    position = 0
    while position < len(units):
        first, last = units[position]
        if last - first > tokens:
            spans.extend(_spans(text, offsets[first:last], words[first:last], tokens, overlap))
            position += 1
            continue
        following = position + 1
        while following < len(units) and units[following][0] not in hard and units[following][1] - first <= tokens:
            following += 1
        spans.append((starts[first], ends[units[following - 1][1] - 1]))
        position = following
    return spans


def _spans(text: str, offsets: Sequence[Span], words: Sequence[int | None], tokens: int, overlap: int) -> list[Span]:
    count = len(offsets)
    if count <= tokens:
        return [(0, len(text))]
    ends = [end for _, end in offsets]
    sentence_ends = [match.end() for match in SENTENCE_END.finditer(text)]
    spans: list[Span] = []
    start = 0
    while count - start > tokens:
        stop = _word_boundary_before(words, start + tokens, start + tokens // 2)
        stop = _sentence_end_before(sentence_ends, ends, offsets, start + tokens - int(tokens * SNAP_FRACTION), stop)
        spans.append((offsets[start][0], ends[stop - 1]))
        start = _next_start(sentence_ends, offsets, words, stop, overlap)
    start = _last_start(sentence_ends, offsets, words, count - tokens, start)
    spans.append((offsets[start][0], ends[-1]))
    return spans


def _word_boundary_before(words: Sequence[int | None], stop: int, earliest: int) -> int:
    """The largest token index <= `stop` where a new word starts, no smaller than `earliest` (else `stop`)."""
    position = stop
    while position > earliest and words[position] is not None and words[position] == words[position - 1]:
        position -= 1
    return position if position > earliest else stop


def _sentence_end_before(
    sentence_ends: list[int], ends: list[int], offsets: Sequence[Span], earliest: int, stop: int
) -> int:
    """`stop` moved back to just after the last token that ends a sentence among tokens [earliest, stop), if any."""
    if earliest >= stop:
        return stop
    last = bisect.bisect_right(sentence_ends, ends[stop - 1]) - 1
    if last < 0 or sentence_ends[last] <= offsets[earliest][0]:
        return stop
    return bisect.bisect_right(ends, sentence_ends[last], earliest, stop)


def _last_start(
    sentence_ends: list[int], offsets: Sequence[Span], words: Sequence[int | None], earliest: int, start: int
) -> int:
    """The last window's start: moved back from `start` to hold as many tokens as fit (from `earliest` on), at a
    sentence start if one lies in between, else a word start, so the text's tail is a full passage, not a scrap."""
    if earliest >= start:
        return start
    sentence = _first_sentence_start(sentence_ends, offsets, earliest, start)
    return sentence if sentence is not None else _word_start_from(words, earliest, start)


def _next_start(
    sentence_ends: list[int], offsets: Sequence[Span], words: Sequence[int | None], stop: int, overlap: int
) -> int:
    """Where the window after one ending at token `stop` starts: `overlap` tokens back, moved forward to the first
    sentence start in the first half of the overlap if there is one (so at least half the overlap stays), else to
    the next word start."""
    start = stop - overlap
    if start >= stop:
        return stop
    sentence = _first_sentence_start(sentence_ends, offsets, start, stop - overlap // 2)
    return sentence if sentence is not None else _word_start_from(words, start, stop)


def _first_sentence_start(sentence_ends: list[int], offsets: Sequence[Span], first: int, last: int) -> int | None:
    """The first token among [first, last) that follows a sentence end, or None."""
    previous_end = offsets[first - 1][1] if first > 0 else 0
    found = bisect.bisect_left(sentence_ends, previous_end)
    if found == len(sentence_ends):
        return None
    token = bisect.bisect_left([start for start, _ in offsets], sentence_ends[found], first, last)
    return token if token < last else None


def _word_start_from(words: Sequence[int | None], position: int, limit: int) -> int:
    """The first token from `position` on (before `limit`) that starts a word."""
    while position < limit and position > 0 and words[position] is not None and words[position] == words[position - 1]:
        position += 1
    return position
