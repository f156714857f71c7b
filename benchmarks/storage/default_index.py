"""The default index at 100,000 documents beside chroma, on the same vectors in the same run (issue 42): which type
`--index auto` should pick so a dense query is within 2x chroma's p50 at recall@10 >= 0.98.

Vectors. The Wikipedia sentences (unsup/wiki_sentences.txt.gz) embedded with the engine's default Encoder (the
bundled all-MiniLM-L6-v2, 384-d), cached as .npy blocks of 5,000 under --cache-dir (a first run encodes them;
benchmarks/scale/search_speed.py's cache); the first --real of them, then noisy copies to --docs vectors
(benchmarks/scale/synthetic.py: a copy is a real vector plus Gaussian noise, sigma --noise, renormalised).
Queries: held-out STS-B test sentences (none a Wikipedia line), the first --queries. Ground truth: exact inner
product top-10 (faiss IndexFlatIP) over the same vectors; recall@10 = |found & exact| / 10, averaged.

Variants. Ours: an index directory per type built by SearchEngine.build (store and one FAISS segment; the texts
are the sentences, a copy's with " [copy j]", and the encoder hands back their cached vectors), Flat (exact),
HNSW32 at each efSearch of --ef, and any further --factories; a type that keeps originals (HNSW32,SQ8) at each
depth of --rescore too (candidates rescored exactly from its float16 originals, the query's `--rescore`). --keep
keeps the index directories (and each build's seconds beside it) for a later run to reuse. Each query is
searched alone through the engine's dense path less encoding: dense_rankings over the reader's segments, then the
hits' rows read from the store (hits_of), as SearchEngine.search does after encoding; `search_p50_ms` times the
first part (the FAISS search through the engine's segments, and any rescoring) and `fetch_p50_ms` the second.
FAISS runs on one thread (a one-query search on this loaded 2-core machine loses to OpenMP's hand-offs). chroma:
benchmarks/storage/chroma_peer.py, run by the --peer-python of a separate environment that has chromadb, in a
subprocess, on the same .npy vectors and queries, with chroma's defaults (HNSW M 16, search ef 10), each query
alone through collection.query. The variants take turns within each of --rounds rounds, in an order that rotates
(benchmarks/harness/rounds.py); p50/p99 are over every query of every round.

Usage:
  .venv/bin/python benchmarks/storage/default_index.py --peer-python ../peers-venv/bin/python \
      --out benchmarks/storage/results/default_index.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from searchengine.indexer.vectors.originals import keeps_originals
from searchengine.indexer.vectors.vector_index import (
    HNSW_EF_CONSTRUCTION,
    HNSW_EF_SEARCH,
    VectorIndex,
    default_factory,
    hnsw_ef_search,
)

from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import command_line, machine_record
from benchmarks.harness.results import write_results
from benchmarks.harness.rounds import percentile_ms, rotation
from benchmarks.scale.search_speed import CachedEncoder, cached_embeddings, read_stsb_test, read_wiki
from benchmarks.scale.synthetic import DEFAULT_NOISE, noisy_copies
from searchengine import BuildSettings, Encoder, SearchEngine
from searchengine.engine.search import dense_rankings, hits_of

K = 10
PEER = Path(__file__).resolve().parent / "chroma_peer.py"


def real_vectors(encoder: Encoder, data: Path, real: int, cache_dir: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The first `real` Wikipedia sentences, their vectors and the held-out query vectors, encoded once and cached."""
    wiki = read_wiki(data, real)
    left, right, _ = read_stsb_test(data, None)
    wiki_set = set(wiki)
    queries = [text for text in dict.fromkeys(left + right) if text not in wiki_set]
    query_vectors, _ = cached_embeddings(encoder, queries, cache_dir, "stsb-queries")
    vectors, _ = cached_embeddings(encoder, wiki, cache_dir, "wiki")
    return wiki, vectors, query_vectors


