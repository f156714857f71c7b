"""Documents given column by column, as chroma's `add(ids=, documents=, metadatas=)` takes them: the i-th id,
text and metadata make the i-th Document (what `SearchEngine.add`, `upsert` and the client send)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from searchengine.engine.corpus_input import Corpus
from searchengine.errors import SearchEngineError
from searchengine.indexer.tables.documents import Document


def column_documents(
    ids: Sequence[str] | None, documents: Sequence[str] | None, metadatas: Sequence[Mapping[str, Any] | None] | None
) -> list[Document]:
    """The Documents the columns describe; SearchEngineError when there are no texts, a column is a lone string,
    the columns differ in length, or an id, text or metadata is of the wrong type."""
    if documents is None:
        raise SearchEngineError("give the texts: documents=['first text', ...] (ids= and metadatas= go with them)")
    texts = _column("documents", documents)
    count = len(texts)
    names = _column("ids", ids) if ids is not None else [None] * count
    extras = _column("metadatas", metadatas) if metadatas is not None else [None] * count
    if not len(names) == len(extras) == count:
        raise SearchEngineError(
            f"{count} documents, {len(names)} ids and {len(extras)} metadatas: give one of each per document"
        )
    made = []
    for number, (name, text, metadata) in enumerate(zip(names, texts, extras), start=1):
        if not isinstance(text, str) or not text.strip():
            raise SearchEngineError(f"document {number} is {text!r}, not a text: every document needs one")
        if name is not None and not isinstance(name, str):
            raise SearchEngineError(f"id {number} is {name!r}, not a str: ids are text, e.g. '{name}'")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise SearchEngineError(f"metadata {number} is a {type(metadata).__name__}, not a dict")
        made.append(Document(text.strip(), metadata=dict(metadata or {}), external_id=name))
    return made


def _column(name: str, values: Sequence[Any]) -> list[Any]:
    """`values` as a list; a lone string (which list() would read as its letters) is refused."""
    if isinstance(values, (str, bytes)) or isinstance(values, Mapping):
        raise SearchEngineError(f"{name} must be a list, one per document, not {type(values).__name__} {values!r}")
    return list(values)


def added_corpus(
    corpus: Corpus | None,
    ids: Sequence[str] | None,
    documents: Sequence[str] | None,
    metadatas: Sequence[Mapping[str, Any] | None] | None,
) -> Corpus:
    """What `SearchEngine.add` adds: `corpus`, or the Documents the chroma-style columns describe (one or the
    other, never both)."""
    columns = ids is not None or documents is not None or metadatas is not None
    if corpus is not None and columns:
        raise SearchEngineError("give either a corpus or documents= (with ids= and metadatas=), not both")
    if corpus is None:
        return column_documents(ids, documents, metadatas)
    return corpus
