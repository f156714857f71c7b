"""Plain text (.txt) found in a folder: the whole file one document, its paragraphs (blank-line separated) the
blocks. A .txt named on the command line is still read one document per line (searchengine/reading/corpus.py)."""

from __future__ import annotations

import codecs
import re

from searchengine.reading.extracted import Extracted, Unreadable

PARAGRAPH_BREAK = re.compile(r"\r?\n[ \t]*\r?\n|\r[ \t]*\r")


BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
"""The byte order marks a text file may start with instead of being UTF-8 (Windows tools write UTF-16 often);
UTF-32-LE's starts with UTF-16-LE's, so it is looked for first."""


def as_utf8(data: bytes) -> bytes:
    """A text file's bytes as UTF-8: UTF-16 or UTF-32 where a byte order mark says so, re-encoded without the
    mark; any other bytes as they are, for the reader to check as UTF-8. The one rule of every text format read
    from folders: plain text, Markdown (here) and the records of .jsonl and .csv files (reading/records.py)."""
    for mark, encoding in BYTE_ORDER_MARKS:
        if data.startswith(mark):
            try:
                return data.decode(encoding).encode("utf-8")
            except UnicodeError:
                raise Unreadable(
                    f"starts as {encoding} (a byte order mark) but is not valid {encoding}; convert it to UTF-8"
                ) from None
    return data


def decoded(data: bytes, name: str) -> str:
    """The bytes of a text file as text: UTF-8, or UTF-16 or UTF-32 where a byte order mark says so (`as_utf8`;
    the mark dropped); anything else is Unreadable."""
    data = as_utf8(data)
    if b"\x00" in data:
        raise Unreadable("holds NUL bytes: binary data, not text")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise Unreadable(
            f"is not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); convert it, e.g. "
            f"`iconv -f latin1 -t utf-8 {name}`"
        ) from None


def extract(data: bytes, name: str) -> Extracted:
    """One text file as one document whose blocks are its paragraphs."""
    extracted = Extracted()
    for paragraph in PARAGRAPH_BREAK.split(decoded(data, name)):
        extracted.add_block(paragraph)
    return extracted
