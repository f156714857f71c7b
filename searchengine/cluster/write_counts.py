"""What one shard's part of a write did, as a copy counts it when it commits the part: what the write's answer
reports (summed over its shards), so a cluster's add says what one index's add says for the same writes."""

from __future__ import annotations

from dataclasses import asdict, astuple, dataclass
from typing import NamedTuple

from searchengine.indexer.tables.store import StoreChange


@dataclass(frozen=True)
class WriteCounts:
    """Counts of a write, named as IndexingReport's (one index's add) are; `deleted`: documents a delete removed.
    The copies of a shard apply the same write to the same state, so any one committed copy's counts are the
    shard's. A repeated text is not counted (IndexingReport.repeats): a shard knows only its own texts."""

    documents: int = 0
    """Documents written (their texts not blank)."""
    added: int = 0
    """Documents stored, each with its own vector."""
    replaced: int = 0
    """Stored documents an upsert gave a new text."""
    updated: int = 0
    """Upserts that kept the stored text (origin and metadata replaced, the vector kept)."""
    superseded: int = 0
    """Documents replaced by a later one with the same id in the same write, so never stored."""
    deleted: int = 0
    """Stored documents a delete removed (an id no document has removes none)."""

    @classmethod
    def of_upsert(cls, documents: int, change: StoreChange) -> WriteCounts:
        """The counts of an upsert of `documents` documents that changed the store as `change` says."""
        return cls(documents, len(change.ids), len(change.removed), change.updated, change.superseded)

    def __add__(self, other: WriteCounts) -> WriteCounts:
        return WriteCounts(*(mine + theirs for mine, theirs in zip(astuple(self), astuple(other))))

    def said(self) -> str:
        """What the write did in words, e.g. "2 added, 1 deleted" (its changes that are not 0; "nothing changed")."""
        changes = [f"{value} {name}" for name, value in asdict(self).items() if name != "documents" and value]
        return ", ".join(changes) or "nothing changed"


class AppliedWrite(NamedTuple):
    """A copy's answer to a write (ShardCopy.apply): the shard's write it holds after it, and what the write did
    there; None when the copy held the write already, so a write sent again is not counted twice."""

    sequence: int
    counts: WriteCounts | None
