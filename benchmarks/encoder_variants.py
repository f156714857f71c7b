"""Encoder precision variants on this CPU: speed relative to fp32 and STS-B test Spearman for each (issue 4, part 2).

Variants: fp32 (the default), dynamic int8 (torch.ao.quantization.quantize_dynamic on every Linear layer) and
bf16 weights. The variants alternate within each round so machine load hits all of them alike; the speed ratio
is the median over rounds of fp32 time / variant time.

Usage: .venv/bin/python benchmarks/encoder_variants.py [--sentences 1000] [--rounds 3]
       [--out benchmarks/results/encoder_variants.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings
from pathlib import Path

import torch

from searchengine import Encoder
from searchengine.evaluation.sts import sts_spearman
from searchengine.labelled_data import read_scored_pairs

ROOT = Path(__file__).resolve().parents[1]


def variants() -> dict[str, Encoder]:
    """One encoder per precision, all from the bundled model."""
    fp32, int8, bf16 = Encoder(), Encoder(), Encoder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao deprecation notice
        int8.model = torch.ao.quantization.quantize_dynamic(int8.model, {torch.nn.Linear}, dtype=torch.qint8)
    bf16.model = bf16.model.to(torch.bfloat16)
    return {"fp32": fp32, "int8 (dynamic)": int8, "bf16": bf16}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--sentences", type=int, default=1000, help="distinct STS-B test sentences timed")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "encoder_variants.json")
    args = parser.parse_args()

    pairs = read_scored_pairs(args.data / "stsb" / "test.tsv")
    texts = list(dict.fromkeys(text for pair in pairs for text in (pair.first, pair.second)))[: args.sentences]
    encoders = variants()
    for encoder in encoders.values():
        encoder.encode(texts[:128])  # warm-up
    times: dict[str, list[float]] = {name: [] for name in encoders}
    for _ in range(args.rounds):
        for name, encoder in encoders.items():
            start = time.perf_counter()
            encoder.encode(texts)
            times[name].append(time.perf_counter() - start)
    results = {
        "machine": {"cpu": "AMD EPYC (Zen 3, AVX2, no AVX-512/bf16/AMX)", "threads": torch.get_num_threads()},
        "load_average": os.getloadavg()[0],
        "sentences": len(texts),
        "rounds": args.rounds,
        "variants": {},
    }
    for name, encoder in encoders.items():
        results["variants"][name] = {
            "sentences_per_s": len(texts) / statistics.median(times[name]),
            "speed_vs_fp32": statistics.median(f / t for f, t in zip(times["fp32"], times[name])),
            "stsb_test_spearman": sts_spearman(encoder.encode, pairs),
        }
        row = results["variants"][name]
        print(f"{name:<15} {row['sentences_per_s']:6.0f}/s  {row['speed_vs_fp32']:.2f}x fp32  "
              f"Spearman {row['stsb_test_spearman']:.2f}")
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}; load average {results['load_average']:.1f}")


if __name__ == "__main__":
    main()
