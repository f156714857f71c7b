"""Read a corpus as a stream of documents: .txt (one per line), .jsonl (a "text" field), .csv (a "text" column),
any of them gzipped, or '-' for stdin; UTF-8, or UTF-16 or UTF-32 behind a byte order mark (reading/byte_order.py)."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
import re
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import BinaryIO

from searchengine.errors import SearchEngineError
from searchengine.indexer.tables.documents import MAX_METADATA_DEPTH, nested_beyond
from searchengine.indexer.tables.store import Document, lone_surrogate
from searchengine.reading.byte_order import is_recoded, utf8_stream

STDIN = "-"
# A line ends at \n, \r\n or a lone \r (old Mac files, some exports), as Python's universal newlines read text.
_LONE_CR = re.compile(rb"(?<=\r)(?!\n)")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
"""A line break as the csv module counts lines (`line_num`) of a file opened with newline=""."""


@dataclass(frozen=True)
class JsonFields:
    """Which fields of a JSON record make a document: the text, an optional title embedded before it (as BEIR
    does: `title + " " + text`), and an optional id of the user's (Document.external_id, for upserts). The other
    fields, the title included, are kept as metadata."""

    text: str = "text"
    title: str | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        names = [name for name in (self.text, self.title, self.id) if name is not None]
        if any(not name for name in names):
            raise SearchEngineError("a field name must not be empty")
        if len(set(names)) < len(names):
            raise SearchEngineError(f"the text, title and id fields must differ, not {', '.join(names)}")

    @property
    def plain(self) -> bool:
        """True when these are the defaults, which plain text (one document a line) can also follow."""
        return self == JsonFields()


def read_corpus(source: str | Path, jsonl: bool | None = None, fields: JsonFields = JsonFields()) -> Iterator[Document]:
    """Yield the documents of `source` in order, skipping blank lines.

    `jsonl` defaults to True for names ending in .jsonl (or .jsonl.gz); .gz files are decompressed as read. Lines
    that are not UTF-8, hold NUL bytes (a binary file) or, in JSONL, are not an object with a string text field
    raise SearchEngineError naming the line. `fields` says which JSONL fields hold the text, title and id.
    """
    name = str(source)
    if is_csv(name) and not jsonl:
        with _opened(Path(source)) as handle:
            yield from _read_csv(handle, name, fields)
        return
    jsonl = _reads_jsonl(name, jsonl, fields)
    if name == STDIN:
        yield from _read_lines(utf8_stream(sys.stdin.buffer, "<stdin>"), "<stdin>", jsonl, fields)
        return
    path = Path(source)
    if path.is_dir():
        raise SearchEngineError(f"{path} is a directory; pass a .txt or .jsonl file (or - for standard input)")
    with _opened(path) as handle:
        yield from _read_lines(handle, name, jsonl, fields)


def read_records(handle: BinaryIO, name: str, fields: JsonFields = JsonFields()) -> Iterator[Document]:
    """The documents of a .jsonl or .csv file (by `name`'s suffix) read from `handle`, one per record, as
    `read_corpus` reads a corpus file: a .jsonl or .csv found in a folder is read this way too."""
    if is_csv(name):
        yield from _read_csv(handle, name, fields)
    else:
        yield from _read_lines(handle, name, True, fields)


CSV_CELL_LIMIT = 2**31 - 1
"""The characters a CSV cell may hold (the most `csv.field_size_limit` takes everywhere): Python's csv module
refuses cells over 131,072 by default, and a row holding a long article's text was skipped as "not CSV"; the
file's size (--max-file-size in a folder) bounds it instead, as a .jsonl line is bounded."""


def is_csv(name: str) -> bool:
    """Whether a corpus file is read as CSV: by its .csv(.gz) suffix."""
    return name.removesuffix(".gz").lower().endswith(".csv")


def _read_csv(handle: BinaryIO, name: str, fields: JsonFields) -> Iterator[Document]:
    """The documents of a CSV file with a header row: each row a record whose columns are fields, as a .jsonl
    line's are (the text column, by default "text"; the others metadata, as text). Rows with an empty text are
    skipped, as blank lines are."""
    csv.field_size_limit(max(csv.field_size_limit(), CSV_CELL_LIMIT))
    text = io.TextIOWrapper(handle, encoding="utf-8-sig", newline="")
    rows = csv.DictReader(text)
    try:
        if rows.fieldnames is None:
            return
        twice = sorted({column for column in rows.fieldnames if column and rows.fieldnames.count(column) > 1})
        if twice:  # a row would keep only the last of them
            raise SearchEngineError(f"{name} has the column {twice[0]!r} more than once; give each column its own name")
        if fields.text not in rows.fieldnames:
            raise SearchEngineError(
                f'{name} has no "{fields.text}" column (its columns: {", ".join(rows.fieldnames)}); name the text '
                "column with --text-field"
            )
        for row in rows:
            if None in row:
                raise SearchEngineError(f"{name} line {rows.line_num} has more cells than the header has columns")
            # the line the record starts on: line_num is where it ends, after the line breaks quoted in its cells
            number = rows.line_num - sum(len(_LINE_BREAK.findall(value)) for value in row.values() if value)
            if not (row.get(fields.text) or "").strip():
                continue
            record = {key: value for key, value in row.items() if value is not None}
            yield document_from_record(record, f"{name} line {number}", fields, name, number)
    except UnicodeDecodeError as exc:
        raise SearchEngineError(
            f"{name} is not valid UTF-8 near line {rows.line_num + 1} (byte 0x{exc.object[exc.start]:02x}); convert "
            "the file to UTF-8, e.g. `iconv -f latin1 -t utf-8`"
        ) from None
    except csv.Error as exc:
        raise SearchEngineError(f"{name} line {rows.line_num} is not CSV this can read ({exc})") from None
    finally:
        text.detach()


@dataclass(frozen=True)
class CorpusPart:
    """Consecutive documents of one corpus file, to be read on their own (by a Ray worker): where the first one's
    line starts (a byte offset in the file, decompressed if gzipped), that line's number, and how many there are."""

    path: str
    offset: int
    line: int
    documents: int


def corpus_parts(
    source: str | Path, jsonl: bool | None = None, fields: JsonFields = JsonFields(), size: int = 512
) -> Iterator[CorpusPart]:
    """Read a corpus file once, checking every line as `read_corpus` does, and cut it into parts of `size`
    documents (the last one shorter)."""
    name = str(source)
    if is_csv(name):
        raise SearchEngineError(f"{name}: --ray reads .txt and .jsonl corpus files; convert the CSV to JSON lines")
    jsonl = _reads_jsonl(name, jsonl, fields)
    with _opened(Path(source)) as handle:
        if is_recoded(handle):  # UTF-16 or UTF-32, re-encoded as it is read: its offsets are not the file's
            raise SearchEngineError(
                f"{name}: --ray reads UTF-8 corpus files; convert it, e.g. `iconv -f utf-16 -t utf-8 {name}`"
            )
        offset = start = count = 0
        first = 1
        for number, raw in enumerate(_lines(handle), start=1):
            if count == 0:
                start, first = offset, number
            offset += len(raw)
            if _document(raw, name, number, jsonl, fields) is not None:
                count += 1
                if count == size:
                    yield CorpusPart(name, start, first, count)
                    count = 0
        if count:
            yield CorpusPart(name, start, first, count)


def read_part(part: CorpusPart, jsonl: bool | None = None, fields: JsonFields = JsonFields()) -> Iterator[Document]:
    """The documents of one part of a corpus file, as `read_corpus` yields them."""
    jsonl = _reads_jsonl(part.path, jsonl, fields)
    with _opened(Path(part.path)) as handle:
        handle.seek(part.offset)
        yield from islice(_read_lines(handle, part.path, jsonl, fields, part.line), part.documents)


def _reads_jsonl(name: str, jsonl: bool | None, fields: JsonFields) -> bool:
    """Whether `name` is read as JSON lines: as told, else by its .jsonl(.gz) suffix; named fields need them."""
    if jsonl is None:
        jsonl = name.removesuffix(".gz").endswith(".jsonl")
    if not fields.plain and not jsonl:
        raise SearchEngineError(
            f"--id-field, --text-field and --title-field name JSON fields, but {name} is read as plain text; pass "
            "a .jsonl file (or --jsonl)"
        )
    return jsonl


@contextmanager
def _opened(path: Path) -> Iterator[BinaryIO]:
    """The file's bytes, decompressed when its name ends in .gz, as UTF-8 (reading/byte_order.py); a missing or
    unreadable file, or a broken gzip stream while it is read, is one SearchEngineError."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise SearchEngineError(f"corpus file {path} does not exist") from None
    except OSError as exc:
        raise SearchEngineError(f"cannot read corpus file {path}: {exc.strerror}") from None
    mode = os.fstat(handle.fileno()).st_mode
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):  # /dev/zero would be read forever
        handle.close()
        raise SearchEngineError(f"{path} is a device, not a corpus file; name a .txt, .jsonl or .csv file")
    with handle:
        if not str(path).endswith(".gz"):
            yield utf8_stream(handle, str(path))
            return
        with gzip.open(handle) as unzipped:
            try:
                yield utf8_stream(unzipped, str(path))
            except (OSError, EOFError) as exc:
                raise SearchEngineError(f"{path} is not a readable gzip file ({exc})") from None


CORPUS_SUFFIXES = (".txt", ".jsonl", ".txt.gz", ".jsonl.gz")


def corpus_files(source: str | Path) -> list[Path]:
    """The files of a corpus: a file itself, or the corpus files of a directory (its shards: .txt and .jsonl,
    gzipped or not), in name order."""
    path = Path(source)
    if not path.is_dir():
        if not path.is_file():
            raise SearchEngineError(f"corpus file {path} does not exist")
        return [path]
    files = sorted(entry for entry in path.iterdir() if entry.is_file() and entry.name.endswith(CORPUS_SUFFIXES))
    if not files:
        raise SearchEngineError(f"{path} holds no corpus files ({', '.join(CORPUS_SUFFIXES)})")
    return files


def _read_lines(
    handle: BinaryIO, name: str, jsonl: bool, fields: JsonFields = JsonFields(), first: int = 1
) -> Iterator[Document]:
    """The documents of the lines read from `handle`, the first of them numbered `first`."""
    for number, raw in enumerate(_lines(handle), start=first):
        document = _document(raw, name, number, jsonl, fields)
        if document is not None:
            yield document


def _lines(handle: BinaryIO) -> Iterator[bytes]:
    """The lines of `handle` with their endings, a line ending at \n, \r\n or a lone \r, so a file with only CR
    line endings is one document a line and not one document; their lengths add up to the bytes read."""
    for raw in handle:
        if b"\r" not in raw.rstrip(b"\r\n"):
            yield raw
            continue
        yield from (piece for piece in _LONE_CR.split(raw) if piece)


def _document(raw: bytes, name: str, number: int, jsonl: bool, fields: JsonFields) -> Document | None:
    """The document of one line, None for a blank one; a line that is not text (or not a JSON document) is one
    SearchEngineError naming it."""
    if b"\x00" in raw:
        raise SearchEngineError(
            f"{name} line {number} contains NUL bytes: this looks like a binary file, not text. "
            "Index a UTF-8 .txt (one document per line) or .jsonl file"
        )
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SearchEngineError(
            f"{name} line {number} is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
            "convert the file to UTF-8, e.g. `iconv -f latin1 -t utf-8`"
        ) from None
    if number == 1:
        line = line.removeprefix("\ufeff")
    if not line.strip():
        return None
    return _parse_json_line(line, name, number, fields) if jsonl else Document(line.strip(), name, number)


class _NotJsonNumber(SearchEngineError):
    """NaN, Infinity or -Infinity in a JSON line: Python's json reads them, JSON does not allow them."""


def _refuse_constant(name: str) -> None:
    raise _NotJsonNumber(name)


class _FloatOverflow(SearchEngineError):
    """A JSON number beyond the largest float (1e400): Python reads it as infinity, which no store can hold."""


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _FloatOverflow(text)
    return value


def _parse_json_line(line: str, name: str, number: int, fields: JsonFields) -> Document:
    try:
        record = json.loads(line, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise SearchEngineError(f"{name} line {number} is not valid JSON ({exc.msg}, column {exc.colno})") from None
    except _NotJsonNumber as exc:  # NaN, Infinity, -Infinity: not JSON, and no filter could compare them
        raise SearchEngineError(
            f"{name} line {number} holds {exc}, which is not a JSON number; write null or a number instead"
        ) from None
    except _FloatOverflow as exc:
        raise SearchEngineError(
            f"{name} line {number} holds the number {exc}, beyond the largest a float holds; write it as a string"
        ) from None
    except ValueError:  # an integer longer than Python converts (sys.get_int_max_str_digits(), 4,300 by default)
        raise SearchEngineError(
            f"{name} line {number} holds an integer of more than {sys.get_int_max_str_digits():,} digits, too long "
            "to read; write it as a string"
        ) from None
    except RecursionError:
        raise SearchEngineError(
            f"{name} line {number} is nested too deeply to read; flatten its JSON (metadata is one object of "
            "plain values and lists)"
        ) from None
    if nested_beyond(record, MAX_METADATA_DEPTH):
        raise SearchEngineError(
            f"{name} line {number} is nested more than {MAX_METADATA_DEPTH} levels deep; flatten its JSON (metadata is one "
            "object of plain values and lists)"
        )
    _refuse_lone_surrogates(line, record, name, number)
    return document_from_record(record, f"{name} line {number}", fields, name, number)


def document_from_record(
    record: object,
    label: str,
    fields: JsonFields = JsonFields(),
    source: str | None = None,
    line: int | None = None,
) -> Document:
    """A Document from one JSON object as a .jsonl line holds it: the string text field (after the title field,
    when one is named and present), the other fields metadata, and the id field (when named) the external id.
    `label` names the record in errors ("docs.jsonl line 3")."""
    if not isinstance(record, dict) or not isinstance(record.get(fields.text), str):
        raise SearchEngineError(f'{label} needs a JSON object with a string "{fields.text}" field')
    record = dict(record)
    text = record.pop(fields.text).strip()
    title = record.get(fields.title) if fields.title is not None else None
    if title is not None and not isinstance(title, str):
        raise SearchEngineError(f'{label} has a "{fields.title}" field (the title) that is not a string or null')
    text = f"{title.strip()} {text}".strip() if title else text
    if not text:
        raise SearchEngineError(f'{label} has an empty "{fields.text}" field')
    external_id = None
    if fields.id is not None:
        external_id = record.pop(fields.id, None)
        if not isinstance(external_id, (str, int)) or isinstance(external_id, bool):
            raise SearchEngineError(f'{label} needs a string or integer "{fields.id}" field (the id)')
        if isinstance(external_id, str) and not external_id.strip():  # no `delete --external` could name it
            raise SearchEngineError(f'{label} has an empty "{fields.id}" field (the id); give every record an id')
    headings = ((0, title.strip()),) if title and title.strip() else ()  # embedded with passages after the first
    return Document(text, source, line, record, None if external_id is None else str(external_id), headings=headings)


def _refuse_lone_surrogates(line: str, record: object, name: str, number: int) -> None:
    """JSON escapes such as "\\ud800" decode to half a character that no UTF-8 file or database can hold."""
    if "\\u" not in line:
        return
    try:
        code = lone_surrogate(record)
    except RecursionError:
        raise SearchEngineError(f"{name} line {number} is nested too deeply to read; flatten its JSON") from None
    if code is not None:
        raise SearchEngineError(
            f"{name} line {number} holds a lone surrogate escape (\\u{code:04x}), half of a character; fix the text "
            "or drop the escape"
        )
