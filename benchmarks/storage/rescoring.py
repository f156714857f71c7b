"""Compressed codes with exact rescoring from the memory-mapped originals: recall@10 and query p50 per index type.

Vectors: the real all-MiniLM-L6-v2 vectors of the shared Wikipedia sentences (unsup/wiki_sentences.txt.gz), as
cached in blocks of 5,000 by benchmarks/scale/search_speed.py's `cached_embeddings` (--cache-dir), the first
--vectors of them; queries: the STS-B test sentences' vectors from the same cache (none of them in the corpus).
Each index type is built through the engine's write path (one segment, trained on the corpus where it needs it,
originals written beside compressed codes) and searched one query at a time on one thread, as SearchEngine
searches one query, after a warm-up; encoding is left out. Recall@10 is against exact search (NumPy) of the same
vectors. For types that keep originals each --rescore depth is measured, 0 being the codes alone.

Usage:
  .venv/bin/python benchmarks/storage/rescoring.py --vectors 25000
Writes benchmarks/storage/results/rescoring.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import faiss
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from searchengine.indexer.commit.index_directory import IndexDirectory  # noqa: E402
from searchengine.indexer.commit.manifest import ModelIdentity  # noqa: E402
from searchengine.indexer.commit.rewrite import commit_generation  # noqa: E402
from searchengine.indexer.tables.store import Document, DocumentStore  # noqa: E402
from searchengine.indexer.vectors.build_parts import create_vectors  # noqa: E402
from searchengine.indexer.vectors.segments import load_segment_set  # noqa: E402

K = 10
BLOCK = re.compile(r"wiki-[0-9a-f]+-(\d+)-(\d+)-[0-9a-f]+\.npy")


def cached_wiki(cache_dir: Path, count: int) -> np.ndarray:
    """The first `count` cached Wikipedia vectors, from consecutive blocks starting at 0."""
    blocks = {int(m.group(1)): path for path in cache_dir.glob("wiki-*.npy") if (m := BLOCK.fullmatch(path.name))}
    parts, start = [], 0
    while start < count and start in blocks:
        part = np.load(blocks[start])
        parts.append(part)
        start += len(part)
    if start < count:
        raise SystemExit(f"only {start} cached Wikipedia vectors in {cache_dir}; run benchmarks/scale/search_speed.py")
    vectors = np.concatenate(parts)[:count].astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def cached_queries(cache_dir: Path, count: int) -> np.ndarray:
    (path,) = cache_dir.glob("stsb-queries-*.npy")
    queries = np.load(path)[:count].astype(np.float32)
    return queries / np.linalg.norm(queries, axis=1, keepdims=True)


def build(path: Path, corpus: np.ndarray, factory: str) -> tuple[float, dict[str, int]]:
    """Build one segment of `factory`; returns build seconds and the bytes of its FAISS and originals files."""
    started = time.perf_counter()
    directory = IndexDirectory(path)
    with directory.writing() as generation:
        store = DocumentStore(generation.path("documents"), writable=True)
        change = store.add([Document(str(i)) for i in range(len(corpus))])
        vectors = create_vectors(factory, corpus.shape[1])
        if vectors.needs_training:
            vectors.train(corpus[np.random.default_rng(0).permutation(len(corpus))[:100_000]])
        vectors.add(corpus, np.asarray(change.ids))
        model = ModelIdentity("minilm", "default", "bench", "mean", True, corpus.shape[1], 256)
        commit_generation(generation, directory, store, vectors, None, model, {}, None, None)
    seconds = time.perf_counter() - started
    sizes = {"faiss": 0, "originals": 0}
    for entry in path.glob("segment.*"):
        sizes["originals" if entry.suffix == ".npy" else "faiss"] += entry.stat().st_size
    return seconds, sizes


def measure(path: Path, queries: np.ndarray, exact: np.ndarray, rescore: int) -> dict[str, float]:
    manifest = IndexDirectory(path).read_manifest()
    store = DocumentStore(path / manifest.files["documents"].name)
    segments = load_segment_set(path, store.segments.records(), manifest.index.type, manifest.index.dimension)
    store.close()
    searcher = segments.rescoring(rescore)
    for query in queries[:20]:
        searcher.search(query[None], K)
    times, found = [], []
    for query in queries:
        started = time.perf_counter()
        _, ids = searcher.search(query[None], K)
        times.append((time.perf_counter() - started) * 1000)
        found.append(ids[0])
    recall = float(np.mean([len(set(f) & set(e)) / K for f, e in zip(found, exact)]))
    return {"rescore": rescore, "recall_at_10": round(recall, 4), "p50_ms": round(statistics.median(times), 3),
            "p99_ms": round(float(np.percentile(times, 99)), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vectors", type=int, default=25_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "searchengine-bench" / "blocks")
    parser.add_argument("--types", nargs="*", default=["Flat", "HNSW32", "HNSW32,SQ8", "IVF{lists},PQ48", "SQ8", "LSH"])
    parser.add_argument("--rescore", type=int, nargs="*", default=[0, 20, 50, 100, 200])
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("results") / "rescoring.json")
    args = parser.parse_args()
    faiss.omp_set_num_threads(1)
    corpus = cached_wiki(args.cache_dir, args.vectors)
    queries = cached_queries(args.cache_dir, args.queries)
    exact = np.argsort(-(queries @ corpus.T), axis=1, kind="stable")[:, :K]
    lists = max(16, int(4 * np.sqrt(len(corpus))) // 16 * 16)
    results = []
    with tempfile.TemporaryDirectory(prefix="rescoring-") as scratch:
        for template in args.types:
            factory = template.format(lists=lists)
            path = Path(scratch) / re.sub(r"\W", "_", factory)
            seconds, sizes = build(path, corpus, factory)
            depths = args.rescore if sizes["originals"] else [0]
            runs = [measure(path, queries, exact, depth) for depth in depths]
            results.append({"index": factory, "build_s": round(seconds, 1), "bytes": sizes, "runs": runs})
            print(json.dumps(results[-1]), flush=True)
            write_report(args, corpus, queries, results)
    print(json.dumps(results))


def write_report(args: argparse.Namespace, corpus: np.ndarray, queries: np.ndarray, results: list[dict]) -> None:
    """The JSON result so far (written after each index type, so a long run leaves what it measured)."""
    report = {
        "what": "recall@10 against exact search and p50/p99 of one query on one thread, encoding left out",
        "vectors": len(corpus),
        "queries": len(queries),
        "source": "real all-MiniLM-L6-v2 vectors of the shared Wikipedia sentences; STS-B test sentences as queries",
        "machine": f"{platform.processor() or platform.machine()}, loaded (shared with other work)",
        "command": " ".join(["benchmarks/storage/rescoring.py", *sys.argv[1:]]),
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
