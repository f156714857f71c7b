"""Encoding on a CUDA GPU: the engine's encoder against sentence-transformers on the same GPU, in one run.

What a user with a GPU gets, and what it costs them:
- Peak: an --matmul cube matrix product in torch fp16 and fp32 (TF32 off, as torch's default), best of --rounds
  timed bursts, so the encoder's achieved GFLOP/s can be set against what the GPU does.
- Throughput: sentences/s of the engine's Encoder at fp16 (what `auto` is on CUDA) and fp32, in batches of 64 (the
  CPU's default, and the GPU's before this benchmark's first run), 256 and 1024 (the GPU's default since), against
  sentence-transformers fp32 and fp16 (its model cast with .half()) in batches of 32 (its default) and 256, on
  short (STS-B test sentences), medium (Wikipedia sentences) and long texts (NFCorpus title + abstract). Variants
  take turns in an order that rotates each round, after a warm-up; medians over --rounds rounds; each variant's
  ratio to sentence-transformers fp32 at its default batch in the same round.
- Quality: each variant's smallest cosine to the engine's fp32 vectors on the GPU, and the engine's GPU fp32 against
  its CPU fp32 on the first 500 texts (the same function on another device).
- Queries: one short text per call, p50 and p99 ms, the GPU encoder (fp16) against the CPU's default encoder.

Usage: python benchmarks/encoding/gpu_encoding.py [--data DIR] [--texts 20000] [--long 3000] [--rounds 3]
       [--out benchmarks/encoding/results/gpu_encoding.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path

import numpy as np
import torch

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.encoding.bulk_precision import long_texts, query_latency
from benchmarks.encoding.encoding_limit import encoder_flops
from benchmarks.encoding.encoding_speed import min_cosine, timing_texts
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from benchmarks.harness.rounds import rotation
from searchengine.encoding.encoder import Encoder, default_batch_size
from searchengine.encoding.model_source import bundled_model_path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = "sentence-transformers fp32, batch 32"
Embed = Callable[[Sequence[str]], np.ndarray]


def matmul_peak(size: int, rounds: int) -> dict:
    """Best TFLOP/s of a size³ matrix product per dtype, on random data, timed with CUDA events."""
    peaks = {}
    for name, dtype in (("fp16", torch.float16), ("fp32", torch.float32)):
        a, b = (torch.randn(size, size, device="cuda", dtype=dtype) for _ in range(2))
        a @ b
        best = []
        for _ in range(rounds):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(10):
                a @ b
            end.record()
            torch.cuda.synchronize()
            best.append(2 * size**3 * 10 / (start.elapsed_time(end) / 1000) / 1e12)
        peaks[name] = {"best_tflops": round(max(best), 1), "median_tflops": round(statistics.median(best), 1)}
    return peaks


def variants() -> dict[str, Embed]:
    from sentence_transformers import SentenceTransformer

    path = str(bundled_model_path())
    result: dict[str, Embed] = {}
    st32 = SentenceTransformer(path, device="cuda")
    st16 = SentenceTransformer(path, device="cuda").half()
    for label, model in (("fp32", st32), ("fp16", st16)):
        for size in (32, 256):
            result[f"sentence-transformers {label}, batch {size}"] = lambda texts, m=model, s=size: m.encode(
                list(texts), batch_size=s, convert_to_numpy=True, show_progress_bar=False
            ).astype(np.float32)
    for precision in ("fp16", "fp32"):
        for size in (64, 256, 1024):
            encoder = Encoder(device="cuda", precision=precision, batch_size=size)
            name = f"searchengine {precision}, batch {size}" + (
                " (default)" if (precision, size) == ("fp16", default_batch_size("cuda")) else ""
            )
            result[name] = encoder.encode
    return result


def throughput(embeds: dict[str, Embed], texts: list[str], rounds: int, gflop: float) -> dict:
    names = list(embeds)
    for name in names:
        embeds[name](texts[:256])  # warm-up: kernels, allocator
    seconds: dict[str, list[float]] = {name: [] for name in names}
    vectors = {}
    for round_number in range(rounds):
        for name in rotation(names, round_number):
            torch.cuda.synchronize()
            started = time.perf_counter()
            vectors[name] = embeds[name](texts)
            seconds[name].append(time.perf_counter() - started)
    reference = vectors["searchengine fp32, batch 64"]
    return {
        name: {
            "sentences_per_second": round(len(texts) / statistics.median(seconds[name]), 1),
            "seconds": [round(value, 3) for value in seconds[name]],
            "vs_reference": round(
                statistics.median(r / s for r, s in zip(seconds[REFERENCE], seconds[name], strict=True)), 2
            ),
            "achieved_tflops": round(gflop / statistics.median(seconds[name]) / 1000, 2),
            "min_cosine_to_searchengine_fp32": round(min_cosine(vectors[name], reference), 6),
        }
        for name in names
    }


def device_agreement(texts: list[str]) -> float:
    """Smallest cosine between the engine's fp32 vectors on the GPU and on the CPU for the same texts."""
    gpu = Encoder(device="cuda", precision="fp32").encode(texts)
    cpu = Encoder(device="cpu", precision="fp32", backend="torch").encode(texts)
    return round(min_cosine(gpu, cpu), 6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--texts", type=int, default=20_000, help="Wikipedia sentences (medium); STS-B has ~2,700")
    parser.add_argument("--long", type=int, default=3_000, help="NFCorpus documents (long)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--matmul", type=int, default=8192)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "encoding" / "results" / "gpu_encoding.json")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA GPU: this benchmark measures the GPU path")
    load = os.getloadavg()
    results: dict = {
        **run_record(load),
        "versions": {name: version(name) for name in ("torch", "transformers", "sentence-transformers", "faiss-cpu")},
        "peak": matmul_peak(args.matmul, args.rounds),
    }
    print(json.dumps(results["peak"]), flush=True)
    texts = {
        "short (STS-B test)": timing_texts(args.data, "stsb", 100_000),
        "medium (Wikipedia)": timing_texts(args.data, "wiki", args.texts),
        "long (NFCorpus)": long_texts(args.data, args.long),
    }
    results["device_agreement_min_cosine"] = device_agreement(texts["medium (Wikipedia)"][:500])
    embeds = variants()
    counter = Encoder(device="cpu", precision="fp32", backend="torch")
    results["texts"] = {}
    for label, batch in texts.items():
        flops = encoder_flops(counter, batch)
        gflop = flops["gflop_linear"] + flops["gflop_attention"]
        results["texts"][label] = {**flops, "variants": throughput(embeds, batch, args.rounds, gflop)}
        for name, row in results["texts"][label]["variants"].items():
            print(
                f"{label:20} {name:46} {row['sentences_per_second']:>10,.0f}/s  ×{row['vs_reference']:<5} "
                f"{row['achieved_tflops']:>6} TFLOP/s  cos≥{row['min_cosine_to_searchengine_fp32']}",
                flush=True,
            )
    queries = texts["short (STS-B test)"][: args.queries]
    results["query_latency"] = query_latency(
        {"gpu fp16 (auto)": Encoder(device="cuda"), "cpu auto": Encoder(device="cpu")}, queries
    )
    print(json.dumps(results["query_latency"]), flush=True)
    results["machine"]["load_after"] = os.getloadavg()
    write_results(args.out, results)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
