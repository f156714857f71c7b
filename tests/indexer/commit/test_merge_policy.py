"""The merge policy (which segments merge) and merges themselves: tombstones dropped, deletes made during a merge
kept, and a merge's file never removed by another writer's clean-up while it is being made."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest
from searchengine.indexer.commit import merge_policy
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.commit.merge_policy import MERGE_FACTOR, build_merge_limit, merge, merge_as_needed, plan_merge
from searchengine.indexer.tables.store import Document
from searchengine.indexer.vectors.segments import SegmentRecord

from tests.indexer.small_index import build_small_index, unit_vectors


def _record(number: int, vectors: int, first_id: int) -> SegmentRecord:
    return SegmentRecord(
        f"segment.{number}.faiss", "Flat", vectors, 1, "sha256:" + "0" * 64, first_id, first_id + vectors - 1
    )


def _add(directory: IndexDirectory, texts: list[str], seed: int) -> list[int]:
    with writing_in_place(directory) as write:
        change = write.store.add([Document(text) for text in texts])
        write.vectors.add(unit_vectors(len(texts), seed), np.asarray(change.ids))
    return change.ids


def _delete(directory: IndexDirectory, ids: list[int]) -> None:
    with writing_in_place(directory) as write:
        write.store.tombstones.add(write.store.delete(ids))


def _segments(directory: IndexDirectory) -> list[str]:
    return [stored.name for role, stored in directory.read_manifest().files.items() if role.startswith("segment")]


def test_ten_neighbours_of_one_level_merge_and_fewer_do_not() -> None:
    small = [_record(n, 10, 1000 + 10 * n) for n in range(MERGE_FACTOR)]
    assert plan_merge([_record(99, 50_000, 0), *small[:-1]], np.zeros(0)) is None
    assert plan_merge([_record(99, 50_000, 0), *small], np.zeros(0)) == [r.name for r in small]


def test_one_document_writes_copy_each_vector_a_few_times() -> None:
    """1,000 one-vector segments, merged as the policy plans: each vector is copied 7 times on average (it was 56
    times when every segment under 10,000 vectors was one level, and the same vectors merged at every tenth write)."""
    records: list[SegmentRecord] = []
    copied = 0
    for number in range(1000):
        records.append(_record(number, 1, number))
        while (plan := plan_merge(records, np.zeros(0))) is not None:
            merged = [r for r in records if r.name in plan]
            start = records.index(merged[0])
            vectors = sum(r.vectors for r in merged)
            copied += vectors
            records[start : start + len(merged)] = [_record(10_000 + number, vectors, merged[0].first_id)]
    assert sum(r.vectors for r in records) == 1000 and len(records) < 2 * MERGE_FACTOR
    assert copied <= 10 * 1000


def test_segments_at_the_merge_limit_take_part_in_no_planned_merge() -> None:
    """Ten segments a build's workers wrote (at the limit) stay; ten small ones written after them still merge."""
    built = [_record(n, 60_000, 60_000 * n) for n in range(MERGE_FACTOR)]
    written = [_record(100 + n, 10, 600_000 + 10 * n) for n in range(MERGE_FACTOR)]
    assert plan_merge(built, np.zeros(0)) == [r.name for r in built]  # without a limit they would merge
    assert plan_merge(built, np.zeros(0), limit=60_000) is None
    assert plan_merge([*built, *written], np.zeros(0), limit=60_000) == [r.name for r in written]
    half_deleted = np.arange(0, 30_001)  # a segment at the limit more than half deleted is still rewritten alone
    assert plan_merge(built, half_deleted, limit=60_000) == [built[0].name]


def test_a_build_sets_a_merge_limit_only_for_several_large_segments() -> None:
    assert build_merge_limit([_record(1, 60_000, 0), _record(2, 50_176, 60_000), _record(3, 8, 110_176)]) == 50_176
    assert build_merge_limit([_record(1, 60_000, 0), _record(2, 8, 60_000)]) is None  # one large: nothing to keep
    assert build_merge_limit([_record(n, 50_000, 50_000 * n) for n in range(12)]) is None  # exact ones merge fast


def test_a_small_write_after_a_sharded_build_leaves_its_shards_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build with ten shards larger than the small-segment limit (lowered here to 5 vectors): the next write's
    merges used to join all ten into one; now they are the build's layout and stay."""
    monkeypatch.setattr(merge_policy, "SMALL_SEGMENT_LIMIT", 5)
    directory = build_small_index(tmp_path / "index", 120, shards=MERGE_FACTOR)
    assert len(_segments(directory)) == MERGE_FACTOR
    _add(directory, ["one more"], seed=7)
    assert merge_as_needed(directory) == []
    assert len(_segments(directory)) == MERGE_FACTOR + 1


def test_a_segment_more_than_half_deleted_is_rewritten_alone() -> None:
    records = [_record(1, 100, 0), _record(2, 10, 100)]
    assert plan_merge(records, np.arange(100, 105)) is None  # half, not more
    assert plan_merge(records, np.arange(100, 106)) == ["segment.2.faiss"]


def test_deleted_counts_without_tombstones_are_zero_as_with_them_none_in_range() -> None:
    """No tombstones (every write of new documents) counts nothing deleted, as a tombstone in no segment's range
    does; an empty segment counts none either way."""
    records = [_record(0, 10, 0), _record(1, 5, 10), SegmentRecord("segment.2.faiss", "Flat", 0, 1, None, 0, -1)]
    assert merge_policy.deleted_counts(records, np.zeros(0, dtype=np.int64)) == [0.0, 0.0, 0.0]
    assert merge_policy.deleted_counts(records, np.array([100])) == [0.0, 0.0, 0.0]
    assert merge_policy.deleted_counts(records, np.array([3, 12])) == [1.0, 1.0, 0.0]


