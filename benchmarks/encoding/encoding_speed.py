"""Encoding speed (issue 4, part 2): searchengine's Encoder variants against sentence-transformers, in one run.

Every variant embeds the same sentences with the same model (the bundled all-MiniLM-L6-v2) on the same machine.
Variants alternate within each round, so load from other processes hits all of them alike; a variant's speed is
reported as the median over rounds of (sentence-transformers fp32 time / its time) in the same round, next to
its sentences/s. Every variant's STS-B test Spearman is reported too, so speed never silently costs quality, and
its latency for one sentence at a time (what a search query costs; p50/p99 over 200 sentences, 20 with --quick).

Variants:
- sentence-transformers: its default encode (fp32, batch 32), and the same model cast to bf16.
- searchengine Encoder: its default (Encoder(): precision and backend "auto"); precision fp32 / bf16 / int8
  (torch dynamic quantization) on the torch backend; fp32 / int8 on ONNX Runtime (the `onnx` extra); smart
  batching off; batch sizes 16-256 (default 64); one thread.

Timing sentences: the first --sentences distinct STS-B test sentences (--texts stsb), or Wikipedia sentences
(--texts wiki, longer). A warm-up encode precedes the rounds.

Checks (asserted; CI runs --quick as a smoke test and never checks speed): our fp32 vectors equal
sentence-transformers' (cosine >= 0.9999 for every sentence); ONNX fp32 equals torch fp32 likewise; smart
batching on and off give the same vectors; every Spearman is a finite number in (0, 100].

Usage: .venv/bin/python benchmarks/encoding/encoding_speed.py [--quick] [--sentences 1000] [--rounds 3] [--texts stsb]
       [--out benchmarks/encoding/results/encoding_speed.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from importlib.metadata import version
from itertools import islice
from pathlib import Path

import numpy as np
import torch

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import machine_record
from benchmarks.harness.results import write_results
from benchmarks.harness.rounds import percentile_ms
from searchengine import Encoder
from searchengine.encoding.model_source import bundled_model_path
from searchengine.encoding.precision import cpu_has_native_bf16
from searchengine.evaluation.labelled_data import read_scored_pairs
from searchengine.evaluation.sts import sts_spearman

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = "sentence-transformers fp32"
ST_BEST = ("sentence-transformers fp32", "sentence-transformers bf16")

Embed = Callable[[Sequence[str]], np.ndarray]


def sentence_transformers_variants() -> dict[str, Embed]:
    from sentence_transformers import SentenceTransformer

    fp32 = SentenceTransformer(str(bundled_model_path()), device="cpu")
    bf16 = SentenceTransformer(str(bundled_model_path()), device="cpu").to(torch.bfloat16)

    def embed(model: SentenceTransformer) -> Embed:
        return lambda texts: model.encode(list(texts), convert_to_numpy=True, show_progress_bar=False).astype(
            np.float32
        )

    return {"sentence-transformers fp32": embed(fp32), "sentence-transformers bf16": embed(bf16)}


def searchengine_variants(quick: bool) -> dict[str, Encoder]:
    """Name -> Encoder. The default first; ONNX exports happen here (cached), before any timing."""
    default = Encoder()
    variants = {
        f"searchengine default ({default.backend} {default.precision})": default,
        "searchengine torch fp32": Encoder(backend="torch", precision="fp32"),
        "searchengine torch fp32, no smart batching": Encoder(backend="torch", precision="fp32", smart_batching=False),
        "searchengine torch bf16": Encoder(backend="torch", precision="bf16"),
        "searchengine torch int8 (dynamic)": Encoder(backend="torch", precision="int8"),
        "searchengine onnx fp32": Encoder(backend="onnx", precision="fp32"),
        "searchengine onnx int8": Encoder(backend="onnx", precision="int8"),
    }
    if not quick:
        for size in (16, 32, 128, 256):
            variants[f"searchengine onnx fp32, batch {size}"] = Encoder(
                backend="onnx", precision="fp32", batch_size=size
            )
            variants[f"searchengine onnx int8, batch {size}"] = Encoder(
                backend="onnx", precision="int8", batch_size=size
            )
        variants["searchengine torch fp32, 1 thread"] = Encoder(backend="torch", precision="fp32", threads=1)
        variants["searchengine onnx fp32, 1 thread"] = Encoder(backend="onnx", precision="fp32", threads=1)
        variants["searchengine onnx int8, 1 thread"] = Encoder(backend="onnx", precision="int8", threads=1)
    return variants


def timing_texts(data: Path, which: str, count: int) -> list[str]:
    if which == "wiki":
        with gzip.open(data / "unsup" / "wiki_sentences.txt.gz", "rt", encoding="utf-8") as handle:
            return list(dict.fromkeys(line.strip() for line in islice(handle, count * 2) if line.strip()))[:count]
    pairs = read_scored_pairs(data / "stsb" / "test.tsv")
    return list(dict.fromkeys(text for pair in pairs for text in (pair.first, pair.second)))[:count]


def one_at_a_time(embed: Embed, texts: Sequence[str]) -> list[float]:
    """Seconds to embed each text alone, as a search query is (after one warm-up call)."""
    embed(texts[:1])
    seconds = []
    for text in texts:
        start = time.perf_counter()
        embed([text])
        seconds.append(time.perf_counter() - start)
    return seconds


def min_cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float((a * b).sum(1).min())


def machine() -> dict:
    return machine_record(
        torch_threads=torch.get_num_threads(),
        torch_cpu_capability=torch.backends.cpu.get_cpu_capability(),
        native_bf16=cpu_has_native_bf16(),
        versions={
            name: version(name) for name in ("torch", "transformers", "sentence-transformers", "onnxruntime", "numpy")
        },
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--quick", action="store_true", help="few sentences, one round, main variants: a smoke test")
    parser.add_argument("--sentences", type=int, help="sentences timed per encode (default 1000; --quick 100)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 3; --quick 1)")
    parser.add_argument("--texts", choices=("stsb", "wiki"), default="stsb", help="which sentences are timed")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "encoding" / "results" / "encoding_speed.json")
    parser.add_argument("--tables", type=Path, help="print the markdown table of this results file and stop")
    args = parser.parse_args()
    if args.tables:
        print(markdown(json.loads(args.tables.read_text(encoding="utf-8"))))
        return
    count = args.sentences or (100 if args.quick else 1000)
    rounds = args.rounds or (1 if args.quick else 3)
    queries = 20 if args.quick else 200

    pairs = read_scored_pairs(args.data / "stsb" / "test.tsv")
    if args.quick:
        pairs = pairs[:200]
    texts = timing_texts(args.data, args.texts, count)
    embedders: dict[str, Embed] = dict(sentence_transformers_variants())
    encoders = searchengine_variants(args.quick)
    embedders.update({name: encoder.encode for name, encoder in encoders.items()})
    started_load = os.getloadavg()[0]
    for embed in embedders.values():
        embed(texts[:64])  # warm-up
    times: dict[str, list[float]] = {name: [] for name in embedders}
    for round_number in range(rounds):
        for name, embed in embedders.items():
            start = time.perf_counter()
            embed(texts)
            times[name].append(time.perf_counter() - start)
        print(f"round {round_number + 1}/{rounds} done (load {os.getloadavg()[0]:.2f})", flush=True)
    latencies = {name: one_at_a_time(embed, texts[:queries]) for name, embed in embedders.items()}

    reference = embedders[REFERENCE](texts)
    fp32 = encoders["searchengine torch fp32, no smart batching"]
    unsorted = fp32.encode(texts)
    fp32.smart_batching = True
    smart = fp32.encode(texts)
    fp32.smart_batching = False
    checks = {
        "fp32_equals_sentence_transformers": min_cosine(smart, reference) >= 0.9999,
        "onnx_fp32_equals_torch_fp32": min_cosine(encoders["searchengine onnx fp32"].encode(texts), smart) >= 0.9999,
        "smart_batching_keeps_vectors": min_cosine(unsorted, smart) >= 0.9999,
    }
    results = {
        "command": "python benchmarks/encoding/encoding_speed.py " + " ".join(sys.argv[1:]),
        "machine": machine(),
        "load_average_1min": [started_load, os.getloadavg()[0]],
        "texts": args.texts,
        "sentences": len(texts),
        "mean_tokens": statistics.mean(len(ids) for ids in fp32.tokenizer(texts)["input_ids"]),
        "rounds": rounds,
        "stsb_test_pairs": len(pairs),
        "default": {
            "backend": next(iter(encoders.values())).backend,
            "precision": next(iter(encoders.values())).precision,
        },
        "variants": {},
        "checks": checks,
    }
    for name, embed in embedders.items():
        spearman = sts_spearman(embed, pairs)
        results["variants"][name] = {
            "sentences_per_s": round(len(texts) / statistics.median(times[name]), 1),
            "speed_vs_sentence_transformers_fp32": round(
                statistics.median(r / t for r, t in zip(times[REFERENCE], times[name])), 3
            ),
            "seconds_per_round": [round(t, 3) for t in times[name]],
            "one_query_ms_p50": percentile_ms(latencies[name], 50),
            "one_query_ms_p99": percentile_ms(latencies[name], 99),
            "stsb_test_spearman": round(spearman, 2),
        }
        row = results["variants"][name]
        print(
            f"{name:<42} {row['sentences_per_s']:7.1f}/s  {row['speed_vs_sentence_transformers_fp32']:5.2f}x ST fp32"
            f"  one query p50 {row['one_query_ms_p50']:6.2f} ms  Spearman {row['stsb_test_spearman']:.2f}",
            flush=True,
        )
    best_st = max(ST_BEST, key=lambda name: results["variants"][name]["sentences_per_s"])
    results["sentence_transformers_best"] = best_st
    checks["spearman_finite"] = all(
        math.isfinite(v["stsb_test_spearman"]) and 0 < v["stsb_test_spearman"] <= 100
        for v in results["variants"].values()
    )
    write_results(args.out, results)
    print(f"checks: {checks}")
    print(f"wrote {args.out}; load average {results['load_average_1min']}")
    if not all(checks.values()):
        raise SystemExit("a correctness check failed: " + ", ".join(k for k, v in checks.items() if v is False))


def markdown(results: dict) -> str:
    """The results as the table docs/benchmarks.md shows."""
    reference = results["variants"][REFERENCE]["stsb_test_spearman"]
    lines = [
        "| variant | sentences/s | × ST fp32 (median of rounds) | one query p50 / p99 | STS-B test Spearman (Δ) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, row in results["variants"].items():
        lines.append(
            f"| {name} | {row['sentences_per_s']:,.0f} | {row['speed_vs_sentence_transformers_fp32']:.2f}× | "
            f"{row['one_query_ms_p50']:.1f} / {row['one_query_ms_p99']:.1f} ms | "
            f"{row['stsb_test_spearman']:.2f} ({row['stsb_test_spearman'] - reference:+.2f}) |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
