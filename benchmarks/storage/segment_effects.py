"""What segments cost searches and disk, against the same index compacted or built afresh.

Two measurements on N documents (default 100,000) whose vectors come with them (no encoding), from the real
vectors of --vectors-from and their noisy copies (synthetic.py), in one process:

many-adds  After --adds single-document writes (each one transaction and one segment, merged as the policy
           asks, as `SearchEngine.add` does), the dense query p50 over the segments and recall@10 against exact
           search of every live vector; then the same after `compact` (one segment). Queries are vectors (held-out
           noisy copies), searched one at a time on one thread (as SearchEngine searches one query) after a
           warm-up, so encoding is left out.
half       After deleting half the documents in one write and `compact`, the index directory's size against a
           fresh build of the half that is left (same vectors, same texts).

Usage:
  .venv/bin/python benchmarks/storage/segment_effects.py --vectors-from /tmp/wc-work/vectors-source-2000
Writes benchmarks/storage/results/segment_effects.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.commit.merge_policy import merge_as_needed
from searchengine.indexer.tables.store import Document, DocumentStore
from searchengine.indexer.vectors.segments import load_segment_set

from benchmarks.harness.results import write_results
from benchmarks.scale.index_scale import stored_vectors
from benchmarks.scale.synthetic import noisy_copies
from searchengine.engine.index_writer import compact_index
from searchengine.engine.indexing import Chunk, IndexSettings, build_index
from searchengine.engine.search import one_thread

RESULTS = Path(__file__).resolve().parent / "results" / "segment_effects.json"


def build(path: Path, vectors: np.ndarray, ids: np.ndarray) -> None:
    """An index of `vectors` (documents "document <id>"), built as index_scale.py --part stages builds one."""
    from searchengine.encoding.encoder import Encoder

    documents = [Document(f"document {int(i)}") for i in ids]
    chunks = [Chunk(documents[s : s + 2048], vectors[s : s + 2048]) for s in range(0, len(documents), 2048)]
    encoder = Encoder()  # names the model in the manifest; encodes nothing here
    build_index(IndexDirectory(path), chunks, encoder, IndexSettings(passages=False), len(ids))


def segment_set(directory: IndexDirectory):
    manifest = directory.read_settings()
    store = DocumentStore(directory.path / manifest.files["documents"].name)
    store.read_snapshot()
    records, tombstones = store.segments.records(), store.tombstones.ids()
    store.close()
    return load_segment_set(directory.path, records, manifest.index.type, manifest.index.dimension), tombstones


def query_cost(directory: IndexDirectory, queries: np.ndarray, truth: np.ndarray) -> dict:
    vectors, tombstones = segment_set(directory)
    excluded = tombstones if len(tombstones) else None
    seconds, found = [], []
    with one_thread():  # as SearchEngine runs a single query (searchengine/engine/search.py)
        for query in queries[:10]:
            vectors.search(query[None], 10, excluded=excluded)
        for query in queries:
            started = time.perf_counter()
            _, ids = vectors.search(query[None], 10, excluded=excluded)
            seconds.append(time.perf_counter() - started)
            found.append(ids[0])
    recall = float(np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, truth)]))
    return {
        "segments": len(vectors.segments),
        "p50_ms": round(statistics.median(seconds) * 1000, 3),
        "recall_at_10": round(recall, 4),
    }


def exact_truth(vectors: np.ndarray, ids: np.ndarray, queries: np.ndarray) -> np.ndarray:
    scores = queries @ vectors.T
    return ids[np.argsort(-scores, axis=1, kind="stable")[:, :10]]


def directory_bytes(path: Path) -> int:
    return sum(entry.stat().st_size for entry in path.iterdir() if entry.is_file() and entry.name != ".lock")


def many_adds(work: Path, real: np.ndarray, n: int, adds: int, queries: int) -> dict:
    everything = noisy_copies(real, n + adds + queries, seed=1)
    base, added, probes = everything[:n], everything[n : n + adds], everything[n + adds :]
    path = work / "many-adds"
    build(path, base, np.arange(n))
    directory = IndexDirectory(path)
    started = time.perf_counter()
    for number, vector in enumerate(added):
        with writing_in_place(directory) as write:
            change = write.store.add([Document(f"added {number}")])
            write.vectors.add(vector[None], np.asarray(change.ids))
        merge_as_needed(directory)
    adding = time.perf_counter() - started
    truth = exact_truth(everything[: n + adds], np.arange(n + adds), probes)
    after_adds = query_cost(directory, probes, truth)
    started = time.perf_counter()
    compact_index(directory)  # what `searchengine compact` does: one segment, the store vacuumed
    compacting = time.perf_counter() - started
    compacted = query_cost(directory, probes, truth)
    return {
        "adds": adds,
        "adding_s": round(adding, 2),
        "after_adds": after_adds,
        "compact_s": round(compacting, 2),
        "compacted": compacted,
        "p50_ratio": round(after_adds["p50_ms"] / compacted["p50_ms"], 3),
        "recall_difference": round(compacted["recall_at_10"] - after_adds["recall_at_10"], 4),
    }


def half(work: Path, real: np.ndarray, n: int) -> dict:
    vectors = noisy_copies(real, n, seed=2)
    path = work / "half"
    build(path, vectors, np.arange(n))
    directory = IndexDirectory(path)
    before = directory_bytes(path)
    gone = np.arange(0, n, 2)
    with writing_in_place(directory) as write:
        write.store.tombstones.add(write.store.delete(gone.tolist()))
    started = time.perf_counter()
    compact_index(directory)  # what `searchengine compact` does: one segment, the store vacuumed
    compacting = time.perf_counter() - started
    after = directory_bytes(path)
    kept = np.arange(1, n, 2)
    fresh = work / "fresh-half"
    build(fresh, vectors[kept], kept)
    fresh_bytes = directory_bytes(fresh)
    return {
        "documents_before": n,
        "bytes_before": before,
        "bytes_after_delete_and_compact": after,
        "compact_s": round(compacting, 2),
        "bytes_fresh_build_of_the_rest": fresh_bytes,
        "ratio": round(after / fresh_bytes, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors-from", type=Path, required=True, help="An index the project built (Flat).")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--adds", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=RESULTS)
    arguments = parser.parse_args()
    real = stored_vectors(arguments.vectors_from)
    work = Path(tempfile.mkdtemp(prefix="segment-effects-"))
    try:
        row = {
            "machine": {"cpu": platform.processor() or _cpu(), "cores": _cores()},
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "n": arguments.n,
            "vectors": f"{arguments.n:,}: noisy copies of the {len(real):,} real vectors of {arguments.vectors_from}",
            "many_adds": many_adds(work, real, arguments.n, arguments.adds, arguments.queries),
            "half_deleted": half(work, real, arguments.n),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write_results(arguments.out, row)
    print(json.dumps(row, indent=2))


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def _cores() -> int:
    import os

    return os.cpu_count() or 0


if __name__ == "__main__":
    main()
