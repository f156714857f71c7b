"""The progress bar of a long write (a build, an add, a re-embedding), shown on a terminal only."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tqdm import tqdm


def progress_bar(total: int | None, enabled: bool, description: str) -> tqdm:
    """A progress bar shown after its first second, so input refused at once ends with its one error line; only on
    a terminal (tqdm's disable=None), since a log or pipe would get every redraw and the final bar twice. Counts
    are whole documents (33/33, never tqdm's unit-scaled 33.0/33.0). (tqdm is imported here: a query imports the
    modules that call this but never shows progress.)"""
    from tqdm import tqdm

    return tqdm(total=total, disable=None if enabled else True, unit=" docs", desc=description, leave=True, delay=1.0)
