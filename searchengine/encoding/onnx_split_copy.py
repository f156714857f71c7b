"""A copy of a cached ONNX export with its weights in a file apart from its graph, which ONNX Runtime opens in about
a third of the time: a cold query's largest single cost after the imports.

An export keeps its weights inside one protobuf message (90 MB for the default model), which ONNX Runtime parses
and copies when it opens it (0.17 s of CPU on a Zen 4). A graph whose weights lie in an external file is parsed in
milliseconds, and the weights are mapped from that file (0.05 s for the same model; docs/benchmarks.md, "Cold query
start-up").

ONNX Runtime writes the copy itself, once, from a session at ORT_DISABLE_ALL that saves its model with external
weights: the graph as exported, not optimised, so the copy holds no kernel chosen for this machine's CPU and a
session on it optimises the graph exactly as one on the export does (the same vectors, bit for bit, in the tests).
It is written into a temporary folder that is renamed into place, so a reader sees a whole copy or none. A copy is
used only while its record says it was made from an export with the sha256 the export has now and by this ONNX
Runtime version, and its files match their recorded sizes and sha256 (remembered across processes while they are
unchanged, as the export's is: searchengine.encoding.digest_memo). Anything else, or a cache folder that cannot be
written, leaves the caller opening the export as before. The temporary folders are named by their writer's process
and host, so that a writer killed midway (whose folder holds up to a whole model's weights) leaves nothing for long:
the next copy written removes them once that process is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import tempfile
import time
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

from searchengine.encoding.digest_memo import file_sha256, regular_size
from searchengine.processes import process_running

GRAPH = "graph.onnx"
"""The copy's graph, which names its weights file by this relative name."""
WEIGHTS = "weights.data"
"""The copy's weights: every tensor of at least WEIGHTS_MIN_BYTES, raw, mapped by ONNX Runtime when it opens."""
RECORD = "record.json"
"""What the copy was made from (the export's sha256, the ONNX Runtime version) and each file's size and sha256."""
WEIGHTS_MIN_BYTES = 1024
"""Tensors this large or larger go to the weights file; smaller ones (shapes, biases of tiny models) stay inline."""
MAX_RECORD_BYTES = 64 * 1024
"""A record is a few hundred bytes of JSON; anything larger is not one, and is not read."""
SCRATCH = ".split-"
"""How a copy being written is named, then its writer's process id, "@", host and "@" (_owner)."""
ASIDE = ".stale-"
"""How a copy that failed its check is named, with its remover's process and host, while it is removed."""
LEFTOVER_SECONDS = 24 * 3600
"""A temporary folder of another host (whose processes cannot be asked), or of an unnamed writer, this old is left
over: no copy takes this long to write."""


def copy_folder(root: Path, export: Path, export_sha256: str, onnxruntime_version: str) -> Path:
    """Where the split copy of `export` (whose bytes have `export_sha256`) made by this ONNX Runtime version lives
    under `root`. Named by the export's content, so a copy is never replaced by one of other weights while a process
    may be opening it (its graph names its weights file by a relative path)."""
    return root / f"{export.stem}-{export_sha256[:16]}-ort{onnxruntime_version}"


def valid_copy(folder: Path, export_sha256: str, onnxruntime_version: str) -> Path | None:
    """The graph of the copy in `folder` when its record names this export (by sha256) and this ONNX Runtime
    version and every file it lists is a regular file of the recorded size and sha256; None otherwise."""
    try:
        if regular_size(folder / RECORD) > MAX_RECORD_BYTES:
            return None
        record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
        files = record.get("files") if isinstance(record, dict) else None
        if (
            not isinstance(files, dict)
            or GRAPH not in files
            or record.get("export_sha256") != export_sha256
            or record.get("onnxruntime") != onnxruntime_version
        ):
            return None
        for name, expected in files.items():
            if name not in (GRAPH, WEIGHTS) or not isinstance(expected, dict):
                return None
            path = folder / name
            if expected.get("size") != regular_size(path) or expected.get("sha256") != file_sha256(path):
                return None
    except (OSError, ValueError):
        return None
    return folder / GRAPH


