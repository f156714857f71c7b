"""File names as text: which ones a document id can hold, and how any of them is shown on one line."""

from __future__ import annotations


def is_utf8(name: str) -> bool:
    """False for a name whose bytes are not UTF-8 (Python keeps such bytes as lone surrogates, which no id,
    database or JSON can hold)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable(text: str) -> str:
    """`text` with what would break a line of output (line breaks, control characters, undecodable bytes)
    written as escapes (`\\n`, `\\xff`), each once; printable characters, accented ones too, stay as they are."""
    if text.isprintable() and is_utf8(text):
        return text
    raw = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(char if char.isprintable() else char.encode("unicode_escape").decode("ascii") for char in raw)
