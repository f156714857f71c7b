"""Counts in words for messages (the engine's errors, the command line's output): "1 document", "2 documents", never
"1 documents"."""

from __future__ import annotations


def counted(number: int, singular: str, plural: str | None = None) -> str:
    """`number` followed by the noun in the form that number needs, with thousands separators."""
    noun = singular if number == 1 else (plural or f"{singular}s")
    return f"{number:,} {noun}"
