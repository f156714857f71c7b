"""What reranking with a cross-encoder changes: retrieval quality and per-query latency, on STS-B test.

- Corpus: every distinct sentence of the STS-B test file (sentence1 and sentence2 of all pairs), indexed with
  `searchengine index` (bundled all-MiniLM-L6-v2, exact Flat search) from a temporary file.
- Queries: every distinct sentence1 of a pair with gold score >= 4.0 whose two sentences differ; its relevant
  documents are the sentence2s of those pairs. The query's own text is in the corpus: it is dropped from every
  ranking (BEIR drops the document whose id is the query's), so the search asks for one hit more.
- Modes: the bi-encoder alone (cosine), and `--rerank` with the cross-encoder rescoring the top 20 and the top
  100 candidates (`SearchEngine.search(..., rerank=..., rerank_top=N)`; N + 1 with the query's own text).
- Quality: MRR@10, Recall@1 and Recall@10 (found relevant / all relevant of the query, averaged over queries),
  and the candidates' recall@N, the ceiling a reranker of N candidates cannot pass.
- Latency: per query, warm (the model loaded and one warm-up query run first), the median over --runs runs of
  one `engine.search(query, k=10[, rerank=..., rerank_top=N])` call, then p50 and p99 over the timed queries.
- The cross-encoder: --cross-encoder DIR (default /tmp/ce-stsb, trained on STS-B *train* by
  `searchengine train cross-encoder`, so test is fair). --quick without --cross-encoder uses the bundled MiniLM
  with a random one-output head (untrained: its quality numbers mean nothing, its cost is the real one).
- Checks (correctness, never speed): every reranked list is the top candidates sorted by the cross-encoder's
  score, scores equal to scoring the pairs directly; retrieval_score is the hit's cosine; nothing outside the
  candidates is returned.

Usage: .venv/bin/python benchmarks/retrieval/reranking.py [--quick] [--cross-encoder /tmp/ce-stsb]
       [--stsb ../shared/data/stsb] [--out benchmarks/retrieval/results/reranking.json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np
import torch

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import machine_record
from benchmarks.harness.results import write_results
from searchengine import SearchEngine
from searchengine.encoding.cross_encoder import CrossEncoder
from searchengine.evaluation.labelled_data import read_scored_pairs

ROOT = Path(__file__).resolve().parents[2]
K = 10


def retrieval_set(stsb_test: Path, pair_limit: int | None = None) -> tuple[list[str], dict[str, set[str]]]:
    """(corpus texts in order of first appearance, {query: relevant texts})."""
    pairs = read_scored_pairs(stsb_test)[:pair_limit]
    corpus = list(dict.fromkeys(text for pair in pairs for text in (pair.first, pair.second)))
    relevant: dict[str, set[str]] = {}
    for pair in pairs:
        if pair.score * 5.0 >= 4.0 - 1e-9 and pair.first != pair.second:
            relevant.setdefault(pair.first, set()).add(pair.second)
    return corpus, relevant


def without_query(hits: list, query: str, k: int) -> list:
    return [hit for hit in hits if hit.text != query][:k]


def quality(rankings: dict[str, list[str]], relevant: dict[str, set[str]]) -> dict[str, float]:
    mrr, recall1, recall10 = [], [], []
    for query, texts in rankings.items():
        gold = relevant[query]
        first = next((rank for rank, text in enumerate(texts[:K], start=1) if text in gold), None)
        mrr.append(1.0 / first if first else 0.0)
        recall1.append(len(gold & set(texts[:1])) / len(gold))
        recall10.append(len(gold & set(texts[:K])) / len(gold))
    return {"mrr@10": float(np.mean(mrr)), "recall@1": float(np.mean(recall1)), "recall@10": float(np.mean(recall10))}


def latency(engine: SearchEngine, queries: list[str], runs: int, **rerank: object) -> dict[str, float]:
    """p50/p99 over queries of each query's median time (ms) over `runs` runs of one search call."""
    engine.search(queries[0], k=K, mode="dense", **rerank)  # warm-up
    per_query = []
    for query in queries:
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            engine.search(query, k=K, mode="dense", **rerank)
            times.append(time.perf_counter() - started)
        per_query.append(statistics.median(times) * 1000)
    return {
        "p50_ms": float(np.percentile(per_query, 50)),
        "p99_ms": float(np.percentile(per_query, 99)),
        "mean_ms": float(np.mean(per_query)),
        "queries_timed": len(per_query),
        "runs_per_query": runs,
    }