def test_segments_stay_logarithmic_under_many_small_writes(tmp_path: Path) -> None:
    directory = build_small_index(tmp_path / "index", 5)
    for write in range(40):
        _add(directory, [f"text {write} {i}" for i in range(3)], seed=write + 1)
        merge_as_needed(directory)
    names = _segments(directory)
    assert len(names) < MERGE_FACTOR  # 41 segments of 3-5 vectors are all level 0: they merged as they grew
    manifest = directory.read_manifest()
    assert manifest.count.documents == 125 and all(check.problem is None for check in directory.verify())


def test_a_merge_drops_tombstones_and_keeps_deletes_made_while_it_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = build_small_index(tmp_path / "index", 30)
    _add(directory, ["one", "two"], seed=1)
    _delete(directory, [0, 1])
    real = merge_policy.write_segment

    def delete_meanwhile(*args: object, **kwargs: object) -> SegmentRecord:
        record = real(*args, **kwargs)
        _delete(directory, [5])  # another writer commits while the merge has written its file
        return record

    monkeypatch.setattr(merge_policy, "write_segment", delete_meanwhile)
    result = merge(directory)
    assert result is not None and result.dropped == 2 and len(_segments(directory)) == 1
    manifest = directory.read_manifest()
    assert (manifest.count.documents, manifest.count.tombstones) == (29, 1)  # id 5: in the new segment, tombstoned
    assert all(check.problem is None for check in directory.verify())


def test_another_writers_clean_up_leaves_a_merge_in_progress_alone(tmp_path: Path) -> None:
    """The hostile test's data loss: a merge wrote its file without the lock, another writer's commit removed it
    as an orphan, and the merge then named a missing file."""
    directory = build_small_index(tmp_path / "index", 30)
    _add(directory, ["one", "two"], seed=1)
    _delete(directory, [0])
    written, resume = threading.Event(), threading.Event()
    real = merge_policy.write_segment

    def pause(*args: object, **kwargs: object) -> SegmentRecord:
        record = real(*args, **kwargs)
        written.set()
        resume.wait(30)
        return record

    merge_policy.write_segment = pause  # the merge runs in a thread of this process; restored below
    try:
        results: list[object] = []
        merging = threading.Thread(target=lambda: results.append(merge(directory)))
        merging.start()
        assert written.wait(30)
        _add(directory, ["three"], seed=2)  # commits and cleans up while the merge's file waits to be named
        resume.set()
        merging.join(30)
    finally:
        merge_policy.write_segment = real
    assert results and results[0] is not None
    assert all(check.problem is None for check in directory.verify())
    assert directory.read_manifest().count.documents == 32


def test_deletes_leave_segments_at_the_merge_limit_out_of_merges() -> None:
    """The limit holds a segment by the vectors it was built with: a few deletes in segments a build made all the
    same size (as Ray parts and shards are) used to take each below the limit, and so all of them into one merge."""
    built = [_record(n, 60_000, 60_000 * n) for n in range(MERGE_FACTOR)]
    one_delete_each = np.arange(0, 600_000, 60_000)
    assert plan_merge(built, one_delete_each, limit=60_000) is None


def test_a_delete_from_a_sharded_build_neither_merges_its_shards_nor_rewrites_one_again_and_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shards interleave ids (document d in shard d % 10), so every shard's id range holds every tombstone: one
    delete merged all ten shards into one, and seven (of 120 documents) had the policy rewrite one shard 100 times
    over, each time finding it more than half deleted. A tombstone now counts once, shared by the ranges holding it."""
    monkeypatch.setattr(merge_policy, "SMALL_SEGMENT_LIMIT", 5)
    directory = build_small_index(tmp_path / "index", 120, shards=MERGE_FACTOR)
    _delete(directory, [50])
    assert merge_as_needed(directory) == []
    _delete(directory, list(range(51, 57)))
    assert merge_as_needed(directory) == []
    assert len(_segments(directory)) == MERGE_FACTOR
    assert all(check.problem is None for check in directory.verify())


@pytest.mark.parametrize("stored", ['"abc"', "[1, 2]", "-5", "0", "true", "12.5"])
def test_a_merge_limit_changed_by_hand_neither_breaks_writes_nor_stops_merges(tmp_path: Path, stored: str) -> None:
    """A store's merge limit that no build writes (not a whole number larger than the small-segment limit) is
    ignored: a text or a list made every later write end in a TypeError, and 0 or below stopped every merge."""
    directory = build_small_index(tmp_path / "index", 30)
    store = directory.path / directory.read_manifest().files["documents"].name
    with sqlite3.connect(store) as connection:
        connection.execute("UPDATE build_settings SET value = ? WHERE key = 'merge_limit'", [stored])
    connection.close()
    for write in range(MERGE_FACTOR):
        _add(directory, [f"text {write}"], seed=write + 1)
    assert merge_as_needed(directory) and len(_segments(directory)) < MERGE_FACTOR


def test_merges_stop_when_rewriting_a_segment_alone_drops_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the policy's estimate of a segment's deletes is wrong (ranges that overlap), rewriting it alone drops
    nothing and changes nothing the next plan sees: the run stops instead of rewriting it up to 100 times."""
    directory = build_small_index(tmp_path / "index", 30)
    monkeypatch.setattr(merge_policy, "plan_merge", lambda records, tombstones, limit=None: [records[0].name])
    assert len(merge_as_needed(directory)) == 1
