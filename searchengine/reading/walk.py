"""Find the files to read under the paths given: folders recursively (hidden files and folders such as .git left
out), `--include`/`--exclude` globs, symlinks followed once (a loop is skipped and said), and only the suffixes an
extractor reads (searchengine/reading/formats.py)."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from searchengine.errors import SearchEngineError
from searchengine.reading.formats import EXTRACTORS, format_of


@dataclass(frozen=True)
class Found:
    """A file to read, with the path it is shown and stored under (relative to the folders' common base)."""

    path: Path
    shown: str


@dataclass(frozen=True)
class Skipped:
    """A file or folder left out, and why, in words."""

    shown: str
    reason: str


def matches(shown: str, patterns: Sequence[str]) -> bool:
    """True when the relative path `shown` (or its file name) matches one of the glob patterns."""
    name = shown.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(shown, pattern) or fnmatch.fnmatch(name, pattern) for pattern in patterns)


def common_base(roots: Sequence[Path]) -> Path:
    """The folder documents' paths are relative to: the folder itself for one folder, a file's own folder for one
    file, else the deepest folder holding every path given."""
    resolved = [root.absolute() for root in roots]
    folders = [root if root.is_dir() else root.parent for root in resolved]
    return Path(os.path.commonpath(folders)) if len(folders) > 1 else folders[0]


def shown_path(path: Path, base: Path) -> str:
    """`path` relative to `base`, with forward slashes: a document's id and what hits show."""
    return Path(os.path.relpath(path.absolute(), base)).as_posix()


def find_files(
    roots: Sequence[Path], base: Path, include: Sequence[str] = (), exclude: Sequence[str] = ()
) -> Iterator[Found | Skipped]:
    """Each file to read under `roots`, in name order, or why one was left out. A missing root is an error; a file
    named directly is read whatever the globs say, but must have a suffix an extractor reads."""
    for root in roots:
        if root.is_file():
            if format_of(root) is None:
                raise SearchEngineError(
                    f"{root} is not a format searchengine reads from files ({', '.join(sorted(EXTRACTORS))}); a "
                    ".txt or .jsonl corpus is indexed one document per line with `searchengine index FILE`"
                )
            yield Found(root, shown_path(root, base))
        elif root.is_dir():
            yield from _walk(root, base, include, exclude)
        elif root.is_symlink():
            raise SearchEngineError(f"{root} is a symlink to nothing (its target is missing)")
        else:
            raise SearchEngineError(f"{root} does not exist")


def _walk(root: Path, base: Path, include: Sequence[str], exclude: Sequence[str]) -> Iterator[Found | Skipped]:
    seen: set[tuple[int, int]] = set()
    errors: list[OSError] = []
    for folder, folders, files in os.walk(root, followlinks=True, onerror=errors.append):
        while errors:
            error = errors.pop()
            yield Skipped(shown_path(Path(error.filename or folder), base), f"cannot be read ({error.strerror})")
        here = Path(folder)
        stat = here.stat()
        if (stat.st_dev, stat.st_ino) in seen:
            folders[:] = []
            yield Skipped(shown_path(here, base), "is a symlink loop (a folder already read); left out")
            continue
        seen.add((stat.st_dev, stat.st_ino))
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in sorted(files):
            path = here / name
            shown = shown_path(path, base)
            if name.startswith(".") or format_of(path) is None:
                continue
            if (include and not matches(shown, include)) or matches(shown, exclude):
                continue
            yield Found(path, shown)
    while errors:
        error = errors.pop()
        yield Skipped(shown_path(Path(error.filename or root), base), f"cannot be read ({error.strerror})")
