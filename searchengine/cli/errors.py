"""The one error funnel of the command line: problems the user can fix become one line, never a traceback."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from searchengine.errors import SearchEngineError
from searchengine.indexer.errors import InterruptedAfterCommit

_ADVICE = {
    errno.EACCES: "give this user permission there (ls -l shows who may read and write it) or use another path",
    errno.EPERM: "give this user permission there (ls -l shows who may read and write it) or use another path",
    errno.EROFS: "the file system is mounted read-only; use an index directory on a writable one",
    errno.ENOSPC: "free some space there (or use another disk) and run the command again",
    errno.EDQUOT: "the disk quota is used up; free some space and run the command again",
}


INDEX_KEPT = "the index is as it was before"
"""What a command over an index says is left after a refusal: nothing was committed."""


def os_error_message(exc: OSError, index_dir: Path | None = None, kept: str = INDEX_KEPT) -> str | None:
    """One line naming the path and the cause of an operating-system refusal the user can fix (permissions,
    a read-only or full disk), and what is left (`kept`), or None for other OS errors."""
    advice = _ADVICE.get(exc.errno)
    if advice is None:
        return None
    path = exc.filename or index_dir
    where = f" at {path}" if path else ""
    return f"{exc.strerror or 'operating-system error'}{where}: {advice}; {kept}"


@contextmanager
def user_errors(index_dir: Path | None = None, kept: str | None = None) -> Iterator[None]:
    """Turn problems the user can fix into one line on stderr and exit code 1, never a traceback. `kept`: what a
    command that writes no index says is left after a refusal or Ctrl-C (a command over `index_dir` says the index
    is as it was before)."""
    try:
        yield
    except SearchEngineError as exc:
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(1) from None
    except OSError as exc:
        message = os_error_message(exc, index_dir, kept or INDEX_KEPT)
        if message is None:
            raise
        typer.echo(f"Error: {message}", err=True)
        raise typer.Exit(1) from None
    except InterruptedAfterCommit:
        where = f" at {index_dir}" if index_dir else ""
        typer.echo(f"\nInterrupted after the write was committed: the index{where} holds it.", err=True)
        raise typer.Exit(130) from None
    except KeyboardInterrupt:
        where = f" at {index_dir}" if index_dir else ""
        typer.echo(f"\nInterrupted: {kept or f'nothing was changed; the index{where} is as it was before'}.", err=True)
        raise typer.Exit(130) from None
