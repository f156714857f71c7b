"""Texts far longer than the model's window, cut before they are tokenized. A tokenizer reads a whole text before
it truncates: one 20 MB line (a corpus line, or a `.txt` indexed without passages) took 95 s and 4.6 GB to
tokenize for the 64 tokens the tiny test model kept. Cut to a bound, the same tokens come back at once; where the
cut cannot be shown to keep them, the whole text is tokenized as before."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

CHARS_PER_TOKEN = 64
"""Characters of text kept per token of the window before a text is cut: far more than a token of text takes (a
word piece, or an unknown word of up to 100 characters as one [UNK]), so a cut text nearly always still overflows
the window, and tokenizing its head costs a few milliseconds."""


def truncated_encodings(
    encode: Callable[[list[str]], Sequence[Any]], texts: Sequence[str], window: int, keeps_start: bool = True
) -> list[Any]:
    """`encode(texts)` (a truncating tokenizer call: one tokenizers.Encoding per text) with each text longer than
    `window` x CHARS_PER_TOKEN characters cut first, at a space, where that gives the same kept tokens: its kept
    tokens end before the cut text's last word (the only pre-token the cut may change) and more of it overflowed.
    Any other cut text is encoded whole, so the result is always what encoding the whole texts gives. A tokenizer
    that truncates from the left (`keeps_start` False) keeps a text's end, so its texts are not cut."""
    if not keeps_start:
        return list(encode(list(texts)))
    limit = window * CHARS_PER_TOKEN
    heads = [_head(text, limit) for text in texts]
    encodings = list(encode([text if head is None else head for text, head in zip(texts, heads)]))
    redo = [i for i, head in enumerate(heads) if head is not None and not _kept_whole(encodings[i], head)]
    for i, encoding in zip(redo, encode([texts[i] for i in redo]) if redo else ()):
        encodings[i] = encoding
    return encodings


def _head(text: str, limit: int) -> str | None:
    """`text` up to its last space before `limit` characters, trailing spaces dropped (so the next character of
    the text is a space); None where it is not longer than `limit` or has no such space."""
    space = text.rfind(" ", 0, limit) if len(text) > limit else -1
    return text[:space].rstrip(" ") or None if space > 0 else None


def _kept_whole(encoding: Any, head: str) -> bool:  # noqa: ANN401 (a tokenizers.Encoding)
    """Whether the tokens `encoding` kept of `head` end before its last word and others overflowed."""
    kept_end = max((end for _, end in encoding.offsets), default=0)
    return bool(encoding.overflowing) and kept_end <= head.rfind(" ")
