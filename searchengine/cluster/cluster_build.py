"""A cluster index built on Ray: the driver reads the documents and routes each to its shard by its id; embedding
workers (Ray actors) embed each batch, and the batch's vectors go from the worker to every copy of the shard as a
Ray object the driver only names (it receives no vector); each copy, on its own node, stores its shard's rows and
segments (the driver writes no row). The copies build in new folders; the cluster manifest, written last and whole,
is the build's one commit: a build that dies leaves the previous cluster (or none) as it was, and once it is
written the previous build's folders are removed (remove_build). A build refuses a manifest path whose cluster is
being served (served.py): its running copies would lose their folders, and the writes they acknowledge with them."""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import wait
from dataclasses import dataclass, field
from itertools import chain, islice
from pathlib import Path
from typing import Any

import numpy as np

from searchengine.cluster.cluster_index import ClusterIndex
from searchengine.cluster.copy_actors import CopyStarter, start_copy_actor
from searchengine.cluster.copy_calls import ActorCalls, CopyCalls
from searchengine.cluster.copy_upkeep import CopyState
from searchengine.cluster.embedded_model import EmbeddedModel
from searchengine.cluster.errors import ClusterError
from searchengine.cluster.manifest import (
    ClusterManifest,
    CopyPlace,
    copy_folder,
    new_build_id,
    read_manifest,
    refuse_unwritable_manifest,
    write_manifest,
)
from searchengine.cluster.node_folders import current_node, remove_on_their_nodes
from searchengine.cluster.placement import initial_placement, live_nodes, shared_nodes
from searchengine.cluster.routing import shard_of
from searchengine.cluster.served import served_copies
from searchengine.cluster.vector_blocks import VectorRows
from searchengine.engine.indexing import CHUNK
from searchengine.errors import SearchEngineError
from searchengine.indexer.tables.documents import Document, refuse_unstorable_document

BATCH = CHUNK
"""Documents a worker embeds and a copy stores together: as many as a one-process build stores together
(engine.indexing.CHUNK). Each batch costs a Ray call and object, and a copy's store a transaction: at 256, a build of
200,000 given vectors spent about twice as long sending them (benchmarks/scale/cluster_answers.py; docs/cluster.md)."""
IN_FLIGHT = 8
"""Batches sent on before the driver waits for the oldest: bounds what waits in Ray's object store."""
REMOVE_TIMEOUT_S = 30.0
"""Seconds a failed build waits for its copies to remove their own folders, all of them together: a copy that has
not answered by then (hung, or stopped) is killed, and its folder removed on its node once its process is gone."""


