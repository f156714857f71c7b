"""IndexReader: one index directory, loaded for reading (engine/index_snapshot.py), searched in every mode and read
back (documents, external ids, stored vectors, clustering, info). A shard server is one of these over its shard."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from searchengine.analysis.mining_request import MiningMethod
from searchengine.encoding.encoder_choice import CrossEncoders, EncoderChoice
from searchengine.engine.count_argument import count_argument
from searchengine.engine.document_lookup import documents_of
from searchengine.engine.embedding import to_index_vectors
from searchengine.engine.filters import Filters, conditions_of
from searchengine.engine.fusion import Fusion
from searchengine.engine.given_vectors import given_vector
from searchengine.engine.highlight import SENTENCE_BATCH, with_highlights
from searchengine.engine.index_info import IndexInfo, index_info
from searchengine.engine.index_snapshot import IndexSnapshot, LoadedSegments
from searchengine.engine.mode_registry import RankRequest, RetrievalMode, mode_named
from searchengine.engine.model_check import model_check, model_request
from searchengine.engine.modes import DEFAULT_FUSION, DEFAULT_MODE, SearchMode
from searchengine.engine.query_request import QueryRequest, SearchOptions, check_fusion, lists_search_options
from searchengine.engine.search import Hit, hits_of, one_thread, rerank_hits
from searchengine.errors import SearchEngineError
from searchengine.indexer.query.filter_sql import Filter
from searchengine.indexer.tables.documents import Document

if TYPE_CHECKING:  # the encoders (torch, transformers) are imported only when something encodes
    from typing_extensions import Unpack

    from searchengine.analysis.clustering import Clustering
    from searchengine.analysis.paraphrase_mining import Pair
    from searchengine.encoding.cross_encoder import CrossEncoder
    from searchengine.encoding.encoder import Encoder
    from searchengine.encoding.onnx_query_encoder import OnnxQueryEncoder
    from searchengine.encoding.speed import EncoderSpeed


@dataclass
class SharedLoads:
    """What the readers of one index in one process (SearchEngine.sibling) load once for all of them."""

    cross_encoders: CrossEncoders = field(default_factory=CrossEncoders)
    segments: LoadedSegments = field(default_factory=weakref.WeakValueDictionary)


class IndexReader(IndexSnapshot):
    """Search and read the index in `path`, as of its loaded commit (`refresh` moves it on)."""

    def __init__(
        self,
        path: Path,
        encoder: Encoder | None = None,
        *,
        model: str | Path | None = None,
        speed: EncoderSpeed | None = None,
        shared: SharedLoads | None = None,
    ) -> None:
        """Load whatever manifest is current in `path`. Without `encoder`, `model` (the index's own when None) is
        loaded with `speed` on first use; queries run its cached ONNX export without torch where they can."""
        self.shared = shared or SharedLoads()
        super().__init__(path, self.shared.segments)
        self.model, self.speed = model, speed
        self.encoders = EncoderChoice(
            encoder,
            lambda: model_request(self.path, self.manifest.model, model, speed),
            lambda source, fingerprint: model_check(self.path, self.manifest.model)(source, fingerprint),
        )

    def __len__(self) -> int:
        """Number of documents in the index (deleted ones not counted); refused after `close()`, as every read is."""
        self.check_open()
        return self.live

    @property
    def default_mode(self) -> SearchMode:
        """The mode a search without one uses: DEFAULT_MODE, or dense on an index without the keyword index."""
        return DEFAULT_MODE if self.keyword_index else "dense"

    def compacted(self) -> bool:
        """Whether `compact()` has nothing to do: one segment, no tombstones, and the keyword index."""
        one_segment = len(self.vectors.segments) <= 1
        return not len(self.tombstones) and self.keyword_index and self.manifest.segmented and one_segment

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors as this index stores them: encoder output, whitened when fitted, L2-normalised; refused after
        `close()` (the whitening is the index's)."""
        self.check_open()
        return to_index_vectors(self.encoders.encoder.encode(texts), self.whitening)

    @lists_search_options
    def search_batch(
        self, queries: Sequence[str], k: int = 10, where: Filters = None, **options: Unpack[SearchOptions]
    ) -> list[list[Hit]]:
        """The k documents that best match each query, best first (QueryRequest says what each option does)."""
        return self.answer(QueryRequest.of(queries, k, where, options))

    def answer(self, request: QueryRequest) -> list[list[Hit]]:
        """The hits of each of `request`'s queries, best first, searched as one batch (QueryRequest says how)."""
        queries = request.queries
        retrieval = self._checked_mode(request.mode)
        if request.mode is None:  # a named mode was checked when the request was made
            check_fusion(request.fusion, retrieval, f"index {self.path}'s default mode, {retrieval.name},")
        cross_encoder = None if request.rerank is None else self.cross_encoder(request.rerank)
        fusion = request.fusion or DEFAULT_FUSION
        results = self._retrieve(
            queries, request.depth, request.conditions, retrieval, fusion, None, request.mode_options, request.rescore
        )
        if request.min_score is not None:
            results = [[hit for hit in hits if hit.score >= request.min_score] for hits in results]
        if cross_encoder is not None:
            results = rerank_hits(cross_encoder, list(queries), results, request.k)
        if request.highlight:
            results = with_highlights(queries, results, retrieval.sides, self._embed_sentences)
        return results

    def search_by_vector(
        self, vector: object, k: int = 10, where: Filters = None, *, mmr: Mapping[str, Any] | None = None
    ) -> list[Hit]:
        """The k documents whose vectors are nearest to `vector` by cosine, best first, among those meeting `where`:
        dense search without encoding (the vector is in the index's space: engine/given_vectors.py). With `mmr`
        ({"fetch_k": 20, "lambda_mult": 0.5}, either may be left out), the k picked by maximal marginal relevance
        among the fetch_k nearest instead, as the "mmr" mode picks for a query's text."""
        k, conditions = count_argument("k", k), conditions_of(where)
        mode = mode_named("dense" if mmr is None else "mmr")
        if mmr is not None:
            mode.check_options(mmr)
        rows = given_vector(vector, self.manifest.index.dimension)
        return self._retrieve([""], k, conditions, mode, DEFAULT_FUSION, rows, options=mmr)[0]

    def get(self, ids: Sequence[str] | None = None, where: Filters = None) -> list[Document]:
        """The stored documents with these external ids (in their order) and/or meeting `where` (document_lookup)."""
        return documents_of(self.store, ids, where)

    def _retrieve(
        self,
        queries: Sequence[str],
        k: int,
        conditions: list[Filter],
        mode: RetrievalMode,
        fusion: Fusion,
        given: np.ndarray | None = None,
        options: Mapping[str, Any] | None = None,
        rescore: int | None = None,
    ) -> list[list[Hit]]:
        """The k best documents per query by `mode`, among those meeting every one of `conditions`, best first;
        `given`: the queries' vectors, given instead of encoding the queries (dense mode); `rescore` candidates
        per segment rescored from the originals where a segment keeps them (QueryRequest)."""
        if len(self) == 0:
            raise SearchEngineError(f"index {self.path} is empty: add documents with `searchengine add FILE`")
        k = min(k, len(self))  # no mode returns more documents than the index holds; SQLite's LIMIT is 64-bit
        matching = self.store.filters.matching_ids(conditions) if conditions else None
        if not queries or (matching is not None and len(matching) == 0):
            return [[] for _ in queries]
        dense = "dense" in mode.sides
        allowed = None
        if dense and matching is not None:
            passages = self.store.filters.passage_ids_matching(conditions)
            allowed = np.union1d(matching, passages) if len(passages) else matching  # no sort where none is split
        encoder = self.encoders.for_queries() if dense and given is None else None  # loaded before one_thread
        with one_thread() if len(queries) == 1 else contextlib.nullcontext():
            request = RankRequest(
                texts=queries,
                k=k,
                store=self.store,
                vectors=self.vectors.rescoring(rescore),
                query_vectors=given if encoder is None else self.query_vectors(encoder, queries),
                searchable=len(self) if matching is None else len(matching),
                allowed=allowed,
                matching=matching,
                excluded=self.tombstones if len(self.tombstones) else None,
                fusion=fusion,
                options=options or {},
            )
            return hits_of(self.store, mode.rank(request))

    def query_vectors(
        self, encoder: Encoder | OnnxQueryEncoder, texts: Sequence[str], batch_size: int | None = None
    ) -> np.ndarray:
        """Texts as the index's vectors of queries: `encoder`'s query vectors, then the whitening."""
        return to_index_vectors(encoder.encode_queries(list(texts), batch_size), self.whitening)

    def _embed_sentences(self, texts: list[str]) -> np.ndarray:
        """Queries and their hits' sentences as the index's vectors of queries, for highlights: the query encoder
        (ONNX where it can) in batches of SENTENCE_BATCH, then the whitening."""
        return self.query_vectors(self.encoders.for_queries(), texts, SENTENCE_BATCH)

    def _checked_mode(self, mode: str | None) -> RetrievalMode:
        """The registered mode named `mode`, or the default one when None; refused when unknown, or when it needs a
        keyword index the index lacks (saying how to add it)."""
        retrieval = mode_named(self.default_mode if mode is None else mode)
        if "keyword" in retrieval.sides and not self.keyword_index:
            raise SearchEngineError(
                f"index {self.path} has no keyword index (it was written before keyword search), so it cannot search "
                f"in {retrieval.name} mode: add it with `searchengine compact --index-dir {self.path}`, or use mode dense"
            )
        return retrieval

    def cross_encoder(self, model: str | Path | CrossEncoder) -> CrossEncoder:
        """The cross-encoder `model` names, loaded on the first call and kept for later ones (a loaded
        CrossEncoder is used as it is), on the bi-encoder's device if it is loaded, else the default one. Raises
        SearchEngineError for anything that is not a cross-encoder."""
        return self.shared.cross_encoders.get(model, getattr(self.encoders.loaded, "device", None))

    def clustering(self, top: int = 3) -> Clustering | None:
        """The clustering stored with the index, with each cluster's `top` most central texts; None if none."""
        from searchengine.analysis.clustering import read_clustering  # the analysis code: not what a query needs

        return read_clustering(self.store, top)

    def mine(
        self,
        top: int | None = None,
        threshold: float | None = None,
        method: MiningMethod = "auto",
        neighbours: int | None = None,
    ) -> list[Pair]:
        """The most similar pairs of documents in the index, best first, from the stored vectors (never re-encoded).

        top: the `top` best pairs (20 when neither is given); threshold: every pair with cosine >= threshold; both:
        the best `top` of those. method: "exact" (chunked, every pair scored), "ann" (each text's `neighbours`
        nearest from the FAISS index) or "auto" (exact up to 50,000 texts).
        """
        from searchengine.analysis.paraphrase_mining import mine_documents  # the analysis code: not a query's

        return mine_documents(self.vectors, self.store, top, threshold, method, neighbours)

    def reading(self) -> dict[str, Any]:
        """How the index reads its input, as recorded when it was built (fields, folders and their rules;
        searchengine.engine.files); empty for an index built before it was recorded."""
        from searchengine.engine.indexing import READING  # the build code: not what a query needs

        return self.store.settings.get(READING) or {}

    def metadata_by_external_id(self, fields: Sequence[str]) -> dict[str, list[Any]]:
        """The values of metadata `fields` of every document with an external id and the first field, by
        external id (what `sync` compares files with), read without loading texts."""
        return self.store.documents.metadata_of_external_ids(fields)

    def documents(self, where: Filters) -> list[Document]:
        """The stored documents that meet every filter, in index order, without a query: a lookup by your own ids
        (`[Condition("external_id", "in", ("a", "b"))]`) or by metadata, as the LangChain and LlamaIndex stores need."""
        conditions = conditions_of(where)
        if not conditions:
            raise SearchEngineError("say which documents to read: give filters, e.g. where=['lang=en']")
        stored = self.store.get(self.store.filters.matching_ids(conditions))
        return [Document(d.text, d.source, d.line, d.metadata, d.external_id) for _, d in sorted(stored.items())]

    def external_ids(self) -> list[str]:
        """The user-given ids of the indexed documents (`--id-field`, Document.external_id), in index order."""
        return self.store.documents.external_ids()

    def stored_vectors(self, batch_size: int = 65_536) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(vector ids, vectors) as the index holds them, in batches; never re-encodes the corpus. A vector id is
        its document's id, except for the further passages of a document split into passages."""
        return self.vectors.stored_vectors(batch_size)

    def info(self) -> IndexInfo:
        """What the index holds, as `searchengine info` shows it."""
        return index_info(str(self.path), self.manifest, self.store, self.keyword_index)