def random_head_cross_encoder(directory: Path) -> Path:
    """The bundled MiniLM with a seeded random one-output head, saved as a cross-encoder directory."""
    from searchengine.encoding.hf_loading import load_pretrained
    from searchengine.encoding.model_source import bundled_model_path

    torch.manual_seed(0)
    tokenizer, model = load_pretrained(
        bundled_model_path(), "the bundled model", "AutoModelForSequenceClassification", num_labels=1
    )
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory


def check_reranking(engine: SearchEngine, cross: CrossEncoder, queries: list[str], top: int) -> dict[str, bool]:
    """The correctness checks on a few queries (see the module docstring)."""
    sorted_by_cross, scores_equal, cosines_kept, within_candidates = True, True, True, True
    for query in queries:
        candidates = engine.search(query, k=top, mode="dense")
        cosine = {hit.id: hit.score for hit in candidates}
        hits = engine.search(query, k=K, mode="dense", rerank=cross, rerank_top=top)
        direct = dict(zip((hit.id for hit in candidates), cross.score([(query, hit.text) for hit in candidates])))
        returned = [hit.score for hit in hits]
        left_out = [score for doc_id, score in direct.items() if doc_id not in {hit.id for hit in hits}]
        # Sorted, and nothing better left out (up to float noise between differently padded batches).
        sorted_by_cross &= returned == sorted(returned, reverse=True) and len(hits) == min(K, len(candidates))
        sorted_by_cross &= not left_out or max(left_out) <= min(returned) + 1e-5
        scores_equal &= all(abs(hit.score - direct[hit.id]) < 1e-5 for hit in hits)
        cosines_kept &= all(abs(hit.retrieval_score - cosine[hit.id]) < 1e-6 for hit in hits)
        within_candidates &= {hit.id for hit in hits} <= set(cosine)
    return {
        "rerank_sorts_the_candidates_by_cross_encoder_score": sorted_by_cross,
        "rerank_scores_equal_direct_scoring": scores_equal,
        "retrieval_score_is_the_cosine": cosines_kept,
        "rerank_returns_only_candidates": within_candidates,
    }


