"""SearchEngine: the Python API over an index directory (encoder + whitening + FAISS + SQLite store)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from indexer.errors import IndexerError
from indexer.index_directory import IndexDirectory
from indexer.store import Document, DocumentStore
from indexer.vector_index import VectorIndex
from indexer.whitening import Whitening
from searchengine.corpus import STDIN, read_corpus
from searchengine.embedding import to_index_vectors
from searchengine.encoder import Encoder
from searchengine.errors import SearchEngineError
from searchengine.indexing import IndexingReport, IndexSettings, append_to_index, build_index
from searchengine.search import Hit, nearest_documents

DEFAULT_INDEX_DIR = "searchengine-index"
"""Where the CLI and API keep the index unless told otherwise (or $SEARCHENGINE_INDEX says)."""

Corpus = str | Path | Iterable[str]
"""A corpus file (.txt, .jsonl, or '-' for stdin), or the texts themselves."""


def default_index_dir() -> Path:
    return Path(os.environ.get("SEARCHENGINE_INDEX", DEFAULT_INDEX_DIR))


@dataclass(frozen=True)
class IndexInfo:
    """What an index holds, as `searchengine info` shows it."""

    path: str
    documents: int
    """Texts indexed, repeats included."""
    vectors: int
    """Distinct texts, one vector each."""
    model: str
    model_fingerprint: str
    pooling: str
    dimension: int
    """Dimension of the stored vectors (k when whitened)."""
    model_dimension: int
    whitening: int | None
    index_type: str
    size_bytes: int
    created_at: str
    updated_at: str
    versions: dict[str, str]


class SearchEngine:
    """Build, open, search and grow an index directory.

    >>> engine = SearchEngine.build(["a cat sat on the mat", "stocks fell sharply"], "my-index")
    >>> engine.search("kitten", k=1)[0].text
    'a cat sat on the mat'
    """

    def __init__(self, path: Path, encoder: Encoder) -> None:
        """Use `open` or `build`; this constructor loads whatever manifest is current in `path`."""
        self.directory = IndexDirectory(path)
        self.encoder = encoder
        self.manifest: dict[str, Any] = {}
        self.last_report: IndexingReport | None = None
        """What the last build or add did."""
        self._vectors: VectorIndex | None = None
        self._store: DocumentStore | None = None
        self._whitening: Whitening | None = None
        self._load()

    @property
    def path(self) -> Path:
        return self.directory.path

    @classmethod
    def build(
        cls,
        corpus: Corpus,
        path: str | Path | None = None,
        *,
        model: str | Path | None = None,
        pooling: str | None = None,
        index: str | None = None,
        whiten_k: int | None = None,
        whiten_fit: Corpus | None = None,
        encoder: Encoder | None = None,
        batch_size: int = 64,
        jsonl: bool | None = None,
        progress: bool = False,
    ) -> SearchEngine:
        """Index `corpus` into `path`, replacing any index there only once the new one is complete.

        model: None for the bundled all-MiniLM-L6-v2, a model directory or a Hugging Face id.
        pooling: override the model's pooling (mean, cls, max, mean_sqrt_len, last2avg, first_last_avg).
        index: a FAISS factory string ("Flat", "HNSW32", "IVF1024,PQ32"); None picks one from the corpus size.
        whiten_k: fit BERT-whitening and keep k dimensions; fitted on `whiten_fit` when given, else the corpus.
        encoder: an already loaded Encoder to reuse (then model/pooling/batch_size are ignored).
        jsonl: read a corpus file as JSON lines (True) or plain lines (False); None decides by the .jsonl suffix.
        """
        encoder = encoder or Encoder(model, pooling, batch_size=batch_size)
        target = Path(path) if path is not None else default_index_dir()
        settings = IndexSettings(
            index_type=index,
            whiten_k=whiten_k,
            whiten_fit=None if whiten_fit is None else _documents(whiten_fit, jsonl),
        )
        report = build_index(
            IndexDirectory(target), _documents(corpus, jsonl), encoder, settings, _count(corpus, jsonl), progress
        )
        engine = cls(target, encoder)
        engine.last_report = report
        return engine

    @classmethod
    def create(
        cls,
        path: str | Path | None = None,
        *,
        model: str | Path | None = None,
        pooling: str | None = None,
        index: str = "Flat",
        encoder: Encoder | None = None,
    ) -> SearchEngine:
        """Make an empty index to `add` documents to later (index types that need training are refused)."""
        encoder = encoder or Encoder(model, pooling)
        target = Path(path) if path is not None else default_index_dir()
        report = build_index(
            IndexDirectory(target), iter(()), encoder, IndexSettings(index_type=index), total=0, allow_empty=True
        )
        engine = cls(target, encoder)
        engine.last_report = report
        return engine

    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        *,
        model: str | Path | None = None,
        pooling: str | None = None,
        whiten_k: int | None = None,
        encoder: Encoder | None = None,
    ) -> SearchEngine:
        """Open an existing index with the model it was built with.

        Passing `model`, `pooling` or `whiten_k` states what you expect: a different one raises
        SearchEngineError instead of silently comparing vectors from two different spaces.
        """
        directory = IndexDirectory(Path(path) if path is not None else default_index_dir())
        manifest = directory.read_manifest()
        built_with = manifest["model"]
        if whiten_k is not None and (manifest["whitening"] or {}).get("k") != whiten_k:
            built = manifest["whitening"]["k"] if manifest["whitening"] else "no"
            raise SearchEngineError(
                f"index {directory.path} was built with {built} whitening, not whitening-k {whiten_k}; "
                "drop the option or rebuild the index with it"
            )
        if pooling is not None and pooling != built_with["pooling"]:
            raise SearchEngineError(
                f"index {directory.path} was built with {built_with['pooling']} pooling, not {pooling}; "
                "drop the option or rebuild the index with it"
            )
        if encoder is None:
            spec = model if model is not None else built_with["spec"]
            encoder = Encoder(spec, built_with["pooling"])
        if encoder.fingerprint != built_with["fingerprint"] or encoder.pooling != built_with["pooling"]:
            raise SearchEngineError(
                f"index {directory.path} was built with model {built_with['name']} "
                f"({built_with['pooling']} pooling, fingerprint {built_with['fingerprint']}), but the model "
                f"given is {encoder.name} ({encoder.pooling} pooling, fingerprint {encoder.fingerprint}); "
                "query with the index's own model or rebuild the index with this one"
            )
        return cls(directory.path, encoder)

    def _load(self) -> None:
        # A writer may commit and remove the files between reading the manifest and opening them: retry once.
        for attempt in (1, 2):
            manifest = self.directory.read_manifest()
            try:
                whitening_path = self.directory.file(manifest, "whitening")
                whitening = Whitening.load(whitening_path) if whitening_path else None
                vectors = VectorIndex.load(self.directory.file(manifest, "vectors"), manifest["index"]["type"])
                store = DocumentStore(self.directory.file(manifest, "documents"))
                break
            except IndexerError:
                if attempt == 2 or self.directory.read_manifest() == manifest:
                    raise
        if vectors.count != manifest["count"]["vectors"] or store.count() != vectors.count:
            raise IndexerError(
                f"index {self.path} is inconsistent: {vectors.count} vectors, {store.count()} stored texts, "
                f"manifest says {manifest['count']['vectors']}; rebuild the index"
            )
        if self._store is not None:
            self._store.close()
        self.manifest, self._vectors, self._store, self._whitening = manifest, vectors, store, whitening

    def __len__(self) -> int:
        """Number of distinct texts (vectors) in the index."""
        return self._vectors.count if self._vectors is not None else 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors as this index stores them: encoder output, whitened when fitted, L2-normalised."""
        return to_index_vectors(self.encoder.encode(list(texts)), self._whitening)

    def search(self, query: str, k: int = 10) -> list[Hit]:
        """The k documents most similar to `query`, best first."""
        return self.search_batch([query], k)[0]

    def search_batch(self, queries: Sequence[str], k: int = 10) -> list[list[Hit]]:
        """`search` for many queries at once (encoded and searched as one batch)."""
        if k < 1:
            raise SearchEngineError(f"k must be at least 1, not {k}")
        if len(self) == 0:
            raise SearchEngineError(f"index {self.path} is empty: add documents with `searchengine index --append`")
        if not queries:
            return []
        return nearest_documents(self._vectors, self._store, self.encode(queries), min(k, len(self)))

    def add(self, corpus: Corpus, jsonl: bool | None = None, progress: bool = False) -> IndexingReport:
        """Append documents (a file path or texts); repeats of indexed texts are counted, not stored twice."""
        report = append_to_index(
            self.directory, _documents(corpus, jsonl), self.encoder, _count(corpus, jsonl), progress
        )
        self._load()
        self.last_report = report
        return report

    def stored_vectors(self, batch_size: int = 65_536) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(document ids, vectors) as the index holds them, in batches; never re-encodes the corpus."""
        return self._vectors.stored_vectors(batch_size)

    def info(self) -> IndexInfo:
        manifest = self.manifest
        model = manifest["model"]
        return IndexInfo(
            path=str(self.path),
            documents=manifest["count"]["documents"],
            vectors=manifest["count"]["vectors"],
            model=model["name"],
            model_fingerprint=model["fingerprint"],
            pooling=model["pooling"],
            dimension=manifest["index"]["dimension"],
            model_dimension=model["dimension"],
            whitening=(manifest["whitening"] or {}).get("k"),
            index_type=manifest["index"]["type"],
            size_bytes=self.directory.size_on_disk(manifest),
            created_at=manifest["created_at"],
            updated_at=manifest["updated_at"],
            versions=manifest["versions"],
        )

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def __enter__(self) -> SearchEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _documents(corpus: Corpus, jsonl: bool | None) -> Iterator[Document]:
    if isinstance(corpus, (str, Path)):
        return read_corpus(corpus, jsonl)
    return (_text_document(text, number) for number, text in enumerate(corpus, start=1) if str(text).strip())


def _text_document(text: str, number: int) -> Document:
    if not isinstance(text, str):
        raise SearchEngineError(f"text number {number} is a {type(text).__name__}, not a str")
    return Document(text.strip(), None, number)


def _count(corpus: Corpus, jsonl: bool | None) -> int | None:
    """Documents in a corpus file or list, read once up front so bad input fails before any embedding.

    None for standard input, pipes and one-shot iterators, which can be read only once.
    """
    if isinstance(corpus, (str, Path)):
        if str(corpus) == STDIN or (Path(corpus).exists() and not Path(corpus).is_file()):
            return None
    elif not isinstance(corpus, Sequence):
        return None
    return sum(1 for _ in _documents(corpus, jsonl))
