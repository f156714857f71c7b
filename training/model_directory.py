"""Write a model directory so that an interrupted run never leaves a half-written model where a good one was:
everything is written into a hidden sibling, then swapped into place with renames. The output directory is checked
before any training (check_output_directory), so a bad one costs no training time, and a folder that is not a model
is never replaced: the swap deletes what was there. What a killed write left beside it is cleared by the next write."""

from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from searchengine.errors import SearchEngineError
from searchengine.processes import process_running

MODEL_FILES = ("modules.json", "config.json", "training_log.json")
"""A directory with one of these at its root is a model: sentence-transformers or Hugging Face, as loading tells them
apart (searchengine/encoding/model_source.py), or a checkpoint of the training loop, which writes its log into each;
the output directory may replace only such a one, or an empty one."""


def check_output_directory(out: Path) -> Path:
    """`out` as an absolute path, or a SearchEngineError naming why a model cannot be written there: it is a file,
    it lies under a file, or it is a folder holding other things than a model (writing the model replaces the
    folder whole, so they would be deleted)."""
    out = Path(out).expanduser().absolute()
    if out.exists() and not out.is_dir():
        raise SearchEngineError(f"{out} exists and is not a directory; choose another output directory")
    existing = next(folder for folder in (out, *out.parents) if folder.exists())  # the root always exists
    if not existing.is_dir():
        raise SearchEngineError(f"cannot make the output directory {out}: {existing} is a file; choose another path")
    if out.is_dir() and not any((out / name).is_file() for name in MODEL_FILES):
        held = sorted(item.name for item in out.iterdir())
        if held:
            shown = ", ".join(held[:3]) + (", ..." if len(held) > 3 else "")
            raise SearchEngineError(
                f"{out} holds other things than a model ({shown}), and writing the model there would replace it "
                "whole, deleting them; choose a new or empty output directory (or a model directory to replace)"
            )
    return out


@contextmanager
def writing_model_directory(out: Path) -> Iterator[Path]:
    """Yield an empty sibling directory to write the model into; on success it replaces `out`.

    `out` must pass check_output_directory. On an exception (Ctrl-C included) the sibling is removed and `out` is
    untouched. The swap is two renames: the old directory moves aside, the new one moves in, then the old one is
    deleted."""
    out = check_output_directory(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    clear_killed_writes(out)
    partial = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    try:
        yield partial
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    if out.exists():
        os.replace(out, old)
    os.replace(partial, out)
    shutil.rmtree(old, ignore_errors=True)


def clear_killed_writes(out: Path) -> None:
    """Remove what a killed write left beside `out`: its hidden partial model (never loaded, but a model's size,
    kept for good), and the old model it had moved aside; that one is moved back instead when `out` is missing
    (the kill came between the two renames of the swap), as it is then the last whole model. A folder whose
    process still runs is another write's, and is left alone."""
    for sibling in out.parent.glob(f".{glob.escape(out.name)}.*-*"):
        kind, _, process = sibling.name[len(out.name) + 2 :].rpartition("-")
        if kind not in ("partial", "old") or not process.isdigit() or process_running(int(process)):
            continue
        if kind == "old" and not out.exists():
            os.replace(sibling, out)
        else:
            shutil.rmtree(sibling, ignore_errors=True)


def copy_model_files(source: Path, destination: Path) -> None:
    """Copy a model directory's files (not hidden ones, not training logs) into `destination`."""
    for item in Path(source).iterdir():
        if item.name.startswith("."):
            continue
        target = destination / item.name
        if item.is_dir():
            shutil.copytree(item, target, dirs_exist_ok=True)
        else:
            shutil.copy2(item, target)
