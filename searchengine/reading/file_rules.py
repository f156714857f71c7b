"""Which files of the folders are read: include and exclude globs and a size limit, kept light so the command
line can show their defaults without loading an extractor."""

from __future__ import annotations

import math
from dataclasses import dataclass

DEFAULT_MAX_MB = 50
"""Files larger than this many megabytes (10**6 bytes) are skipped unless told otherwise (--max-file-size)."""


@dataclass(frozen=True)
class FileRules:
    """Which files of the folders are read: globs, and the size limit."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_mb: float = DEFAULT_MAX_MB

    def as_json(self) -> dict[str, object]:
        """The rules as the index records them, so `sync` reads the folders the same way (no size limit as null)."""
        no_limit = not math.isfinite(self.max_mb)  # `--max-file-size inf`: JSON has no infinity; null says none
        return {"include": list(self.include), "exclude": list(self.exclude), "max_mb": None if no_limit else self.max_mb}
