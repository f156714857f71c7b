"""JSON lines (.jsonl) and CSV (.csv) found in a folder: one document per record, read as a corpus file named on
the command line is (searchengine/reading/corpus.py: the text field, by default "text", and the title and id fields
the index was built with), with ids `path#N` (N the record's line) or `path#ID` where the index names an id
field. A file with one bad record is skipped whole, naming the record, so a sync never keeps half a file. Their
bytes are decoded as plain text's are (reading/byte_order.py: UTF-8, or UTF-16 or UTF-32 after a byte order mark)."""

from __future__ import annotations

import io

from searchengine.errors import SearchEngineError
from searchengine.indexer.tables.store import Document
from searchengine.reading.byte_order import as_utf8
from searchengine.reading.corpus import JsonFields, read_records
from searchengine.reading.extracted import Unreadable


def records(data: bytes, name: str, fields: JsonFields) -> list[Document]:
    """The documents of one record file's bytes (none for a file without records), as `read_corpus` reads them:
    the id field's value (where the index names one) as external id; a file that is not valid records is
    Unreadable, with its first problem."""
    try:  # read_records refuses a blank id, which would fall back to a line's id that another record's id may be
        return list(read_records(io.BytesIO(as_utf8(data)), name, fields))
    except SearchEngineError as exc:
        raise Unreadable(str(exc).removeprefix(f"{name} ")) from None
