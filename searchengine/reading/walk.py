"""Find the files to read under the paths given: folders recursively (hidden files and folders such as .git left
out), `--include`/`--exclude` globs matched against the path inside the folder given, symlinks followed once (a
loop is skipped and said), and only the suffixes an extractor reads (searchengine/reading/formats.py)."""

from __future__ import annotations

import contextlib
import fnmatch
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from searchengine.errors import SearchEngineError
from searchengine.reading.formats import SUFFIXES, format_of
from searchengine.reading.names import is_utf8, printable


@dataclass(frozen=True)
class Found:
    """A file to read, with the path it is shown and stored under (relative to the folders' common base)."""

    path: Path
    shown: str


@dataclass(frozen=True)
class Skipped:
    """A file or folder left out, and why, in words. `keeps`: whether `sync` keeps what the index already holds
    of it (a file that cannot be read this time may be back; one that is now empty is gone)."""

    shown: str
    reason: str
    path: Path | None = None
    keeps: bool = True


ALREADY_READ = "is a folder already read through another path (a symlink loop, or a link to a folder beside it)"
"""Why a folder reached twice is left out. Of a folder and a symlink to it side by side, the folder is read and the
link is left out, whichever name sorts first."""


def matches(relative: str, patterns: Sequence[str]) -> bool:
    """True when one of the glob patterns matches the path inside the folder given (`relative`), its file name,
    or one of its folders' names: `*.md`, `**/*.md` (top-level files too), `drafts`, `drafts/` and `drafts/*`
    all say what they look like. A glob's `*` also matches `/`."""
    parts = relative.split("/")
    for pattern in patterns:
        pattern = pattern.strip("/")
        if not pattern:
            continue
        candidates = [pattern, pattern[3:]] if pattern.startswith("**/") else [pattern]
        for glob in candidates:
            if fnmatch.fnmatch(relative, glob) or fnmatch.fnmatch(parts[-1], glob):
                return True
            if any(fnmatch.fnmatch(folder, glob) for folder in parts[:-1]):
                return True
    return False


def absolute_path(path: Path) -> Path:
    """`path` made absolute, with each `..` resolved as the system resolves it (through a symlinked folder to its
    target's parent), so that `notes/../notes` and `notes` name one folder and its files have one source. A path
    without `..` keeps its symlinks: a document's source is the path the user named."""
    return path.resolve() if ".." in path.parts else path.absolute()


def common_base(roots: Sequence[Path]) -> Path:
    """The folder documents' paths are relative to: the folder itself for one folder, a file's own folder for one
    file, else the deepest folder holding every path given."""
    resolved = [absolute_path(root) for root in roots]
    folders = [root if root.is_dir() else root.parent for root in resolved]
    return Path(os.path.commonpath(folders)) if len(folders) > 1 else folders[0]


def shown_path(path: Path, base: Path) -> str:
    """`path` relative to `base`, with forward slashes: a document's id and what hits show."""
    return Path(os.path.relpath(absolute_path(path), base)).as_posix()


def check_root(root: Path) -> None:
    """Refuse a path to read that is empty, missing, or neither a folder nor a regular file, in one line."""
    if not str(root):
        raise SearchEngineError("an empty path was given; name a folder or a file to index")
    try:
        mode = root.stat().st_mode
    except FileNotFoundError:
        if root.is_symlink():
            raise SearchEngineError(f"{root} is a symlink to nothing (its target is missing)") from None
        raise SearchEngineError(f"{root} does not exist") from None
    except OSError as exc:
        raise SearchEngineError(f"cannot read {root}: {exc.strerror}") from None
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise SearchEngineError(f"{root} is not a folder or a regular file (a device, pipe or socket)")
    if stat.S_ISREG(mode) and format_of(root) is None:
        raise SearchEngineError(f"{root} is not a format searchengine reads from files ({', '.join(SUFFIXES)})")


def find_files(
    roots: Sequence[Path],
    base: Path,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    globs_from: Path | None = None,
) -> Iterator[Found | Skipped]:
    """Each file to read under `roots`, in name order, once even where roots overlap, or why one was left out.
    A missing root is an error; a file named directly is read whatever the globs say, unless it is part of
    `globs_from`: the folder given the globs, when `roots` are parts of it (the globs then match paths relative to
    it, else to each root)."""
    seen: set[str] = set()
    for root in roots:
        check_root(root)
        root = absolute_path(root) if ".." in root.parts else root  # a file's path has no `..`, nor two spellings
        if not root.is_file():
            items: Iterable[Found | Skipped] = _walk(root, base, include, exclude, globs_from or root)
        elif globs_from in (None, root) or not _left_out(root.relative_to(globs_from).as_posix(), include, exclude):
            items = [Found(root, shown_path(root, base))]
        else:
            items = []
        for item in items:
            if isinstance(item, Found):
                if item.shown in seen:
                    continue
                seen.add(item.shown)
            yield item


def _walk(
    root: Path, base: Path, include: Sequence[str], exclude: Sequence[str], globs_from: Path
) -> Iterator[Found | Skipped]:
    folders_read: set[tuple[int, int]] = set()
    if globs_from != root:  # part of a folder: a link back to the folder is the loop it is when all of it is read
        with contextlib.suppress(OSError):
            folder = globs_from.stat()
            folders_read.add((folder.st_dev, folder.st_ino))
    errors: list[OSError] = []
    for folder, folders, files in os.walk(root, followlinks=True, onerror=errors.append):
        yield from _unreadable(errors, root, base)
        here = Path(folder)
        try:
            identity = here.stat()
        except OSError as exc:
            yield Skipped(printable(shown_path(here, base)), f"cannot be read ({exc.strerror})", here)
            folders[:] = []
            continue
        if (identity.st_dev, identity.st_ino) in folders_read:
            folders[:] = []
            yield Skipped(printable(shown_path(here, base)), f"{ALREADY_READ}; left out", here)
            continue
        folders_read.add((identity.st_dev, identity.st_ino))
        kept = []
        for name in sorted(folders, key=lambda name: ((here / name).is_symlink(), name)):  # real folders first
            if name.startswith("."):
                continue
            if not is_utf8(name):
                path = here / name
                yield Skipped(printable(shown_path(path, base)), "has a name that is not UTF-8; rename it", path)
                continue
            kept.append(name)
        folders[:] = kept
        for name in sorted(files):
            path = here / name
            if name.startswith(".") or format_of(path) is None:
                continue
            if _left_out(path.relative_to(globs_from).as_posix(), include, exclude):
                continue
            if not is_utf8(name):
                yield Skipped(printable(shown_path(path, base)), "has a name that is not UTF-8; rename it", path)
                continue
            yield Found(path, shown_path(path, base))
    yield from _unreadable(errors, root, base)


def _left_out(relative: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether the globs leave out a file (`relative`: its path inside the folder given them)."""
    return bool(include and not matches(relative, include)) or matches(relative, exclude)


def _unreadable(errors: list[OSError], root: Path, base: Path) -> Iterator[Skipped]:
    while errors:
        error = errors.pop()
        path = Path(error.filename) if error.filename else root
        yield Skipped(printable(shown_path(path, base)), f"cannot be read ({error.strerror})", path)
