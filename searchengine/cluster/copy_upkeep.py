"""CopyUpkeep: the part of ClusterIndex (cluster_index.py) that reports on and repairs the copies of its shards:
status (shards, copies, nodes, lag), heal (restart a failed copy, rebuild a lost node's copy elsewhere, catch a copy
up from a live one's committed files) and rebalance (move copies to a node just added), and the stopping of what
still runs of a copy replaced elsewhere (a Serve application), once the committed manifest no longer names it."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchengine.cluster.copy_actors import CopyStarter, CopyStopper
from searchengine.cluster.copy_calls import CopyCalls
from searchengine.cluster.errors import ClusterError
from searchengine.cluster.manifest import ClusterManifest, CopyPlace, copy_folder, write_manifest
from searchengine.cluster.placement import least_loaded, live_nodes

log = logging.getLogger("searchengine.cluster")


@dataclass
class CopyState:
    """One copy as the driver knows it: where it is, its handle, whether it answers searches (it is live and holds
    every acknowledged write of its shard), and the shard's last write it holds."""

    shard: int
    place: CopyPlace
    handle: Any = None
    serving: bool = False
    sequence: int = 0


class CopyUpkeep:
    """Status and repair of a cluster index's copies; ClusterIndex inherits it and sets these attributes."""

    path: Path
    manifest: ClusterManifest
    copies: list[list[CopyState]]
    calls: CopyCalls
    starter: CopyStarter
    stopper: CopyStopper | None
    sequences: list[int]
    _replaced: list[tuple[CopyPlace, int]]
    _locks: list[threading.Lock]

    def status(self) -> dict[str, Any]:
        """Shards, their copies (node, folder, serving, documents, the writes they lack: `lag`), the live nodes
        with their copies, and the documents of the cluster (each shard counted from one serving copy)."""
        nodes = live_nodes()
        shards, documents = [], 0
        for shard, states in enumerate(self.copies):
            copies = []
            for state in states:
                entry: dict[str, Any] = {"node": state.place.node, "folder": state.place.folder, "live": False}
                if state.handle is not None and state.place.node in nodes:  # a lost node's copy is not called
                    try:
                        entry.update(self.calls.finish(self.calls.start(state.handle, "status"), timeout=10.0))
                        entry["live"] = True
                    except Exception:  # noqa: BLE001 (a copy that does not answer is reported as not live)
                        state.serving = False
                elif state.place.node not in nodes:
                    state.serving = False
                entry["serving"] = state.serving
                copies.append(entry)
            # the newest write any copy reports counts too: this process's number is stale where another wrote since
            newest = max([self.sequences[shard], *(c["sequence"] for c in copies if "sequence" in c)])
            for entry, state in zip(copies, states):
                entry["lag"] = newest - entry.get("sequence", state.sequence)
            counted = next((c["documents"] for c in copies if c["serving"] and "documents" in c), None)
            documents += counted or 0
            shards.append({"shard": shard, "sequence": newest, "documents": counted, "copies": copies})
        placed = [state.place.node for states in self.copies for state in states]
        return {
            "name": self.manifest.name,
            "version": self.manifest.version,
            "documents": documents,
            "shards": shards,
            "nodes": [{"node": node, "copies": placed.count(node)} for node in sorted(nodes)],
        }

    def heal(self) -> list[str]:
        """Bring every shard back to its copies, each serving: a copy whose process failed is started again on its
        node; one whose node is gone is rebuilt on the live node with fewest copies (not one holding the shard
        already, where there is another); a copy behind its shard installs a live copy's committed files, sent
        through Ray, under the shard's write lock (a copy starts without it: writes go on to the serving copies).
        Where no copy of a shard serves, the one started holding the most writes is its newest (`_newest`).
        First of all, every copy on a node Ray no longer lists as alive stops serving, without being called (a call
        to it may wait for its timeout). A copy whose start fails is said, one line, and started at the next heal;
        one being rebuilt goes back to the place the manifest names (and what its start left running is stopped).
        The manifest names a rebuilt copy's new place once the copy serves (`_save_served_places`), so a crash never
        leaves it naming an empty folder in place of the lost one, and only then is the replaced copy stopped
        (`stopper`; one that fails is asked again at the next heal). Returns what was done, one line each."""
        done: list[str] = []
        nodes = live_nodes()
        replaced: list[tuple[CopyPlace, int]] = []
        for states in self.copies:  # first, at once: a search waiting on such a copy asks another now
            for state in states:
                if state.place.node not in nodes:
                    state.serving = False  # its node is gone (Ray declared it dead): rebuilt below
        for shard, states in enumerate(self.copies):
            # Asked before the shard's write lock is taken: a call to a copy whose node was lost and is not yet
            # declared dead waits its whole timeout (Serve never fails it), and the shard's writes must not wait too.
            answering = [state.serving and self._answers(state) for state in states]
            with self._locks[shard]:
                source = next((s for s, ok in zip(states, answering) if ok and s.serving), None)
                broken: list[tuple[CopyState, CopyPlace | None]] = []  # a copy to start, and its lost place if moved
                for state, ok in zip(states, answering):
                    if ok and state.serving:
                        continue
                    old = None
                    if state.place.node not in nodes:
                        if source is None:
                            continue
                        others = [s.place.node for s in states if s is not state]
                        placed = [s.place.node for shard_states in self.copies for s in shard_states]
                        node = least_loaded(nodes, placed, others)
                        if node is None:
                            continue
                        old = state.place
                        state.place = CopyPlace(
                            node,
                            copy_folder(self.manifest.local_root, node, self.manifest.name, self.manifest.build, shard),
                        )
                        state.handle = None
                    state.serving = False  # until it answers and holds the shard's newest write
                    broken.append((state, old))
            for state, old in broken:  # started without the shard's lock: its writes go on meanwhile (seconds)
                if not self._answers(state):
                    try:
                        state.handle = self.starter(state.place, shard, self.manifest.local_root)
                    except Exception as error:  # noqa: BLE001 (said; started again at the next heal)
                        done.append(self._not_started(state, old, shard, error))
                        continue
                if old is not None:
                    replaced.append((old, shard))
                    done.append(f"shard {shard}: copy on lost node {old.node} rebuilt on {state.place.node}")
            with self._locks[shard]:
                source = self._live_source(states)
                # one whose node went while it started (its handle may name the lost replica) waits for the next turn
                started = [state for state, _ in broken if self._answers(state)]
                if source is None:
                    source = self._newest(started, shard)
                for state in started:
                    if state is source:
                        continue
                    state.sequence = self._caught_up(state, source, shard, done)
                    state.serving = state.sequence >= self.sequences[shard] or source is None
        self._save_served_places()
        self._stop_replaced(replaced)
        return done

    def _not_started(self, state: CopyState, old: CopyPlace | None, shard: int, error: Exception) -> str:
        """What heal says of `state`'s copy, whose start failed with `error`. A copy being rebuilt elsewhere (`old`:
        its lost place) goes back to `old`, the place the manifest names, for the next heal to rebuild it afresh;
        what its start may have left running at the new place (a Serve application deployed before the start failed)
        is stopped with the replaced copies."""
        why = f"{type(error).__name__}: {error}".splitlines()[0]
        if old is None:
            return f"shard {shard}: copy on {state.place.node} did not start ({why}); started again at the next heal"
        tried, state.place, state.handle = state.place, old, None
        if self.stopper is not None:
            self._replaced.append((tried, shard))
        return (
            f"shard {shard}: copy on lost node {old.node} not rebuilt on {tried.node}: its start failed ({why}); "
            "rebuilt at the next heal"
        )

    def _save_served_places(self) -> None:
        """Rewrite the manifest where a serving copy sits elsewhere than the manifest names: a copy heal rebuilt
        on another node is named there once it serves (holds its shard's newest write), at the heal that got it
        there, so the manifest never names an empty folder in place of the lost copy's. Before, heal wrote the
        manifest only in the turn that moved a copy, and raised at a failed start before it did: a copy started at
        the next turn served where no manifest named it."""
        placement = tuple(
            tuple(state.place if state.serving else named for state, named in zip(states, places))
            for states, places in zip(self.copies, self.manifest.placement)
        )
        if placement != self.manifest.placement:
            self._save_placement(placement)

    def rebalance(self) -> list[str]:
        """Move copies from the nodes that hold most to those that hold fewest (a node just added), until no node
        holds two more than another, never a second copy of a shard onto one node. Each move starts the copy on
        its new node, installs a live copy's committed files there (sent through Ray) under the shard's write lock,
        rewrites the manifest, and only then removes the old copy (its folder, then, with `stopper`, what still
        runs of it). Returns the moves, one line each."""
        done: list[str] = []
        nodes = set(live_nodes())
        while True:
            load = Counter({node: 0 for node in nodes})
            load.update(state.place.node for states in self.copies for state in states if state.place.node in nodes)
            busiest = max(sorted(load), key=lambda node: load[node])
            idlest = min(sorted(load), key=lambda node: load[node])
            if load[busiest] - load[idlest] <= 1:
                return done
            moving = next(
                (
                    state
                    for states in self.copies
                    for state in states
                    if state.place.node == busiest and state.serving and idlest not in {s.place.node for s in states}
                ),
                None,
            )
            if moving is None:
                return done
            self._move(moving, idlest)
            done.append(f"shard {moving.shard}: copy moved from {busiest} to {idlest}")

    def _move(self, state: CopyState, node: str) -> None:
        """Put `state`'s copy on `node`: started there, filled from the copy's committed files, then swapped in."""
        shard = state.shard
        with self._locks[shard]:
            manifest = self.manifest
            place = CopyPlace(node, copy_folder(manifest.local_root, node, manifest.name, manifest.build, shard))
            handle = self.starter(place, shard, manifest.local_root)
            files = self.calls.start(state.handle, "committed_files")
            sequence = self.calls.finish(self.calls.start(handle, "install_files", files))
            old, old_place = state.handle, state.place
            state.place, state.handle, state.sequence = place, handle, sequence
            state.serving = sequence == self.sequences[shard]
            self._save_placement()
        with contextlib.suppress(Exception):  # the old copy's folder goes; a failure leaves only an unnamed folder
            self.calls.finish(self.calls.start(old, "remove"))
        self._stop_replaced([(old_place, shard)])

    def _stop_replaced(self, replaced: list[tuple[CopyPlace, int]]) -> None:
        """Stop, through `stopper`, the copies (place, shard) replaced elsewhere: those just `replaced`, and those
        left from before (a stop that failed, a copy whose replacement did not serve yet, what a failed start left
        running): each once the committed manifest no longer names it and no copy of this index sits there, and
        asked again at each heal or move until its stop succeeds."""
        if self.stopper is None:
            return
        named = {(place, shard) for shard, places in enumerate(self.manifest.placement) for place in places}
        named |= {(state.place, shard) for shard, states in enumerate(self.copies) for state in states}
        pending, self._replaced = list(dict.fromkeys([*self._replaced, *replaced])), []
        for place, shard in pending:
            if (place, shard) in named:
                self._replaced.append((place, shard))  # its replacement serves not yet: stopped once it does
                continue
            try:
                self.stopper(place, shard)
            except Exception as error:  # noqa: BLE001 (asked again at the next heal; searches and writes go on)
                log.warning(
                    "the replaced copy of shard %d on node %s did not stop (asked again at the next heal): %s",
                    shard, place.node, f"{type(error).__name__}: {error}".splitlines()[0],
                )  # fmt: skip
                self._replaced.append((place, shard))

    def _newest(self, started: list[CopyState], shard: int) -> CopyState | None:
        """Where no copy of `shard` served: of the copies just `started`, the one that holds the most writes, made
        the shard's newest and serving, for the others to catch up from (`_caught_up`); None where none holds an
        index. Every acknowledged write reached every live copy, so that copy holds them all; it may hold one more,
        committed just before every copy failed and never acknowledged (a call runs if it reaches a copy before the
        copy's end). Serving each copy as it held, as heal did, left two serving copies holding different writes,
        and the one behind refused the shard's next write."""
        held = []
        for state in started:
            try:
                held.append((self.calls.finish(self.calls.start(state.handle, "sequence")), state))
            except ClusterError:
                continue  # started, but holds no index yet: it catches up from the newest
        if not held:
            return None
        sequence, newest = max(held, key=lambda pair: pair[0])
        newest.sequence, newest.serving = sequence, True
        self.sequences[shard] = max(self.sequences[shard], sequence)
        return newest

    def _live_source(self, states: list[CopyState]) -> CopyState | None:
        """A serving copy that answers (the one others catch up from), or None."""
        return next((state for state in states if state.serving and self._answers(state)), None)

    def _answers(self, state: CopyState) -> bool:
        if state.handle is None or state.place.node not in live_nodes():
            return False
        try:
            state.sequence = self.calls.finish(self.calls.start(state.handle, "sequence"), timeout=10.0)
            return True
        except ClusterError:  # started, but holds no index yet
            return True
        except Exception:  # noqa: BLE001 (a copy that does not answer is one to restart)
            return False

    def _caught_up(self, state: CopyState, source: CopyState | None, shard: int, done: list[str]) -> int:
        """`state`'s sequence number after it installed `source`'s committed files, where it holds other writes than
        the shard's: it lacked some, or it holds one that no copy acknowledged (committed just before that write
        failed on every other copy), numbered after the shard's last or, where the shard took another write under
        that number meanwhile (the copy started too late for a heal), under the same number: the copies' last write
        ids (ShardCopy.last_write) tell those apart. Served as it held, such a copy answered the shard's next write,
        which takes the same number, as one it held already; or it held another write than its shard's."""
        try:
            held, write = self.calls.finish(self.calls.start(state.handle, "last_write"))
        except ClusterError:
            held, write = -1, None  # a new copy: no index yet
        if source is None:
            return max(held, 0)
        if held == self.sequences[shard]:
            _, shard_write = self.calls.finish(self.calls.start(source.handle, "last_write"))
            if write == shard_write:
                return held
        files = self.calls.start(source.handle, "committed_files")
        installed = self.calls.finish(self.calls.start(state.handle, "install_files", files))
        node, origin = state.place.node, source.place.node
        if held == self.sequences[shard]:
            done.append(
                f"shard {shard}: copy on {node} held another write {held} than the shard's, which no copy "
                f"acknowledged; set back to write {installed} from {origin}"
            )
        elif held > self.sequences[shard]:
            done.append(
                f"shard {shard}: copy on {node} held write {held}, which no copy acknowledged; set back to write "
                f"{installed} from {origin}"
            )
        else:
            done.append(f"shard {shard}: copy on {node} caught up to write {installed} from {origin}")
        return installed

    def _save_placement(self, placement: tuple[tuple[CopyPlace, ...], ...] | None = None) -> None:
        """Write the manifest with `placement` (by default, every copy where it is now), one version later."""
        if placement is None:
            placement = tuple(tuple(state.place for state in states) for states in self.copies)
        self.manifest = self.manifest.with_placement(placement)
        write_manifest(self.path, self.manifest)
