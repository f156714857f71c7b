"""Text files that are not UTF-8 but say what they are: UTF-16 or UTF-32 behind a byte order mark, as Windows
tools write them. One rule for every text format read, found in a folder (plain text, Markdown, .jsonl, .csv:
`as_utf8`) or named on the command line (a corpus file: `utf8_stream`): a file that starts with such a mark is
read in that encoding, any other as UTF-8 (whose own mark is dropped by the readers)."""

from __future__ import annotations

import codecs
import io
from typing import BinaryIO

from searchengine.errors import SearchEngineError
from searchengine.reading.extracted import Unreadable

BYTE_ORDER_MARKS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
"""The byte order marks a text file may start with instead of being UTF-8; UTF-32-LE's starts with UTF-16-LE's,
so it is looked for first."""
_CHUNK = 1 << 16


def marked_encoding(head: bytes) -> str | None:
    """The encoding the byte order mark at the start of `head` (a file's first bytes) names, None for none."""
    return next((encoding for mark, encoding in BYTE_ORDER_MARKS if head.startswith(mark)), None)


def unmarked_utf16(data: bytes) -> str | None:
    """"UTF-16LE" or "UTF-16BE" where `data` (a whole file without a byte order mark) looks like mostly-Latin text in
    that encoding: no NUL in its characters' low bytes, nine in ten of their high bytes NUL, and it decodes. Else
    None. Such a file is not read on a guess; its skip names the encoding, so the user can convert it."""
    if len(data) % 2:
        return None
    for encoding, low, high in (("UTF-16LE", data[::2], data[1::2]), ("UTF-16BE", data[1::2], data[::2])):
        if b"\x00" not in low and 10 * high.count(0) >= 9 * len(high):
            try:
                data.decode(encoding)
            except UnicodeDecodeError:
                continue
            return encoding
    return None


def as_utf8(data: bytes) -> bytes:
    """A whole file's bytes as UTF-8: re-encoded without the mark where a byte order mark names UTF-16 or UTF-32,
    else as they are (for the reader to check as UTF-8). A file that is not what its mark says is Unreadable."""
    encoding = marked_encoding(data)
    if encoding is None:
        return data
    try:
        return data.decode(encoding).encode("utf-8")
    except UnicodeError:
        raise Unreadable(_not_what_it_says(encoding)) from None


def utf8_stream(handle: BinaryIO, name: str) -> BinaryIO:
    """`handle` (a file, gzip or stdin) as UTF-8 bytes, read as they are needed: itself where it starts with no
    byte order mark of UTF-16 or UTF-32, else its text re-encoded as it is read (line breaks stay where they
    were, so lines keep their numbers). Such a stream cannot seek."""
    if not hasattr(handle, "peek"):  # (a BytesIO standing in for stdin)
        handle = io.BufferedReader(handle)
    encoding = marked_encoding(handle.peek(4)[:4])
    return handle if encoding is None else io.BufferedReader(_Recoded(handle, encoding, name), _CHUNK)


def is_recoded(handle: BinaryIO) -> bool:
    """Whether `handle` is a stream `utf8_stream` re-encodes (whose offsets are not the file's)."""
    return isinstance(handle, io.BufferedReader) and isinstance(handle.raw, _Recoded)


class _Recoded(io.RawIOBase):
    """The text of a UTF-16 or UTF-32 stream as UTF-8 bytes; a stream that is not what its mark says is one
    SearchEngineError naming it."""

    def __init__(self, handle: BinaryIO, encoding: str, name: str) -> None:
        self._handle, self._encoding, self._name = handle, encoding, name
        self._decoder = codecs.getincrementaldecoder(encoding.lower())()
        self._pending = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:
        while not self._pending and not self._done:
            chunk = self._handle.read(_CHUNK)
            self._done = not chunk
            try:
                self._pending = self._decoder.decode(chunk, final=self._done).encode("utf-8")
            except UnicodeError:
                raise SearchEngineError(f"{self._name} {_not_what_it_says(self._encoding)}") from None
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def _not_what_it_says(encoding: str) -> str:
    return f"starts as {encoding} (a byte order mark) but is not valid {encoding}; convert it to UTF-8"
