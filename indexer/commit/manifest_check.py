"""`verify` of the manifest against what the store and the segments say: the index type, metric and dimension, the
model and the whitening. The manifest is a JSON file anyone can edit, and an edited one went unnoticed (an index
type of `HNSW32` or `IVF99999,PQ7`, a metric of `l2`, a model named `/etc`: `verify` passed and `info` reported
them), so every build and adapt records in the store, in the transaction that commits its segments, what its
manifest says (`built_as`), and verify compares the two. An index built before that has no record; for it the
metric and the segments' types are still compared."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from searchengine.indexer.commit.file_check import FileCheck
from searchengine.indexer.commit.manifest import Manifest
from searchengine.indexer.tables.store import DocumentStore

BUILT_AS = "built_as"
"""The store's build_settings key holding what the manifest said when the index was built (or adapted)."""
METRIC = "inner_product"
"""The one metric this searchengine writes: vectors are L2-normalised and compared by inner product (cosine)."""
EXACT = "Flat"
"""The type of the small segments of any index (exact search), whatever its own type."""


def built_as(manifest: Manifest) -> dict[str, Any]:
    """What the store records of `manifest`: every field a hand edit could change that says how vectors were made."""
    model = manifest.model
    return {
        "index type": manifest.index.type,
        "metric": manifest.index.metric,
        "dimension": manifest.index.dimension,
        "model name": model.name,
        "model spec": model.spec,
        "model fingerprint": model.fingerprint,
        "model dimension": model.dimension,
        "pooling": model.pooling,
        "normalize": model.normalize,
        "max_seq_length": model.max_seq_length,
        "whitening k": None if manifest.whitening is None else manifest.whitening.k,
    }


def check_manifest(folder: Path, manifest: Manifest) -> FileCheck:
    """One FileCheck for the manifest of the index in `folder` against its store and segments."""
    store = DocumentStore(folder / manifest.files["documents"].name)
    try:
        store.read_snapshot()
        recorded = store.settings.get(BUILT_AS)
        factories = {record.factory for record in store.segments.records()}
    finally:
        store.close()
    problems = _own_problems(manifest, factories)
    if isinstance(recorded, dict):
        problems += [
            f"the manifest says {key} {value!r}, the store recorded {recorded[key]!r} when the index was built"
            for key, value in built_as(manifest).items()
            if key in recorded and recorded[key] != value
        ]
        checked = "index type, metric, dimension, model and whitening agree with the store's record of the build"
    else:
        checked = (
            "metric, dimension and the segments' types agree (the store has no record of the build to compare the "
            "model with: the index was built before it was kept)"
        )
    problem = None
    if problems:
        problem = "; ".join(problems) + ": the manifest was edited or damaged; restore it or rebuild the index"
    return FileCheck("manifest", "manifest.json", True, problem, checked)


def _own_problems(manifest: Manifest, factories: set[str]) -> list[str]:
    """What the manifest says that no index this searchengine writes can hold, or its segments contradict."""
    problems = []
    if manifest.index.metric != METRIC:
        problems.append(f"the manifest says metric {manifest.index.metric!r}, but every index compares by {METRIC!r}")
    expected = manifest.whitening.k if manifest.whitening is not None else manifest.model.dimension
    if manifest.index.dimension != expected:
        source = "its whitening's k" if manifest.whitening is not None else "its model's dimension"
        problems.append(f"the manifest says dimension {manifest.index.dimension}, but {source} is {expected}")
    other = sorted(factories - {manifest.index.type, EXACT})
    if other:
        problems.append(
            f"the manifest says index type {manifest.index.type!r}, but the segments are of type {', '.join(other)}"
        )
    return problems
