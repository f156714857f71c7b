"""The split copy of a cached ONNX export (searchengine.encoding.onnx_split_copy): made at the first open, opened by
the next with the same vectors, and never used once it no longer matches its export, its record or the ONNX
Runtime version; where it cannot be written the export is opened as before."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime
import pytest

from searchengine.encoding.encoder import Encoder
from searchengine.encoding.model_source import locate_model
from searchengine.encoding.onnx_cache import export_path, file_sha256, open_session, split_copies_directory
from searchengine.encoding.onnx_split_copy import (
    GRAPH,
    LEFTOVER_SECONDS,
    RECORD,
    SCRATCH,
    WEIGHTS,
    copy_folder,
    valid_copy,
    write_copy,
)

TOKENS = np.array([[2, 40, 41, 42, 43, 44, 45, 3], [2, 50, 51, 3, 0, 0, 0, 0]])
"""Two inputs of the tiny model's vocabulary ([CLS] 2, [SEP] 3, [PAD] 0), the second padded."""


@pytest.fixture
def export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_model: Path) -> Path:
    """The tiny model's fp32 export in a cache of this test's own, with no split copy yet."""
    monkeypatch.setenv("SEARCHENGINE_CACHE", str(tmp_path / "cache"))
    Encoder(tiny_model, backend="onnx", precision="fp32")
    path = export_path(locate_model(tiny_model).fingerprint(), "fp32")
    shutil.rmtree(split_copies_directory(), ignore_errors=True)  # the Encoder's own open made a copy: start without it
    return path


def _folder(export: Path) -> Path:
    return copy_folder(split_copies_directory(), export, file_sha256(export), onnxruntime.__version__)


def _last_layer(session: onnxruntime.InferenceSession) -> np.ndarray:
    mask = (TOKENS > 0).astype(np.int64)
    inputs = {"input_ids": TOKENS, "attention_mask": mask, "token_type_ids": np.zeros_like(TOKENS)}
    names = [node.name for node in session.get_inputs()]
    return session.run(["last_hidden_state"], {name: inputs[name] for name in names})[0]


def test_the_first_open_makes_the_copy_and_the_next_opens_it(export: Path) -> None:
    first = open_session(export, threads=1)
    assert Path(first._model_path) == export  # noqa: SLF001 (the file ONNX Runtime opened)
    folder = _folder(export)
    assert sorted(path.name for path in folder.iterdir()) == sorted([GRAPH, RECORD, WEIGHTS])
    assert (folder / WEIGHTS).stat().st_size > (folder / GRAPH).stat().st_size  # the weights are apart
    second = open_session(export, threads=1)
    assert Path(second._model_path) == folder / GRAPH  # noqa: SLF001
    np.testing.assert_allclose(_last_layer(second), _last_layer(first), rtol=0, atol=1e-6)


