"""Drift: recall@10 of an index whose template was trained on one distribution as data of another arrives, and after
`compact --retrain`; with the quantization error ratio `info` reports (indexer/vectors/template.py), to back the rule
that says when a retrain is worth it.

Training data: the first --base real all-MiniLM-L6-v2 vectors of the shared Wikipedia sentences, as cached in blocks
by benchmarks/scale/search_speed.py (--cache-dir). New data: the 2,552 real STS-B test sentences' vectors from the
same cache (another corpus: captions, headlines, forum posts), --queries of them held out as queries, the rest
added, then noisy copies of them (Gaussian noise of --sigma per dimension, renormalised) up to each step's size;
with --shift, every new vector is also moved along one fixed random direction by that much (renormalised), a
stronger drift. `--new-source wiki` adds more real Wikipedia vectors instead (the cached ones after the base and its
queries): no drift, the control. Steps add new data as a share of --base (--steps). At each step, on the index as it is (its template
trained on the Wikipedia vectors only) and on a copy of it after `compact --retrain` (merge(retrain=True): a
template trained on everything it holds): recall@10 against exact search (NumPy) over every live vector, from the
codes alone (rescore 0) and with the default rescoring depth, for --queries held-out STS-B vectors (the new
distribution) and as many held-out Wikipedia vectors (the old one); and the template's error ratio, what `info`
reports. What a retrain buys at a step is the difference. Encoding is left out; every write goes through the
engine's write path (writing_in_place, the merge policy, merge).

Usage:
  .venv/bin/python benchmarks/storage/drift.py --base 20000 --factory IVF64,PQ48x4
Writes benchmarks/storage/results/drift.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import faiss
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from searchengine.indexer.commit.index_directory import IndexDirectory  # noqa: E402
from searchengine.indexer.commit.live_write import writing_in_place  # noqa: E402
from searchengine.indexer.commit.manifest import ModelIdentity  # noqa: E402
from searchengine.indexer.commit.merge_policy import merge, merge_as_needed  # noqa: E402
from searchengine.indexer.commit.rewrite import commit_generation  # noqa: E402
from searchengine.indexer.tables.store import Document, DocumentStore  # noqa: E402
from searchengine.indexer.vectors.build_parts import create_vectors  # noqa: E402
from searchengine.indexer.vectors.originals import ORIGINALS_SETTING  # noqa: E402
from searchengine.indexer.vectors.rescore_depth import DEFAULT_RESCORE  # noqa: E402
from searchengine.indexer.vectors.segments import load_segment_set  # noqa: E402
from searchengine.indexer.vectors.template import RETRAIN_ERROR_RATIO, TemplateRecord  # noqa: E402

from benchmarks.storage.memory_check import DEFAULT_CACHE  # noqa: E402
from benchmarks.storage.rescoring import cached_queries, cached_wiki  # noqa: E402

K = 10
STSB_VECTORS = 2_552


def new_data(real: np.ndarray, count: int, sigma: float, shift: float, seed: int = 0) -> np.ndarray:
    """`count` vectors of the new distribution: the `real` ones first, then noisy copies of them; all moved by
    `shift` along one fixed random direction when it is not 0; renormalised."""
    rng = np.random.default_rng(seed)
    copies = real[rng.integers(0, len(real), max(0, count - len(real)))]
    noisy = copies + rng.normal(0, sigma, copies.shape).astype(np.float32)
    made = np.concatenate([real, noisy])[:count]
    if shift:
        direction = rng.normal(size=real.shape[1]).astype(np.float32)
        made = made + shift * direction / np.linalg.norm(direction)
    return made / np.linalg.norm(made, axis=1, keepdims=True)


def build(path: Path, corpus: np.ndarray, factory: str) -> IndexDirectory:
    """An index of `corpus` in one segment of `factory`, trained on it, with its template."""
    directory = IndexDirectory(path)
    with directory.writing() as generation:
        store = DocumentStore(generation.path("documents"), writable=True)
        change = store.add([Document(f"base {i}") for i in range(len(corpus))])
        vectors = create_vectors(factory, corpus.shape[1])
        vectors.train(corpus)
        vectors.add(corpus, np.asarray(change.ids))
        store.settings.set(ORIGINALS_SETTING, "float16")
        model = ModelIdentity("minilm", "default", "bench", "mean", True, corpus.shape[1], 256)
        commit_generation(generation, directory, store, vectors, None, model, {}, None, None)
    return directory


def add(directory: IndexDirectory, rows: np.ndarray, batch: int) -> None:
    """Add `rows` in writes of `batch` vectors, merging as the policy asks after each (as the engine does)."""
    for start in range(0, len(rows), batch):
        part = rows[start : start + batch]
        with writing_in_place(directory) as write:
            change = write.store.add([Document(f"new {start + i}") for i in range(len(part))])
            write.vectors.add(part, np.asarray(change.ids))
        merge_as_needed(directory)


def template(directory: IndexDirectory) -> TemplateRecord:
    store = DocumentStore(directory.path / directory.read_settings().files["documents"].name)
    try:
        return store.segments.template()
    finally:
        store.close()


def measure(directory: IndexDirectory, corpus: np.ndarray, queries: dict[str, np.ndarray]) -> dict:
    """Recall@10 against exact search from the codes alone and with default rescoring, per kind of query, and the
    template's figures."""
    manifest = directory.read_settings()
    store = DocumentStore(directory.path / manifest.files["documents"].name)
    try:
        records = store.segments.records()
    finally:
        store.close()
    segments = load_segment_set(directory.path, records, manifest.index.type, manifest.index.dimension)
    found = {}
    for kind, rows in queries.items():
        exact = np.argsort(-(rows @ corpus.T), axis=1, kind="stable")[:, :K]
        for depth in (0, DEFAULT_RESCORE):
            ids = segments.rescoring(depth).search(rows, K)[1]
            recall = float(np.mean([len(set(a) & set(b)) / K for a, b in zip(ids, exact)]))
            found[f"recall_{kind}_{'codes' if depth == 0 else f'rescore_{depth}'}"] = round(recall, 4)
    record = template(directory)
    return {
        "vectors": len(corpus),
        "segments": len(records),
        **found,
        "added_since_training": record.added,
        "added_share": round(record.added / len(corpus), 4),
        "error_ratio": None if record.added_error_ratio is None else round(record.added_error_ratio, 4),
        "template_trained_on": record.trained_vectors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=int, default=20_000, help="Wikipedia vectors the template is trained on")
    parser.add_argument("--factory", default="IVF64,PQ48x4")
    parser.add_argument("--steps", default="0,0.1,0.25,0.5,1", help="new data as shares of --base, in order")
    parser.add_argument("--queries", type=int, default=200, help="queries of each kind (STS-B, Wikipedia) held out")
    parser.add_argument("--new-source", choices=("stsb", "wiki"), default="stsb", help="where new data comes from")
    parser.add_argument("--sigma", type=float, default=0.02, help="noise of the copies of the STS-B vectors")
    parser.add_argument("--shift", type=float, default=0.0, help="move all new data along one direction this much")
    parser.add_argument("--batch", type=int, default=1000, help="vectors per write")
    parser.add_argument("--threads", type=int, default=1, help="FAISS threads (1: steadier on a loaded machine)")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "storage" / "results" / "drift.json")
    args = parser.parse_args()
    faiss.omp_set_num_threads(args.threads)
    steps = [float(step) for step in args.steps.split(",")]
    extra = int(max(steps) * args.base) if args.new_source == "wiki" else 0
    wiki = cached_wiki(args.cache_dir, args.base + args.queries + extra)
    base = wiki[: args.base]
    stsb = cached_queries(args.cache_dir, STSB_VECTORS)
    queries = {"new": stsb[: args.queries], "old": wiki[args.base : args.base + args.queries]}
    real_new = stsb[args.queries :] if args.new_source == "stsb" else wiki[args.base + args.queries :]
    new = new_data(real_new, int(max(steps) * args.base), args.sigma, args.shift)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        directory = build(Path(scratch) / "index", base, args.factory)
        print(f"built {args.factory} on {len(base):,} vectors in {time.perf_counter() - started:.0f} s", flush=True)
        added = 0
        for step in steps:
            wanted = int(step * args.base)
            add(directory, new[added:wanted], args.batch)
            added = wanted
            corpus = np.concatenate([base, new[:added]])
            row = {"step": step, "as_is": measure(directory, corpus, queries)}
            copy = IndexDirectory(Path(scratch) / f"retrained-{step}")
            shutil.copytree(directory.path, copy.path)
            started = time.perf_counter()
            merge(copy, retrain=True)
            row["retrain_seconds"] = round(time.perf_counter() - started, 1)
            row["retrained"] = measure(copy, corpus, queries)
            shutil.rmtree(copy.path)
            rows.append(row)
            print(json.dumps(row), flush=True)
    result = {
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "factory": args.factory,
        "base": args.base,
        "new_source": args.new_source,
        "sigma": args.sigma,
        "shift": args.shift,
        "retrain_error_ratio": RETRAIN_ERROR_RATIO,
        "machine": f"{platform.machine()}, {platform.processor() or 'unknown cpu'}, FAISS threads {args.threads}",
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
