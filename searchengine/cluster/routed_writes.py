"""RoutedWrites: the part of ClusterIndex (cluster_index.py) that writes: each document routed to the shard its
external id hashes to, and each shard's part committed on every live copy of it, in the shard's order, before the
write is acknowledged (a WriteReceipt). A copy whose node is lost while a write waits for it stops counting as live
within SERVING_CHECK_S of Ray declaring the node dead: the write is acknowledged by the others, never by none. A
write waits for the copies of all its shards together, so it takes one timeout at most, however many shards it spans."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from searchengine.cluster.copy_calls import CopyCalls, copy_failed, request_error
from searchengine.cluster.copy_upkeep import CopyState
from searchengine.cluster.errors import ClusterError, CopyBehindError, ShardsUnavailableError, WriteConflictError
from searchengine.cluster.placement import live_nodes
from searchengine.cluster.routing import shard_of
from searchengine.cluster.shard_rounds import SERVING_CHECK_S
from searchengine.cluster.write_counts import WriteCounts
from searchengine.engine.corpus_input import checked_documents
from searchengine.engine.document_ids import external_ids_given
from searchengine.errors import SearchEngineError
from searchengine.indexer.tables.documents import Document

if TYPE_CHECKING:
    from searchengine.encoding.encoder import Encoder


@dataclass(frozen=True)
class WriteReceipt:
    """An acknowledged write: each shard it touched and the write's sequence number there, how many copies
    committed it (every live copy of the shard), and what it did there (one committed copy's counts)."""

    sequences: dict[int, int] = field(default_factory=dict)
    copies: dict[int, int] = field(default_factory=dict)
    shard_counts: dict[int, WriteCounts] = field(default_factory=dict)

    @property
    def counts(self) -> WriteCounts:
        """What the whole write did, its shards' counts summed: what one index's add (or delete) of it counts."""
        return sum(self.shard_counts.values(), WriteCounts())


class RoutedWrites:
    """Routed, acknowledged writes of a cluster index; ClusterIndex inherits it and sets these attributes."""

    copies: list[list[CopyState]]
    calls: CopyCalls
    sequences: list[int]
    _locks: list[threading.Lock]
    shards: int
    encoder: Encoder

    def add(self, documents: Sequence[Document]) -> WriteReceipt:
        """Add or replace (upsert, by external id) `documents`, each in the shard its external id hashes to, and
        commit them on every live copy of those shards before returning. The documents are encoded here once.
        Before any of it is encoded or sent, the write is checked as one index checks an add, with one index's
        errors (corpus_input.checked_documents: blank texts are left out), and refused when a document has no
        external id; refused too when a shard it goes to has no live copy (nothing is acknowledged then: retry
        once `heal` has a copy serving)."""
        documents = checked_documents(documents)
        missing = [number for number, document in enumerate(documents, start=1) if not document.external_id]
        if missing:
            raise ClusterError(
                f"document {missing[0]} has no external id: a cluster routes each document by its id, so give every "
                "document one (Document.external_id from Python, id_field over HTTP, --id-field on the command line)"
            )
        vectors = self.encoder.encode([document.text for document in documents])
        groups = self._by_shard([document.external_id for document in documents])
        return self._write(
            {shard: ([documents[row] for row in rows], vectors[rows], []) for shard, rows in groups.items()}
        )

    def delete(self, external_ids: Sequence[str]) -> WriteReceipt:
        """Delete the documents with `external_ids` from their shards, committed on every live copy before
        returning (an id no document has changes nothing)."""
        external_ids = external_ids_given(external_ids)
        if not external_ids:
            raise ClusterError("say which documents to delete: give their external ids")
        groups = self._by_shard(list(external_ids))
        return self._write({shard: ([], None, [external_ids[row] for row in rows]) for shard, rows in groups.items()})

    def _by_shard(self, external_ids: list[str]) -> dict[int, list[int]]:
        groups: dict[int, list[int]] = {}
        for row, external_id in enumerate(external_ids):
            groups.setdefault(shard_of(str(external_id), self.shards), []).append(row)
        return groups

    def _write(self, writes: dict[int, tuple[list[Document], np.ndarray | None, list[str]]]) -> WriteReceipt:
        """Write each shard's part of a write (documents, their vectors, external ids to delete) as the shard's
        next sequence number on every serving copy of it, all shards at once; acknowledged (returned) once each
        shard's part is committed by every copy still live (`_committed`). A copy that fails, has missed writes or
        whose node is lost meanwhile stops serving (heal brings it back).
        Refused before anything is sent when a shard has no serving copy; a part no copy committed raises after
        every other shard's part is committed and counted."""
        shards = sorted(writes)
        with contextlib.ExitStack() as locked:
            for shard in shards:  # in order, so two writes never wait for each other's locks
                locked.enter_context(self._locks[shard])
            serving = {
                shard: [state for state in self.copies[shard] if state.serving and state.handle is not None]
                for shard in shards
            }
            for shard in shards:
                if not serving[shard]:
                    raise ShardsUnavailableError(
                        f"shard {shard} has no live copy, so the write was not applied: bring its node back or "
                        "rebuild its copies (ClusterIndex.heal), then write again"
                    )
            write_id = uuid.uuid4().hex  # a copy that holds another write under a part's number refuses it
            pending = {
                shard: [
                    (
                        state,
                        self.calls.start(state.handle, "apply", self.sequences[shard] + 1, *writes[shard], write_id),
                    )
                    for state in serving[shard]
                ]
                for shard in shards
            }
            receipt, failure = WriteReceipt(), None
            for shard, outcome in self._committed(pending).items():
                if isinstance(outcome, Exception):
                    if isinstance(outcome, WriteConflictError):  # the next write is numbered after the other writer's
                        self.sequences[shard] = self._newest_held(serving[shard], self.sequences[shard])
                    failure = failure or outcome  # raised once every other shard's part is counted
                    continue
                receipt.copies[shard], counts = outcome
                if counts is not None:
                    receipt.shard_counts[shard] = counts
                self.sequences[shard] += 1
                receipt.sequences[shard] = self.sequences[shard]
            if failure is not None:
                raise _with_committed_parts(failure, receipt)
            return receipt

    def _newest_held(self, states: list[CopyState], known: int) -> int:
        """The newest write any of `states` holds (at least `known`): what a shard's copies hold after another
        writer wrote it, so that this one's next write is numbered after it."""
        newest = known
        for state in states:
            with contextlib.suppress(Exception):  # a copy that does not answer is found by the next write or heal
                newest = max(newest, self.calls.finish(self.calls.start(state.handle, "sequence")))
        return newest

    def _committed(
        self, pending: dict[int, list[tuple[CopyState, Any]]]
    ) -> dict[int, tuple[int, WriteCounts | None] | Exception]:
        """For each shard of a write (its calls started on each copy, as `pending`), how many copies committed its
        part and what it did (the counts of the first copy that applied it; None if every copy held it already),
        or the error that part raises: the request's own error when no copy committed it and one refused it,
        else ShardsUnavailableError when none committed it. The copies of every shard are waited for together,
        against one deadline (the write's timeout from now, when its calls are out), so a write over many shards
        waits one timeout, not one per shard. Every SERVING_CHECK_S the wait looks whether each copy it still waits
        for is live: a copy whose node Ray no longer lists, or that stopped serving meanwhile (heal found its node
        gone, or a search's call to it failed), counts as failed at once, as one past the deadline does, and its call
        is cancelled. A Serve call to a lost node's copy never fails by itself (copy_deployments.ServeCalls says
        why), so without this look a write, and every write queued behind it, waited the whole timeout."""
        committed = dict.fromkeys(pending, 0)
        counts: dict[int, WriteCounts | None] = dict.fromkeys(pending)
        refusing: dict[int, list[tuple[CopyState, Exception]]] = {shard: [] for shard in pending}
        waiting = {
            self.calls.waitable(call): (shard, state, call) for shard, calls in pending.items() for state, call in calls
        }
        deadline = time.perf_counter() + self.calls.timeout("apply")
        nodes, nodes_read = None, time.perf_counter()  # Ray's node list (a call to its GCS) read once a period
        while waiting:
            done, _ = wait(list(waiting), timeout=max(0.0, min(SERVING_CHECK_S, deadline - time.perf_counter())))
            for future in done:
                shard, state, call = waiting.pop(future)
                try:
                    applied = self.calls.finish(call)  # answered already: its result, or its error raised
                    state.sequence = applied.sequence
                    committed[shard] += 1
                    counts[shard] = counts[shard] or applied.counts  # the copies of a shard count alike
                except CopyBehindError:
                    state.serving = False  # it missed writes: heal catches it up
                except Exception as error:  # noqa: BLE001 (sorted below: a failed copy or a bad request)
                    if copy_failed(error):
                        state.serving = False  # its process or node failed: heal restarts or rebuilds it
                    else:
                        refusing[shard].append((state, request_error(error)))
            if waiting:
                now = time.perf_counter()
                if now - nodes_read >= SERVING_CHECK_S:
                    nodes, nodes_read = live_nodes(), now
                timed_out = now >= deadline
                for future, (_, state, call) in list(waiting.items()):
                    if timed_out or not state.serving or (nodes is not None and state.place.node not in nodes):
                        del waiting[future]
                        self.calls.cancel(call)
                        state.serving = False  # away: heal restarts, rebuilds or catches it up
        outcomes: dict[int, tuple[int, WriteCounts | None] | Exception] = {}
        for shard in pending:
            if refusing[shard] and not committed[shard]:
                outcomes[shard] = refusing[shard][0][1]  # the request itself is wrong: every copy rolled it back
                continue
            for state, _ in refusing[shard]:
                state.serving = False
            outcomes[shard] = (
                (committed[shard], counts[shard])
                if committed[shard]
                else ShardsUnavailableError(
                    f"no copy of shard {shard} committed the write (their nodes failed during it), so it is not "
                    "acknowledged: write again once ClusterIndex.heal has a copy serving"
                )
            )
        return outcomes


def _with_committed_parts(failure: Exception, receipt: WriteReceipt) -> Exception:
    """`failure` (a shard's part no copy committed), saying which other shards' parts were committed and what
    they did: those stand, so the caller knows the write is partly applied, not undone (one index's is all or
    none). Without them it said only "not acknowledged", as if nothing had been written."""
    if not receipt.copies or not isinstance(failure, SearchEngineError):
        return failure
    parts = "; ".join(
        f"shard {shard} ({receipt.shard_counts.get(shard, WriteCounts()).said()})" for shard in sorted(receipt.copies)
    )
    return type(failure)(f"{failure}. These parts of it were committed and stand: {parts}")
