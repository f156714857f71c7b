"""Plain text (.txt) found in a folder: the whole file one document, its paragraphs (blank-line separated) the
blocks. A .txt named on the command line is still read one document per line (searchengine/reading/corpus.py)."""

from __future__ import annotations

import re

from searchengine.reading.byte_order import as_utf8, unmarked_utf16
from searchengine.reading.extracted import Extracted, Unreadable

PARAGRAPH_BREAK = re.compile(r"\r?\n[ \t]*\r?\n|\r[ \t]*\r")


def decoded(data: bytes, name: str) -> str:
    """The bytes of a text file as text: UTF-8, or UTF-16 or UTF-32 where a byte order mark says so (the mark
    dropped; reading/byte_order.py); anything else is Unreadable."""
    data = as_utf8(data)
    if b"\x00" in data:
        encoding = unmarked_utf16(data)
        if encoding is not None:
            raise Unreadable(
                f"holds NUL bytes: it looks like {encoding} text without a byte order mark; convert it, e.g. "
                f"`iconv -f {encoding} -t utf-8 {name}`"
            )
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
