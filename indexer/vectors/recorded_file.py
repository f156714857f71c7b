"""The check every vector file of a commit gets when read: it exists and has the size the store recorded for it."""

from __future__ import annotations

from pathlib import Path

from searchengine.indexer.errors import IndexerError


def check_recorded_size(path: Path, recorded: int, kind: str, fix: str) -> None:
    """Raise an IndexerError naming `kind` (e.g. "segment file") and `fix` when `path` is missing or its size is not
    the `recorded` one (truncated or changed since its commit)."""
    try:
        size = path.stat().st_size
    except OSError:
        raise IndexerError(f"{kind} {path} is missing; {fix}") from None
    if size != recorded:
        raise IndexerError(
            f"{kind} {path} has {size} bytes but the store says {recorded}: it is truncated or was changed; {fix}"
        )
