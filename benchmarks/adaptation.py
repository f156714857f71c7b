"""Does adapting the encoder to a corpus help retrieval? nDCG@10 of the base model and adapted models on the two
halves of each BEIR set's test queries (benchmarks/split_queries.py writes them), exact cosine search, documents
embedded as title + " " + text: the same evaluation as `searchengine eval retrieval --qrels HALF`, with the
corpus embedded once per model for both halves.

The protocol (docs/retrieval-adaptation.md): settings are chosen on the tune half only; the held-back half is
what is reported. Adapted models are made with `searchengine train pseudo-queries|simcse ... --data corpus.jsonl`
(what `searchengine adapt` runs on an index's documents); training sees documents only, never a query.

Usage: .venv/bin/python benchmarks/adaptation.py --set nfcorpus --model base=default --model pq=/tmp/nf-pq
       [--halves /tmp/heldback] [--data ../shared/data/retrieval] [--out benchmarks/results/adaptation.json]
Prints a table per set and merges its rows into the JSON file (keyed by set and model label).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch
from machine_info import cpu_name

from searchengine.encoding.encoder import Encoder
from searchengine.evaluation.retrieval import RetrievalSet, evaluate_retrieval, read_corpus, read_qrels, read_queries

ROOT = Path(__file__).resolve().parents[1]
HALVES = ("tune", "heldback")


def cached(embed):  # noqa: ANN001, ANN201 (an embed function in, the same function with a memory out)
    """The corpus is embedded once for both halves: the same texts give the stored vectors."""
    memory: dict[int, np.ndarray] = {}

    def embed_once(texts: list[str]) -> np.ndarray:
        key = hash(tuple(texts))
        if key not in memory:
            memory[key] = embed(texts)
        return memory[key]

    return embed_once


def evaluate(model: str, data: Path, halves: Path) -> dict[str, dict[str, float]]:
    """nDCG@10, Recall@100 and MRR@10 of `model` on each half, and the seconds its corpus took to embed."""
    corpus_ids, corpus_texts = read_corpus(data / "corpus.jsonl")
    query_ids, query_texts = read_queries(data / "queries.jsonl")
    encoder = Encoder(model, batch_size=64)
    embed = cached(encoder.encode)
    results = {}
    for half in HALVES:
        qrels = read_qrels(halves / f"qrels_{half}.tsv", query_ids, corpus_ids)
        started = time.perf_counter()
        scores = evaluate_retrieval(embed, RetrievalSet(corpus_ids, corpus_texts, query_ids, query_texts, qrels))
        results[half] = {**scores.as_dict(), "seconds": round(time.perf_counter() - started, 1)}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", required=True, choices=["nfcorpus", "arguana"])
    parser.add_argument("--model", action="append", required=True, help="LABEL=MODEL (directory or 'default').")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "retrieval")
    parser.add_argument("--halves", type=Path, default=Path("/tmp/heldback"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "adaptation.json")
    arguments = parser.parse_args()
    halves = arguments.halves / arguments.set
    if not (halves / "qrels_heldback.tsv").is_file():
        raise SystemExit(f"{halves} has no query halves: run benchmarks/split_queries.py --out {arguments.halves}")
    rows = {}
    for item in arguments.model:
        label, _, model = item.partition("=")
        rows[label] = {"model": model, **evaluate(model, arguments.data / arguments.set, halves)}
    print(
        f"{arguments.set}: nDCG@10 (Recall@100) by half; {cpu_name()}, {os.cpu_count()} cores, load "
        f"{os.getloadavg()[0]:.1f}"
    )
    print(f"{'model':<28} {'tune':>16} {'held-back':>16}")
    for label, row in rows.items():
        cells = [f"{row[h]['ndcg@10']:.4f} ({row[h]['recall@100']:.3f})" for h in HALVES]
        print(f"{label:<28} {cells[0]:>16} {cells[1]:>16}")
    results = json.loads(arguments.out.read_text()) if arguments.out.is_file() else {}
    entry = results.setdefault(arguments.set, {})
    entry.update(rows)
    results["machine"] = {"cpu": cpu_name(), "cores": os.cpu_count(), "torch_threads": torch.get_num_threads()}
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
