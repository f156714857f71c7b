"""Write a model directory so that an interrupted run never leaves a half-written model where a good one was:
everything is written into a hidden sibling, then swapped into place with renames."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from searchengine.errors import SearchEngineError


@contextmanager
def writing_model_directory(out: Path) -> Iterator[Path]:
    """Yield an empty sibling directory to write the model into; on success it replaces `out`.

    On an exception (Ctrl-C included) the sibling is removed and `out` is untouched. The swap is two renames:
    the old directory moves aside, the new one moves in, then the old one is deleted."""
    out = Path(out).expanduser().absolute()
    if out.exists() and not out.is_dir():
        raise SearchEngineError(f"{out} exists and is not a directory; choose another output directory")
    out.parent.mkdir(parents=True, exist_ok=True)
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
