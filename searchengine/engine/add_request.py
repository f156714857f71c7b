"""AddRequest: documents sent as JSON objects (the server's POST /documents, the MCP add tool), each read as a
.jsonl line is when the request is made, so that a bad one refuses the whole request before anything is written,
then added in one write."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from searchengine.reading.corpus import JsonFields, document_from_record

if TYPE_CHECKING:
    from searchengine.engine.search_engine import SearchEngine
    from searchengine.indexer.tables.documents import Document


@dataclass(frozen=True)
class AddRequest:
    """Add `records` (JSON objects: the `fields.text` field, an optional title and id, the rest metadata); one
    whose id-field id is stored replaces that document (upsert)."""

    records: Sequence[object]
    fields: JsonFields = JsonFields()
    embeddings: object = None
    """A vector per record, stored instead of embedding its text (SearchEngine.add's `embeddings`)."""
    documents: list[Document] = field(init=False, repr=False)
    """The records read as documents (SearchEngineError naming the first one that is not a document)."""

    def __post_init__(self) -> None:
        documents = [
            document_from_record(record, f"document {number}", self.fields)
            for number, record in enumerate(self.records, start=1)
        ]
        object.__setattr__(self, "documents", documents)

    def run(self, engine: SearchEngine) -> dict[str, Any]:
        """Add the documents to `engine`'s index without merging (the caller merges later, off its request path):
        the add's report (IndexingReport) and the index's size after it."""
        report = engine.add(self.documents, merge=False, embeddings=self.embeddings)
        return {**asdict(report), "index_size": len(engine)}
