"""A passage embedded after its heading: a passage from the middle of a long page does not say what page or section
it is in, so an index built with passage headings embeds each one as its heading (a file's section heading path,
"Tutorial › Lists", or a PDF page's or a titled record's title) on a line of its own, then the passage. Only the
vector sees the heading: the stored text, and the spans, snippets and highlights that point into it, are the
passage's own.

Room for the heading comes out of the window: a document's passages are cut `tokens` less the tokens of its
longest heading and one for the line break, counted with the model's tokenizer. A heading longer than a quarter
of the window is cut to its first tokens, so passages keep at least three quarters of the window for text.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

Headings = Sequence[tuple[int, str]]
"""(start character, heading) of each part of a text that has one, in order (Document.headings)."""

HEADING_SHARE = 4
"""A heading takes at most 1/HEADING_SHARE of a passage's window, the line break after it included."""
LINE_BREAK = "\n"
"""Between the heading and the passage; counted as one token (most tokenizers make none of it)."""


def heading_at(headings: Headings, start: int) -> str | None:
    """The heading of the part of the text where a passage starting at character `start` begins (None: none)."""
    position = bisect.bisect_right([begin for begin, _ in headings], start) - 1
    return headings[position][1] if position >= 0 else None


def with_heading(heading: str | None, passage: str) -> str:
    """The text embedded for `passage`: its heading on a line of its own, then the passage. The passage alone when
    it has no heading or already starts with it (a record's title, which is embedded before its text), so a
    heading is never embedded twice."""
    if not heading or passage.startswith(heading):
        return passage
    return heading + LINE_BREAK + passage


def fit_headings(
    tokenizer: Any,  # noqa: ANN401 (a Hugging Face fast tokenizer)
    headings_of: Sequence[Headings],
    tokens: int,
) -> tuple[list[int], list[tuple[tuple[int, str], ...]]]:
    """For each text's headings: the window its passages are cut to (`tokens` less its longest heading's tokens
    and one for the line break; `tokens` for a text without headings) and its headings, those longer than the
    share a heading may take cut to their first tokens. Blank headings are dropped."""
    most = tokens // HEADING_SHARE - 1
    kept = [tuple((start, label.strip()) for start, label in headings if label.strip()) for headings in headings_of]
    labels = sorted({label for headings in kept for _, label in headings})
    if most < 1:  # a window too short to share: no headings
        return [tokens] * len(kept), [() for _ in kept]
    if not labels:
        return [tokens] * len(kept), kept
    encodings = tokenizer(labels, add_special_tokens=False, return_offsets_mapping=True).encodings
    fitted: dict[str, tuple[str, int]] = {}
    for label, encoding in zip(labels, encodings):
        count = len(encoding.offsets)
        fitted[label] = (label[: encoding.offsets[most - 1][1]], most) if count > most else (label, count)
    windows = [
        tokens - (1 + max(fitted[label][1] for _, label in headings)) if headings else tokens for headings in kept
    ]
    return windows, [tuple((start, fitted[label][0]) for start, label in headings) for headings in kept]
