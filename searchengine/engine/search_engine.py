"""SearchEngine: the Python API over an index directory, a thin front over an IndexReader (engine/index_reader.py:
the loaded snapshot, search in every mode, reads) and an IndexWriter (engine/index_writer.py: builds and writes)."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from searchengine.encoding.passages import PASSAGE_HEADINGS_BY_DEFAULT, PASSAGES_BY_DEFAULT
from searchengine.engine.analysis_calls import AnalysisCalls
from searchengine.engine.chroma_style import ChromaStyleCalls
from searchengine.engine.corpus_input import Corpus
from searchengine.engine.document_columns import added_corpus
from searchengine.engine.filters import Filters
from searchengine.engine.index_info import IndexInfo
from searchengine.engine.index_reader import IndexReader, SharedLoads
from searchengine.engine.indexing_report import IndexingReport
from searchengine.engine.model_check import check_expected
from searchengine.engine.modes import SearchMode
from searchengine.engine.query_request import QueryRequest, SearchOptions, lists_search_options
from searchengine.engine.search import Hit
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.manifest import Manifest
from searchengine.indexer.tables.documents import Document
from searchengine.reading.corpus import JsonFields

if TYPE_CHECKING:  # the encoders (torch, transformers) only when something encodes; the writer when something writes
    from typing_extensions import Unpack

    from searchengine.encoding.cross_encoder import CrossEncoder
    from searchengine.encoding.encoder import Encoder
    from searchengine.encoding.model_source import Pooling
    from searchengine.encoding.speed import EncoderSpeed
    from searchengine.engine.build_settings import BuildSettings
    from searchengine.engine.index_writer import IndexWriter
    from searchengine.indexer.commit.merge_policy import MergeResult

DEFAULT_INDEX_DIR = "searchengine-index"
"""Where the CLI and API keep the index unless told otherwise (or $SEARCHENGINE_INDEX says)."""


def default_index_dir() -> Path:
    return Path(os.environ.get("SEARCHENGINE_INDEX", DEFAULT_INDEX_DIR))


class SearchEngine(ChromaStyleCalls, AnalysisCalls):
    """Build, open, search and grow an index directory (the chroma-style calls in engine/chroma_style.py, the
    analysis calls in engine/analysis_calls.py).

    >>> engine = SearchEngine.build(["a cat sat on the mat", "stocks fell sharply"], "my-index")
    >>> engine.search("kitten", k=1)[0].text
    'a cat sat on the mat'
    """

    def __init__(
        self,
        path: Path,
        encoder: Encoder | None = None,
        *,
        model: str | Path | None = None,
        speed: EncoderSpeed | None = None,
        shared: SharedLoads | None = None,
    ) -> None:
        """Use `open`, `build`, `create` or `sibling`; this constructor loads whatever manifest is current in
        `path`. Without `encoder`, `model` (the index's own when None) is loaded with `speed` on first use."""
        self.reader = IndexReader(path, encoder, model=model, speed=speed, shared=shared)
        self.last_report: IndexingReport | None = None  # what the last build or add did

    @functools.cached_property
    def writer(self) -> IndexWriter:
        """The writer over the reader's snapshot, made at the first write: a query imports none of the write code."""
        from searchengine.engine.index_writer import IndexWriter

        return IndexWriter(self.reader.path, snapshot=self.reader, encoders=self.reader.encoders)

    @property
    def path(self) -> Path:
        return self.reader.path

    @property
    def directory(self) -> IndexDirectory:
        return self.reader.directory

    @property
    def manifest(self) -> Manifest:
        """What the index holds, as of the last load (open, and after each change made through this engine)."""
        return self.reader.manifest

    @property
    def encoder(self) -> Encoder:
        """The encoder of documents and queries (EncoderChoice): loaded on first use, checked to be the index's."""
        return self.reader.encoders.encoder

    @classmethod
    def build(
        cls,
        corpus: Corpus,
        path: str | Path | None = None,
        settings: BuildSettings | None = None,
        *,
        encoder: Encoder | None = None,
    ) -> SearchEngine:
        """Index `corpus` (a corpus file, or texts or Documents) into `path`, replacing any index there only once the
        new one is complete, as `settings` (BuildSettings: model, index type, whitening, passages, reading) say.
        `encoder`: a loaded Encoder to reuse (the settings' model, pooling, batch_size and speed are then ignored)."""
        from searchengine.engine.index_writer import build_index_from

        target = Path(path) if path is not None else default_index_dir()
        encoder, report = build_index_from(corpus, target, settings, encoder)
        engine = cls(target, encoder)
        engine.last_report = report
        return engine

    @classmethod
    def create(
        cls,
        path: str | Path | None = None,
        *,
        model: str | Path | None = None,
        pooling: Pooling | None = None,
        index: str = "Flat",
        encoder: Encoder | None = None,
        passages: bool = PASSAGES_BY_DEFAULT,
        passage_headings: bool = PASSAGE_HEADINGS_BY_DEFAULT,
    ) -> SearchEngine:
        """Make an empty index to `add` documents to later (index types that need training, and a path that holds an
        index, are refused); `passages` and `passage_headings` as in BuildSettings."""
        from searchengine.engine.index_writer import create_index

        target = Path(path) if path is not None else default_index_dir()
        encoder, report = create_index(target, encoder, model, pooling, index, passages, passage_headings)
        engine = cls(target, encoder)
        engine.last_report = report
        return engine

    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        *,
        model: str | Path | None = None,
        pooling: Pooling | None = None,
        whiten_k: int | None = None,
        encoder: Encoder | None = None,
        speed: EncoderSpeed | None = None,
    ) -> SearchEngine:
        """Open an existing index with the model it was built with, loaded only when something encodes (EncoderChoice).
        `model`, `pooling` or `whiten_k` state what you expect: a different one raises SearchEngineError here
        (model_check.check_expected). `speed`: how the Encoder loaded then runs (ignored when `encoder` is given)."""
        directory = IndexDirectory(Path(path) if path is not None else default_index_dir())
        check_expected(directory.path, directory.read_manifest(), pooling, whiten_k, encoder, model)
        return cls(directory.path, encoder, model=model, speed=speed)

    def sibling(self) -> SearchEngine:
        """Another SearchEngine on this index sharing what this one loaded (the model, the cross-encoders, the vector
        segments), for another thread: an engine's SQLite connection belongs to the thread that made it, so the
        server's readers each open a sibling in theirs. Load the model first (`encoder`) for it to be shared."""
        reader = self.reader
        loaded = reader.encoders.loaded
        return SearchEngine(self.path, loaded, model=reader.model, speed=reader.speed, shared=reader.shared)

    def refresh(self) -> bool:
        """Reload the index if a writer committed since it was loaded; True if it did (IndexSnapshot.refresh)."""
        return self.reader.refresh()

    def release_snapshot(self) -> None:
        """Let go of the read snapshot until the next `refresh()` (IndexSnapshot.release_snapshot)."""
        self.reader.release_snapshot()

    def __len__(self) -> int:  # documents in the index, deleted ones not counted
        return len(self.reader)

    @property
    def tombstones(self) -> np.ndarray:
        """Ids of deleted documents whose vectors wait for `compact()` (index types that cannot delete)."""
        return self.reader.tombstones

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors as this index stores them: encoder output, whitened when fitted, L2-normalised."""
        return self.reader.encode(texts)

    @property
    def has_keyword_index(self) -> bool:
        """Whether the index can search by keyword (keyword and hybrid modes); `compact()` adds it to older indexes."""
        return self.reader.keyword_index

    @property
    def default_mode(self) -> SearchMode:
        """The mode a search without one uses: DEFAULT_MODE, or dense on an index without the keyword index."""
        return self.reader.default_mode

    @lists_search_options
    def search(self, query: str, k: int = 10, where: Filters = None, **options: Unpack[SearchOptions]) -> list[Hit]:
        """The k documents that best match `query`, best first; `where` and the options as QueryRequest says."""
        return self.answer(QueryRequest.of([query], k, where, options))[0]

    @lists_search_options
    def search_batch(
        self, queries: Sequence[str], k: int = 10, where: Filters = None, **options: Unpack[SearchOptions]
    ) -> list[list[Hit]]:
        """`search` for many queries at once, as one batch."""
        return self.answer(QueryRequest.of(queries, k, where, options))

    def answer(self, request: QueryRequest) -> list[list[Hit]]:
        """The hits of each query of `request`, best first: how every front end searches (IndexReader.answer)."""
        return self.reader.answer(request)

    def cross_encoder(self, model: str | Path | CrossEncoder) -> CrossEncoder:
        """The cross-encoder `model` names, loaded on the first call and kept for later ones (IndexReader)."""
        return self.reader.cross_encoder(model)

    def add(
        self,
        corpus: Corpus | None = None,
        jsonl: bool | None = None,
        id_field: str | None = None,
        progress: bool = False,
        *,
        text_field: str = "text",
        title_field: str | None = None,
        merge: bool = True,
        reading: dict[str, Any] | None = None,
        ids: Sequence[str] | None = None,
        documents: Sequence[str] | None = None,
        metadatas: Sequence[dict[str, Any] | None] | None = None,
        embeddings: Any = None,  # noqa: ANN401 (an array, or lists of numbers)
    ) -> IndexingReport:
        """Append documents (a file path, texts or Documents; or, chroma-style, the texts as `documents` with their
        `ids` and `metadatas`), each its own document; one whose external id is stored replaces that one (upsert).
        `embeddings`: a vector per document in the index's space (engine/given_vectors.py), stored instead of
        embedding the texts (still stored for keyword search and snippets). `merge`, `reading`: IndexWriter.add."""
        corpus = added_corpus(corpus, ids, documents, metadatas)
        fields = JsonFields(text_field, title_field, id_field)
        report = self.writer.add(corpus, fields, jsonl, progress, merge=merge, reading=reading, embeddings=embeddings)
        self.last_report = report
        return report

    def merge(self) -> list[MergeResult]:
        """Merge vector segments as the merge policy asks (IndexWriter.merge); returns the merges made."""
        return self.writer.merge()

    def delete(self, ids: Sequence[int] = (), external_ids: Sequence[str] = (), *, merge: bool = True) -> list[int]:
        """Delete documents by id and/or external id, all or none (an unknown id deletes nothing); their vectors stay
        as tombstones, never returned, until a merge drops them (IndexWriter.delete). `merge` as in `add`."""
        return self.writer.delete(ids, external_ids, merge=merge)

    def compact(self, retrain: bool = False) -> int:
        """Merge all segments into one without tombstones (and add a missing keyword index), and remove what killed
        writes and adapts left; returns vectors dropped. `retrain`: train the index's quantizer (its template) again
        on the vectors it holds now and re-encode them all with it, in the same commit (IVF, PQ, SQ8 types)."""
        if not retrain and self.reader.compacted() and not self.writer.directory.has_unreferenced():
            return 0
        return self.writer.compact(retrain)

    def index_fields(self, fields: Sequence[str], *, drop: bool = False) -> list[str]:
        """Index metadata fields that filters read (IndexWriter.index_fields), so a filter on one reads only the
        documents it matches; returns the fields newly indexed (or, with `drop`, those whose index was dropped)."""
        return self.writer.index_fields(fields, drop=drop)

    def indexed_fields(self) -> list[str]:
        """The metadata fields with an index, sorted."""
        return sorted(self.reader.store.filters.indexed())

    def reading(self) -> dict[str, Any]:
        """How the index reads its input, as recorded when it was built (IndexReader.reading)."""
        return self.reader.reading()

    def metadata_by_external_id(self, fields: Sequence[str]) -> dict[str, list[Any]]:
        """The values of metadata `fields` of every document with an external id, by external id."""
        return self.reader.metadata_by_external_id(fields)

    def documents(self, where: Filters) -> list[Document]:
        """The stored documents that meet every filter, in index order, without a query (IndexReader.documents)."""
        return self.reader.documents(where)

    def external_ids(self) -> list[str]:
        """The user-given ids of the indexed documents (`--id-field`, Document.external_id), in index order."""
        return self.reader.external_ids()

    def stored_vectors(self, batch_size: int = 65_536) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(vector ids, vectors) as the index holds them, in batches; never re-encodes the corpus."""
        return self.reader.stored_vectors(batch_size)

    def info(self) -> IndexInfo:
        """What the index holds, as `searchengine info` shows it."""
        return self.reader.info()

    def close(self) -> None:
        self.reader.close()

    def __enter__(self) -> SearchEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