@dataclass(frozen=True)
class ClusterBuildSettings:
    """What a cluster index is built with."""

    shards: int
    copies: int = 1
    model: str | None = None
    local_root: str = ""
    """The folder every node keeps its copies under, on its own disk (each node in its own subfolder)."""
    name: str = "index"
    encoder_options: dict[str, Any] = field(default_factory=dict)
    index_type: str = "Flat"
    workers: int = 1
    """Embedding workers (Ray actors, one CPU each)."""
    nodes: list[str] | None = None
    """The nodes to place copies on (placement.live_nodes names); None: every live node."""
    batch_size: int = BATCH

    def __post_init__(self) -> None:
        for name in ("shards", "copies", "workers", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ClusterError(f"{name} must be a whole number of at least 1, not {value!r}")
        if not self.local_root:
            raise ClusterError("give local_root: the folder each node keeps its shard copies under, on its own disk")
        name = self.name
        if not isinstance(name, str) or name in ("", ".", "..") or any(part in name for part in ("/", "\\", "\0")):
            raise ClusterError(
                f"name must be one plain folder name (its copies' folders are LOCAL_ROOT/NODE/NAME/...), not "
                f"{name!r}: give a name without /, \\ or .., e.g. 'products'"
            )


@dataclass
class ClusterBuildReport:
    """What a cluster build did: documents per shard, and the rows the driver itself wrote (0: each copy wrote its
    own, in its own process, counted by the pid and node each copy reports)."""

    documents: int = 0
    shard_documents: list[int] = field(default_factory=list)
    driver_rows_written: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    """What the user should know of the result, one line each (e.g. copies of a shard that share a node)."""


class Embedder:
    """An embedding worker: the cluster's model, loaded once per worker process."""

    def __init__(self, model: str, options: dict[str, Any]) -> None:
        from searchengine.encoding.encoder import Encoder

        self.encoder = Encoder(model, **options)

    def model(self) -> EmbeddedModel:
        """The model's identity, as the copies' manifests record it."""
        return EmbeddedModel.of(self.encoder)

    def embed(self, texts: list[str]) -> np.ndarray:
        """The encoder's output for `texts` (a shard copy applies the index's normalisation when it stores it)."""
        return np.asarray(self.encoder.encode(texts), dtype=np.float32)


def build_cluster(
    manifest_path: str | Path,
    documents: Iterable[Document],
    settings: ClusterBuildSettings,
    *,
    vectors: Iterable[object] | None = None,
    calls: CopyCalls | None = None,
    starter: CopyStarter = start_copy_actor,
) -> tuple[ClusterIndex, ClusterBuildReport]:
    """Build a cluster index of `documents` (each with an external id: it picks the shard) on the Ray cluster this
    process is connected to, and commit it by writing its manifest at `manifest_path`. Returns the opened index and
    what the build did.

    `vectors`: the documents' own vectors instead of the workers' (as SearchEngine.add takes `embeddings`), as
    blocks of float32 rows in the documents' order (any number of rows a block; one row per document in all), in
    the space of `settings.model`, which still encodes the queries. Each block is checked as it comes (the model's
    dimension, no NaN, no vector of zeros: one ClusterError, and nothing is committed), and each batch's rows go to
    every copy of its shard as one Ray object, as a worker's vectors do; no text is embedded (one worker reads the
    model's identity and stops).

    Each document is checked as a write checks it, and for its id, as it is read: the first `settings.batch_size`
    before any copy or worker starts, so a bad one among them is refused at once, with nothing started."""
    import ray

    if settings.model is None:
        raise ClusterError("give the model the cluster embeds with (settings.model)")
    started = time.perf_counter()
    calls = calls or ActorCalls()
    manifest_path = Path(manifest_path)
    refuse_unwritable_manifest(manifest_path)  # before any copy starts: its commit could not be written
    checked = _checked(documents)
    first = list(islice(checked, settings.batch_size))  # before any copy or worker starts (a small input whole)
    if not first:  # as the command refuses an empty corpus
        raise ClusterError("no documents to build from: give at least one (a cluster index is built from documents)")
    _refuse_served(manifest_path)
    nodes = settings.nodes or sorted(live_nodes())
    build = new_build_id()
    placement = initial_placement(nodes, settings.shards, settings.copies)
    copies = [
        [
            CopyState(shard, CopyPlace(node, copy_folder(settings.local_root, node, settings.name, build, shard)))
            for node in nodes_of_shard
        ]
        for shard, nodes_of_shard in enumerate(placement)
    ]
    for states in copies:
        for state in states:
            state.handle = starter(state.place, state.shard, settings.local_root)
    worker = ray.remote(Embedder).options(num_cpus=1)
    embedders: list[Any] = []
    try:
        embedders += [
            worker.remote(settings.model, settings.encoder_options)
            for _ in range(1 if vectors is not None else settings.workers)
        ]
        model = embedders[0].model.remote()  # passed on unresolved: the copies name the model without loading it
        rows = None
        if vectors is not None:  # the model's identity is all a worker is needed for
            model = ray.get(model)
            rows = VectorRows(vectors, model.dimension)
            for embedder in embedders:
                ray.kill(embedder)
            embedders.clear()
        begun = [
            calls.start(state.handle, "begin_build", model, settings.index_type)
            for states in copies
            for state in states
        ]
        for call in begun:
            calls.finish(call, timeout=600.0)
        report = ClusterBuildReport(shard_documents=[0] * settings.shards)
        in_flight: list[Any] = []
        batches: dict[int, list[Document]] = {}
        given: dict[int, list[np.ndarray]] = {}
        turn = 0

        def send(shard: int) -> None:
            nonlocal turn
            batch = batches.pop(shard)
            if rows is not None:
                embedded = ray.put(np.stack(given.pop(shard)))
            else:
                embedded = embedders[turn % len(embedders)].embed.remote([document.text for document in batch])
            turn += 1
            in_flight.extend(calls.start(state.handle, "write_batch", batch, embedded) for state in copies[shard])
            while len(in_flight) > IN_FLIGHT * settings.copies:
                calls.finish(in_flight.pop(0), timeout=600.0)

        for position, document in enumerate(chain(first, checked)):
            shard = shard_of(document.external_id, settings.shards)
            batches.setdefault(shard, []).append(document)
            if rows is not None:
                given.setdefault(shard, []).append(rows.row(position))
            report.documents += 1
            report.shard_documents[shard] += 1
            if len(batches[shard]) >= settings.batch_size:
                send(shard)
        if rows is not None:
            rows.finish(report.documents)
        for shard in list(batches):
            send(shard)
        for call in in_flight:
            calls.finish(call, timeout=600.0)
        finished = [calls.start(state.handle, "finish_build") for states in copies for state in states]
        written = [calls.finish(call, timeout=600.0) for call in finished]
        here = (os.getpid(), current_node())
        report.driver_rows_written = sum(done["rows"] for done in written if (done["pid"], done["node"]) == here)
        _refuse_served(manifest_path)  # served since the build began: it commits nothing
    except BaseException as error:
        for embedder in embedders:  # first: a copy still waiting for the model's identity then stops waiting
            ray.kill(embedder)
        left = _remove_copies(copies, calls, settings.local_root)
        failure = failed_inside_ray(error)
        if left:
            said = (
                f"its copies' folders {', '.join(left)} are left (their nodes not live, or not removed there): remove "
                "them there"
            )
            if failure is None:
                error.add_note(f"The cluster build did not commit; {said}.")
            else:
                failure = ClusterError(f"{failure}; {said}")
        if failure is None:
            raise
        raise failure from None
    for embedder in embedders:
        ray.kill(embedder)
    manifest = ClusterManifest(
        name=settings.name,
        shards=settings.shards,
        copies=settings.copies,
        local_root=settings.local_root,
        model=str(settings.model),
        build=build,
        placement=tuple(tuple(state.place for state in states) for states in copies),
        encoder_options=dict(settings.encoder_options),
        settings={"index_type": settings.index_type},
    )
    for states in copies:
        for state in states:
            state.serving = True
    previous = _previous(manifest_path)
    write_manifest(manifest_path, manifest)
    if previous is not None and previous.build != build:
        with contextlib.suppress(Exception):  # left behind, the old folders take space but no manifest names them
            remove_build(previous, calls=calls, starter=starter)
    report.seconds = time.perf_counter() - started
    report.warnings = shared_nodes(placement)
    return ClusterIndex(manifest_path, manifest, copies, calls=calls, starter=starter), report


def _checked(documents: Iterable[Document]) -> Iterator[Document]:
    """`documents`, each checked as a write checks it and for the id that routes it: a SearchEngineError that
    numbers the document in the whole input, not in its batch (a copy would number it within its batch)."""
    for number, document in enumerate(documents, start=1):
        refuse_unstorable_document(document, number)
        if document.external_id is None:
            raise ClusterError(
                f"document {number} has no external id: a cluster routes each document by its id, so give every "
                "document one (Document.external_id, or --id-field)"
            )
        yield document


def _refuse_served(manifest_path: Path) -> None:
    """ClusterError when the cluster index at `manifest_path` is being served on this Ray cluster: a build there
    would remove its folders under its running copies (remove_build), and the writes they acknowledge with them."""
    previous = _previous(manifest_path)
    running = served_copies(previous) if previous is not None else []
    if running:
        raise ClusterError(
            f"the cluster index at {manifest_path} is being served on this Ray cluster ({len(running)} of its copies "
            "run as Serve applications): a build there would remove their folders under them; stop serving it first "
            f"(`searchengine cluster-index stop {manifest_path}`), or build under another manifest path"
        )


def _remove_copies(copies: list[list[CopyState]], calls: CopyCalls, local_root: str) -> list[str]:
    """Remove the folders of an uncommitted build's copies, so the previous cluster (or none) is all that is left:
    each by its copy, which first stops its build, all asked at once and waited for together for REMOVE_TIMEOUT_S.
    A copy that did not (its actor died, e.g. the cause of the failure, or it has not answered: it may still write)
    is killed, and its folder removed by a Ray task on its node once the copy's process is gone. Returns the folders
    left, as "FOLDER on node NODE" (their nodes not live, their processes not gone, or their tasks failed:
    remove_on_their_nodes)."""
    import ray

    started, unreached = [], []
    for state in (state for states in copies for state in states):
        try:
            started.append((state, calls.start(state.handle, "remove")))
        except Exception:  # noqa: BLE001 (its folder is removed on its node below)
            unreached.append(state)
    asked = {calls.waitable(pending): state for state, pending in started}
    answered, _ = wait(asked, timeout=REMOVE_TIMEOUT_S)
    unreached += [state for done, state in asked.items() if done not in answered or done.exception() is not None]
    processes = {}
    for state in unreached:
        processes[state.place.folder] = _process_of(state.handle)
        with contextlib.suppress(Exception):  # dead already, or not an actor: nothing to stop
            ray.kill(state.handle)
    places = [state.place for state in unreached]
    try:
        return remove_on_their_nodes(places, local_root, processes)
    except Exception:  # noqa: BLE001 (Ray itself failed: the build's own error says more)
        return [f"{place.folder} on node {place.node}" for place in places]


def _process_of(handle: Any) -> int | None:  # noqa: ANN401 (a Ray actor handle)
    """The process id of the copy behind the actor `handle`, as Ray's actor table records it (also for one that
    does not answer, or died; a private table of Ray's, the one place that says it without the dashboard); None for
    a handle that is not an actor's, or one the table does not have."""
    from ray._private import state

    actor = getattr(handle, "_actor_id", None)
    if actor is None:
        return None
    with contextlib.suppress(Exception):  # not in the table: nothing to wait for
        return int(state.actors(actor.hex())["Pid"]) or None
    return None


def failed_inside_ray(error: BaseException) -> ClusterError | None:
    """One line for a build that failed in a Ray worker or copy, whose error Ray gives with the remote traceback in
    its message: the cause (its first line) and that nothing was committed; None for an error raised here."""
    from ray import exceptions

    unchanged = "nothing was committed (the previous cluster index, or none, is as it was)"
    if isinstance(error, exceptions.RayTaskError):  # Ray's class of it is also the cause's, without all its fields
        cause = getattr(error, "cause", None)
        cause = cause if isinstance(cause, BaseException) else None
        said = (str(cause) if cause is not None else str(error)).strip().splitlines() or [""]
        what = said[0] if isinstance(cause, SearchEngineError) else f"{type(cause or error).__name__}: {said[0]}"
        where = getattr(error, "function_name", None) or "a worker or copy"
        return ClusterError(f"the cluster build failed in Ray ({where}): {what}; {unchanged}: fix that and build again")
    if isinstance(error, exceptions.RayActorError) and error.actor_init_failed:
        what, where = _creation_failure(str(error))
        return ClusterError(f"the cluster build failed in Ray ({where}): {what}; {unchanged}: fix that and build again")
    if isinstance(error, exceptions.RayError):
        said = str(error).strip().splitlines() or [type(error).__name__]
        return ClusterError(
            f"the cluster build failed in Ray: {said[0]}; {unchanged}: look for the cause with `ray logs` (a node "
            "lost, or out of memory) and build again"
        )
    return None


def _creation_failure(message: str) -> tuple[str, str]:
    """What failed, and where, in the message of an actor that died in its creation task (a copy refusing its
    folder): Ray keeps only the message, the task's header and traceback, whose last line is the error raised
    ("module.Class: what"); a project error is given as its own words, another with its class's name."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", message)
    where = re.search(r"ray::([\w.]+)\(", plain)
    raised = plain.strip().splitlines()[-1] if plain.strip() else ""
    place = where.group(1) if where else "an actor's creation"
    kind, given, said = raised.partition(": ")
    if not given or " " in kind:  # no "module.Class: what" line: the message as Ray gave it
        return raised or "its creation task failed", place
    return (said if kind.startswith("searchengine.") else f"{kind.rsplit('.', 1)[-1]}: {said}"), place


def _previous(path: Path) -> ClusterManifest | None:
    """The manifest a new build replaces, if there is a readable one."""
    if not path.exists():
        return None
    try:
        return read_manifest(path)
    except ClusterError:
        return None


def remove_build(
    manifest: ClusterManifest, *, calls: CopyCalls | None = None, starter: CopyStarter = start_copy_actor
) -> list[str]:
    """Remove the folders of `manifest`'s copies (a build a new one replaced, or a cluster index no longer wanted),
    each by a copy started on its own node; returns the folders removed. A copy whose node is not live keeps its
    folder: nothing else reaches that node's disk."""
    calls = calls or ActorCalls()
    nodes = live_nodes()
    started = [
        (place, calls.start(starter(place, shard, manifest.local_root), "remove"))
        for shard, places in enumerate(manifest.placement)
        for place in places
        if place.node in nodes
    ]
    removed = []
    for place, call in started:
        calls.finish(call)
        removed.append(place.folder)
    return removed