@pytest.mark.parametrize("change", ["weights", "export", "onnxruntime", "record"])
def test_a_copy_that_no_longer_matches_is_not_opened_and_is_made_again(export: Path, change: str) -> None:
    reference = _last_layer(open_session(export, threads=1))
    folder = _folder(export)
    record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
    if change == "weights":  # same size, one byte flipped: the recorded sha256 no longer holds
        damaged = bytearray((folder / WEIGHTS).read_bytes())
        damaged[len(damaged) // 2] ^= 0xFF
        (folder / WEIGHTS).write_bytes(bytes(damaged))
    elif change in ("export", "onnxruntime"):  # made from another export, or by another ONNX Runtime version
        record["export_sha256" if change == "export" else "onnxruntime"] = "another"
        (folder / RECORD).write_text(json.dumps(record), encoding="utf-8")
    else:
        (folder / RECORD).write_text("{not json", encoding="utf-8")
    assert valid_copy(folder, file_sha256(export), onnxruntime.__version__) is None
    session = open_session(export, threads=1)
    assert Path(session._model_path) == export  # noqa: SLF001
    np.testing.assert_allclose(_last_layer(session), reference, rtol=0, atol=1e-6)
    assert valid_copy(folder, file_sha256(export), onnxruntime.__version__) == folder / GRAPH  # made again


def test_a_new_copy_removes_the_copies_of_earlier_exports_of_that_name(export: Path) -> None:
    earlier = copy_folder(split_copies_directory(), export, "0" * 64, onnxruntime.__version__)
    other_version = copy_folder(split_copies_directory(), export, "0" * 64, "0.0.0")
    for folder in (earlier, other_version):
        folder.mkdir(parents=True)
        (folder / GRAPH).write_bytes(b"a copy of an export since replaced")
    open_session(export, threads=1)
    assert _folder(export).is_dir() and not earlier.exists()
    assert other_version.is_dir()  # another ONNX Runtime's copies are its own (another environment may share the cache)


def test_a_cache_where_no_copy_can_be_written_opens_the_export(export: Path) -> None:
    split_copies_directory().write_text("a file where the copies' folder would be", encoding="utf-8")
    reference = _last_layer(open_session(export, threads=1))
    session = open_session(export, threads=1)
    assert Path(session._model_path) == export  # noqa: SLF001
    np.testing.assert_array_equal(_last_layer(session), reference)
    assert [path.name for path in split_copies_directory().parent.iterdir() if path.name.startswith(".split")] == []


KILLED_WRITER = """
import os, signal, sys, tempfile
from pathlib import Path
from searchengine.encoding.onnx_split_copy import SCRATCH, _owner
scratch = Path(tempfile.mkdtemp(dir=sys.argv[1], prefix=SCRATCH + _owner()))
(scratch / "weights.data").write_bytes(bytes(4096))  # half a copy's weights
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_next_copy_removes_what_writers_killed_midway_left_and_keeps_a_live_ones(export: Path) -> None:
    split_copies_directory().mkdir(parents=True)
    for _ in range(2):  # two writers killed (kill -9) while they wrote: each leaves its temporary folder
        killed = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(split_copies_directory())], check=False)
        assert killed.returncode == -9
    left = sorted(split_copies_directory().glob(SCRATCH + "*"))
    assert len(left) == 2
    live = split_copies_directory() / f"{SCRATCH}{os.getpid()}@{socket.gethostname()}@writing"  # this process's
    elsewhere = split_copies_directory() / f"{SCRATCH}1@another-host@writing"  # cannot be asked: kept a day
    unnamed = split_copies_directory() / f"{SCRATCH}abc123"  # an unnamed writer's, two days old
    for folder in (live, elsewhere, unnamed):
        folder.mkdir()
    old = time.time() - 2 * LEFTOVER_SECONDS
    os.utime(unnamed, (old, old))
    reference = _last_layer(open_session(export, threads=1))  # no copy yet: opens the export and writes the copy
    remaining = sorted(path.name for path in split_copies_directory().iterdir())
    assert remaining == sorted([_folder(export).name, live.name, elsewhere.name])
    session = open_session(export, threads=1)
    assert Path(session._model_path) == _folder(export) / GRAPH  # noqa: SLF001
    np.testing.assert_allclose(_last_layer(session), reference, rtol=0, atol=1e-6)


@pytest.mark.parametrize("planted", ["link", "file"])
def test_a_link_or_file_where_the_copy_goes_is_replaced_leaving_nothing_and_never_what_a_link_points_at(
    export: Path, tmp_path: Path, planted: str
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not the cache's", encoding="utf-8")
    _folder(export).parent.mkdir(parents=True)
    if planted == "link":
        _folder(export).symlink_to(elsewhere, target_is_directory=True)
    else:
        _folder(export).write_text("not a copy", encoding="utf-8")
    reference = _last_layer(open_session(export, threads=1))
    assert sorted(path.name for path in split_copies_directory().iterdir()) == [_folder(export).name]
    assert (elsewhere / "keep.txt").read_text(encoding="utf-8") == "not the cache's"
    session = open_session(export, threads=1)
    assert Path(session._model_path) == _folder(export) / GRAPH  # noqa: SLF001
    np.testing.assert_allclose(_last_layer(session), reference, rtol=0, atol=1e-6)


def test_a_valid_copy_another_process_put_in_place_meanwhile_stays(export: Path) -> None:
    open_session(export, threads=1)  # the copy, as another process would have written it while this one wrote
    theirs = _folder(export).stat().st_ino
    assert write_copy(export, _folder(export), file_sha256(export), onnxruntime)  # this process's, finished later
    assert _folder(export).stat().st_ino == theirs
    assert sorted(path.name for path in split_copies_directory().iterdir()) == [_folder(export).name]
