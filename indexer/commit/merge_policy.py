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
into a new segment, writes and fsyncs it, all without the lock. In an index with a trained template
(indexer/vectors/template.py) the new segment is a copy of the template with the live vectors (from their
originals) added: a merge never trains. Without one (an exact or graph type, or an index built before templates)
it takes the type its size calls for (indexer/vectors/segments.segment_factory), trained on its own vectors where
that type needs it, and that training becomes the index's template. `compact --retrain` trains a new template on
every live vector and re-encodes them all with it. Then, under the lock, it names the new segment (and a new
template) in place of the old ones in one transaction, with the tombstones of the vectors it dropped. Deletes
committed meanwhile stay as tombstones (their ids are in the new segment). If another merge replaced any of its
segments or the template meanwhile, it gives up and removes its files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from searchengine.indexer.commit.crash_points import crash_point
from searchengine.indexer.commit.durable_files import ClaimedFile
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.manifest import Manifest
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.vectors.index_choice import MEMORY_BUDGET, training_sample_size, type_for_growth
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
from searchengine.indexer.vectors.template import (
    TemplateRecord,
    TrainedTemplate,
    encoder_of,
    encodes,
    load_template,
    template_name,
    train_template,
    write_template,
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
    if not len(tombstones):  # no deletes (what every write of new documents asks after it): none to share out
        return [0.0] * len(records)
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


def merge(directory: IndexDirectory, names: list[str] | None = None, retrain: bool = False) -> MergeResult | None:
    """Merge the segments `names` (None: every segment, as `compact` does) of the committed state into one, and
    commit it. None when there was nothing to merge (one segment without tombstones, or none at all).

    In an index with a trained template the merged segment is encoded with it (indexer/vectors/template.py): no
    training. `retrain` (`compact --retrain`: every segment) trains a new template on the live vectors' originals
    first, for the type the index's size (and memory budget) calls for, and commits it with the segment."""
    manifest = directory.read_settings()
    store = DocumentStore(directory.path / manifest.files["documents"].name)
    try:
        store.read_snapshot()
        records = store.segments.records()
        tombstones = store.tombstones.ids()
        budget = store.settings.get(MEMORY_BUDGET)
        originals = store.settings.get(ORIGINALS_SETTING)
        originals = originals if originals in ORIGINAL_TYPES else None  # a setting changed by hand: the default
        template = store.segments.template()
        next_id = store.next_id()
    finally:
        store.close()
    grown = sum(r.vectors for r in records) - len(tombstones)
    index_type = type_for_growth(manifest.index.type, grown, manifest.index.dimension, budget)
    chosen = [r for r in records if names is None or r.name in names]
    if retrain and names is not None:
        raise IndexerError("a retrain re-encodes every segment: merge them all (names=None)")
    if retrain and not VectorIndex.create(index_type, manifest.index.dimension).needs_training:
        raise IndexerError(
            f"index type {index_type} has nothing to train (it keeps no quantizer): run `searchengine compact` "
            "without --retrain"
        )
    if not chosen or (len(chosen) == 1 and names is None and not len(tombstones) and not retrain):
        return None
    try:
        segments = load_segment_set(directory.path, chosen, manifest.index.type, manifest.index.dimension)
        loaded = None if template is None or retrain else load_template(directory.path, template, segments.dimension)
    except IndexerError:
        if _still_live(directory, manifest, chosen, template):
            raise  # damage, not a race
        return None  # another merge replaced them meanwhile
    held = segments.ids()
    dropped = np.intersect1d(held, tombstones)
    live = np.setdiff1d(held, dropped)
    if loaded is not None:
        factory = loaded.factory if encodes(loaded, len(live)) else "Flat"
    else:
        factory = index_type if retrain else segment_factory(index_type, len(live))
    name = new_segment_name()
    claim = ClaimedFile(directory.path / name) if len(live) else None
    claims = [claim] if claim is not None else []
    if claim is not None and keeps_originals(factory):  # its originals file is made beside it, claimed the same way
        claims.append(ClaimedFile(directory.path / originals_name(name)))
    trains = claim is not None and loaded is None and VectorIndex.create(factory, segments.dimension).needs_training
    if trains:  # a new template (the first, or a retrain), claimed beside the segment
        claims.append(ClaimedFile(directory.path / template_name(int(name.split(".")[1]))))
    plan = MergePlan(factory, live, dropped, originals, loaded, template, next_id if trains else None)
    try:
        return _merge_into(directory, manifest, segments, chosen, plan, claims)
    finally:
        for made in claims:
            made.release()


@dataclass(frozen=True)
class MergePlan:
    """What one merge writes: `live` vectors as a segment of type `factory` (their originals kept as `originals`),
    `dropped` ones left out; encoded with the `template` loaded (`current`, its record) or, where `next_id` is set,
    with a new template trained on them (the first ids after it: `next_id`)."""

    factory: str
    live: np.ndarray
    dropped: np.ndarray
    originals: str | None
    template: VectorIndex | None
    current: TemplateRecord | None
    next_id: int | None


def _still_live(
    directory: IndexDirectory, manifest: Manifest, chosen: list[SegmentRecord], template: TemplateRecord | None
) -> bool:
    """Whether the latest commit still names every segment of `chosen`, and the same template."""
    store = DocumentStore(directory.path / manifest.files["documents"].name)
    try:
        store.read_snapshot()
        return _name(store.segments.template()) == _name(template) and {r.name for r in chosen} <= {r.name for r in store.segments.records()}
    finally:
        store.close()


def _name(template: TemplateRecord | None) -> str | None:
    """Which template a record names (its counts of vectors added change with every write)."""
    return None if template is None else template.name


def _encoded(segments: SegmentSet, dimension: int, plan: MergePlan) -> tuple[VectorIndex, TrainedTemplate | None]:
    """An index of the plan's type holding its live vectors (read from the originals where a segment keeps them,
    so codes are never compressed twice), and the template trained for it where the plan trains one."""
    trained = None
    if plan.template is not None and plan.factory != "Flat":
        index = encoder_of(plan.template, plan.originals)
    else:
        index = VectorIndex.create(plan.factory, dimension, plan.originals)
        if index.needs_training:
            sample = np.sort(np.random.default_rng(0).permutation(plan.live)[: training_sample_size(plan.factory)])
            trained = train_template(plan.factory, dimension, segments.reconstruct(sample))
            index = encoder_of(trained.index, plan.originals)
    for start in range(0, len(plan.live), COPY_CHUNK):
        part = plan.live[start : start + COPY_CHUNK]
        index.add(segments.reconstruct(part), part)
    return index, trained


def _merge_into(
    directory: IndexDirectory,
    manifest: Manifest,
    segments: SegmentSet,
    chosen: list[SegmentRecord],
    plan: MergePlan,
    claims: list[ClaimedFile],
) -> MergeResult | None:
    """Copy the live vectors of `segments` into the claimed file as a segment of the plan's type (and its originals
    into the one claimed beside it, and a new template into the last claim where the plan trains one), then commit
    it in place of `chosen`."""
    segment = template = None
    claim = claims[0] if claims else None
    store_path = directory.path / manifest.files["documents"].name
    if claim is not None:
        index, trained = _encoded(segments, manifest.index.dimension, plan)
        if trained is not None:
            template = write_template(directory.path, trained, claims[-1].path.name, plan.next_id, store_path)
        segment = write_segment(directory.path, index, claim.path.name, mode_of=store_path)
        crash_point("merge-written")
    replaced = [r.name for r in chosen]
    committed = False
    with directory.locked(wait=LOCK_WAIT):
        writer = DocumentStore(store_path, writable=True)
        try:
            writer.begin()
            current = {r.name for r in writer.segments.records()}
            same_template = _name(writer.segments.template()) == _name(plan.current)  # not retrained meanwhile
            if not set(replaced) <= current or not same_template or not all(made.still_here() for made in claims):
                writer.rollback()  # another merge replaced them, or the file is not ours any more: no harm done
                return None
            if segment is None:
                writer.segments.remove(replaced)
            else:
                writer.segments.replace(replaced, segment)
            if template is not None:
                writer.segments.set_template(template)
            writer.tombstones.clear(plan.dropped.tolist())
            writer.segments.stamp(None, writer.next_id())
            crash_point("merge-before-commit")
            writer.commit()
            committed = True
            crash_point("merge-after-commit")
        except BaseException:
            writer.rollback()
            raise
        finally:
            writer.close()
            made = [name for name, _, _ in segment.files] if segment is not None else []
            for name in [] if committed else made + ([template.name] if template is not None else []):
                directory.remove_if_uncommitted(name)  # committed under this lock: the store names them, none to read
        directory.remove_unreferenced()
    return MergeResult(replaced, segment, len(plan.dropped))


def merge_as_needed(
    directory: IndexDirectory, limit: int = 100, reader: DocumentStore | None = None
) -> list[MergeResult]:
    """Run the merges the policy asks for, one after another, until the index is within it. `reader`: an open
    read-only store of the index holding no read snapshot (a loaded reader's, let go around the write), through
    which the policy reads each committed state instead of opening the store again (each new connection parses
    the schema); left holding no snapshot."""
    results = []
    for _ in range(limit):
        manifest = directory.read_settings()
        path = directory.path / manifest.files["documents"].name
        reused = reader is not None and not reader.closed and not reader.writable and Path(reader.path) == path
        store = reader if reused else DocumentStore(path)
        try:
            store.read_snapshot()
            largest = merge_limit(store.settings.get(MERGE_LIMIT))
            plan = plan_merge(store.segments.records(), store.tombstones.ids(), largest)
        finally:
            if reused:
                store.release_snapshot()
            else:
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
