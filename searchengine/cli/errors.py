"""The one error funnel of the command line: problems the user can fix become one line, never a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from searchengine.errors import SearchEngineError


@contextmanager
def user_errors(index_dir: Path | None = None) -> Iterator[None]:
    """Turn problems the user can fix into one line on stderr and exit code 1, never a traceback."""
    try:
        yield
    except SearchEngineError as exc:
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        where = f" at {index_dir}" if index_dir else ""
        typer.echo(f"\nInterrupted: nothing was changed; the index{where} is as it was before.", err=True)
        raise typer.Exit(130) from None
