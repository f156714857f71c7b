"""ClusterIndex: a cluster index as the driver (or a Ray Serve ingress) sees it: search over every shard, merged as
one index of the same documents ranks them; writes routed to the owning shard and committed on every live copy in
order before they are acknowledged; the cluster's status; and the repair of copies that were lost or fell behind.
Copies are called through a CopyCalls (copy_calls.py) and started by a CopyStarter (copy_actors.py), so the same
code drives Ray actors or Serve deployments."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from searchengine.cluster.call_latencies import CallLatencies
from searchengine.cluster.copy_actors import CopyStarter, CopyStopper, start_copy_actor
from searchengine.cluster.copy_calls import ActorCalls, CopyCalls, copy_failed
from searchengine.cluster.copy_upkeep import CopyState, CopyUpkeep
from searchengine.cluster.errors import ClusterError, ShardsUnavailableError
from searchengine.cluster.manifest import ClusterManifest, CopyPlace, read_manifest
from searchengine.cluster.merge import KeywordPlan, keyword_plan, merged_ranking, summed
from searchengine.cluster.placement import live_nodes
from searchengine.cluster.query_spans import QuerySpans, SearchSpan
from searchengine.cluster.routed_writes import RoutedWrites
from searchengine.cluster.routing import global_id
from searchengine.cluster.shard_rounds import ShardRounds
from searchengine.cluster.shard_search import ShardCandidates, ShardQuery
from searchengine.cluster.statistics_cache import StatisticsCache
from searchengine.engine.filters import Filters
from searchengine.engine.fusion import Fusion
from searchengine.engine.mode_registry import mode_named
from searchengine.engine.modes import DEFAULT_FUSION, DEFAULT_MODE
from searchengine.engine.query_request import QueryRequest
from searchengine.engine.search import Hit, Scored
from searchengine.indexer.query.global_bm25 import TermStatistics
from searchengine.indexer.query.keyword_query import keyword_terms
from searchengine.indexer.tables.documents import Document

if TYPE_CHECKING:
    from searchengine.encoding.encoder import Encoder

BUILT_IN_MODES = ("dense", "keyword", "hybrid")
"""The modes a cluster search merges (a registered mode of one's own ranks inside one index only)."""


@dataclass(frozen=True)
class ClusterAnswer:
    """The hits of each query, best first, and how many shards answered: an answer without every shard is
    `partial` (a shard had no live copy), never an error unless the search asked for all shards."""

    hits: list[list[Hit]]
    shards: int
    answered: int
    missing: tuple[int, ...] = ()

    @property
    def partial(self) -> bool:
        return self.answered < self.shards


def scored_hit(document: Hit, scored: Scored, cluster_id: int) -> Hit:
    """The stored document a shard sent (an unscored hit) with its id in the cluster and the score and sides the
    merge gave it: one copy of the hit (dataclasses.replace takes about 4 µs a hit)."""
    return replace(
        document,
        id=cluster_id,
        score=scored.score,
        found_by=scored.found_by,
        dense_score=scored.dense_score,
        keyword_score=scored.keyword_score,
        span=scored.span,
    )


class ClusterIndex(CopyUpkeep, RoutedWrites, ShardRounds):
    """The cluster index of `manifest` (read from `path`), its copies `copies[shard]` called through `calls`; its
    status and the repair of its copies come from CopyUpkeep (copy_upkeep.py), its writes from RoutedWrites
    (routed_writes.py), its hedged rounds of reads over the shards from ShardRounds (shard_rounds.py)."""

    def __init__(
        self,
        path: Path,
        manifest: ClusterManifest,
        copies: list[list[CopyState]],
        *,
        calls: CopyCalls | None = None,
        starter: CopyStarter = start_copy_actor,
        stopper: CopyStopper | None = None,
        encoder: Encoder | None = None,
        keep_statistics: bool = False,
    ) -> None:
        self.path, self.manifest, self.copies = Path(path), manifest, copies
        self.calls = calls or ActorCalls()
        self.starter, self.stopper = starter, stopper
        self._replaced: list[tuple[CopyPlace, int]] = []
        """Copies replaced elsewhere not stopped yet (their stop failed, or the manifest names them still): asked
        again at the next heal (copy_upkeep.py)."""
        self._encoder = encoder
        self._locks = [threading.Lock() for _ in range(manifest.shards)]
        self._turn = 0
        self.latencies = CallLatencies()
        """Each shard's recent call latencies, which say when a call is late and another copy is asked too."""
        self.spans = QuerySpans()
        """Where this process's searches spent their time, by mode (query_spans.py)."""
        self.kept_statistics = StatisticsCache() if keep_statistics else None
        """Each shard's term statistics since its last acknowledged write (statistics_cache.py), or None."""
        self.sequences = [max((c.sequence for c in shard if c.serving), default=0) for shard in copies]
        for shard, states in enumerate(copies):
            for state in states:
                state.serving = state.serving and state.sequence == self.sequences[shard]

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        calls: CopyCalls | None = None,
        starter: CopyStarter = start_copy_actor,
        stopper: CopyStopper | None = None,
        encoder: Encoder | None = None,
        keep_statistics: bool = False,
    ) -> ClusterIndex:
        """Open the cluster index whose manifest is at `path`: start each copy on its node (a copy whose node is
        not live is left out until `heal`) and read which writes each holds. `stopper`: what stops a copy heal or
        rebalance replaced elsewhere (CopyStopper; none for Ray actors). `keep_statistics`: keep each shard's term
        statistics between its writes (statistics_cache.py), right only in the one process that makes every write
        to the cluster (the ingress): another's writes would leave them stale."""
        manifest = read_manifest(Path(path))
        calls = calls or ActorCalls()
        nodes = live_nodes()
        copies = []
        for shard, places in enumerate(manifest.placement):
            states = []
            for place in places:
                state = CopyState(shard, place)
                if place.node in nodes:
                    state.handle = starter(place, shard, manifest.local_root)
                states.append(state)
            copies.append(states)
        index = cls(
            Path(path),
            manifest,
            copies,
            calls=calls,
            starter=starter,
            stopper=stopper,
            encoder=encoder,
            keep_statistics=keep_statistics,
        )
        index._read_sequences()
        return index

    @property
    def shards(self) -> int:
        return self.manifest.shards

    @property
    def encoder(self) -> Encoder:
        """The model the cluster was built with, loaded here on first use: it encodes each query once."""
        if self._encoder is None:
            from searchengine.encoding.encoder import Encoder

            self._encoder = Encoder(self.manifest.model, **self.manifest.encoder_options)
        return self._encoder

    # searching --------------------------------------------------------------------------------------------------
    def search(self, query: str, k: int = 10, where: Filters = None, **options: Any) -> ClusterAnswer:  # noqa: ANN401
        """`search_batch` of one query."""
        return self.search_batch([query], k, where, **options)

    def search_batch(
        self,
        queries: Sequence[str],
        k: int = 10,
        where: Filters = None,
        *,
        mode: str | None = None,
        fusion: Fusion | None = None,
        min_score: float | None = None,
        all_shards: bool = False,
    ) -> ClusterAnswer:
        """The k best documents of the whole cluster for each query, ranked and scored as one index of the same
        documents ranks them (QueryRequest says what the options do; reranking and highlights are not offered
        here). The query is encoded once, here; keyword and hybrid searches first sum every shard's term
        statistics. A shard with no live copy leaves the answer partial (ClusterAnswer.partial), or, with
        `all_shards`, raises ShardsUnavailableError."""
        request = QueryRequest(list(queries), k, where, mode=mode, fusion=fusion, min_score=min_score)
        retrieval = mode_named(request.mode or DEFAULT_MODE)
        if retrieval.name not in BUILT_IN_MODES:
            raise ClusterError(f"a cluster searches in modes {', '.join(BUILT_IN_MODES)}, not {retrieval.name!r}")
        return self._answer(list(request.queries), request, retrieval.name, retrieval.sides, None, all_shards)

    def search_by_vector(
        self,
        vector: object,
        k: int = 10,
        where: Filters = None,
        *,
        min_score: float | None = None,
        all_shards: bool = False,
    ) -> ClusterAnswer:
        """The k documents nearest to `vector` over the whole cluster: dense search with nothing encoded (the vector
        is in the shards' space, the model's own: engine/given_vectors.py)."""
        from searchengine.engine.given_vectors import given_vector

        rows = given_vector(vector, self.encoder.dimension)
        request = QueryRequest(["a vector"], k, where, mode="dense", min_score=min_score)  # checks k, where, min_score
        return self._answer([""], request, "vector", ("dense",), rows, all_shards)

    def _answer(
        self,
        texts: list[str],
        request: QueryRequest,
        mode: str,
        sides: tuple[str, ...],
        given: np.ndarray | None,
        all_shards: bool,
    ) -> ClusterAnswer:
        """search_batch's answer to `request` (its texts `texts`, searched in `mode` by `sides`); `given`: the
        queries' vectors (dense only), given instead of encoding `texts`. Its spans are added to `spans`."""
        span = self.spans.start()
        answer = self._answer_spanned(texts, request, sides, given, all_shards, span)
        self.spans.record(mode, len(texts), span)
        return answer

    def _answer_spanned(
        self,
        texts: list[str],
        request: QueryRequest,
        sides: tuple[str, ...],
        given: np.ndarray | None,
        all_shards: bool,
        span: SearchSpan,
    ) -> ClusterAnswer:
        fusion = request.fusion or DEFAULT_FUSION
        order = self._copy_order()
        plans: list[KeywordPlan] | None = None
        average_length = 0.0
        vectors = None
        if "keyword" in sides:
            total, order, vectors = self._term_statistics(order, texts, "dense" in sides, span)
            plans = [keyword_plan(total, text) for text in texts]
            average_length = total.average_length
        else:
            vectors = self._encoded(texts, span) if given is None else given
        depth = max(request.k, fusion.depth) if len(sides) > 1 else request.k
        query = ShardQuery(
            sides,
            depth,
            request.k,
            request.conditions,
            vectors,
            None if plans is None else [plan.phrases for plan in plans],
            average_length,
        )
        nothing = ([ShardCandidates([], [], {}, {}, {}, {})] * len(texts), 0)  # a shard without a filtered field
        answers = self._round(order, "candidates", query, len(texts), span=span, unknown_field_answer=nothing)
        searchable = sum(result[1] for _, result in answers.values())
        rankings = [
            merged_ranking(
                sides,
                {shard: result[0][position] for shard, (_, result) in answers.items()},
                self.shards,
                request.k,
                fusion,
                None if plans is None else plans[position],
                searchable,
            )
            for position in range(len(texts))
        ]
        hits, unread = self._hits(self._prefer(order, answers), rankings, answers, span)
        if request.min_score is not None:
            hits = [[hit for hit in found if hit.score >= request.min_score] for found in hits]
        missing = tuple(shard for shard in range(self.shards) if shard not in answers or shard in unread)
        if missing and all_shards:
            raise ShardsUnavailableError.of(list(missing), self.shards)
        return ClusterAnswer(hits, self.shards, self.shards - len(missing), missing)

    def query_vectors(self, texts: list[str]) -> np.ndarray:
        """The queries as the shards' vectors of queries (the cluster is built without whitening)."""
        from searchengine.engine.embedding import to_index_vectors

        return to_index_vectors(self.encoder.encode_queries(texts), None)

    def _term_statistics(
        self, order: dict[int, list[CopyState]], texts: list[str], encode: bool, span: SearchSpan
    ) -> tuple[TermStatistics, dict[int, list[CopyState]], np.ndarray | None]:
        """The term statistics of the words of `texts` summed over the shards of `order` (dfs_query_then_fetch's
        first round), with the order to ask the shards next and, when `encode`, the queries' vectors (encoded while
        the shards count). With `kept_statistics`, a shard whose statistics for every word were kept since its last
        acknowledged write (statistics_cache.py) is not asked; the others are, in one round, and what they count is kept when no write
        to the shard began or ended meanwhile (its lock free before and after, its sequence unchanged)."""
        words = list(dict.fromkeys(word for text in texts for word in keyword_terms(text)))
        known: dict[int, TermStatistics] = {}
        sequences: dict[int, int] = {}
        kept_statistics = self.kept_statistics
        for shard in order if kept_statistics is not None else ():
            kept = kept_statistics.known(shard, self.sequences[shard], words)
            if kept is not None:
                known[shard] = kept
            elif not self._locks[shard].locked():
                sequences[shard] = self.sequences[shard]
        asking = {shard: states for shard, states in order.items() if shard not in known}
        counting = self._start_round(asking, "statistics", texts, span=span)
        span.statistics_rounds += bool(asking)
        vectors = self._encoded(texts, span) if encode else None
        counted = self._finish_round(asking, counting, "statistics", texts, span=span)
        for shard, (_, statistics) in counted.items():
            unchanged = sequences.get(shard) == self.sequences[shard] and not self._locks[shard].locked()
            if unchanged and kept_statistics is not None:
                kept_statistics.keep(shard, sequences[shard], statistics)
        total = summed([statistics for _, statistics in counted.values()] + list(known.values()))
        return total, {**{shard: order[shard] for shard in known}, **self._prefer(asking, counted)}, vectors

    def _encoded(self, texts: list[str], span: SearchSpan) -> np.ndarray:
        """query_vectors, timed as the span's encoding."""
        started = time.perf_counter()
        try:
            return self.query_vectors(texts)
        finally:
            span.encode_s += time.perf_counter() - started

    def _hits(
        self,
        order: dict[int, list[CopyState]],
        rankings: list[list[tuple[int, Scored]]],
        answers: dict[int, tuple[CopyState, Any]],
        span: SearchSpan | None = None,
    ) -> tuple[list[list[Hit]], set[int]]:
        """The hits of each query's ranking, from the documents each shard sent with its candidates. One a shard
        did not send (shard_search.reachable says none is missed) is read from the shard in a round of its own;
        returns the shards whose documents could then not be read (every copy failed since): their hits are left
        out."""
        sent = [{shard: result[0][position].documents for shard, (_, result) in answers.items()} for position in
                range(len(rankings))]  # fmt: skip
        lacking = {shard: [[] for _ in rankings] for shard in answers}
        for position, ranking in enumerate(rankings):
            for shard, scored in ranking:
                if scored.id not in sent[position][shard]:
                    lacking[shard][position].append(scored)
        wanted = {shard: lists for shard, lists in lacking.items() if any(lists)}
        asked = {shard: order[shard] for shard in wanted if shard in order}
        found = self._round(asked, "hits", per_shard=wanted, span=span)
        read = {
            (shard, position): {hit.id: hit for hit in hits[position]}
            for shard, (_, hits) in found.items()
            for position in range(len(rankings))
        }
        results = []
        for position, ranking in enumerate(rankings):
            hits = []
            for shard, scored in ranking:
                cluster_id = global_id(scored.id, shard, self.shards)
                document = sent[position][shard].get(scored.id)
                if document is not None:
                    hits.append(scored_hit(document, scored, cluster_id))
                elif (hit := read.get((shard, position), {}).get(scored.id)) is not None:
                    hits.append(replace(hit, id=cluster_id))
            results.append(hits)
        return results, set(wanted) - set(found)

    def ask_shards(
        self, method: str, *args: Any, shards: Sequence[int] | None = None, per_shard: dict[int, Any] | None = None
    ) -> dict[int, tuple[CopyState, Any]]:
        """Ask one serving copy of every shard (of `shards`, or of `per_shard`'s, when given) `method(*args)`, or
        `method(per_shard[shard])`, failing over to the shard's next copy: (copy, result) by shard, for the shards
        that answered. What a front end calls for what ClusterIndex has no method of its own for."""
        wanted = set(per_shard if per_shard is not None else range(self.shards) if shards is None else shards)
        order = {shard: copies for shard, copies in self._copy_order().items() if shard in wanted}
        return self._round(order, method, *args, per_shard=per_shard)

    def documents(self, where: Filters, *, all_shards: bool = False) -> tuple[list[Document], ClusterAnswer]:
        """The stored documents that meet every filter, shard by shard (each in its index order), without a query,
        e.g. a lookup by external ids; with an answer that says which shards answered (no hits)."""
        found = self._round(self._copy_order(), "documents", where, unknown_field_answer=[])
        missing = tuple(shard for shard in range(self.shards) if shard not in found)
        if missing and all_shards:
            raise ShardsUnavailableError.of(list(missing), self.shards)
        documents = [document for shard in sorted(found) for document in found[shard][1]]
        return documents, ClusterAnswer([], self.shards, self.shards - len(missing), missing)

    # the cluster's state ----------------------------------------------------------------------------------------
    def _read_sequences(self) -> None:
        """Ask every started copy which writes it holds; the shard's newest is the one every copy must hold to
        serve."""
        for shard, states in enumerate(self.copies):
            for state in states:
                if state.handle is None:
                    continue
                try:
                    state.sequence = self.calls.finish(self.calls.start(state.handle, "sequence"))
                    state.serving = True
                except Exception as error:
                    if not copy_failed(error) and not isinstance(error, ClusterError):
                        raise
                    state.serving = False
            self.sequences[shard] = max((s.sequence for s in states if s.serving), default=0)
            for state in states:
                state.serving = state.serving and state.sequence == self.sequences[shard]
