"""How an add changes the documents table: which documents become new rows, which replace a stored document with
the same external id (upsert), and which only give a stored one a new origin and metadata. Planned from what is
stored before anything is written; the store applies the plan in its transaction."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from searchengine.indexer.tables.documents import Document, metadata_json


@dataclass(frozen=True)
class StoreChange:
    """What `DocumentStore.add` did: rows to embed, and rows whose vectors must go."""

    ids: list[int]
    """Ids of the new rows, one per added document (upserts that left the text as it was add none)."""
    positions: list[int]
    """For each new row, the position of its document in the input."""
    removed: list[int]
    """Rows an upsert gave a new text: deleted from the store, their vectors to be dropped."""
    removed_vectors: list[int] = field(default_factory=list)
    """The vector ids of the `removed` rows: their own ids and those of their further passages."""
    repeated: list[bool] = field(default_factory=list)
    """For each new row, whether an earlier document (stored, or earlier in the input) already has its text."""
    updated: int = 0
    """Upserts that kept the stored text and replaced only its origin and metadata (the vector stays)."""
    superseded: int = 0
    """Documents of the input that a later one with the same id, in the same input, replaced before they were
    stored (ids are text: 1 and "1" are one id)."""

    def __iter__(self) -> Iterator[list[int]]:
        return iter((self.ids, self.positions, self.removed))


@dataclass(frozen=True)
class UpsertPlan:
    """The rows an add inserts, updates and deletes."""

    rows: list[dict[str, Any]]
    """New rows, in input order: id, external_id, text, source, line, metadata, hash."""
    positions: list[int]
    """For each new row, the position of its document in the input."""
    updates: list[tuple[str | None, int | None, str, str]]
    """(source, line, metadata, external id) of stored documents whose text stays."""
    removed: list[int]
    """Stored rows an upsert gave a new text: to delete."""
    superseded: int

    def change(self, known: set[str], removed_vectors: list[int]) -> StoreChange:
        """What the add did, once applied: `known` are the text hashes stored before it."""
        seen, repeated = set(known), []
        for row in self.rows:
            repeated.append(row["hash"] in seen)
            seen.add(row["hash"])
        return StoreChange(
            [row["id"] for row in self.rows],
            self.positions,
            self.removed,
            removed_vectors,
            repeated,
            len(self.updates),
            self.superseded,
        )


def plan_upsert(
    documents: Sequence[Document], hashes: Sequence[str], stored: dict[str, tuple[int, str]], next_id: int
) -> UpsertPlan:
    """Each document its own row (ids from `next_id`, by input position); a document whose external id is stored
    (`stored`: external id -> (id, text hash)) replaces that one. An upsert with the stored text keeps the row and
    its vector and replaces origin and metadata; one with a new text deletes the old row and adds a new one. A
    later document with the same external id in the input replaces an earlier one before it is stored."""
    new_rows: dict[int, dict[str, Any]] = {}
    pending: dict[str, int] = {}  # external id -> its new row in this input
    updates: dict[str, tuple[str | None, int | None, str, str]] = {}  # kept text, new origin and metadata
    removed: list[int] = []
    superseded = 0
    for position, (document, digest) in enumerate(zip(documents, hashes)):
        name = document.external_id
        metadata = metadata_json(document.metadata, position + 1)
        if name is not None:
            superseded += name in pending or name in updates
            if name in pending:
                del new_rows[pending.pop(name)]  # replaced later in the same input: never stored
            if name in stored:
                row_id, stored_hash = stored[name]
                if stored_hash == digest and row_id not in removed:
                    updates[name] = (document.source, document.line, metadata, name)
                    continue
                updates.pop(name, None)
                if row_id not in removed:
                    removed.append(row_id)
        row_id = next_id + position
        new_rows[row_id] = {
            "id": row_id,
            "external_id": name,
            "text": document.text,
            "source": document.source,
            "line": document.line,
            "metadata": metadata,
            "hash": digest,
        }
        if name is not None:
            pending[name] = row_id
    return UpsertPlan(
        list(new_rows.values()),
        [row_id - next_id for row_id in new_rows],
        list(updates.values()),
        removed,
        superseded,
    )
