"""AddRequest: documents sent as JSON objects (the server's POST /documents, the MCP add tool), each read as a
.jsonl line is when the request is made, so that a bad one refuses the whole request before anything is written,
then added in one write."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from searchengine.errors import SearchEngineError
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
    source_field: str | None = None
    """A field holding a record's source, stored as its Document's `source` rather than as metadata."""
    line_field: str | None = None
    """A field holding a record's line in its source, stored as its Document's `line`."""
    documents: list[Document] = field(init=False, repr=False)
    """The records read as documents (SearchEngineError naming the first one that is not a document)."""

    def __post_init__(self) -> None:
        documents = [self._document(record, f"document {number}") for number, record in enumerate(self.records, 1)]
        object.__setattr__(self, "documents", documents)

    def _document(self, record: object, label: str) -> Document:
        """One record as a Document, its source and line taken from their fields when named."""
        if not isinstance(record, dict) or (self.source_field is None and self.line_field is None):
            return document_from_record(record, label, self.fields)
        record = dict(record)
        source = record.pop(self.source_field, None) if self.source_field is not None else None
        line = record.pop(self.line_field, None) if self.line_field is not None else None
        if source is not None and not isinstance(source, str):
            raise SearchEngineError(f'{label} has a "{self.source_field}" field (its source) that is not a string')
        if line is not None and (type(line) is not int or line < 0):
            raise SearchEngineError(
                f'{label} has a "{self.line_field}" field (its line) that is not a whole number of 0 or more'
            )
        return document_from_record(record, label, self.fields, source, line)

    def run(self, engine: SearchEngine) -> dict[str, Any]:
        """Add the documents to `engine`'s index without merging (the caller merges later, off its request path):
        the add's report (IndexingReport) and the index's size after it."""
        report = engine.add(self.documents, merge=False, embeddings=self.embeddings)
        return {**asdict(report), "index_size": len(engine)}
