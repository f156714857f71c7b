"""What new documents embed: one text per document, or, where the index splits long documents into passages, one
per passage (recorded in the store), each after its heading where the index says so."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from searchengine.encoding.passage_headings import heading_at, with_heading
from searchengine.encoding.passages import Span
from searchengine.engine.indexing_report import IndexingReport
from searchengine.indexer.commit.manifest import PassageSplitting
from searchengine.indexer.tables.store import Document, DocumentStore

if TYPE_CHECKING:  # the encoder (torch, transformers) is imported only by what encodes
    from searchengine.encoding.encoder import Encoder


def passage_texts(
    store: DocumentStore,
    encoder: Encoder,
    ids: list[int],
    documents: list[Document],
    repeated: list[bool],
    passages: PassageSplitting | None,
    report: IndexingReport,
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """The vectors new documents need: their vector ids, the text each embeds and whether that text is new. One
    per document (its whole text) unless `passages` splits the longer ones, whose passages the store records;
    a document read from a file is cut along its blocks and sections. Where `passages` says so, each passage is
    embedded after its heading, in a window shortened to leave room for it; the spans stored are the text's own."""
    first_seen = [not repeat for repeat in repeated]
    texts = [document.text for document in documents]
    if passages is None:
        report.vectors += len(ids)
        return np.asarray(ids, dtype=np.int64), texts, np.asarray(first_seen, dtype=bool)
    spans, headings = passage_spans(encoder, documents, passages)
    vector_ids = store.add_passages({i: s for i, s in zip(ids, spans) if len(s) > 1})
    report.split += len(vector_ids)
    out_ids: list[int] = []
    out_texts: list[str] = []
    out_first: list[bool] = []
    for document, text, document_spans, fresh, own in zip(ids, texts, spans, first_seen, headings):
        for vector_id, (start, end) in zip(vector_ids.get(document, [document]), document_spans):
            out_ids.append(vector_id)
            out_texts.append(with_heading(heading_at(own, start), text[start:end]))
            out_first.append(fresh)
    report.vectors += len(out_ids)
    return np.asarray(out_ids, dtype=np.int64), out_texts, np.asarray(out_first, dtype=bool)


def passage_spans(
    encoder: Encoder, documents: Sequence[Document], passages: PassageSplitting
) -> tuple[list[list[Span]], list[tuple[tuple[int, str], ...]]]:
    """Each document's passage spans as `passages` splits it (along its blocks and sections where it was read from
    a file), and the headings its passages are embedded after (none unless `passages` says so)."""
    structures = [(document.blocks, document.section_starts) if document.blocks else None for document in documents]
    windows: int | list[int] = passages.tokens
    headings: list[tuple[tuple[int, str], ...]] = [() for _ in documents]
    if passages.headings:
        windows, headings = encoder.fit_headings([document.headings for document in documents], passages.tokens)
    spans = encoder.passage_spans([document.text for document in documents], windows, passages.overlap, structures)
    return spans, headings


def texts_to_embed(encoder: Encoder, documents: Sequence[Document], passages: PassageSplitting | None) -> int:
    """How many texts adding `documents` would embed at most: one per document, or one per passage where
    `passages` splits them (each distinct text is embedded once, so a repeated one counts more than it costs)."""
    if passages is None:
        return len(documents)
    return sum(len(spans) for spans in passage_spans(encoder, documents, passages)[0])
