"""Which runtime encodes bulk calls fastest without loss, by call size and by text length: the measurement behind
`precision="auto"`'s split between a query runtime and a bulk one (searchengine.encoding.precision.bulk_precision).

Encoders of the bundled model in one process (--encoders, a comma-separated choice from ENCODERS; ONNX Runtime
fp32, the baseline, always first). The default four: ONNX Runtime fp32, torch bf16, the default `Encoder()` (auto:
ONNX Runtime fp32 for calls of fewer than BULK_TEXTS texts and, on a CPU where one was measured faster, a bulk
runtime for larger ones), and ONNX Runtime int8 (`--precision int8` without the `openvino` extra, lossy). The
others: torch fp32, OpenVINO fp32, bf16 (on a CPU with AVX512-BF16 or AMX) and static int8 (the `openvino` extra;
int8 calibrated on the bundled texts).

- Throughput: each encoder embeds the same texts in one call per round (default batch of 64), the encoders taking
  turns in an order that rotates each round, after a warm-up; each is reported as texts/s per round and as the
  median over rounds of (ONNX fp32 time / its time). Texts: the first --texts distinct STS-B test sentences (short),
  Wikipedia sentences (../shared/data/unsup), and NFCorpus documents, title + abstract (long; --long of them).
- By call size: calls of 1 to 512 Wikipedia sentences, each size repeated until about --call-texts (default 256)
  texts were encoded, the encoders taking turns call by call; the median seconds per call, as texts/s.
- One query (--queries N): one short STS-B sentence per call through `encode_queries` (a search query's path),
  the encoders taking turns query by query; p50 and p99.
- Quality: the smallest cosine between each encoder's vectors and ONNX fp32's on the throughput texts (checked to
  be at least 0.999 for all but int8), where torch fp32 runs too the largest cosine distance to its vectors
  (lossless: at most 1e-4), and with --spearman the STS-B test Spearman x 100 (all 1,379 pairs).

Usage: .venv/bin/python benchmarks/encoding/bulk_precision.py [--texts 2000] [--long 400] [--rounds 3] [--queries 200]
       [--encoders "onnx fp32,torch fp32,openvino fp32,auto (default),onnx int8,openvino int8"] [--spearman]
       [--sets stsb,wiki,nfcorpus] [--out benchmarks/encoding/results/bulk_precision.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.encoding.encoding_speed import machine, min_cosine, timing_texts
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from benchmarks.harness.rounds import percentile_ms, rotation
from searchengine.encoding.encoder import Encoder
from searchengine.evaluation.labelled_data import read_scored_pairs
from searchengine.evaluation.sts import sts_spearman

ROOT = Path(__file__).resolve().parents[2]
CALL_SIZES = (1, 4, 8, 16, 32, 64, 128, 512)
BASELINE = "onnx fp32"
LOSSLESS_REFERENCE = "torch fp32"
ENCODERS: dict[str, Callable[[], Encoder]] = {
    BASELINE: lambda: Encoder(precision="fp32", backend="onnx"),
    "torch bf16": lambda: Encoder(precision="bf16", backend="torch"),
    "auto (default)": Encoder,
    "onnx int8": lambda: Encoder(precision="int8", backend="onnx"),
    LOSSLESS_REFERENCE: lambda: Encoder(precision="fp32", backend="torch"),
    "openvino fp32": lambda: Encoder(precision="fp32", backend="openvino"),
    "openvino bf16": lambda: Encoder(precision="bf16", backend="openvino"),
    "openvino int8": lambda: Encoder(precision="int8", backend="openvino"),
}
"""Name -> how to build it; int8 ones are lossy by design (left out of the vector check)."""
DEFAULT_ENCODERS = "onnx fp32,torch bf16,auto (default),onnx int8"


def long_texts(data: Path, count: int) -> list[str]:
    """The first `count` NFCorpus documents as title + abstract, as `--title-field title` indexes them."""
    with (data / "retrieval" / "nfcorpus" / "corpus.jsonl").open(encoding="utf-8") as handle:
        documents = [json.loads(line) for _, line in zip(range(count), handle)]
    return [f"{document['title']} {document['text']}" for document in documents]


def throughput(encoders: dict[str, Encoder], texts: list[str], rounds: int) -> dict:
    names = list(encoders)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    vectors = {}
    for round_number in range(rounds):
        for name in rotation(names, round_number):
            started = time.perf_counter()
            vectors[name] = encoders[name].encode(texts)
            seconds[name].append(time.perf_counter() - started)
    base = names[0]
    rows = {
        name: {
            "texts_per_second": [round(len(texts) / s) for s in seconds[name]],
            "speed_vs_onnx_fp32": round(statistics.median(b / s for b, s in zip(seconds[base], seconds[name])), 2),
            "min_cosine_vs_onnx_fp32": round(min_cosine(vectors[name], vectors[base]), 5),
        }
        for name in names
    }
    if LOSSLESS_REFERENCE in vectors:
        for name in names:
            distance = 1 - min_cosine(vectors[name], vectors[LOSSLESS_REFERENCE])
            rows[name]["max_cosine_distance_vs_torch_fp32"] = float(f"{distance:.2g}")
    return rows


def by_call_size(encoders: dict[str, Encoder], texts: list[str], call_texts: int) -> dict:
    """Texts/s by call size: each size called until about `call_texts` texts were encoded (3 calls at least)."""
    rows = {}
    for size in (size for size in CALL_SIZES if size < len(texts)):
        seconds: dict[str, list[float]] = {name: [] for name in encoders}
        for repeat in range(max(3, call_texts // size)):
            start = (repeat * size) % (len(texts) - size)
            for name, encoder in encoders.items():
                began = time.perf_counter()
                encoder.encode(texts[start : start + size])
                seconds[name].append(time.perf_counter() - began)
        rows[size] = {name: round(size / statistics.median(values)) for name, values in seconds.items()}
        print(size, rows[size], flush=True)
    return rows


def query_latency(encoders: dict[str, Encoder], queries: list[str]) -> dict:
    """p50 and p99 milliseconds for one short text per call (as a search query), encoders taking turns."""
    seconds: dict[str, list[float]] = {name: [] for name in encoders}
    for encoder in encoders.values():
        encoder.encode_queries(queries[:1])
    for query in queries:
        for name, encoder in encoders.items():
            started = time.perf_counter()
            encoder.encode_queries([query])
            seconds[name].append(time.perf_counter() - started)
    return {
        name: {
            "p50_ms": percentile_ms(values, 50),
            "p99_ms": percentile_ms(values, 99),
        }
        for name, values in seconds.items()
    }


def build_encoders(names: str) -> dict[str, Encoder]:
    """The named encoders, ONNX Runtime fp32 first (every ratio's baseline), each built once (exports, conversions
    and calibrations happen here, before any timing)."""
    chosen = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in ENCODERS]
    if unknown:
        raise SystemExit(f"unknown encoders {unknown}; choose from {list(ENCODERS)}")
    encoders = {}
    for name in [BASELINE, *[name for name in chosen if name != BASELINE]]:
        started = time.perf_counter()
        encoders[name] = ENCODERS[name]()
        print(f"{name}: built in {time.perf_counter() - started:.1f} s", flush=True)
    return encoders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--texts", type=int, default=2000, help="short and Wikipedia texts timed per call")
    parser.add_argument("--long", type=int, default=400, help="NFCorpus documents timed per call")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--call-texts", type=int, default=256, help="texts encoded per call size (3 calls at least)")
    parser.add_argument("--encoders", default=DEFAULT_ENCODERS, help=f"comma-separated, from: {', '.join(ENCODERS)}")
    parser.add_argument("--sets", default="stsb,wiki,nfcorpus", help="comma-separated text sets timed in bulk")
    parser.add_argument("--queries", type=int, default=0, help="single-query calls per encoder (0: skip)")
    parser.add_argument("--spearman", action="store_true", help="each encoder's STS-B test Spearman too")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "encoding" / "results" / "bulk_precision.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    encoders = build_encoders(args.encoders)
    default = encoders.get("auto (default)", Encoder())
    wiki = timing_texts(args.data, "wiki", args.texts)
    for encoder in encoders.values():
        encoder.encode(wiki[:300])
    available = {
        "stsb": lambda: timing_texts(args.data, "stsb", args.texts),
        "wiki": lambda: wiki,
        "nfcorpus": lambda: long_texts(args.data, args.long),
    }
    sets = {label: available[label]() for label in args.sets.split(",") if label}
    results = {
        **run_record(load_before),
        "machine_details": machine(),
        "default": {
            "precision": default.precision,
            "backend": default.backend,
            "bulk_precision": default.bulk_precision,
        },
        "throughput": {},
    }
    for label, texts in sets.items():
        results["throughput"][label] = throughput(encoders, texts, args.rounds)
        print(label, json.dumps(results["throughput"][label]), flush=True)
    results["by_call_size"] = by_call_size(encoders, wiki, args.call_texts)
    if args.queries:
        results["one_query"] = query_latency(encoders, timing_texts(args.data, "stsb", args.queries))
        print("one query", json.dumps(results["one_query"]), flush=True)
    if args.spearman:
        pairs = read_scored_pairs(args.data / "stsb" / "test.tsv")
        results["stsb_test_spearman"] = {
            name: round(sts_spearman(encoder.encode, pairs), 2) for name, encoder in encoders.items()
        }
        print("spearman", json.dumps(results["stsb_test_spearman"]), flush=True)
    results["machine"]["load_after"] = os.getloadavg()
    lossless = [name for name in encoders if "int8" not in name]
    results["checks"] = {
        "bf16_keeps_vectors": all(
            row[name]["min_cosine_vs_onnx_fp32"] >= 0.999 for row in results["throughput"].values() for name in lossless
        )
    }
    if LOSSLESS_REFERENCE in encoders:
        results["checks"]["fp32_runtimes_lossless"] = all(
            row[name]["max_cosine_distance_vs_torch_fp32"] <= 1e-4
            for row in results["throughput"].values()
            for name in lossless
            if "fp32" in name
        )
    print(json.dumps(results["checks"]))
    write_results(args.out, results)


if __name__ == "__main__":
    main()
