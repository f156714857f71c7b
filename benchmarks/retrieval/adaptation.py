"""Does adapting the encoder to a corpus help retrieval? nDCG@10, Recall@100 and MRR@10 of indexes of one BEIR set
(the base model's, and copies of it after `searchengine adapt`) on the two halves of the set's test queries
(benchmarks/retrieval/split_queries.py writes them).

An index that does not exist yet is built there first with the bundled model (documents as title + " " + text,
BEIR ids as external ids, titles as metadata: `build_index` of retrieval_rerank.py). Each index is searched as
users search it, in dense, keyword and hybrid mode (the default): `SearchEngine.search_batch`, the queries encoded by the index's own
model, the stored vectors compared by exact inner product (Flat), a hit whose id is the query's dropped
(ArguAna). The index's stored document vectors are used as they are (never re-embedded here), so this measures
exactly what `searchengine adapt` committed. Metrics as `searchengine eval retrieval` computes them
(searchengine.evaluation.retrieval).

The protocol (docs/retrieval-adaptation.md): settings are chosen on the tune half only; the held-back half is
what is reported. Training never sees a query: adapt reads only the index's documents.

Usage: .venv/bin/python benchmarks/retrieval/adaptation.py --set nfcorpus --index base=/tmp/nf-index --index pq=/tmp/nf-pq
       [--halves /tmp/heldback] [--data ../shared/data/retrieval] [--out benchmarks/retrieval/results/adaptation.json]
Prints a table and merges its rows into the JSON file (keyed by set, label and mode).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import machine_record
from benchmarks.harness.results import read_results, write_results
from benchmarks.retrieval.retrieval_rerank import build_index, read_half
from searchengine import SearchEngine
from searchengine.evaluation.retrieval import RECALL_AT, read_queries, score_rankings

ROOT = Path(__file__).resolve().parents[2]
HALVES = ("tune", "heldback")
MODES = ("dense", "keyword", "hybrid")


def evaluate(index: Path, queries: dict[str, str], halves: Path, modes: list[str]) -> dict:
    """Scores on each half in each of `modes` (hybrid is the default; keyword does not depend on the model), the
    index's model, and the seconds the searches took."""
    results: dict = {}
    with SearchEngine.open(index) as engine:
        results["model"] = engine.manifest.model.name
        for mode in modes:
            for half in HALVES:
                qrels = read_half(halves / f"qrels_{half}.tsv")
                query_ids = list(qrels)
                started = time.perf_counter()
                hits = engine.search_batch([queries[query] for query in query_ids], RECALL_AT + 1, mode=mode)
                rankings = {
                    query: [hit.external_id for hit in row if hit.external_id != query][:RECALL_AT]
                    for query, row in zip(query_ids, hits)
                }
                scores = score_rankings(rankings, qrels, len(engine))
                results.setdefault(mode, {})[half] = {
                    **scores.as_dict(),
                    "seconds": round(time.perf_counter() - started, 1),
                }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", required=True, choices=["nfcorpus", "arguana"])
    parser.add_argument("--index", action="append", required=True, help="LABEL=DIR, an index of the set.")
    parser.add_argument("--data", type=Path, default=DATA / "retrieval")
    parser.add_argument("--halves", type=Path, default=Path("/tmp/heldback"))
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES), help="Search modes to score.")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "retrieval" / "results" / "adaptation.json")
    arguments = parser.parse_args()
    halves = arguments.halves / arguments.set
    if not (halves / "qrels_heldback.tsv").is_file():
        raise SystemExit(f"{halves} has no query halves: run benchmarks/retrieval/split_queries.py --out {arguments.halves}")
    query_ids, query_texts = read_queries(arguments.data / arguments.set / "queries.jsonl")
    queries = dict(zip(query_ids, query_texts))
    rows = {}
    for item in arguments.index:
        label, _, index = item.partition("=")
        if not Path(index).exists():  # the base index, built once with the bundled model (copy it to adapt)
            build_index(arguments.data / arguments.set / "corpus.jsonl", Path(index), "default").close()
        rows[label] = {"index": index, **evaluate(Path(index), queries, halves, arguments.modes)}
    machine = machine_record(torch_threads=torch.get_num_threads(), load_average=round(os.getloadavg()[0], 1))
    print(f"{arguments.set}: nDCG@10 (Recall@100) by half; {machine['cpu']}, load {machine['load_average']}")
    print(f"{'index':<24} {'mode':<8} {'tune':>16} {'held-back':>16}")
    for label, row in rows.items():
        for mode in arguments.modes:
            cells = [f"{row[mode][h]['ndcg@10']:.4f} ({row[mode][h]['recall@100']:.3f})" for h in HALVES]
            print(f"{label:<24} {mode:<8} {cells[0]:>16} {cells[1]:>16}")
    results = read_results(arguments.out)
    for label, row in rows.items():
        entry = results.setdefault(arguments.set, {}).setdefault(label, {})
        entry.update({**row, "machine": machine})  # a mode scored before and not now is kept
    write_results(arguments.out, results)


if __name__ == "__main__":
    main()
