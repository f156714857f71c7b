"""Merging segments: which to merge (a log-tiered policy, as Lucene's LogMergePolicy), and the merge itself,
which never blocks searches and holds the writer lock only for its commit.

Policy. A segment's level is log10 of its live vectors over FLOOR (so up to 99 live vectors is level 0, up to
999 level 1, ...). Whenever MERGE_FACTOR neighbouring segments share a level, the oldest MERGE_FACTOR of
them merge into one of the next level; so an index of n vectors keeps at most about MERGE_FACTOR segments per
level, O(MERGE_FACTOR x log10(n / FLOOR)) in all. Only neighbours merge: ids grow with time, so each segment
keeps an id range of its own. A segment whose vectors are more than half deleted is rewritten without them.
A build that leaves several large segments side by side (Ray workers' parts, `--shards`) records the smallest as
the index's merge limit (MERGE_LIMIT): segments built with at least that many vectors take part in no merge the
policy plans, as Lucene's maxMergeDocs, so a later small write never rebuilds, ten at a time, graphs the build's
workers made; `compact` still merges everything.

The merge. It reads a committed state (the segments and tombstones of one snapshot), copies the live vectors
into a new segment of the type its size calls for (indexer/vectors/segments.segment_factory), writes and fsyncs it, all
without the lock; then, under the lock, it names the new segment in place of the old ones in one transaction,
with the tombstones of the vectors it dropped. Deletes committed meanwhile stay as tombstones (their ids are in
the new segment). If another merge replaced any of its segments meanwhile, it gives up and removes its file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from searchengine.indexer.commit.crash_points import crash_point
from searchengine.indexer.commit.durable_files import ClaimedFile
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.manifest import Manifest
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.vectors.index_choice import MEMORY_BUDGET, type_for_growth
from searchengine.indexer.vectors.originals import ORIGINAL_TYPES, ORIGINALS_SETTING, keeps_originals, originals_name
from searchengine.indexer.vectors.segments import (
    SMALL_SEGMENT_LIMIT,
    SegmentRecord,
    SegmentSet,
    load_segment_set,
    new_segment_name,
    segment_factory,
    write_segment,
)
from searchengine.indexer.vectors.vector_index import VectorIndex

MERGE_FACTOR = 10
FLOOR = 10
"""Live vectors below which every segment counts as the smallest level. Low because every commit is a segment
(Lucene's floor of about 1,000 vectors' bytes suits segments flushed from a buffer of many documents): at 1,000, a
run of one-document adds merged the same few thousand vectors again at every tenth write (59,052 vectors copied
for 1,000 adds; 7,050 at 10; docs/benchmarks.md, One-document adds and the merge policy's floor)."""
DELETED_SHARE = 0.5
"""A segment with more than this share of its vectors deleted is rewritten without them."""
TRAINING_SAMPLE = 100_000
COPY_CHUNK = 65_536
LOCK_WAIT = 60.0
"""Seconds a merge waits for another writer's commit before it gives up (its file is then removed)."""


@dataclass(frozen=True)
class MergeResult:
    """One merge: the segments it replaced, the new one, and how many deleted vectors it dropped."""

    merged: list[str]
    segment: SegmentRecord | None
    dropped: int


MERGE_LIMIT = "merge_limit"
"""The store setting (indexer/tables/settings_table.py) holding the index's merge limit, where a build set one."""


def level(live: int) -> int:
    return max(0, math.floor(math.log10(max(live, FLOOR) / FLOOR)))


def build_merge_limit(records: list[SegmentRecord]) -> int | None:
    """The merge limit a build leaving `records` sets: the smallest of its segments of more than
    SMALL_SEGMENT_LIMIT vectors where there are two or more (a graph or IVF segment each, built side by side on
    purpose); None otherwise (one large segment, or small ones that merge in milliseconds)."""
    large = [r.vectors for r in records if r.vectors > SMALL_SEGMENT_LIMIT]
    return min(large) if len(large) >= 2 else None


def plan_merge(records: list[SegmentRecord], tombstones: np.ndarray, limit: int | None = None) -> list[str] | None:
    """The names of the next segments to merge, oldest first, or None when the index is within the policy.
    `limit`: the index's merge limit, if any (segments built with at least that many vectors are left as they are,
    however many of them were deleted since, unless more than half: deletes never make a build's parts merge)."""
    dead = deleted_counts(records, tombstones)
    for record, deleted in zip(records, dead):
        if deleted and deleted > DELETED_SHARE * record.vectors:
            return [record.name]
    lives = [r.vectors - d for r, d in zip(records, dead)]
    levels = [None if limit is not None and r.vectors >= limit else level(live) for r, live in zip(records, lives)]
    start = 0
    for position in range(1, len(records) + 1):
        if position == len(records) or levels[position] != levels[start]:
            if position - start >= MERGE_FACTOR and levels[start] is not None:
                return [r.name for r in records[start : start + MERGE_FACTOR]]
            start = position
    return None


def deleted_counts(records: list[SegmentRecord], tombstones: np.ndarray) -> list[float]:
    """How many of each segment's vectors are tombstoned, as their id ranges tell: each tombstone counts once,
    shared equally by the segments whose ranges hold it. Exact where ranges do not overlap (ids grow with time);
    a `--shards` build's segments interleave ids (document d in shard d % n), and there the share is what each
    holds on average, where counting every tombstone in every range holding it made each shard look as deleted
    as the whole index."""
    tombstones = np.sort(np.asarray(tombstones, dtype=np.int64))
    firsts = np.sort([r.first_id for r in records if r.last_id >= r.first_id]).astype(np.int64)
    lasts = np.sort([r.last_id for r in records if r.last_id >= r.first_id]).astype(np.int64)
    holders = np.searchsorted(firsts, tombstones, "right") - np.searchsorted(lasts, tombstones, "left")
    shares = np.concatenate([[0.0], np.cumsum(np.where(holders > 0, 1.0 / np.maximum(holders, 1), 0.0))])
    return [
        float(
            shares[np.searchsorted(tombstones, r.last_id, "right")]
            - shares[np.searchsorted(tombstones, r.first_id, "left")]
        )
        if r.last_id >= r.first_id
        else 0.0
        for r in records
    ]


def merge_limit(setting: object) -> int | None:
    """The merge limit a store's setting holds: None unless it is a whole number larger than SMALL_SEGMENT_LIMIT,
    as a build records it, so a setting changed by hand neither breaks a write nor stops every merge."""
    if isinstance(setting, int) and not isinstance(setting, bool) and setting > SMALL_SEGMENT_LIMIT:
        return setting
    return None


def merge(directory: IndexDirectory, names: list[str] | None = None) -> MergeResult | None:
    """Merge the segments `names` (None: every segment, as `compact` does) of the committed state into one, and
    commit it. None when there was nothing to merge (one segment without tombstones, or none at all)."""
    manifest = directory.read_settings()
    store = DocumentStore(directory.path / manifest.files["documents"].name)
    try:
        store.read_snapshot()
        records = store.segments.records()
        tombstones = store.tombstones.ids()
        budget = store.settings.get(MEMORY_BUDGET)
        originals = store.settings.get(ORIGINALS_SETTING)
        originals = originals if originals in ORIGINAL_TYPES else None  # a setting changed by hand: the default
    finally:
        store.close()
    grown = sum(r.vectors for r in records) - len(tombstones)
    index_type = type_for_growth(manifest.index.type, grown, manifest.index.dimension, budget)
    chosen = [r for r in records if names is None or r.name in names]
    if not chosen or (len(chosen) == 1 and names is None and not len(tombstones)):
        return None
    try:
        segments = load_segment_set(directory.path, chosen, manifest.index.type, manifest.index.dimension)
    except IndexerError:
        if _still_live(directory, manifest, chosen):
            raise  # damage, not a race
        return None  # another merge replaced them meanwhile
    held = segments.ids()
    dropped = np.intersect1d(held, tombstones)
    live = np.setdiff1d(held, dropped)
    factory = segment_factory(index_type, len(live))
    claim = ClaimedFile(directory.path / new_segment_name()) if len(live) else None
    claims = [claim] if claim is not None else []
    if claim is not None and keeps_originals(factory):  # its originals file is made beside it, claimed the same way
        claims.append(ClaimedFile(directory.path / originals_name(claim.path.name)))
    try:
        return _merge_into(directory, manifest, factory, segments, chosen, live, dropped, claims, originals)
    finally:
        for made in claims:
            made.release()


def _still_live(directory: IndexDirectory, manifest: Manifest, chosen: list[SegmentRecord]) -> bool:
    """Whether the latest commit still names every segment of `chosen`."""
    store = DocumentStore(directory.path / manifest.files["documents"].name)
    try:
        store.read_snapshot()
        return {r.name for r in chosen} <= {r.name for r in store.segments.records()}
    finally:
        store.close()


def _merge_into(
    directory: IndexDirectory,
    manifest: Manifest,
    factory: str,
    segments: SegmentSet,
    chosen: list[SegmentRecord],
    live: np.ndarray,
    dropped: np.ndarray,
    claims: list[ClaimedFile],
    originals: str | None,
) -> MergeResult | None:
    """Copy the `live` vectors of `segments` into the claimed file, as a segment of type `factory` (and its
    originals, kept as `originals`, into the one claimed beside it), then commit it in place of `chosen`. The
    vectors copied are the originals where a segment keeps them: a merge never compresses codes twice."""
    segment = None
    claim = claims[0] if claims else None
    if claim is not None:
        index = VectorIndex.create(factory, manifest.index.dimension, originals)
        if index.needs_training:
            sample = np.sort(np.random.default_rng(0).permutation(live)[:TRAINING_SAMPLE])
            index.train(segments.reconstruct(sample))
        for start in range(0, len(live), COPY_CHUNK):
            part = live[start : start + COPY_CHUNK]
            index.add(segments.reconstruct(part), part)
        store_path = directory.path / manifest.files["documents"].name
        segment = write_segment(directory.path, index, claim.path.name, mode_of=store_path)
        crash_point("merge-written")
    replaced = [r.name for r in chosen]
    with directory.locked(wait=LOCK_WAIT):
        writer = DocumentStore(directory.path / manifest.files["documents"].name, writable=True)
        try:
            writer.begin()
            current = {r.name for r in writer.segments.records()}
            if not set(replaced) <= current or not all(made.still_here() for made in claims):
                writer.rollback()  # another merge replaced them, or the file is not ours any more: no harm done
                return None
            if segment is None:
                writer.segments.remove(replaced)
            else:
                writer.segments.replace(replaced, segment)
            writer.tombstones.clear(dropped.tolist())
            writer.segments.stamp(None, writer.next_id())
            crash_point("merge-before-commit")
            writer.commit()
            crash_point("merge-after-commit")
        except BaseException:
            writer.rollback()
            raise
        finally:
            writer.close()
            if segment is not None:
                for name, _, _ in segment.files:
                    directory.remove_if_uncommitted(name)
        directory.remove_unreferenced()
    return MergeResult(replaced, segment, len(dropped))


def merge_as_needed(directory: IndexDirectory, limit: int = 100) -> list[MergeResult]:
    """Run the merges the policy asks for, one after another, until the index is within it."""
    results = []
    for _ in range(limit):
        manifest = directory.read_settings()
        store = DocumentStore(directory.path / manifest.files["documents"].name)
        try:
            store.read_snapshot()
            largest = merge_limit(store.settings.get(MERGE_LIMIT))
            plan = plan_merge(store.segments.records(), store.tombstones.ids(), largest)
        finally:
            store.close()
        if plan is None:
            break
        result = merge(directory, plan)
        if result is None:
            break
        results.append(result)
        if len(result.merged) == 1 and not result.dropped:  # the plan misjudged its deletes: the next would too
            break
    return results
