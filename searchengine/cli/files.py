"""`searchengine sync`, and what `index` and `add` say about the files they read: keep an index of folders in
step with them, re-reading only the files that changed."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from searchengine.cli.errors import user_errors
from searchengine.cli.options import BackendChoiceOption, IndexDirOption, PrecisionOption, QuietOption, ThreadsOption
from searchengine.encoding.backend import Backend
from searchengine.encoding.precision import Precision
from searchengine.engine.wording import counted
from searchengine.errors import SearchEngineError
from searchengine.reading.names import printable

LOOK_AGAIN_MS = 5_000
"""How long `sync --watch` waits for a change before it looks up the index's folders again (docs/files.md)."""

if TYPE_CHECKING:
    from searchengine.engine.files import SyncReport
    from searchengine.engine.search_engine import SearchEngine
    from searchengine.engine.sync_request import SyncRequest
    from searchengine.reading.file_documents import FileReport

LINES_SHOWN = 20
"""Files listed one per line (those skipped, or those sync changed); the rest are counted."""


def first_lines(lines: list[str]) -> list[str]:
    """The first LINES_SHOWN of `lines`, and a line counting the others when there are more."""
    more = len(lines) - LINES_SHOWN
    return lines[:LINES_SHOWN] + ([f"  ... and {more:,} more"] if more > 0 else [])


def files_summary(report: FileReport) -> str:
    """What reading files found: documents per format, unchanged files, and each skipped file with its reason."""
    formats = ", ".join(f"{count:,} {name}" for name, count in sorted(report.read.items())) or "none"
    lines = [f"Read {counted(sum(report.read.values()), 'file')} ({formats})."]
    if report.skipped:
        lines.append(f"Skipped {counted(len(report.skipped), 'file')}:")
        lines += first_lines([f"  {skip.shown}: {skip.reason}" for skip in report.skipped])
    return "\n".join(lines)


def sync(
    paths: list[Path] | None = typer.Argument(
        None, help="Folders (or files) to re-read, among those the index was built from.", show_default="all of them"
    ),
    index_dir: Path | None = IndexDirOption,
    watch: bool = typer.Option(False, "--watch", help="Keep syncing as files change, until Ctrl-C."),
    precision: Precision = PrecisionOption,
    backend: Backend = BackendChoiceOption,
    threads: int | None = ThreadsOption,
    quiet: bool = QuietOption,
) -> None:
    """Bring an index of folders in step with them: embed new and changed files, remove the documents of deleted
    ones, keep the rest (and their ids).

    A file whose size and modification time are unchanged is not read; one whose content hash is unchanged is
    not embedded again. Each folder is read with the rules it was indexed with (--include, --exclude,
    --max-file-size). A file that cannot be read this time keeps its document (the skip is listed); a file that
    is now empty loses it. A folder that is gone is an error: if it moved, index its new place with --replace.

    Examples:

      searchengine sync

      searchengine sync notes/ --watch
    """
    from searchengine.encoding.speed import EncoderSpeed
    from searchengine.engine.search_engine import default_index_dir
    from searchengine.engine.sync_request import SyncRequest

    target = index_dir or default_index_dir()
    with user_errors(target):
        request = SyncRequest(target, paths, EncoderSpeed(precision, backend, threads), progress=not quiet)
        engine = request.open()
        report = request.run(engine)
        if not quiet:
            typer.echo(sync_summary(report))
        if watch:
            _watch(engine, dataclasses.replace(request, progress=False), quiet)


def _watch(engine: SearchEngine, request: SyncRequest, quiet: bool) -> None:
    """Run `request` after each change to its paths (default: every folder the index reads, looked up again every
    few seconds, so a folder added by `index --append` meanwhile is watched too), until Ctrl-C."""
    import watchfiles

    from searchengine.indexer.errors import IndexLockedError

    paths = request.paths
    roots = _watched(engine, paths)
    while True:
        typer.echo(f"Watching {', '.join(map(str, roots))} for changes; Ctrl-C stops.", err=True)
        restart: list[Path] | None = None
        try:
            for changes in watchfiles.watch(
                *roots, debounce=500, raise_interrupt=False, yield_on_timeout=True, rust_timeout=LOOK_AGAIN_MS
            ):
                now = _watched(engine, paths)
                if not changes and now == roots:  # a quiet spell: look again
                    continue
                try:
                    report = request.run(engine)
                except IndexLockedError as exc:  # another writer: the next change (or this one, later) syncs
                    typer.echo(f"{time.strftime('%H:%M:%S')} not synced: {exc}; will sync at the next change", err=True)
                    continue
                if not quiet and (report.added or report.updated or report.removed or report.files.skipped):
                    typer.echo(f"{time.strftime('%H:%M:%S')} {sync_summary(report)}")
                if now != roots:
                    restart = now
                    break
        except FileNotFoundError as exc:
            raise SearchEngineError(f"cannot watch {exc.filename}: it no longer exists") from None
        if restart is None:  # Ctrl-C ended the watch
            return
        roots = restart


def _watched(engine: SearchEngine, paths: list[Path] | None) -> list[Path]:
    """The paths to watch: those given, else the folders the index reads now (another process may have added one)."""
    if paths:
        return list(paths)
    engine.refresh()
    return [Path(root["path"]) for root in engine.reading()["files"]["roots"]]


def sync_summary(report: SyncReport) -> str:
    """One line on what `sync` did, then the skipped files."""
    line = (
        f"Synced in {report.seconds:.1f} s: {len(report.added):,} added, {len(report.updated):,} updated, "
        f"{len(report.removed):,} removed, {report.files.unchanged:,} unchanged, "
        f"{len(report.files.skipped):,} skipped."
    )
    changed = [f"  + {printable(path)}" for path in report.added]
    changed += [f"  ~ {printable(path)}" for path in report.updated]
    changed += [f"  - {printable(path)}" for path in report.removed]
    skips = [f"  skipped {skip.shown}: {skip.reason}" for skip in report.files.skipped[:LINES_SHOWN]]
    return "\n".join([line, *first_lines(changed), *skips])
