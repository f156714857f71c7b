"""A document's stored metadata read back for a hit. An index written before metadata nesting was limited
(MAX_METADATA_DEPTH, refused on write since) may hold a field nested deeper, which no hit could carry (Python's
recursion limit): such a field is left out and named in one line under UNREADABLE_METADATA, the others shown, so
a query that finds the document shows it instead of failing. What is stored is never changed."""

from __future__ import annotations

import json
import re
from typing import Any

from searchengine.indexer.tables.documents import MAX_METADATA_DEPTH, nested_beyond

UNREADABLE_METADATA = "unreadable_metadata"
"""The field that names, in one line, the metadata a document read back leaves out."""
_REWRITE = "add the document again with flatter metadata to show it"
_SPACE = re.compile(r"[ \t\n\r]*")
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
"""A JSON string (skipped whole, brackets in it included) or a bracket."""


def readable_metadata(stored: str | None) -> dict[str, Any]:
    """A document's stored metadata (JSON text) as a hit shows it: as stored, less the fields nested more than
    MAX_METADATA_DEPTH deep, which UNREADABLE_METADATA names."""
    stored = stored or "{}"
    try:
        metadata = json.loads(stored)
    except RecursionError:  # too deep for Python's parser: read the object's fields one by one
        fields = _fields_one_by_one(stored)
        return _too_deep() if fields is None else fields
    if stored.count("[") + stored.count("{") <= MAX_METADATA_DEPTH or not nested_beyond(metadata, MAX_METADATA_DEPTH):
        return metadata  # (a text with no more brackets than the limit cannot nest deeper than it)
    if not isinstance(metadata, dict):
        return _too_deep()
    return _shown(metadata, [key for key, value in metadata.items() if nested_beyond(value, MAX_METADATA_DEPTH - 1)])


def _too_deep() -> dict[str, str]:
    """What a hit shows for metadata that is no readable object within MAX_METADATA_DEPTH, whichever way this
    Python's JSON parser found that out (3.11's stops at about 1,000 levels, 3.12's reads far deeper)."""
    return {UNREADABLE_METADATA: f"nested more than {MAX_METADATA_DEPTH} levels deep; {_REWRITE}"}


def _shown(fields: dict[str, Any], deep: list[str]) -> dict[str, Any]:
    """`fields` less the `deep` ones, which UNREADABLE_METADATA names."""
    shown = {key: value for key, value in fields.items() if key not in deep}
    names = ", ".join(json.dumps(key, ensure_ascii=False) for key in deep)
    shown[UNREADABLE_METADATA] = f"{names} nested more than {MAX_METADATA_DEPTH} levels deep, left out; {_REWRITE}"
    return shown


def _fields_one_by_one(stored: str) -> dict[str, Any] | None:
    """The fields of a JSON object too deep for json.loads, each value read on its own (a deep one skipped to its
    end); None where `stored` is not an object this can read."""
    decoder = json.JSONDecoder()
    fields: dict[str, Any] = {}
    deep: list[str] = []
    try:
        position = _SPACE.match(stored).end()
        if not stored.startswith("{", position):
            return None
        position = _SPACE.match(stored, position + 1).end()
        while not stored.startswith("}", position):
            key, position = decoder.raw_decode(stored, position)
            position = _SPACE.match(stored, position).end()
            if not isinstance(key, str) or not stored.startswith(":", position):
                return None
            position = _SPACE.match(stored, position + 1).end()
            try:
                fields[key], position = decoder.raw_decode(stored, position)
            except RecursionError:
                deep.append(key)
                position = _end_of_container(stored, position)
            position = _SPACE.match(stored, position).end()
            if stored.startswith(",", position):
                position = _SPACE.match(stored, position + 1).end()
    except ValueError:
        return None
    deep += [key for key, value in fields.items() if nested_beyond(value, MAX_METADATA_DEPTH - 1)]
    return _shown(fields, deep)


def _end_of_container(stored: str, start: int) -> int:
    """Where the list or object that starts at `start` ends (just past its closing bracket)."""
    depth = 0
    for token in _TOKEN.finditer(stored, start):
        if token.group()[0] == '"':
            continue
        depth += 1 if token.group() in "[{" else -1
        if depth == 0:
            return token.end()
    raise ValueError("unclosed list or object")
