"""SyncRequest: `searchengine sync` as one request, run here: which index, which of the folders it reads (all when
none are named), how the encoder runs; it brings the index in step with those folders (engine/files.py's
sync_index), once or after each change (`sync --watch` runs it again on the same engine)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from searchengine.encoding.speed import EncoderSpeed

if TYPE_CHECKING:
    from searchengine.engine.files import SyncReport
    from searchengine.engine.search_engine import SearchEngine


@dataclass(frozen=True)
class SyncRequest:
    """Re-read the folders of the index in `target` (or `paths`, which must be among them or under them): embed new
    and changed files, delete the documents of files that are gone, keep the rest."""

    target: Path
    paths: Sequence[Path] | None = None
    speed: EncoderSpeed = EncoderSpeed()
    progress: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "paths", list(self.paths) if self.paths else None)  # none named: all of them

    def open(self) -> SearchEngine:
        """The index to sync, with its own model loaded as `speed` says when something changed."""
        from searchengine.engine.search_engine import SearchEngine

        return SearchEngine.open(self.target, speed=self.speed)

    def run(self, engine: SearchEngine) -> SyncReport:
        """Sync `engine`'s index (one `open` made) with the folders; what was added, updated, removed and skipped."""
        from searchengine.engine.files import sync_index

        return sync_index(engine, self.paths, progress=self.progress)
