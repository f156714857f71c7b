"""Does splitting long documents into passages help retrieval? BEIR sets indexed with and without passages.

For each set: how many documents exceed the model's limit (token counts of `title + " " + text`, special tokens
left out, against the tokens one vector holds), then one index per variant (--no-passages, and --passages with
each overlap asked for), each timed, evaluated as `searchengine eval retrieval -d DIR` evaluates it (nDCG@10,
Recall@100, MRR@10; a hit whose id is the query's is dropped), and its single-query latency measured: the same
queries, one at a time, interleaved across the variants so that load on a shared machine falls on all alike.

Each variant is evaluated in dense and in hybrid mode (MODES). Its index and its results (<work>/<set>/<variant>.json)
are kept, and a run that finds them picks them up instead of building again: a run killed part way (the machine
is shared) resumes where it stopped. An index found without results (built elsewhere, e.g. the one-vector index of
docs/retrieval.md moved to <work>/<set>/no-passages) is evaluated, its build time left null.

Usage (from the repository root; the indexes go to --work, outside the repository):
  .venv/bin/python benchmarks/retrieval/passages.py --sets nfcorpus,arguana --overlaps 0,32,64 \
      --results benchmarks/retrieval/results/passages.json
  .venv/bin/python benchmarks/retrieval/passages.py --sets nfcorpus --overlaps 32 --headings \
      --results benchmarks/retrieval/results/passages_headings_nfcorpus.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import cpu_name
from benchmarks.harness.results import write_results
from searchengine import BuildSettings, SearchEngine
from searchengine.encoding.encoder import Encoder
from searchengine.evaluation.retrieval import evaluate_search, read_corpus, read_qrels, read_queries

MODES = ("dense", "hybrid")
"""The search modes each variant is evaluated in (the keyword side indexes whole documents either way)."""
LATENCY_QUERIES = 200
WARMUP_QUERIES = 20


def token_counts(encoder: Encoder, texts: list[str]) -> dict[str, float]:
    """How long the corpus's documents are in the model's tokens, and what share exceeds one vector's worth."""
    lengths = np.array(
        [len(ids) for ids in encoder.tokenizer(texts, add_special_tokens=False)["input_ids"]], dtype=np.int64
    )
    return {
        "documents": len(texts),
        "tokens_per_vector": encoder.text_tokens,
        "mean_tokens": float(lengths.mean()),
        "median_tokens": float(np.median(lengths)),
        "p90_tokens": float(np.percentile(lengths, 90)),
        "max_tokens": int(lengths.max()),
        "share_over_limit": float((lengths > encoder.text_tokens).mean()),
    }


def build(
    encoder: Encoder, corpus: Path, target: Path, overlap: int | None, headings: bool = False
) -> tuple[SearchEngine, dict]:
    """Index `corpus` (ids from _id, title before text) with passages of `overlap` tokens, or none when None;
    `headings`: each passage embedded after the document's title (the first, which starts with it, alone)."""
    load = os.getloadavg()[0]
    started = time.perf_counter()
    engine = SearchEngine.build(
        corpus,
        target,
        BuildSettings(
            id_field="_id",
            title_field="title",
            passages=overlap is not None,
            passage_overlap=overlap,
            passage_headings=headings,
        ),
        encoder=encoder,
    )
    seconds = time.perf_counter() - started
    info = engine.info()
    return engine, {
        "passages": overlap is not None,
        "overlap": overlap,
        "headings": headings,
        "index_seconds": seconds,
        "load_before_index": load,
        "load_after_index": os.getloadavg()[0],
        "documents": info.documents,
        "vectors": info.vectors,
        "vectors_per_document": info.vectors / info.documents,
        "documents_split": engine.last_report.split,
        "texts_truncated": engine.last_report.truncated,
    }


def evaluate(engine: SearchEngine, queries: Path, qrels: Path, mode: str) -> dict:
    """The scores `searchengine eval retrieval -d DIR --mode MODE` prints for this index."""
    query_ids, query_texts = read_queries(queries)
    judged = read_qrels(qrels, query_ids, engine.external_ids(), f"index {engine.path}")

    def search(texts: list[str], depth: int) -> list[list[str]]:
        return [[hit.external_id or "" for hit in hits] for hits in engine.search_batch(texts, depth, mode=mode)]

    started = time.perf_counter()
    scores = evaluate_search(search, query_ids, query_texts, judged, len(engine))
    return {**scores.as_dict(), "eval_seconds": time.perf_counter() - started}