def exact_top(vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    flat = faiss.IndexFlatIP(vectors.shape[1])
    flat.add(vectors)
    return flat.search(queries, K)[1]


def recall(found: np.ndarray | list, truth: np.ndarray) -> float:
    return float(np.mean([len(set(map(int, f)) & set(map(int, t))) / K for f, t in zip(found, truth, strict=True)]))


def our_variants(
    factories: list[str], efs: list[int], rescores: list[int]
) -> list[tuple[str, str, int | None, int | None]]:
    """(name, factory, efSearch, rescore) for each variant of ours: every efSearch of a graph type, and every
    rescore depth of a type that keeps originals (None: the type's default)."""
    variants = []
    for factory in factories:
        depths = rescores if keeps_originals(factory) else [None]
        for ef in efs if factory.startswith("HNSW") else [None]:
            for depth in depths:
                name = factory + ("" if ef is None else f" ef{ef}") + ("" if depth is None else f" rescore{depth}")
                variants.append((name, factory, ef, depth))
    return variants


def corpus_texts(wiki: list[str], count: int) -> list[str]:
    """A distinct text per vector: the sentences, then each copy's sentence with " [copy j]"."""
    return [wiki[row % len(wiki)] + ("" if row < len(wiki) else f" [copy {row // len(wiki)}]") for row in range(count)]


def build(
    encoder: Encoder, texts: list[str], vectors: np.ndarray, factory: str, path: Path
) -> tuple[SearchEngine, float | None]:
    """An index directory of `texts` with `vectors`, of type `factory`, opened; and the build's seconds. A build
    left at `path` by an earlier run with --keep is opened instead, its seconds those it recorded (None if none)."""
    timing = path.with_name(path.name + ".build_s.json")
    if path.exists():
        seconds = json.loads(timing.read_text())["build_s"] if timing.exists() else None
    else:
        started = time.perf_counter()
        SearchEngine.build(texts, path, BuildSettings(index=factory), encoder=CachedEncoder(encoder, texts, vectors))
        seconds = time.perf_counter() - started
        timing.write_text(json.dumps({"build_s": seconds, "load_average": os.getloadavg()}))
    engine = SearchEngine.open(path, encoder=encoder)
    if len(engine.reader.vectors.segments) != 1:
        raise SystemExit(f"{path}: a fresh build should write one segment")
    return engine, seconds


def segment_index(engine: SearchEngine) -> VectorIndex:
    return engine.reader.vectors.segments[0].index


def set_ef(engine: SearchEngine, ef: int | None) -> None:
    if ef is not None:
        faiss.downcast_index(segment_index(engine).index.index).hnsw.efSearch = ef


def timed_queries(
    engine: SearchEngine, rescore: int | None, queries: np.ndarray, row_of: dict[str, int]
) -> tuple[list, list, list, list]:
    """Per query: seconds of the engine's dense path less encoding, the process's CPU seconds during it, seconds of
    its vector search part (the rest is reading the hits' rows), rows found; `rescore` candidates rescored from the
    originals where the segment keeps them (None: its type's default), as `--rescore` sets it."""
    reader = engine.reader
    vectors = reader.vectors if rescore is None else reader.vectors.rescoring(rescore)
    seconds, cpu_seconds, searching, found = [], [], [], []
    for query in queries:
        vector = query[None, :]
        begin, cpu = time.perf_counter(), time.process_time()
        rankings = dense_rankings(vectors, reader.store, vector, K)
        searched = time.perf_counter()
        hits = hits_of(reader.store, rankings)[0]
        seconds.append(time.perf_counter() - begin)
        cpu_seconds.append(time.process_time() - cpu)
        searching.append(searched - begin)
        found.append([row_of[hit.text] for hit in hits])
    return seconds, cpu_seconds, searching, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--real", type=int, default=100_000, help="real vectors (the rest are noisy copies)")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ef", default="16,32,64,128,256,512", help="HNSW efSearch values")
    parser.add_argument("--factories", default="Flat;HNSW32", help="our types, ';'-separated")
    parser.add_argument(
        "--rescore", default="", help="candidates rescored from the originals, ','-separated, for types that keep them"
    )
    parser.add_argument("--keep", type=Path, help="build the indexes here and keep them; reuse those already there")
    parser.add_argument("--noise", type=float, default=DEFAULT_NOISE)
    parser.add_argument("--peer-python", type=Path, help="a python with chromadb (skip chroma without it)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "searchengine-bench" / "blocks")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    faiss.omp_set_num_threads(1)

    encoder = Encoder()
    wiki, real, query_vectors = real_vectors(encoder, args.data, args.real, args.cache_dir)
    vectors = noisy_copies(real, args.docs, args.noise)
    texts = corpus_texts(wiki, len(vectors))
    row_of = {text: row for row, text in enumerate(texts)}
    queries = np.ascontiguousarray(query_vectors[: args.queries])
    truth = exact_top(vectors, queries)
    results: dict = {
        "machine": machine_record(),
        "command": command_line(),
        "data": {
            "docs": len(vectors),
            "real_vectors": len(real),
            "noisy_copies": len(vectors) - len(real),
            "noise_sigma": args.noise,
            "queries": len(queries),
            "query_source": "STS-B test sentences (distinct, none a Wikipedia line)",
            "model": "bundled all-MiniLM-L6-v2 (the default Encoder)",
        },
        "rounds": args.rounds,
        "faiss_threads": 1,
        "load_average_start": os.getloadavg(),
        "hnsw_defaults": {
            "ef_construction": HNSW_EF_CONSTRUCTION,
            "ef_search": HNSW_EF_SEARCH,
            "ef_search_at_docs": hnsw_ef_search(len(vectors)),
        },
        "auto_picks": default_factory(len(vectors), vectors.shape[1]),
        "variants": {},
    }
    peer = None
    with tempfile.TemporaryDirectory(prefix="default-index-") as scratch:
        if args.peer_python is not None:
            np.save(Path(scratch) / "vectors.npy", vectors)
            np.save(Path(scratch) / "queries.npy", queries)
            peer = subprocess.Popen(
                [str(args.peer_python), str(PEER), "--vectors", f"{scratch}/vectors.npy", "--queries",
                 f"{scratch}/queries.npy", "--k", str(K)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )  # fmt: skip
            ready = peer.stdout.readline().split()
            results["variants"]["chroma"] = {
                "build_s": float(ready[1]), "chromadb": ready[2], "seconds": [], "cpu_seconds": []
            }  # fmt: skip
            print(f"chroma {ready[2]} built in {ready[1]} s", flush=True)
        built: dict[str, SearchEngine] = {}
        rescores = [int(depth) for depth in args.rescore.split(",") if depth] or [None]
        variants = our_variants(args.factories.split(";"), [int(ef) for ef in args.ef.split(",")], rescores)
        for name, factory, ef, depth in variants:
            if factory not in built:
                path = (args.keep or Path(scratch)) / factory.replace(",", "_")
                path.parent.mkdir(parents=True, exist_ok=True)
                built[factory], seconds = build(encoder, texts, vectors, factory, path)
                print(f"{factory} built in {seconds} s", flush=True)
                results["variants"].setdefault(name, {})["build_s"] = None if seconds is None else round(seconds, 2)
            record = results["variants"].setdefault(name, {})
            record.update({"factory": factory, "ef_search": ef, "rescore": depth})
            record.update({"seconds": [], "cpu_seconds": [], "search_seconds": []})
        names = [name for name, *_ in variants] + (["chroma"] if peer is not None else [])
        settings = {name: (factory, ef, depth) for name, factory, ef, depth in variants}
        for round_number in range(args.rounds):
            for name in rotation(names, round_number):
                record = results["variants"][name]
                if name == "chroma":
                    peer.stdin.write("round\n")
                    peer.stdin.flush()
                    answer = json.loads(peer.stdout.readline())
                    record["seconds"] += answer["seconds"]
                    record["cpu_seconds"] += answer["cpu_seconds"]
                    if answer["ids"] is not None:
                        record["recall_at_10"] = round(recall(answer["ids"], truth), 4)
                    continue
                factory, ef, depth = settings[name]
                set_ef(built[factory], ef)
                seconds, cpu_seconds, searching, found = timed_queries(built[factory], depth, queries, row_of)
                record["seconds"] += seconds
                record["cpu_seconds"] += cpu_seconds
                record["search_seconds"] += searching
                record["recall_at_10"] = round(recall(found, truth), 4)
            results.setdefault("load_average_after_rounds", []).append(os.getloadavg())
            print(f"round {round_number + 1}/{args.rounds} done", flush=True)
        if peer is not None:
            peer.stdin.close()
            peer.wait(timeout=60)
        for engine in built.values():
            engine.close()
    chroma_p50 = chroma_cpu_p50 = None
    for name, record in results["variants"].items():
        seconds = record.pop("seconds")
        record["p50_ms"] = percentile_ms(seconds, 50, 3)
        record["p99_ms"] = percentile_ms(seconds, 99, 3)
        record["cpu_p50_ms"] = percentile_ms(record.pop("cpu_seconds"), 50, 3)
        if "search_seconds" in record:
            searching = record.pop("search_seconds")
            record["search_p50_ms"] = percentile_ms(searching, 50, 3)
            record["fetch_p50_ms"] = percentile_ms(np.subtract(seconds, searching), 50, 3)
        if name == "chroma":
            chroma_p50, chroma_cpu_p50 = record["p50_ms"], record["cpu_p50_ms"]
    for name, record in results["variants"].items():
        if chroma_p50:
            record["p50_vs_chroma"] = round(record["p50_ms"] / chroma_p50, 2)
            record["cpu_p50_vs_chroma"] = round(record["cpu_p50_ms"] / chroma_cpu_p50, 2)
        print(f"{name:>16}: recall@10 {record.get('recall_at_10')}  p50 {record['p50_ms']} ms  p99 "
              f"{record['p99_ms']} ms" + (f"  {record['p50_vs_chroma']}x chroma" if chroma_p50 else ""))  # fmt: skip
    if args.out:
        write_results(args.out, results)
    print(json.dumps({name: {k: v for k, v in r.items() if k != "chromadb"} for name, r in results["variants"].items()}))


if __name__ == "__main__":
    main()
