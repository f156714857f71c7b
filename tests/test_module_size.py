"""Issue 40's size rule: no module of the package is over 500 lines (benchmarks/ and tests/ aside), so a module
keeps one job a reader can hold in mind; the facade's own 300 lines are held by
tests/searchengine/engine/test_reader_writer.py."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_FOLDERS = ("searchengine", "indexer", "training")
"""Every folder whose code installs as the package (indexer/ and training/ install as searchengine.indexer and
searchengine.training)."""
MOST_LINES = 500


def _line_counts() -> dict[str, int]:
    """Lines of every .py file under the package folders, by path relative to the repository."""
    return {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for folder in PACKAGE_FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
    }


def test_no_module_is_over_500_lines() -> None:
    counts = _line_counts()
    assert {"indexer/commit/manifest.py", "searchengine/engine/search_engine.py", "training/loop.py"} <= set(counts)
    over = {path: lines for path, lines in counts.items() if lines > MOST_LINES}
    assert not over, f"over {MOST_LINES} lines (split each by job into modules of its own): {over}"
