"""A benchmark's results file: indented JSON with a final newline, read back to merge a rerun's rows into it."""

from __future__ import annotations

import json
from pathlib import Path


def write_results(path: Path, record: dict, *, indent: int = 2, ensure_ascii: bool = True) -> None:
    """Write `record` to `path` (its folder made if missing) as the results files are written: indented, one
    final newline, UTF-8."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=indent, ensure_ascii=ensure_ascii) + "\n", encoding="utf-8")


def read_results(path: Path) -> dict:
    """The results already in `path` (rows of earlier runs, to merge a new row into), or {} where there is none."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
