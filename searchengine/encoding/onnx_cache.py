"""Where ONNX exports are cached and how a cached one is opened in ONNX Runtime. Free of torch, so that a query
can run a cached export without it (searchengine.encoding.onnx_query_encoder); searchengine.encoding.onnx_backend
writes the exports."""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any

from searchengine.errors import SearchEngineError


def cache_directory() -> Path:
    """Where exported models are kept: $SEARCHENGINE_CACHE, else $XDG_CACHE_HOME/searchengine, else ~/.cache."""
    if os.environ.get("SEARCHENGINE_CACHE"):
        return Path(os.environ["SEARCHENGINE_CACHE"]) / "onnx"
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "searchengine" / "onnx"


def export_path(fingerprint: str, precision: str) -> Path:
    """The cache entry of the model with `fingerprint` (ModelSource.fingerprint) exported in `precision`."""
    return cache_directory() / f"{fingerprint[:24]}-{precision}.onnx"


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


def open_session(path: Path, threads: int | None) -> Any:  # noqa: ANN401 (an onnxruntime.InferenceSession)
    """A CPU inference session on the exported model at `path`, fully optimised, with `threads` intra-op threads
    (None: ONNX Runtime's own choice); a SearchEngineError naming the file if ONNX Runtime cannot load it."""
    onnxruntime = import_onnxruntime()
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    try:
        return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 (ORT raises its own exception types)
        raise SearchEngineError(
            f"cannot load the cached ONNX model {path} ({str(exc).splitlines()[0]}); delete it to re-export"
        ) from None
