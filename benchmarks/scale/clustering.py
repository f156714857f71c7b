"""Clustering quality on STS-B and time/memory at 100k-1M vectors (issue 5's measurements), written to JSON.

Quality: the unique sentences of the STS-B pairs are indexed with the bundled model (or an index of them is
reused), clustered with `SearchEngine.cluster`, and for pairs with gold score 5.0 and >= 4 (pairs of two
different texts) we count how often both sentences land in the same cluster, against chance for random pairs
with the same cluster sizes: sum over clusters of (size / n)^2.

Scale: the vectors of an existing index (e.g. the 100,000 Wikipedia sentences) are clustered as arrays; larger
sets are made from them by adding Gaussian noise to each real vector and re-normalising (copies). Each run is
a fresh process, so its peak RSS (getrusage) is its own; the RSS after loading the vectors is reported too.

Usage:
  .venv/bin/python benchmarks/scale/clustering.py quality --stsb-index DIR [--quick]
  .venv/bin/python benchmarks/scale/clustering.py scale --vectors-index DIR --n 1000000 --method kmeans --k 1000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.tables.store import DocumentStore, StoredDocument

from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.results import write_results
from benchmarks.scale.synthetic import noisy_copies
from searchengine import BuildSettings, SearchEngine
from searchengine.analysis.cluster_settings import ClusterSettings
from searchengine.analysis.clustering import cluster_labels

RESULTS = Path(__file__).resolve().parent / "results"
QUALITY_SETTINGS = [
    ClusterSettings("kmeans", k=100),
    ClusterSettings("kmeans", k=1000),
    ClusterSettings("kmeans", k=3000),
    ClusterSettings("community", threshold=0.75, min_size=10),
    ClusterSettings("community", threshold=0.75, min_size=2),
    ClusterSettings("community", threshold=0.85, min_size=2),
    ClusterSettings("agglomerative", threshold=0.6),
]
QUICK_SETTINGS = [ClusterSettings("kmeans", k=300), ClusterSettings("community", threshold=0.75, min_size=2)]


def read_pairs(data: Path, splits: list[str]) -> list[tuple[float, str, str]]:
    pairs = []
    for split in splits:
        for line in (data / "stsb" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()[1:]:
            score, left, right = line.split("\t")
            pairs.append((float(score), left, right))
    return pairs


def pair_rates(pairs: list[tuple[float, str, str]], cluster_of: dict[str, int], sizes: np.ndarray, n: int) -> dict:
    """Share of pairs (two different texts) whose sentences share a cluster, by gold band, and chance."""

    def together(band: list[tuple[float, str, str]]) -> float:
        hits = [cluster_of.get(a, -1) == cluster_of.get(b, -2) for _, a, b in band]
        return float(np.mean(hits)) if hits else float("nan")

    distinct = [p for p in pairs if p[1] != p[2]]
    bands = {
        "gold_5": [p for p in distinct if p[0] >= 5.0],
        "gold_ge_4": [p for p in distinct if p[0] >= 4.0],
        "gold_le_1": [p for p in distinct if p[0] <= 1.0],
    }
    rates = {f"same_cluster_{name}": together(band) for name, band in bands.items()}
    rates.update({f"pairs_{name}": len(band) for name, band in bands.items()})
    rates["chance"] = float(((sizes / n) ** 2).sum())
    return rates


def quality(args: argparse.Namespace) -> dict:
    splits = ["test"] if args.quick else ["train", "dev", "test"]
    pairs = read_pairs(args.data, splits)
    if args.stsb_index and IndexDirectory(args.stsb_index).exists():
        engine = SearchEngine.open(args.stsb_index)
    else:
        texts = sorted({text for _, a, b in pairs for text in (a, b)})
        target = args.stsb_index or Path(tempfile.mkdtemp()) / "stsb-index"
        engine = SearchEngine.build(texts, target, BuildSettings(progress=True))
    text_of = {doc.id: doc.text for doc in _all_documents(engine)}
    results = []
    for settings in QUICK_SETTINGS if args.quick else QUALITY_SETTINGS:
        started = time.perf_counter()
        clusters = engine.cluster(
            settings.method, k=settings.k, threshold=settings.threshold, min_size=settings.min_size, seed=settings.seed
        )
        seconds = time.perf_counter() - started
        cluster_of = {text_of[i]: c.id for c in clusters for i in c.member_ids}
        sizes = np.array([c.size for c in clusters], dtype=np.float64)
        row = {
            "method": settings.method,
            "parameters": settings.parameters(),
            "texts": len(engine),
            "clusters": len(clusters),
            "unclustered": len(engine) - int(sizes.sum()),
            "largest": int(sizes.max(initial=0)),
            "median_size": float(np.median(sizes)) if len(sizes) else 0.0,
            "seconds": round(seconds, 2),
            **pair_rates(pairs, cluster_of, sizes, len(engine)),
        }
        print(json.dumps(row), flush=True)
        results.append(row)
    return {"splits": splits, "results": results}


def _all_documents(engine: SearchEngine) -> list[StoredDocument]:
    """Every stored document (ids run 0..n-1 in an index built in one run)."""
    store = DocumentStore(engine.directory.file(engine.manifest, "documents"))
    try:
        return list(store.get(range(len(engine))).values())
    finally:
        store.close()


def scaled_vectors(index_dir: Path, n: int, noise: float, seed: int = 0) -> np.ndarray:
    """n vectors: the index's real vectors, then noisy re-normalised copies of them until there are n."""
    with SearchEngine.open(index_dir) as engine:
        real = np.concatenate([vectors for _, vectors in engine.stored_vectors()])
    return noisy_copies(real / np.linalg.norm(real, axis=1, keepdims=True), n, noise, seed)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scale(args: argparse.Namespace) -> dict:
    vectors = scaled_vectors(args.vectors_index, args.n, args.noise)
    loaded_rss = peak_rss_mib()
    settings = ClusterSettings(args.method, k=args.k, threshold=args.threshold, min_size=args.min_size)
    started, cpu_started = time.perf_counter(), time.process_time()
    labels = cluster_labels(vectors, settings)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    sizes = np.bincount(labels[labels >= 0]) if (labels >= 0).any() else np.zeros(0, dtype=np.int64)
    sizes = sizes[sizes > 0]
    return {
        "n": args.n,
        "real_vectors": int(min(args.n, IndexDirectory(args.vectors_index).read_manifest().count.vectors)),
        "noise_sigma": args.noise,
        "method": args.method,
        "parameters": settings.parameters(),
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu_seconds, 1),
        "load_average_1min": round(os.getloadavg()[0], 1),
        "peak_rss_mib": round(peak_rss_mib()),
        "rss_after_loading_vectors_mib": round(loaded_rss),
        "clusters": int(len(sizes)),
        "unclustered": int((labels < 0).sum()),
        "largest": int(sizes.max(initial=0)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    q = commands.add_parser("quality", help="STS-B same-cluster rates")
    q.add_argument("--data", type=Path, default=DATA)
    q.add_argument("--stsb-index", type=Path, help="reuse (or build here) an index of the STS-B sentences")
    q.add_argument("--quick", action="store_true", help="STS-B test only, two settings")
    q.add_argument("--out", type=Path, default=RESULTS / "clustering_quality.json")
    s = commands.add_parser("scale", help="time and peak memory of one clustering run")
    s.add_argument("--vectors-index", type=Path, required=True, help="index whose vectors are the real base")
    s.add_argument("--n", type=int, required=True)
    s.add_argument("--noise", type=float, default=0.02, help="per-dimension sigma of the copies' noise")
    s.add_argument("--method", default="kmeans")
    s.add_argument("--k", type=int)
    s.add_argument("--threshold", type=float)
    s.add_argument("--min-size", type=int)
    s.add_argument("--out", type=Path, default=RESULTS / "clustering_scale.jsonl")
    args = parser.parse_args()
    result = quality(args) if args.command == "quality" else scale(args)
    machine = {"machine": platform.processor() or platform.machine(), "python": sys.version.split()[0]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.command == "quality":
        write_results(args.out, {**machine, **result})
    else:
        with args.out.open("a", encoding="utf-8") as out:
            out.write(json.dumps({**machine, **result}) + "\n")
        print(json.dumps(result))


if __name__ == "__main__":
    main()
