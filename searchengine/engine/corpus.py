"""Read a corpus as a stream of documents: .txt (one per line), .jsonl (a "text" field), either gzipped, or
'-' for stdin."""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import BinaryIO

from searchengine.errors import SearchEngineError
from searchengine.indexer.store import Document

STDIN = "-"


def read_corpus(source: str | Path, jsonl: bool | None = None, id_field: str | None = None) -> Iterator[Document]:
    """Yield the documents of `source` in order, skipping blank lines.

    `jsonl` defaults to True for names ending in .jsonl (or .jsonl.gz); .gz files are decompressed as read. Lines that are not UTF-8, hold NUL bytes (a binary
    file) or, in JSONL, are not an object with a string "text" field raise SearchEngineError naming the line.
    `id_field` names a JSONL field holding each document's own id (Document.external_id), for upserts.
    """
    name = str(source)
    jsonl = _reads_jsonl(name, jsonl, id_field)
    if name == STDIN:
        yield from _read_lines(sys.stdin.buffer, "<stdin>", jsonl, id_field)
        return
    path = Path(source)
    if path.is_dir():
        raise SearchEngineError(f"{path} is a directory; pass a .txt or .jsonl file (or - for standard input)")
    with _opened(path) as handle:
        yield from _read_lines(handle, name, jsonl, id_field)


@dataclass(frozen=True)
class CorpusPart:
    """Consecutive documents of one corpus file, to be read on their own (by a Ray worker): where the first one's
    line starts (a byte offset in the file, decompressed if gzipped), that line's number, and how many there are."""

    path: str
    offset: int
    line: int
    documents: int


def corpus_parts(
    source: str | Path, jsonl: bool | None = None, id_field: str | None = None, size: int = 512
) -> Iterator[CorpusPart]:
    """Read a corpus file once, checking every line as `read_corpus` does, and cut it into parts of `size`
    documents (the last one shorter)."""
    name = str(source)
    jsonl = _reads_jsonl(name, jsonl, id_field)
    with _opened(Path(source)) as handle:
        offset = start = count = 0
        first = 1
        for number, raw in enumerate(handle, start=1):
            if count == 0:
                start, first = offset, number
            offset += len(raw)
            if _document(raw, name, number, jsonl, id_field) is not None:
                count += 1
                if count == size:
                    yield CorpusPart(name, start, first, count)
                    count = 0
        if count:
            yield CorpusPart(name, start, first, count)


def read_part(part: CorpusPart, jsonl: bool | None = None, id_field: str | None = None) -> Iterator[Document]:
    """The documents of one part of a corpus file, as `read_corpus` yields them."""
    jsonl = _reads_jsonl(part.path, jsonl, id_field)
    with _opened(Path(part.path)) as handle:
        handle.seek(part.offset)
        yield from islice(_read_lines(handle, part.path, jsonl, id_field, part.line), part.documents)


def _reads_jsonl(name: str, jsonl: bool | None, id_field: str | None) -> bool:
    """Whether `name` is read as JSON lines: as told, else by its .jsonl(.gz) suffix; an id field needs them."""
    if jsonl is None:
        jsonl = name.removesuffix(".gz").endswith(".jsonl")
    if id_field is not None and not jsonl:
        raise SearchEngineError(f"an id field needs JSON lines, but {name} is read as plain text; pass a .jsonl file")
    return jsonl


@contextmanager
def _opened(path: Path) -> Iterator[BinaryIO]:
    """The file's bytes, decompressed when its name ends in .gz; a missing or unreadable file, or a broken gzip
    stream while it is read, is one SearchEngineError."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise SearchEngineError(f"corpus file {path} does not exist") from None
    except OSError as exc:
        raise SearchEngineError(f"cannot read corpus file {path}: {exc.strerror}") from None
    with handle:
        if not str(path).endswith(".gz"):
            yield handle
            return
        with gzip.open(handle) as unzipped:
            try:
                yield unzipped
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
    handle: BinaryIO, name: str, jsonl: bool, id_field: str | None = None, first: int = 1
) -> Iterator[Document]:
    """The documents of the lines read from `handle`, the first of them numbered `first`."""
    for number, raw in enumerate(handle, start=first):
        document = _document(raw, name, number, jsonl, id_field)
        if document is not None:
            yield document


def _document(raw: bytes, name: str, number: int, jsonl: bool, id_field: str | None) -> Document | None:
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
    return _parse_json_line(line, name, number, id_field) if jsonl else Document(line.strip(), name, number)


def _refuse_constant(name: str) -> None:
    raise ValueError(name)


def _parse_json_line(line: str, name: str, number: int, id_field: str | None) -> Document:
    try:
        record = json.loads(line, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise SearchEngineError(f"{name} line {number} is not valid JSON ({exc.msg}, column {exc.colno})") from None
    except ValueError as exc:  # NaN, Infinity, -Infinity: not JSON, and no filter could compare them
        raise SearchEngineError(
            f"{name} line {number} holds {exc}, which is not a JSON number; write null or a number instead"
        ) from None
    except RecursionError:
        raise SearchEngineError(
            f"{name} line {number} is nested too deeply to read; flatten its JSON (metadata is one object of "
            "plain values and lists)"
        ) from None
    _refuse_lone_surrogates(line, record, name, number)
    return document_from_record(record, f"{name} line {number}", id_field, name, number)


def document_from_record(
    record: object, label: str, id_field: str | None = None, source: str | None = None, line: int | None = None
) -> Document:
    """A Document from one JSON object as a .jsonl line holds it: a string "text", the other fields metadata, and
    `id_field` (when given) the external id. `label` names the record in errors ("docs.jsonl line 3")."""
    if not isinstance(record, dict) or not isinstance(record.get("text"), str):
        raise SearchEngineError(f'{label} needs a JSON object with a string "text" field')
    record = dict(record)
    text = record.pop("text").strip()
    if not text:
        raise SearchEngineError(f'{label} has an empty "text" field')
    external_id = None
    if id_field is not None:
        external_id = record.pop(id_field, None)
        if not isinstance(external_id, (str, int)) or isinstance(external_id, bool):
            raise SearchEngineError(f'{label} needs a string or integer "{id_field}" field (the id)')
    return Document(text, source, line, record, None if external_id is None else str(external_id))


def _refuse_lone_surrogates(line: str, record: object, name: str, number: int) -> None:
    """JSON escapes such as "\\ud800" decode to half a character that no UTF-8 file or database can hold."""
    if "\\u" not in line:
        return
    try:
        json.dumps(record, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SearchEngineError(
            f"{name} line {number} holds a lone surrogate escape (\\u{ord(exc.object[exc.start]):04x}), half of a "
            "character; fix the text or drop the escape"
        ) from None
    except RecursionError:
        raise SearchEngineError(f"{name} line {number} is nested too deeply to read; flatten its JSON") from None
