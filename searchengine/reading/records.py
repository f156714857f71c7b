"""JSON lines (.jsonl) and CSV (.csv) found in a folder: one document per record, read as a corpus file named on
the command line is (searchengine/reading/corpus.py: the text field, by default "text", and the title and id fields
the index was built with), with ids `path#N` (N the record's line) or `path#ID` where the index names an id
field. A file with one bad record is skipped whole, naming the record, so a sync never keeps half a file."""

from __future__ import annotations

import codecs
import io

from searchengine.errors import SearchEngineError
from searchengine.indexer.store import Document
from searchengine.reading.corpus import JsonFields, read_records
from searchengine.reading.extracted import Unreadable

WIDE_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_BE)
"""Byte order marks of UTF-16 and UTF-32 (UTF-32-LE's starts with UTF-16-LE's), which Windows tools often write."""


def records(data: bytes, name: str, fields: JsonFields) -> list[Document]:
    """The documents of one record file's bytes (none for a file without records), as `read_corpus` reads them:
    the id field's value (where the index names one) as external id; a file that is not valid records is
    Unreadable, with its first problem."""
    if data.startswith(WIDE_BOMS):
        raise Unreadable(
            "is UTF-16 or UTF-32 text (it starts with a byte order mark); convert it to UTF-8, e.g. "
            "`iconv -f utf-16 -t utf-8`"
        )
    try:
        read = list(read_records(io.BytesIO(data), name, fields))
    except SearchEngineError as exc:
        raise Unreadable(str(exc).removeprefix(f"{name} ")) from None
    for document in read:  # an empty id would fall back to a line's id, which another record's id may be
        if document.external_id == "":
            raise Unreadable(f'line {document.line} has an empty "{fields.id}" field (the id); give every record an id')
    return read
