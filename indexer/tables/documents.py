"""What the document store takes in and gives back: a Document to index, a StoredDocument read back, and the
checks every write path (command line, Python, the server) makes on a document before anything is written."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from searchengine.indexer.errors import IndexerError


@dataclass(frozen=True)
class Document:
    """A text to index, with its origin and any metadata that came with it."""

    text: str
    source: str | None = None
    line: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    external_id: str | None = None
    """A user-given id: adding a document with an id already stored replaces that document (upsert)."""
    blocks: tuple[int, ...] = ()
    """Where each block (paragraph, list item, code block) of a document read from a file starts: a passage may
    begin at any of them. Used when splitting into passages, not stored."""
    section_starts: tuple[int, ...] = ()
    """Where each heading's section or page starts: a passage never runs across one. Not stored."""
    headings: tuple[tuple[int, str], ...] = ()
    """(start character, heading) of each part of the text that has one, in order: a file's title from its start,
    then each section's heading path ("Guide › Install"); a PDF page's or a titled record's title. An index built
    with passage headings embeds each passage after the heading of the part it starts in. Not stored."""

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class StoredDocument:
    """A document of the store: `count` is how many stored documents hold the same text (1 when unique)."""

    id: int
    text: str
    source: str | None
    line: int | None
    metadata: dict[str, Any]
    count: int
    external_id: str | None = None


def lone_surrogate(value: object) -> int | None:
    """The code point of the first lone surrogate in `value` (a str, or JSON data holding strings): half of a
    character, from a JSON escape such as "\\ud800" or a byte Python kept as a surrogate escape, which neither
    UTF-8 nor SQLite can hold. None where there is none. Raises RecursionError on JSON nested too deeply."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if text.isascii():  # O(1) in CPython: the common ASCII text costs nothing more
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return ord(text[exc.start])
    return None


def metadata_json(metadata: dict[str, Any], number: int) -> str:
    """The metadata as stored, refusing NaN and Infinity, which JSON has no numbers for: stored, they would break
    every later filter. Every write path (command line, Python, the server) comes through here."""
    try:
        return json.dumps(metadata, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise IndexerError(
            f"document {number} holds NaN or Infinity in its metadata, which JSON cannot hold and a filter cannot "
            "compare; send null or a string instead"
        ) from None


MAX_METADATA_DEPTH = 64
"""How deep lists and objects may nest in metadata: deeper ones are no fields a filter reads, and a hit carrying
one could not be shown (Python's recursion limit)."""


def non_text_keys(value: object) -> list[object]:
    """The keys of the first object (dict) in `value`, looked at a level at a time, that has keys other than str,
    which JSON turns into text (1 into "1", True into "true", None into "null") even beside that key written as
    text, giving an object with the same key twice; none found: []. Called after `nested_beyond` bounds the depth."""
    layer = [value] if isinstance(value, (list, dict)) else []
    while layer:
        for container in layer:
            if isinstance(container, dict):
                odd = [key for key in container if not isinstance(key, str)]
                if odd:
                    return odd
        layer = [
            item
            for container in layer
            for item in (container.values() if isinstance(container, dict) else container)
            if isinstance(item, (list, dict))
        ]
    return []


def nested_beyond(value: object, levels: int) -> bool:
    """Whether lists and objects (dicts) nest in `value` deeper than `levels`; looks no deeper than that, a level
    at a time (no call per value: reading a hit's metadata back checks it too)."""
    layer = [value] if isinstance(value, (list, dict)) else []
    for _ in range(levels):
        layer = [
            item
            for container in layer
            for item in (container.values() if isinstance(container, dict) else container)
            if isinstance(item, (list, dict))
        ]
        if not layer:
            return False
    return bool(layer)


def refuse_unstorable(documents: Sequence[Document]) -> None:
    """Refuse, before anything is written, a document whose external id is not a str or is blank (as a .jsonl or
    .csv record's empty id field is refused: reading/corpus.py), whose metadata nests too deeply, holds what JSON
    cannot (a date, a set, NaN or Infinity), or whose text, id or metadata holds a lone surrogate. Every write
    path comes through here: one index's store, and a cluster's write before it is routed."""
    for number, document in enumerate(documents, start=1):
        refuse_unstorable_document(document, number)


def refuse_unstorable_document(document: Document, number: int) -> None:
    """refuse_unstorable's checks of one document, named as document `number` (counted from 1): what a cluster's
    build checks as it routes each document, so its error numbers the document in the whole input, before any is
    sent to a copy (a copy numbered it within its batch, inside the build's error)."""
    if document.external_id is not None and not isinstance(document.external_id, str):
        raise IndexerError(
            f"document {number} has an external id of type {type(document.external_id).__name__}, not str; "
            "give ids as text (e.g. str(5)): ids are text, and a stored id is matched as text"
        )
    if document.external_id is not None and not document.external_id.strip():
        raise IndexerError(
            f"document {number} has a blank external id ({document.external_id!r}), which no delete or upsert "
            "could name; give it an id with text in it, or None for no id"
        )
    if nested_beyond(document.metadata, MAX_METADATA_DEPTH):
        raise IndexerError(
            f"document {number} has metadata nested more than {MAX_METADATA_DEPTH} levels deep; flatten it "
            "(metadata is one object of plain values and lists)"
        )
    odd_keys = non_text_keys(document.metadata)
    if odd_keys:
        raise IndexerError(
            f"document {number} has a metadata key that is not text ({odd_keys[0]!r}); JSON's keys are text (a key 1 "
            'would be stored as "1", beside any key "1" there): give str keys'
        )
    try:
        metadata = metadata_json(document.metadata, number) if document.metadata else ""
    except TypeError as exc:  # json.dumps of a date, a set, bytes, a tuple key: from Python callers
        raise IndexerError(
            f"document {number} has metadata JSON cannot hold ({exc}); give text, numbers, true/false, null, "
            "lists and objects with text keys (a date as text, e.g. '2020-01-02')"
        ) from None
    parts = (document.text, document.external_id or "", metadata)
    code = next((code for code in map(lone_surrogate, parts) if code is not None), None)
    if code is not None:
        raise IndexerError(
            f"document {number} holds a lone surrogate (\\u{code:04x}), half of a character, in its text, id or "
            "metadata; send valid Unicode"
        )
