"""GET /documents: stored documents read back by their own ids and/or metadata filters, without a query
(SearchEngine.get), with the read key (writes to /documents need the write key)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from searchengine.server.limits import MAX_DOCUMENTS, MAX_FILTERS
from searchengine.server.models import StoredDocumentsOut
from searchengine.server.state import Index, answer, check_reads

router = APIRouter(dependencies=[Depends(check_reads)])


@router.get("/documents", response_model=StoredDocumentsOut)
async def get_documents(
    index: Index,
    ids: Annotated[list[str] | None, Query(max_length=MAX_DOCUMENTS, description="Documents' own ids.")] = None,
    where: Annotated[list[str], Query(max_length=MAX_FILTERS, description="Filters FIELD OP VALUE.")] = [],  # noqa: B006
) -> dict[str, Any]:
    """The stored documents with these ids (in their order; unknown ones left out) and/or meeting every filter."""
    stored = await answer(index.reader.run(lambda engine: engine.get(ids, where or None)))
    return {"documents": [document_record(document) for document in stored]}


def document_record(document: Any) -> dict[str, Any]:  # noqa: ANN401 (a stored Document)
    """A stored document as JSON: its own id, text, origin and metadata."""
    return {
        "id": document.external_id,
        "text": document.text,
        "source": document.source,
        "line": document.line,
        "metadata": document.metadata,
    }
