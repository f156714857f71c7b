"""ClusterEngine: the methods of SearchEngine that the server's reader and writer threads call (answer, add,
delete, get, info, encode, len...), answered by a ClusterIndex, so the routers of searchengine.server serve a cluster
index unchanged: the reader threads batch the queries of concurrent clients into one `search_batch` (one encoder
call for all), and the writer thread routes each write to its shard.

What a cluster does not offer is refused in one line: reranking (the ingress loads no cross-encoder), deleting by
the cluster's numeric id (a cluster deletes by external id: ?external=true), and documents without an id."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from searchengine.cluster.cluster_index import ClusterIndex
from searchengine.cluster.errors import ClusterError
from searchengine.cluster.routing import global_id, shard_of, shard_of_id
from searchengine.encoding.encoder import Encoder
from searchengine.engine.document_ids import external_ids_given
from searchengine.engine.document_lookup import documents_read_by
from searchengine.engine.filters import Filters
from searchengine.engine.index_info import IndexInfo
from searchengine.engine.indexing_report import IndexingReport
from searchengine.engine.modes import DEFAULT_MODE
from searchengine.engine.query_request import QueryRequest
from searchengine.engine.search import Hit
from searchengine.indexer.tables.document_table import unknown_external_ids
from searchengine.indexer.tables.documents import Document
from searchengine.server.shard_answers import ShardedHits


@dataclass(frozen=True)
class ModelName:
    name: str


@dataclass(frozen=True)
class VectorShape:
    dimension: int


@dataclass(frozen=True)
class ClusterModelRecord:
    """What the server reads of an index's manifest (the embeddings route): the model's name, the vectors'
    dimension and when the index was made (unknown for a cluster: its manifest keeps no time)."""

    model: ModelName
    index: VectorShape
    created_at: str = ""


class ClusterEngine:
    """A ClusterIndex behind the SearchEngine methods the server uses. One instance serves every reader and the
    writer thread: the ClusterIndex takes a lock per shard around each write, and a search reads no shared state
    it changes."""

    keyword_index = True
    """Every shard copy is built with its keyword index."""

    def __init__(self, cluster: ClusterIndex) -> None:
        self.cluster = cluster
        self.path = Path(cluster.path)
        self.default_mode = DEFAULT_MODE

    @property
    def encoder(self) -> Encoder:
        """The cluster's model, loaded once here: every query and every written document is encoded here, once."""
        return self.cluster.encoder

    @property
    def manifest(self) -> ClusterModelRecord:
        return ClusterModelRecord(ModelName(self.cluster.manifest.model), VectorShape(self.encoder.dimension))

    # reading ----------------------------------------------------------------------------------------------------
    def answer(self, request: QueryRequest) -> list[list[Hit]]:
        """Each query's hits over the whole cluster (ClusterIndex.search_batch), each list a ShardedHits saying how
        many shards answered; with `all_shards`, ShardsUnavailableError rather than a partial answer."""
        if request.rerank is not None:
            raise ClusterError("a cluster index does not rerank: leave out rerank (and rerank_top)")
        found = self.cluster.search_batch(
            request.queries,
            request.k,
            request.where,
            mode=request.mode,
            fusion=request.fusion,
            min_score=request.min_score,
            all_shards=request.all_shards,
        )
        results: list[list[Hit]] = found.hits
        if request.highlight:
            from searchengine.engine.highlight import with_highlights
            from searchengine.engine.mode_registry import mode_named

            sides = mode_named(request.mode or self.default_mode).sides
            results = with_highlights(request.queries, results, sides, self.cluster.query_vectors)
        return [ShardedHits(hits, shards=found.shards, answered=found.answered) for hits in results]

    def get(self, ids: Sequence[str] | None = None, where: Filters = None) -> list[Document]:
        """The stored documents with these external ids (in their order; unknown ones left out) and/or meeting
        `where`, from every shard that answers (ClusterIndex.documents), as one index's `get` gives them (GET
        /documents); with `where` alone, shard by shard. Before, GET /documents on the ingress was a 500."""
        return documents_read_by(lambda conditions: self.cluster.documents(conditions)[0], ids, where)

    def search_by_vector(self, vector: object, k: int, where: Any, all_shards: bool = False) -> list[Hit]:  # noqa: ANN401
        """The k documents nearest to `vector` over the whole cluster (ClusterIndex.search_by_vector), as a ShardedHits."""
        found = self.cluster.search_by_vector(vector, k, where, all_shards=all_shards)
        return ShardedHits(found.hits[0], shards=found.shards, answered=found.answered)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors as the shards store them: the encoder's output, L2-normalised (a cluster has no whitening)."""
        from searchengine.engine.embedding import to_index_vectors

        return to_index_vectors(self.encoder.encode(texts), None)

    def shard_states(self) -> dict[int, dict[str, Any]]:
        """Each answering shard's documents, segments and bytes, from one serving copy of it (CopyDeployment's
        `described`); a shard with no live copy is left out."""
        found = self.cluster.ask_shards("described")
        return {shard: described for shard, (_, described) in found.items()}

    def info(self) -> IndexInfo:
        """What the cluster holds, as `searchengine info` shows an index: documents, segments (`shards`) and bytes
        summed over the shards that answer (one serving copy of each), the model and the build's index type."""
        states = list(self.shard_states().values())
        documents = sum(state["documents"] for state in states)
        encoder = self.encoder
        manifest = self.cluster.manifest
        return IndexInfo(
            path=str(self.path),
            documents=documents,
            vectors=documents,
            model=manifest.model,
            model_fingerprint=encoder.fingerprint,
            pooling=encoder.pooling,
            dimension=encoder.dimension,
            model_dimension=encoder.dimension,
            whitening=None,
            index_type=str(manifest.settings.get("index_type", "Flat")),
            size_bytes=sum(state["size_bytes"] for state in states),
            created_at="",
            updated_at="",
            versions={"cluster_manifest": str(manifest.version)},
            keyword_index=True,
            shards=sum(state["segments"] for state in states),
        )

    def __len__(self) -> int:
        return sum(state["documents"] for state in self.shard_states().values())

    # writing ----------------------------------------------------------------------------------------------------
    def add(
        self,
        corpus: Sequence[Document],
        *,
        merge: bool = True,
        embeddings: object = None,
        **_options: Any,  # noqa: ANN401
    ) -> IndexingReport:
        """Upsert `corpus` (Documents, each with an external id: it picks the shard), committed on every live copy
        of each shard it touches before this returns (ClusterIndex.add, which checks it as one index does first).
        The report counts what one index's add of it counts (documents added, replaced, updated, superseded),
        from the shards' copies; not repeats (a shard knows only its own texts) nor truncated texts.
        Documents with their own vectors (`embeddings`) are refused: the ingress embeds every written document."""
        del merge  # each copy merges its own segments as it commits
        if embeddings is not None:
            raise ClusterError(
                "a cluster index embeds the documents it is sent with its own model: leave out embeddings (or give "
                "the vectors when the cluster is built: build_cluster's vectors)"
            )
        started = time.perf_counter()
        counts = self.cluster.add(list(corpus)).counts
        return IndexingReport(
            documents=counts.documents,
            added=counts.added,
            replaced=counts.replaced,
            updated=counts.updated,
            superseded=counts.superseded,
            vectors=counts.added,  # a cluster splits no document into passages: one vector each
            seconds=time.perf_counter() - started,
        )

    def delete(self, ids: Sequence[int] = (), external_ids: Sequence[str] = (), *, merge: bool = True) -> list[int]:
        """Delete the documents with `external_ids` from their shards (ClusterIndex.delete); returns their cluster
        ids as they were found just before. All or none, as one index deletes: an id no document has refuses the
        delete (UnknownDocumentError, one index's error) before anything is deleted. A cluster deletes by
        external id only."""
        del merge
        external_ids = external_ids_given(external_ids)  # a lone string is refused, not read as its letters
        if ids:
            shard, local = shard_of_id(int(ids[0]), self.cluster.shards)
            raise ClusterError(
                f"a cluster index deletes by your own ids (external ids), not by its numeric ids ({ids[0]} is "
                f"document {local} of shard {shard}): send the document's id with ?external=true"
            )
        shards = self.cluster.shards
        wanted: dict[int, list[str]] = {}
        for external_id in external_ids:
            wanted.setdefault(shard_of(str(external_id), shards), []).append(str(external_id))
        found = self.cluster.ask_shards("ids_of", per_shard=wanted)
        known = {
            name: global_id(local, shard, shards) for shard, (_, ids) in found.items() for name, local in ids.items()
        }
        unknown = [name for name in external_ids if name not in known and shard_of(str(name), shards) in found]
        if unknown:  # a shard that did not answer is left to the delete, which refuses it (no live copy)
            raise unknown_external_ids(unknown)
        self.cluster.delete(list(external_ids))
        return sorted(set(known.values()))

    def merge(self) -> list[Any]:
        """Nothing to do here: each shard copy merges its own segments as its writes commit."""
        return []

    # the life of a SearchEngine, as the server's threads drive it -----------------------------------------------
    def refresh(self) -> bool:
        """Always current: each copy refreshes itself before it answers."""
        return False

    def release_snapshot(self) -> None:
        """Holds none: the copies hold theirs."""

    def sibling(self) -> ClusterEngine:
        """The same engine: it is shared by every reader thread."""
        return self

    def close(self) -> None:
        """Leaves the cluster running: its copies are Serve deployments of their own."""