def write_copy(export: Path, folder: Path, export_sha256: str, onnxruntime: ModuleType) -> bool:
    """Make the split copy of `export` (whose sha256 is `export_sha256`) in `folder`, replacing any there (one that
    failed its check), then remove this ONNX Runtime version's copies of earlier exports of the same name; False,
    leaving nothing behind, where it cannot be made (a read-only cache, a full disk, a model ONNX Runtime will not
    save)."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        remove_leftovers(folder.parent)
        scratch = Path(tempfile.mkdtemp(dir=folder.parent, prefix=SCRATCH + _owner()))
        scratch.chmod(0o755)  # readable as the exports beside it are (mkdtemp makes it private)
    except OSError:
        return False
    try:
        _save_split(onnxruntime, export, scratch)
        files = {
            name: {"size": regular_size(scratch / name), "sha256": file_sha256(scratch / name)}
            for name in (GRAPH, WEIGHTS)
            if (scratch / name).exists()
        }
        record = {"export_sha256": export_sha256, "onnxruntime": onnxruntime.__version__, "files": files}
        (scratch / RECORD).write_text(json.dumps(record), encoding="utf-8")
        _move_into_place(scratch, folder, export_sha256, onnxruntime.__version__)
    except Exception:  # noqa: BLE001 (ORT raises its own exception types; the export is opened instead)
        return False
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for earlier in folder.parent.glob(f"{export.stem}-*-ort{onnxruntime.__version__}"):
        if earlier != folder:
            shutil.rmtree(earlier, ignore_errors=True)
    return True


def _save_split(onnxruntime: ModuleType, export: Path, scratch: Path) -> Any:  # noqa: ANN401 (an InferenceSession)
    """A throwaway session on `export` that saves its unoptimised graph to scratch/GRAPH and its weights to
    scratch/WEIGHTS as it opens."""
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.optimized_model_filepath = str(scratch / GRAPH)
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name", WEIGHTS)
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_min_size_in_bytes", str(WEIGHTS_MIN_BYTES)
    )
    options.intra_op_num_threads = 1
    options.log_severity_level = 3  # errors only: nothing on a query's stderr
    return onnxruntime.InferenceSession(str(export), options, providers=["CPUExecutionProvider"])


def _move_into_place(scratch: Path, folder: Path, export_sha256: str, onnxruntime_version: str) -> None:
    """Rename the finished `scratch` to `folder`; a copy there (of the same export: one that failed its check) is
    first renamed aside and removed. If another process put its valid copy in place meanwhile, that one stays (so
    that processes opening it are not sent back to the export)."""
    try:
        os.rename(scratch, folder)
        return
    except OSError:
        pass
    if valid_copy(folder, export_sha256, onnxruntime_version) is not None:
        return
    stale = folder.with_name(f"{ASIDE}{_owner()}{uuid.uuid4().hex}")
    with contextlib.suppress(OSError):
        os.rename(folder, stale)
    try:
        os.rename(scratch, folder)
    finally:
        _remove(stale)


def remove_leftovers(root: Path) -> None:
    """Remove the temporary folders under `root` whose writer is gone: a process of this host no longer running
    (killed while it wrote), or, where the writer cannot be asked, one older than LEFTOVER_SECONDS."""
    try:
        entries = [entry for entry in root.iterdir() if entry.name.startswith((SCRATCH, ASIDE))]
    except OSError:
        return
    for entry in entries:
        pid, _, host = entry.name.partition("-")[2].partition("@")
        host = host.partition("@")[0]
        if host == socket.gethostname() and pid.isdigit():
            if process_running(int(pid)):
                continue
        else:
            try:
                if time.time() - entry.lstat().st_mtime < LEFTOVER_SECONDS:
                    continue
            except OSError:
                continue
        _remove(entry)


def _owner() -> str:
    """This process as a temporary folder's name says it: its id and host, each followed by "@"."""
    return f"{os.getpid()}@{socket.gethostname()}@"


def _remove(path: Path) -> None:
    """Remove `path`: a folder with what it holds, a file or a link by itself (never what a link points to)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()
