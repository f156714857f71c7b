"""Where ONNX exports are cached and how a cached one is opened in ONNX Runtime (through its split copy,
searchengine.encoding.onnx_split_copy, where one is cached). Free of torch, so that a query can run a cached export
without it (searchengine.encoding.onnx_query_encoder); searchengine.encoding.onnx_backend writes the exports."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

from searchengine.encoding.cache_location import cache_root
from searchengine.encoding.digest_memo import file_sha256, regular_size
from searchengine.encoding.onnx_split_copy import copy_folder, valid_copy, write_copy
from searchengine.errors import SearchEngineError

OPSET = 17
"""The ONNX opset the exports are written in."""


def cache_directory() -> Path:
    """Where exported models are kept: cache_root()/onnx ($SEARCHENGINE_CACHE, $XDG_CACHE_HOME or ~/.cache)."""
    return cache_root() / "onnx"


def export_path(fingerprint: str, precision: str) -> Path:
    """The cache entry of the model with `fingerprint` (ModelSource.fingerprint) exported in `precision`."""
    return cache_directory() / f"{fingerprint[:24]}-{precision}.onnx"


def record_path(export: Path) -> Path:
    """The JSON record beside an export: what it claims to be (fingerprint, precision, opset, inputs) and its sha256."""
    return export.with_suffix(".json")


MAX_RECORD_BYTES = 64 * 1024
"""A record is a few hundred bytes of JSON; anything larger is not one, and is not read."""


def cached_export_is_valid(export: Path, identity: dict[str, Any]) -> bool:
    """True when the export exists, its record agrees with every item of `identity`, and its bytes match the
    recorded size and sha256; a truncated, flipped or foreign file is not used (the torch path exports it again).
    Both must be regular files of the cache itself, never a link (one to /dev/zero would make reading endless), and
    the export's size is compared before a byte of it is read."""
    try:
        record_file = record_path(export)
        if regular_size(record_file) > MAX_RECORD_BYTES:
            return False
        record = json.loads(record_file.read_text(encoding="utf-8"))
        claimed = record.get("identity") if isinstance(record, dict) else None
        return (
            isinstance(claimed, dict)
            and all(claimed.get(key) == value for key, value in identity.items())
            and record.get("size") == regular_size(export)
            and record.get("sha256") == file_sha256(export)
        )
    except (OSError, ValueError):
        return False


def import_onnxruntime() -> ModuleType:
    """ONNX Runtime, or a SearchEngineError that says how to install it."""
    try:
        import onnxruntime
    except ImportError:
        raise SearchEngineError(
            "the onnx backend needs ONNX Runtime: pip install 'searchengine[onnx]' (or .venv/bin/pip install "
            "onnxruntime onnx), or use the torch backend"
        ) from None
    return onnxruntime


def split_copies_directory() -> Path:
    """Where the exports' split copies are kept (searchengine.encoding.onnx_split_copy)."""
    return cache_directory() / "split"


def open_session(path: Path, threads: int | None) -> Any:  # noqa: ANN401 (an onnxruntime.InferenceSession)
    """A CPU inference session on the exported model at `path`, fully optimised, with `threads` intra-op threads
    (None: ONNX Runtime's own choice); a SearchEngineError naming the file if ONNX Runtime cannot load it.

    The session opens the export's split copy (its weights apart from its graph: a third of the time) where a valid
    one is cached; otherwise it opens the export and makes the copy for the next process, where the cache can be
    written (searchengine.encoding.onnx_split_copy)."""
    onnxruntime = import_onnxruntime()
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Worker threads sleep between kernels rather than spin: the same speed on an idle machine, faster in bulk on a
    # shared one, and a query's p99 lower (docs/benchmarks.md#encoding-at-the-machines-limit).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        regular_size(path)  # never hash a link or a device: reading one may never end
        export_sha256 = file_sha256(path)
    except OSError:
        export_sha256 = None  # the export is opened without a copy; ONNX Runtime's own error names any problem
    version = onnxruntime.__version__
    folder = copy_folder(split_copies_directory(), path, export_sha256, version) if export_sha256 else None
    graph = valid_copy(folder, export_sha256, version) if folder and export_sha256 else None
    if graph is not None:
        try:
            return onnxruntime.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        except Exception:  # noqa: BLE001 (a copy ONNX Runtime will not open: the export, and a new copy)
            pass
    try:
        session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 (ORT raises its own exception types)
        raise SearchEngineError(
            f"cannot load the cached ONNX model {path} ({str(exc).splitlines()[0]}); delete it to re-export"
        ) from None
    if folder and export_sha256:
        write_copy(path, folder, export_sha256, onnxruntime)
    return session
