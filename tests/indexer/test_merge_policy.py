"""The merge policy (which segments merge) and merges themselves: tombstones dropped, deletes made during a merge
kept, and a merge's file never removed by another writer's clean-up while it is being made."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from searchengine.indexer import merge_policy
from searchengine.indexer.index_directory import IndexDirectory
from searchengine.indexer.live_write import writing_in_place
from searchengine.indexer.merge_policy import MERGE_FACTOR, build_merge_limit, merge, merge_as_needed, plan_merge
from searchengine.indexer.segments import SegmentRecord
from searchengine.indexer.store import Document

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
