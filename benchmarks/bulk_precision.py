"""Where torch bf16 beats ONNX Runtime fp32 on a CPU with AVX512-BF16, by call size and by text length: the
measurement behind `precision="auto"`'s split there (searchengine.encoding.precision.bulk_precision).

Four encoders of the bundled model in one process: ONNX Runtime fp32, torch bf16, the default `Encoder()` (auto:
on such a CPU, ONNX Runtime fp32 for calls of fewer than BULK_TEXTS texts and torch bf16 for larger ones;
elsewhere whatever auto picks there), and ONNX Runtime int8 (`--precision int8`, lossy: the fastest option).

- Throughput: each encoder embeds the same texts in one call per round (default batch of 64), the encoders taking
  turns in an order that rotates each round, after a warm-up; each is reported as texts/s per round and as the
  median over rounds of (ONNX fp32 time / its time). Texts: the first --texts distinct STS-B test sentences (short),
  Wikipedia sentences (../shared/data/unsup), and NFCorpus documents, title + abstract (long; --long of them).
- By call size: calls of 1 to 512 Wikipedia sentences, each size repeated until about --call-texts (default 256)
  texts were encoded, the encoders taking turns call by call; the median seconds per call, as texts/s.
- Quality: the smallest cosine between each encoder's vectors and ONNX fp32's on the throughput texts (checked to
  be at least 0.999 for all but int8).

Usage: .venv/bin/python benchmarks/bulk_precision.py [--texts 2000] [--long 400] [--rounds 3]
       [--out benchmarks/results/bulk_precision.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from data_folder import DATA
from encoding_speed import machine, min_cosine, timing_texts
from machine_info import run_record

from searchengine.encoding.encoder import Encoder

ROOT = Path(__file__).resolve().parents[1]
CALL_SIZES = (1, 4, 8, 16, 32, 64, 128, 512)


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
        for name in names[round_number % len(names) :] + names[: round_number % len(names)]:
            started = time.perf_counter()
            vectors[name] = encoders[name].encode(texts)
            seconds[name].append(time.perf_counter() - started)
    base = names[0]
    return {
        name: {
            "texts_per_second": [round(len(texts) / s) for s in seconds[name]],
            "speed_vs_onnx_fp32": round(statistics.median(b / s for b, s in zip(seconds[base], seconds[name])), 2),
            "min_cosine_vs_onnx_fp32": round(min_cosine(vectors[name], vectors[base]), 5),
        }
        for name in names
    }


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--texts", type=int, default=2000, help="short and Wikipedia texts timed per call")
    parser.add_argument("--long", type=int, default=400, help="NFCorpus documents timed per call")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--call-texts", type=int, default=256, help="texts encoded per call size (3 calls at least)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bulk_precision.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    encoders = {
        "onnx fp32": Encoder(precision="fp32", backend="onnx"),
        "torch bf16": Encoder(precision="bf16", backend="torch"),
        "auto (default)": Encoder(),
        "onnx int8": Encoder(precision="int8", backend="onnx"),
    }
    default = encoders["auto (default)"]
    wiki = timing_texts(args.data, "wiki", args.texts)
    for encoder in encoders.values():
        encoder.encode(wiki[:300])
    sets = {
        "stsb": timing_texts(args.data, "stsb", args.texts),
        "wiki": wiki,
        "nfcorpus": long_texts(args.data, args.long),
    }
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
    results["machine"]["load_after"] = os.getloadavg()
    results["checks"] = {
        "bf16_keeps_vectors": all(
            row[name]["min_cosine_vs_onnx_fp32"] >= 0.999
            for row in results["throughput"].values()
            for name in row
            if name != "onnx int8"
        )
    }
    print(json.dumps(results["checks"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