def machine() -> dict:
    return machine_record(
        torch_threads=torch.get_num_threads(),
        gpu=torch.cuda.is_available(),
        load_average_1min_at_start=os.getloadavg()[0],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stsb", type=Path, default=DATA / "stsb")
    parser.add_argument("--cross-encoder", type=Path, help="cross-encoder directory [default: /tmp/ce-stsb]")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "retrieval" / "results" / "reranking.json")
    parser.add_argument("--quick", action="store_true", help="a small subset: a smoke test of about a minute")
    parser.add_argument("--tops", type=int, nargs="+", help="rerank_top values (default 20 100)")
    parser.add_argument("--latency-queries", type=int, help="queries timed (default 100; quick 3)")
    parser.add_argument("--runs", type=int, help="timed runs per query (default 3; quick 2)")
    parser.add_argument("--no-sts", action="store_true", help="skip the cross-encoder's STS-B dev/test Spearman")
    args = parser.parse_args()
    tops = args.tops or [20, 100]
    latency_queries = args.latency_queries or (3 if args.quick else 100)
    runs = args.runs or (2 if args.quick else 3)
    started = time.perf_counter()
    command = " ".join(["benchmarks/retrieval/reranking.py", *sys.argv[1:]])
    threads = f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} " if "OMP_NUM_THREADS" in os.environ else ""
    results: dict = {"command": threads + command, "machine": machine(), "quick": args.quick, "k": K}
    results["rerank_tops"] = tops

    with tempfile.TemporaryDirectory() as temporary:
        temporary = Path(temporary)
        if args.cross_encoder is None and args.quick:
            cross_dir, untrained = random_head_cross_encoder(temporary / "random-head"), True
        else:
            cross_dir, untrained = args.cross_encoder or Path("/tmp/ce-stsb"), False
            if not cross_dir.is_dir():
                sys.exit(
                    f"no cross-encoder at {cross_dir}: train one with `searchengine train cross-encoder --data "
                    "../shared/data/stsb/train.tsv --out /tmp/ce-stsb` or pass --cross-encoder DIR"
                )
        cross = CrossEncoder(cross_dir)
        results["cross_encoder"] = {
            "path": str(cross_dir), "untrained_random_head": untrained, "activation": cross.activation_name,
            "max_length": cross.max_length, "batch_size": cross.batch_size,
        }  # fmt: skip
        corpus, relevant = retrieval_set(args.stsb / "test.tsv", 150 if args.quick else None)
        queries = list(relevant)[: 10 if args.quick else None]
        corpus_file = temporary / "corpus.txt"
        corpus_file.write_text("\n".join(corpus) + "\n", encoding="utf-8")
        index_dir = temporary / "index"
        indexing = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "searchengine", "index", str(corpus_file), "-d", str(index_dir), "-q"], check=True
        )
        results["data"] = {
            "stsb_test": str(args.stsb / "test.tsv"), "corpus_texts": len(corpus), "queries": len(queries),
            "relevant_pairs": sum(len(relevant[q]) for q in queries), "index_seconds": time.perf_counter() - indexing,
        }  # fmt: skip
        engine = SearchEngine.open(index_dir)
        print(f"{len(corpus)} texts indexed, {len(queries)} queries; cross-encoder {cross_dir}")

        modes: dict[str, dict] = {}
        deepest = max(tops) + 1
        plain = engine.search_batch(queries, k=max(K, deepest) + 1, mode="dense")
        rankings = {q: [hit.text for hit in without_query(hits, q, K)] for q, hits in zip(queries, plain)}
        modes["bi-encoder"] = {**quality(rankings, relevant)}
        for top in tops:
            # Candidate recall: the share of relevant documents among the top N (self excluded): the ceiling.
            ceiling = {q: [hit.text for hit in without_query(hits, q, top)] for q, hits in zip(queries, plain)}
            modes["bi-encoder"][f"recall@{top}"] = float(
                np.mean([len(relevant[q] & set(texts)) / len(relevant[q]) for q, texts in ceiling.items()])
            )
        modes["bi-encoder"]["latency"] = latency(engine, queries[:latency_queries], runs)
        for top in tops:
            scoring = time.perf_counter()
            reranked = engine.search_batch(queries, k=K + 1, mode="dense", rerank=cross, rerank_top=top + 1)
            seconds = time.perf_counter() - scoring
            rankings = {q: [hit.text for hit in without_query(hits, q, K)] for q, hits in zip(queries, reranked)}
            modes[f"rerank@{top}"] = {
                **quality(rankings, relevant),
                "pairs_scored": len(queries) * (top + 1),
                "batch_pairs_per_second": len(queries) * (top + 1) / seconds,
                "latency": latency(engine, queries[:latency_queries], runs, rerank=cross, rerank_top=top),
            }
        results["modes"] = modes
        results["checks"] = {
            name: all(values)
            for name, values in _merge([check_reranking(engine, cross, queries[:3], top) for top in tops]).items()
        }
        engine.close()

    if not args.no_sts and not args.quick and not untrained:
        from scipy.stats import spearmanr

        sts = {}
        for split in ("dev", "test"):
            pairs = read_scored_pairs(args.stsb / f"{split}.tsv")
            scores = cross.score([(pair.first, pair.second) for pair in pairs])
            sts[split] = float(spearmanr(scores, [pair.score for pair in pairs]).statistic * 100)
        results["cross_encoder"]["sts_spearman"] = sts
        print(f"cross-encoder STS-B Spearman x100: dev {sts['dev']:.2f}, test {sts['test']:.2f}")

    results["versions"] = {name: version(name) for name in ("torch", "transformers", "faiss-cpu")}
    results["seconds"] = time.perf_counter() - started
    results["machine"]["load_average_1min_at_end"] = os.getloadavg()[0]
    for name, mode in results["modes"].items():
        extra = "  ".join(f"{key} {value:.3f}" for key, value in mode.items() if key.startswith("recall@") and key
                          not in ("recall@1", "recall@10"))  # fmt: skip
        timing = mode["latency"]
        print(
            f"{name:<11} MRR@10 {mode['mrr@10']:.3f}  R@1 {mode['recall@1']:.3f}  R@10 {mode['recall@10']:.3f}  "
            f"latency p50 {timing['p50_ms']:.1f} ms  p99 {timing['p99_ms']:.1f} ms  {extra}"
        )
    print(f"checks: {results['checks']}")
    write_results(args.out, results)
    print(f"wrote {args.out} ({results['seconds']:.0f} s)")
    if not all(results["checks"].values()):
        sys.exit("a correctness check failed")


def _merge(checks: list[dict[str, bool]]) -> dict[str, list[bool]]:
    merged: dict[str, list[bool]] = {}
    for check in checks:
        for name, value in check.items():
            merged.setdefault(name, []).append(value)
    return merged


if __name__ == "__main__":
    main()
