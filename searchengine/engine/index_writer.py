"""IndexWriter: the writes to one index directory (add, delete, merge, compact, and the analysis that stores its
result: cluster, dedupe), each under the index's writer lock (indexer/); and `build_index_from` and
`create_index`, which make an index. A shard's writer is one of these over its shard."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from searchengine.analysis.cluster_settings import ClusterSettings
from searchengine.analysis.clustering import Cluster, cluster_index
from searchengine.analysis.mining_request import MiningMethod
from searchengine.analysis.paraphrase_mining import ScoredPair, dedupe_index
from searchengine.encoding.encoder_choice import EncoderChoice
from searchengine.encoding.passages import PASSAGE_HEADINGS_BY_DEFAULT, PASSAGES_BY_DEFAULT
from searchengine.encoding.precision import BULK_TEXTS
from searchengine.engine.build_settings import BuildSettings
from searchengine.engine.corpus_input import Corpus, corpus_count, corpus_documents
from searchengine.engine.corpus_record import fields_record
from searchengine.engine.document_ids import external_ids_given
from searchengine.engine.given_vectors import given_vectors
from searchengine.engine.index_snapshot import IndexSnapshot
from searchengine.engine.indexing import IndexSettings, append_to_index, build_index, document_chunks, drop_vectors
from searchengine.engine.indexing_report import IndexingReport
from searchengine.engine.model_check import model_check, model_request
from searchengine.engine.passage_embedding import texts_to_embed
from searchengine.errors import SearchEngineError
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.commit.merge_policy import LOCK_WAIT, MergeResult, merge, merge_as_needed
from searchengine.indexer.tables.documents import Document
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.upgrades.chain import upgrade_index
from searchengine.indexer.vectors.vector_index import check_trainable
from searchengine.reading.corpus import JsonFields

if TYPE_CHECKING:  # the encoders (torch, transformers) are imported only when something encodes
    from searchengine.encoding.encoder import Encoder
    from searchengine.encoding.model_source import Pooling
    from searchengine.encoding.onnx_document_encoder import OnnxDocumentEncoder
    from searchengine.encoding.speed import EncoderSpeed


def build_index_from(
    corpus: Corpus, target: Path, settings: BuildSettings | None, encoder: Encoder | None = None
) -> tuple[Encoder, IndexingReport]:
    """Index `corpus` into `target` with `settings` (None: the defaults) and `encoder` (else the one the settings
    name, loaded here), replacing any index there only once the new one is complete. Returns the encoder and what
    the build did."""
    settings = settings or BuildSettings()
    if encoder is None:
        from searchengine.encoding.encoder import Encoder, EncoderSpeed

        speed = (settings.speed or EncoderSpeed()).options()
        encoder = Encoder(settings.model, settings.pooling, batch_size=settings.batch_size, **speed)
    settings.check_whitening(encoder.dimension)
    if settings.ray is not None:
        from searchengine.engine.ray_build import build_with_ray

        return encoder, build_with_ray(target, corpus, encoder, settings, settings.ray)
    fields, jsonl, whiten_fit = settings.fields, settings.jsonl, settings.whiten_fit
    index_settings = IndexSettings(
        index_type=settings.index,
        memory_budget=settings.memory_budget,
        whiten_k=settings.whiten_k,
        whiten_fit=None
        if whiten_fit is None
        else document_chunks(corpus_documents(whiten_fit, jsonl, JsonFields(fields.text, fields.title))),
        passages=settings.passages,
        passage_overlap=settings.passage_overlap,
        passage_headings=settings.passage_headings,
        shards=settings.shards or 1,
        reading=settings.reading or fields_record(fields, corpus),
        originals=settings.originals,
    )
    count = corpus_count(corpus, jsonl, fields)
    if settings.index is not None and count is not None and whiten_fit is None:
        check_trainable(settings.index, count)
    chunks = document_chunks(corpus_documents(corpus, jsonl, fields))
    directory = IndexDirectory(target)
    return encoder, build_index(directory, chunks, encoder, index_settings, count, settings.progress)


def create_index(
    target: Path,
    encoder: Encoder | None = None,
    model: str | Path | None = None,
    pooling: Pooling | None = None,
    index: str = "Flat",
    passages: bool = PASSAGES_BY_DEFAULT,
    passage_headings: bool = PASSAGE_HEADINGS_BY_DEFAULT,
) -> tuple[Encoder, IndexingReport]:
    """Make an empty index in `target` to add documents to later (index types that need training are refused, as is
    a `target` that holds an index: it was emptied), with `encoder`, else `model` loaded here with `pooling`. Returns
    the encoder and what the build did."""
    if encoder is None:
        from searchengine.encoding.encoder import Encoder

        encoder = Encoder(model, pooling)
    settings = IndexSettings(index_type=index, passages=passages, passage_headings=passage_headings)
    directory = IndexDirectory(target)
    return encoder, build_index(directory, iter(()), encoder, settings, total=0, allow_empty=True, new_only=True)


def ensure_index(
    path: str | Path,
    *,
    model: str | Path | None = None,
    speed: EncoderSpeed | None = None,
    encoder: Encoder | None = None,
    passages: bool = PASSAGES_BY_DEFAULT,
    passage_headings: bool = PASSAGE_HEADINGS_BY_DEFAULT,
) -> Encoder | None:
    """Make an empty index in `path` where there is none, for writers that add to an index they may have to start
    (`index --append`, the LangChain and LlamaIndex stores). Returns the encoder to open it with: `encoder`, or
    the one loaded to create it (None where nothing was loaded). One that another writer made meanwhile (while
    this one loaded its model) is added to as it is: create refuses it, and the caller wants it, not an error."""
    directory = IndexDirectory(Path(path))
    if directory.exists():
        return encoder
    if encoder is None:
        from searchengine.encoding.encoder import Encoder

        encoder = Encoder(model, **(speed.options() if speed else {}))
    try:
        create_index(Path(path), encoder, passages=passages, passage_headings=passage_headings)
    except SearchEngineError:
        if not directory.exists():
            raise
    return encoder


def delete_from_index(directory: IndexDirectory, ids: list[int] | None, external_ids: list[str] | None) -> list[int]:
    """Delete documents by id or by external id, all or none; returns the ids deleted."""
    with writing_in_place(directory) as write:
        targets = list(ids or []) + (write.store.documents.ids_for_external(external_ids) if external_ids else [])
        drop_vectors(write.store, write.vectors, write.store.delete(targets))
    return sorted(set(targets))


def compact_index(directory: IndexDirectory, retrain: bool = False) -> int:
    """Merge every segment into one, without the vectors of deleted documents, give the store's free pages back
    (VACUUM) and remove every file no commit names (orphans of killed writes, adapted models no adapt claims);
    returns how many vectors were dropped. `retrain`: train the index's template again on the live vectors and
    encode the merged segment with it (indexer/vectors/template.py), in the same commit.
    An index written by an older version is converted first (which gives a store written before keyword search
    its keyword index)."""
    upgrade_index(directory)
    result = merge(directory, retrain=retrain)
    with directory.locked(wait=LOCK_WAIT):  # the store's free pages too: deleted rows, their keyword index
        store = DocumentStore(directory.path / directory.read_settings().files["documents"].name, writable=True)
        try:
            store.reclaim_space()
        finally:
            store.close()
        directory.remove_unreferenced()  # also when nothing was merged: what a killed write or adapt left
    return 0 if result is None else result.dropped


def index_fields_of(directory: IndexDirectory, fields: Sequence[str], drop: bool) -> list[str]:
    """Index the metadata `fields` that filters read (or `drop` their indexes) in one commit; returns the fields
    changed (indexer/tables/field_indexes.py)."""
    with writing_in_place(directory) as write:
        indexes = write.store.field_indexes
        return indexes.drop(fields) if drop else indexes.create(fields)


class IndexWriter:
    """Write to the index in `path`. Given the `snapshot` a reader holds of it, each write lets go of that
    snapshot first and loads the committed state after (IndexSnapshot.writing); alone, it writes and reads nothing
    else. Without `encoders`, the model is chosen as a reader chooses it (the index's own unless `model`)."""

    def __init__(
        self,
        path: Path,
        encoder: Encoder | None = None,
        *,
        model: str | Path | None = None,
        speed: EncoderSpeed | None = None,
        snapshot: IndexSnapshot | None = None,
        encoders: EncoderChoice | None = None,
    ) -> None:
        self.directory = IndexDirectory(path)
        self.snapshot = snapshot
        if encoders is None:
            built_with = lambda: self.directory.read_manifest().model  # noqa: E731 (read when a model is needed)
            encoders = EncoderChoice(
                encoder,
                lambda: model_request(self.path, built_with(), model, speed),
                lambda source, fingerprint: model_check(self.path, built_with())(source, fingerprint),
            )
        self.encoders = encoders

    @property
    def path(self) -> Path:
        return self.directory.path

    def _writing(self, may_commit_nothing: bool = False) -> contextlib.AbstractContextManager[None]:
        """Around a write: the reader's snapshot let go and reloaded (IndexSnapshot.writing), if there is one."""
        if self.snapshot is None:
            return contextlib.nullcontext()
        return self.snapshot.writing(may_commit_nothing)

    def _document_encoder(self, small_add: Sequence[Document] | None) -> Encoder | OnnxDocumentEncoder:
        """What embeds an add, given its documents where fewer than BULK_TEXTS were counted (`small_add`; None:
        more, or not known before reading): EncoderChoice.for_documents, told whether they embed fewer than
        BULK_TEXTS texts, passages counted."""

        def small(light: OnnxDocumentEncoder) -> bool:
            if small_add is None:
                return False
            manifest = self.snapshot.manifest if self.snapshot is not None else self.directory.read_manifest()
            return texts_to_embed(light, small_add, manifest.passages) < BULK_TEXTS

        return self.encoders.for_documents(small)

    def add(
        self,
        corpus: Corpus,
        fields: JsonFields = JsonFields(),
        jsonl: bool | None = None,
        progress: bool = False,
        *,
        merge: bool = True,
        reading: dict[str, Any] | None = None,
        embeddings: object = None,
    ) -> IndexingReport:
        """Append documents (a file path, texts or Documents), each its own document even when its text repeats
        an indexed one (the report counts those). A document whose external id (`fields.id` of a .jsonl file, or
        Document.external_id) is already stored replaces the old one (upsert). The new vectors are a new segment;
        `merge` then runs the merges the policy asks for (False: leave them to a later `merge()`, as the server does
        off its request path). `reading` replaces the record of how the index reads its input (as in
        BuildSettings) in the same commit. `embeddings`: one vector per document, in the index's space
        (engine/given_vectors.py), stored instead of embedding the texts (which are still stored and searched by
        keyword); then no model is loaded."""
        if embeddings is not None:
            report = self._add_embedded(corpus, fields, embeddings, reading)
            if merge:
                self.merge()
            return report
        count = corpus_count(corpus, jsonl, fields)
        documents: Iterable[Document] = corpus_documents(corpus, jsonl, fields)
        small_add = list(documents) if count is not None and count < BULK_TEXTS else None
        # loaded before the write, which then does only the write; a small add is read once, for both
        encoder = self._document_encoder(small_add)
        with self._writing():
            report = append_to_index(
                self.directory, small_add if small_add is not None else documents, encoder, count, progress, reading
            )
        if merge:
            self.merge()
        return report

    def _add_embedded(
        self, corpus: Corpus, fields: JsonFields, embeddings: object, reading: dict[str, Any] | None
    ) -> IndexingReport:
        """Add the documents of a list with their own vectors (IndexWriter.add's `embeddings`)."""
        if isinstance(corpus, (str, Path)) or not isinstance(corpus, Sequence):
            raise SearchEngineError("embeddings go with documents given as a list (texts or Documents), not a file")
        documents = list(corpus_documents(corpus, False, fields))
        if len(documents) != len(corpus):
            raise SearchEngineError("a document given with embeddings has a blank text: every document needs one")
        manifest = self.snapshot.manifest if self.snapshot is not None else self.directory.read_manifest()
        vectors = given_vectors(embeddings, manifest.index.dimension, len(documents))
        with self._writing():
            return append_to_index(self.directory, documents, None, len(documents), reading=reading, vectors=vectors)

    def merge(self) -> list[MergeResult]:
        """Merge vector segments as the merge policy asks (indexer/commit/merge_policy.py); searches in other threads and
        processes go on meanwhile. Returns the merges made."""
        with self._writing(may_commit_nothing=True):  # the reader's store, its snapshot let go, reads the policy
            return merge_as_needed(self.directory, reader=self.snapshot.store if self.snapshot is not None else None)

    def delete(self, ids: Sequence[int] = (), external_ids: Sequence[str] = (), *, merge: bool = True) -> list[int]:
        """Delete documents by id and/or external id, all or none (SearchEngine.delete says more)."""
        external_ids = external_ids_given(external_ids)
        if not ids and not external_ids:
            raise SearchEngineError("say which documents to delete: give ids or external ids")
        for value in ids:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < 2**63:
                raise SearchEngineError(f"{value!r} is not a document id (a whole number from 0 to 2**63 - 1)")
        with self._writing():
            deleted = delete_from_index(self.directory, list(ids), list(external_ids))
        if merge:
            self.merge()
        return deleted

    def compact(self, retrain: bool = False) -> int:
        """Merge every segment into one without tombstoned vectors, and give an index written before keyword search
        its keyword index; returns how many vectors were dropped. `retrain`: train the template again first."""
        with self._writing():
            return compact_index(self.directory, retrain)

    def index_fields(self, fields: Sequence[str], *, drop: bool = False) -> list[str]:
        """Index metadata fields that filters read, so a filter on one seeks its index instead of reading every
        document (or `drop` their indexes); returns the fields newly indexed (or dropped)."""
        if isinstance(fields, str) or not fields:
            raise SearchEngineError("name the metadata fields to index as a list, e.g. ['year', 'lang']")
        with self._writing():
            return index_fields_of(self.directory, list(fields), drop)

    def cluster(self, settings: ClusterSettings, top: int = 3) -> list[Cluster]:
        """Cluster the stored vectors (never re-encoding) and store the clustering with the index, replacing any
        earlier one; later hits carry their cluster id.

        The method: "kmeans" (needs k), "community" (threshold 0.75 and min_size 10 unless given; outliers join
        no cluster) or "agglomerative" (k or threshold; up to 20,000 texts). Clusters are numbered by size,
        largest first, and list their `top` most central texts.
        """
        with self._writing():
            return cluster_index(self.directory, settings, top).clusters

    def dedupe(
        self, threshold: float, method: MiningMethod = "auto", neighbours: int | None = None
    ) -> list[ScoredPair]:
        """Mark the later document of each pair with cosine >= threshold as a duplicate of the earlier one
        (replacing earlier marks), stored with the index; returns the marks (`second` duplicates `first`)."""
        with self._writing():
            return dedupe_index(self.directory, threshold, method, neighbours)
