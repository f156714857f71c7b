"""The record of what an index was built from (the "sources" and "fields" of the build setting "reading", described
in engine/files.py): a corpus file's absolute path, "-" for standard input, and its JSON fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from searchengine.reading.corpus import STDIN, JsonFields


def source_name(source: object) -> str | None:
    """How the record names an input: a file's absolute path, "-" for standard input, None for texts given in
    Python (nothing to compare a later build with)."""
    from searchengine.reading.walk import absolute_path  # with the file readers: only a build or sync needs them

    if isinstance(source, (str, Path)):
        return STDIN if str(source) == STDIN else str(absolute_path(Path(source)))
    return None


def fields_record(fields: JsonFields, corpus: object) -> dict[str, Any]:
    """The record of an index built from a corpus file (or texts): its JSON fields and its source."""
    name = source_name(corpus)
    return {
        "fields": {"text": fields.text, "title": fields.title, "id": fields.id},
        "sources": [] if name is None else [name],
    }
