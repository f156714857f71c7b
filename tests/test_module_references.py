"""Module paths named in the code's text (docstrings, comments, messages) name modules that exist: a module moved
(issue 40 moved the indexer's flat modules into sub-packages and split engine/search_engine.py) leaves no reader
sent to a file that is gone. Dotted names (`searchengine.indexer.vectors.whitening`, `indexer.tables.store`) and
paths (`indexer/tables/wal_upkeep.py`, `engine/index_snapshot.py`) are checked; what follows the module in a
dotted name (a class, a function) is not."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("searchengine", "indexer", "training", "benchmarks")
LAYERS = "indexer|training|engine|encoding|reading|server|analysis|evaluation|cli|integrations"
DOTTED = re.compile(rf"(?<![\w./-])((?:searchengine\.(?:{LAYERS})|indexer)(?:\.[A-Za-z_]\w*)+)")
SLASHED = re.compile(rf"(?<![\w./-])((?:{LAYERS}|benchmarks)(?:/\w+)*/\w+\.py)\b")


def _dotted_module_exists(reference: str) -> bool:
    """Whether the modules and packages of a dotted `reference` exist, up to its first name that is neither (a class,
    a constant or a dunder attribute of the module before it)."""
    parts = reference.split(".")
    if parts[0] == "searchengine":
        parts = parts[1:]
    path = ROOT / parts[0] if parts[0] in ("indexer", "training") else ROOT / "searchengine" / parts[0]
    for part in parts[1:]:
        if (path / part).is_dir():
            path = path / part
        elif (path / f"{part}.py").exists():
            return True
        else:
            return part[0].isupper() or part.startswith("__")
    return True


def _path_exists(reference: str) -> bool:
    """Whether a file path `reference` exists from the repository's root or from the searchengine package."""
    return (ROOT / reference).exists() or (ROOT / "searchengine" / reference).exists()


def stale_references(text: str) -> list[str]:
    """The module names and paths in `text` that name no module."""
    dotted = [match.group(1) for match in DOTTED.finditer(text) if not _dotted_module_exists(match.group(1))]
    return dotted + [match.group(1) for match in SLASHED.finditer(text) if not _path_exists(match.group(1))]


def test_every_module_named_in_the_code_exists() -> None:
    stale = [
        f"{path.relative_to(ROOT)}: {reference}"
        for source in SOURCES
        for path in sorted((ROOT / source).rglob("*.py"))
        for reference in stale_references(path.read_text(encoding="utf-8"))
    ]
    assert not stale, "\n".join(stale)


def test_the_check_finds_a_moved_module() -> None:
    text = "fitted as `indexer.whitening.CovarianceAccumulator` does (indexer/wal_upkeep.py)"
    assert stale_references(text) == ["indexer.whitening.CovarianceAccumulator", "indexer/wal_upkeep.py"]
    assert stale_references("`indexer.vectors.whitening.CovarianceAccumulator` (indexer/tables/wal_upkeep.py)") == []
