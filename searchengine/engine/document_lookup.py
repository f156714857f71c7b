"""Stored documents read back by their own ids and/or metadata filters, without a query: chroma's `get(ids=,
where=)`, the LangChain store's `get_by_ids` and the client's `get`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from searchengine.engine.document_ids import external_ids_given
from searchengine.engine.filters import Filters, conditions_of
from searchengine.errors import SearchEngineError
from searchengine.indexer.query.filter_sql import Condition, Filter
from searchengine.indexer.tables.documents import Document
from searchengine.indexer.tables.store import DocumentStore

LOOKUP_CHUNK = 500
"""Ids looked up per filter: well under SQLite's limit on the values of one statement."""


def documents_of(store: DocumentStore, ids: Sequence[str] | None, where: Filters) -> list[Document]:
    """The stored documents whose external id is one of `ids` (in the order of `ids`; unknown ones left out) and
    that meet every filter of `where`; with `where` alone, every document meeting it, in index order."""
    return documents_read_by(lambda conditions: _read(store, conditions), ids, where)


def documents_read_by(
    read: Callable[[list[Filter]], list[Document]], ids: Sequence[str] | None, where: Filters
) -> list[Document]:
    """documents_of over any store: `read(conditions)` gives the documents meeting every condition (one index's
    store, or every shard of a cluster index), and the ids are asked of it in chunks and put in their order."""
    conditions = conditions_of(where)
    if ids is None:
        if not conditions:
            raise SearchEngineError("say which documents to get: give ids=['a', ...] and/or where={'field': value}")
        return read(conditions)
    wanted = list(dict.fromkeys(external_ids_given(ids, "ids")))  # get(ids=[1]) read 1 as "1", which delete refuses
    found: dict[str | None, Document] = {}
    for start in range(0, len(wanted), LOOKUP_CHUNK):
        chunk = Condition("external_id", "in", tuple(wanted[start : start + LOOKUP_CHUNK]))
        found.update((document.external_id, document) for document in read([*conditions, chunk]))
    return [found[name] for name in wanted if name in found]


def _read(store: DocumentStore, conditions: list) -> list[Document]:
    stored = store.get(store.filters.matching_ids(conditions))
    return [Document(d.text, d.source, d.line, d.metadata, d.external_id) for _, d in sorted(stored.items())]
