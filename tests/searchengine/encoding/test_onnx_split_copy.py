"""The split copy of a cached ONNX export (searchengine.encoding.onnx_split_copy): made at the first open, opened by
the next with the same vectors, and never used once it no longer matches its export, its record or the ONNX
Runtime version; where it cannot be written the export is opened as before."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnxruntime
import pytest

from searchengine.encoding.encoder import Encoder
from searchengine.encoding.model_source import locate_model
from searchengine.encoding.onnx_cache import export_path, file_sha256, open_session, split_copies_directory
from searchengine.encoding.onnx_split_copy import GRAPH, RECORD, WEIGHTS, copy_folder, valid_copy

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
