"""POST /documents and DELETE /documents/ID: `searchengine add` and `delete` over HTTP, through the serial writer
(merges run after each write, off the request path)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from searchengine.engine.add_request import AddRequest
from searchengine.engine.document_ids import document_id as parse_document_id
from searchengine.engine.search_engine import SearchEngine
from searchengine.reading.corpus import JsonFields
from searchengine.server.metrics import ServerMetrics
from searchengine.server.models import AddedOut, DeletedOut, DeleteRequest, DocumentsRequest
from searchengine.server.served_index import ServedIndex
from searchengine.server.state import Index, Metrics, answer, check_writes

router = APIRouter(dependencies=[Depends(check_writes)])


@router.post("/documents", response_model=AddedOut)
async def add_documents(index: Index, metrics: Metrics, request: DocumentsRequest) -> dict[str, Any]:
    """Add documents, or replace those whose `id_field` id is already stored (`searchengine add`)."""
    fields = JsonFields(request.text_field, request.title_field, request.id_field)
    adding = AddRequest(request.documents, fields, request.embeddings, request.source_field, request.line_field)
    return await _write_then_merge(index, metrics, adding.run)


@router.post("/documents/delete", response_model=DeletedOut)
async def delete_documents(index: Index, metrics: Metrics, request: DeleteRequest) -> dict[str, Any]:
    """Delete documents by id and/or by their own ids, all or none (an unknown one deletes nothing: 404)."""

    def delete(engine: SearchEngine) -> dict[str, Any]:
        deleted = engine.delete(ids=request.ids, external_ids=request.external_ids, merge=False)
        return {"deleted": deleted, "index_size": len(engine)}

    return await _write_then_merge(index, metrics, delete)


@router.delete("/documents/{document_id:path}", response_model=DeletedOut)  # a file's id is its path: a/b.md#2
async def delete_document(
    index: Index,
    metrics: Metrics,
    document_id: str,
    external: Annotated[bool, Query(description="The id is one given with id_field, not a number.")] = False,
) -> dict[str, Any]:
    """Delete one document by its id, or by its external id with ?external=true (`searchengine delete`)."""
    ids = [] if external else [parse_document_id(document_id, "add ?external=true to delete by your own id")]

    def delete(engine: SearchEngine) -> dict[str, Any]:
        deleted = engine.delete(ids=ids, external_ids=[document_id] if external else [], merge=False)
        return {"deleted": deleted, "index_size": len(engine)}

    return await _write_then_merge(index, metrics, delete)


async def _write_then_merge(
    index: ServedIndex, metrics: ServerMetrics, write: Callable[[SearchEngine], dict[str, Any]]
) -> dict[str, Any]:
    """`write(engine)` on the writer thread, answered when it commits; the merges it calls for run after it."""
    result = await answer(index.writer.submit(write))
    index.writer.submit_background(lambda engine: metrics.merged(len(engine.merge()), index.path.name))
    return result
