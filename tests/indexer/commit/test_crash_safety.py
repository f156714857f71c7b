"""Fault injection: a write or a merge ended at each of its steps (os._exit, as kill -9 would) leaves the old or the
new committed state, which `verify` passes, and the next write removes what the dead one left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from searchengine.indexer.commit.crash_points import CRASH_ENV, STEPS
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.tables.store import Document

from tests.indexer.small_index import DIMENSION, build_small_index, unit_vectors

_WRITES = {
    "add": """
        with writing_in_place(directory) as write:
            change = write.store.add([Document("new one"), Document("new two")])
            write.vectors.add(vectors(2, 1), np.asarray(change.ids))
    """,
    "delete": """
        with writing_in_place(directory) as write:
            write.store.tombstones.add(write.store.delete([3, 4]))
    """,
    "merge": """
        for text in ("a", "b"):
            with writing_in_place(directory) as write:
                change = write.store.add([Document(text)])
                write.vectors.add(vectors(1, 2), np.asarray(change.ids))
        with writing_in_place(directory) as write:
            write.store.tombstones.add(write.store.delete([0]))
        os.environ[CRASH_ENV] = STEP
        merge(directory)
    """,
}
_SCRIPT = """
import os, sys
import numpy as np
from searchengine.indexer.commit.crash_points import CRASH_ENV
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.commit.merge_policy import merge
from searchengine.indexer.tables.store import Document

STEP = os.environ.pop(CRASH_ENV) if {merging} else os.environ[CRASH_ENV]
def vectors(count, seed):
    v = np.random.default_rng(seed).normal(size=(count, {dimension})).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)
directory = IndexDirectory(sys.argv[1])
{write}
"""


def _state(directory: IndexDirectory) -> tuple[int, int]:
    """(documents, tombstones) of the committed state, after checking every file of it."""
    problems = [check.problem for check in directory.verify() if check.problem]
    assert problems == []
    manifest = directory.read_manifest()
    return manifest.count.documents, manifest.count.tombstones


def _unnamed_files(directory: IndexDirectory) -> set[str]:
    kept = directory.live_file_names()
    return {
        entry.name
        for entry in directory.path.iterdir()
        if entry.name.split("-")[0] not in kept and entry.name not in ("manifest.json", ".lock")
    }


@pytest.mark.parametrize(
    ("write", "step"),
    [("add", step) for step in STEPS[:4]]
    + [("delete", step) for step in STEPS[2:4]]
    + [("merge", step) for step in STEPS if step.startswith("merge-") or step == "cleanup"],
)
def test_a_write_killed_at_any_step_leaves_the_old_or_the_new_state(tmp_path: Path, write: str, step: str) -> None:
    directory = build_small_index(tmp_path / "index", 20)
    script = _SCRIPT.format(merging=write == "merge", dimension=DIMENSION, write=textwrap.dedent(_WRITES[write]))
    before = _state(directory)
    run = subprocess.run(
        [sys.executable, "-c", script, str(directory.path)],
        env={**os.environ, CRASH_ENV: step},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 75, run.stderr  # it ended at that step, not earlier or later
    after = _state(directory)
    expected = {
        "add": {before, (22, 0)},
        "delete": {before, (18, 2)},
        "merge": {(21, 1), (21, 0)},  # the writes before the merge committed; the merge did or did not
    }[write]
    assert after in expected
    committed = after != before if write != "merge" else after == (21, 0)
    if step in ("after-commit", "cleanup", "merge-after-commit"):
        assert committed  # the commit point was passed
    if step in ("segment-written", "segment-synced", "before-commit", "merge-written", "merge-before-commit"):
        assert not committed
    with writing_in_place(directory) as later:  # the next write cleans up after the dead one
        change = later.store.add([Document("after the crash")])
        later.vectors.add(unit_vectors(1, 3), np.asarray(change.ids))
    assert _unnamed_files(directory) == set()
    assert _state(directory)[0] == after[0] + 1


_BUILD_COMPRESSED = """
import sys
import numpy as np
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.rewrite import commit_generation
from searchengine.indexer.tables.store import Document, DocumentStore
from searchengine.indexer.vectors.build_parts import create_vectors
from tests.indexer.small_index import DIMENSION, MODEL, unit_vectors

directory = IndexDirectory(sys.argv[1])
with directory.writing() as generation:
    store = DocumentStore(generation.path("documents"), writable=True)
    change = store.add([Document(f"compressed {i}") for i in range(300)])
    vectors = create_vectors("SQ8", DIMENSION)
    vectors.train(unit_vectors(300, 5))
    vectors.add(unit_vectors(300, 5), np.asarray(change.ids))
    commit_generation(generation, directory, store, vectors, None, MODEL, {}, None, None)
"""


@pytest.mark.parametrize(("step", "made"), [("originals-written", "segment.*.npy"), ("template-written", "template.*")])
def test_a_build_killed_after_writing_an_originals_or_template_file_leaves_the_old_index(
    tmp_path: Path, step: str, made: str
) -> None:
    directory = build_small_index(tmp_path / "index", 20)
    before = _state(directory)
    run = subprocess.run(
        [sys.executable, "-c", _BUILD_COMPRESSED, str(directory.path)],
        env={**os.environ, CRASH_ENV: step},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert run.returncode == 75, run.stderr
    assert list(directory.path.glob(made))  # it ended with the file written, before any commit
    assert _state(directory) == before
    with writing_in_place(directory) as later:
        change = later.store.add([Document("after the crash")])
        later.vectors.add(unit_vectors(1, 3), np.asarray(change.ids))
    assert _unnamed_files(directory) == set() and not list(directory.path.glob(made))
    assert _state(directory)[0] == before[0] + 1