def latencies(engines: list[SearchEngine], texts: list[str]) -> list[dict]:
    """Median and p90 milliseconds of one dense `search(text, k=10)` per engine, the engines taking turns per query."""
    for text in texts[:WARMUP_QUERIES]:
        for engine in engines:
            engine.search(text, k=10, mode="dense")
    timings: list[list[float]] = [[] for _ in engines]
    for text in texts[:LATENCY_QUERIES]:
        for engine, own in zip(engines, timings):
            started = time.perf_counter()
            engine.search(text, k=10, mode="dense")
            own.append((time.perf_counter() - started) * 1000)
    return [
        {"query_ms_median": statistics.median(own), "query_ms_p90": float(np.percentile(own, 90)), "queries": len(own)}
        for own in timings
    ]


def run_set(name: str, data: Path, work: Path, overlaps: list[int], encoder: Encoder, headings: bool = False) -> dict:
    """Every variant of one set: no passages and passages of each overlap; with `headings`, instead, passages of
    each overlap without and with the title embedded before each passage (searchengine.encoding.passage_headings)."""
    folder = data / name
    corpus, queries, qrels = folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels_test.tsv"
    _, texts = read_corpus(corpus)
    result = {"set": name, "tokens": token_counts(encoder, texts), "variants": []}
    print(name, result["tokens"], file=sys.stderr)
    engines = []
    variants = (
        [(o, t) for o in overlaps for t in (False, True)]
        if headings
        else [(None, False)] + [(o, False) for o in overlaps]
    )
    for overlap, titled in variants:
        label = "no-passages" if overlap is None else f"passages-overlap-{overlap}" + ("-headings" if titled else "")
        saved, directory = work / name / f"{label}.json", work / name / label
        if saved.is_file():
            engine, variant = SearchEngine.open(directory, encoder=encoder), json.loads(saved.read_text())
        elif (directory / "manifest.json").is_file():  # built before, its build not timed by this script
            engine = SearchEngine.open(directory, encoder=encoder)
            variant = {"passages": overlap is not None, "overlap": overlap, "index_seconds": None}
        else:
            engine, variant = build(encoder, corpus, directory, overlap, titled)
        for mode in MODES:
            if not isinstance(variant.get(mode), dict):
                variant[mode] = evaluate(engine, queries, qrels, mode)
                write_results(saved, variant)
        print(name, label, variant, file=sys.stderr)
        result["variants"].append({"name": label, **variant})
        engines.append(engine)
    _, query_texts = read_queries(queries)
    for variant, timing in zip(result["variants"], latencies(engines, query_texts)):
        variant.update(timing)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="nfcorpus,arguana")
    parser.add_argument("--data", type=Path, default=DATA / "retrieval")
    parser.add_argument("--work", type=Path, default=Path("/tmp/passages-benchmark"))
    parser.add_argument("--overlaps", default="0,32,64", help="Overlaps (tokens) of the passage variants.")
    parser.add_argument("--results", type=Path, default=None, help="Write the results here as JSON.")
    parser.add_argument(
        "--headings", action="store_true",
        help="Compare passages without and with the title embedded before each (no no-passages variant).",
    )  # fmt: skip
    args = parser.parse_args()
    encoder = Encoder()
    overlaps = [int(value) for value in args.overlaps.split(",") if value]
    started = time.perf_counter()
    sets = [run_set(name, args.data, args.work, overlaps, encoder, args.headings) for name in args.sets.split(",")]
    results = {
        "benchmark": "passages",
        "command": "python " + " ".join(sys.argv),
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "model": encoder.name,
        "backend": encoder.backend,
        "precision": encoder.precision,
        "seconds": time.perf_counter() - started,
        "sets": sets,
    }
    text = json.dumps(results, indent=2)
    print(text)
    if args.results:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
