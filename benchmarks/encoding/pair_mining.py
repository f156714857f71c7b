"""Sentence-BERT's "65 hours vs 5 seconds": find the most similar pair among n sentences, on this machine.

- Bi-encoder, measured in wall time: embed n sentences with searchengine's Encoder (bundled all-MiniLM-L6-v2),
  then find the top pairs with the chunked exact miner (`mine_vectors`). The pool is embedded once, in the
  nested slices [0, n1), [n1, n2), ...; the time to embed the first n sentences is the sum of its slices' times
  (each slice smart-batched on its own). Mining is timed separately (median of several runs) on the first n
  vectors. Also timed once through the engine: build an index of n sentences, then `SearchEngine.mine`.
- Cross-encoder: the bundled MiniLM with a randomly initialised 1-logit regression head (the trained
  cross-encoder of the training issue does not exist yet; the head's weights do not change the cost). Pairs are
  tokenised together, smart-batched by length, run under torch.inference_mode. A random sample of pairs of the
  n = max(sizes) sentences is timed after a warm-up; the median rate of its parts is extrapolated to
  n(n-1)/2 pairs. The extrapolation is validated by scoring all pairs of a small n and comparing the measured time
  with the prediction.
- Checks (correctness, never speed): the brute-force top pair equals the miner's; for the validation n the
  cross-encoder scored exactly the pair set the bi-encoder miner considers (every i < j once).

Usage: .venv/bin/python benchmarks/encoding/pair_mining.py [--quick] [--data ../shared/data]
       [--out benchmarks/encoding/results/pair_mining.json] [--plot docs/pair_mining.png]
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import statistics
import sys
import tempfile
import time
from importlib.metadata import version
from itertools import islice
from pathlib import Path

import numpy as np
import torch

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import machine_record
from benchmarks.harness.results import write_results
from searchengine import Encoder, SearchEngine, mine_vectors
from searchengine.encoding.hf_loading import load_pretrained
from searchengine.encoding.model_source import bundled_model_path

ROOT = Path(__file__).resolve().parents[2]
PAPER_TARGET_S = 5.0
"""Sentence-BERT: about 5 seconds for 10,000 sentences (on a V100)."""


def sentence_pool(data: Path, count: int, seed: int = 0) -> list[str]:
    """`count` distinct sentences: every STS-B sentence and Wikipedia sentences, shuffled together."""
    sts = []
    for split in ("train", "dev", "test"):
        for line in (data / "stsb" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()[1:]:
            sts.extend(line.split("\t")[1:3])
    with gzip.open(data / "unsup" / "wiki_sentences.txt.gz", "rt", encoding="utf-8") as handle:
        wiki = [line.strip() for line in islice(handle, count)]
    pool = list(dict.fromkeys(s.strip() for s in sts + wiki if s.strip()))
    random.Random(seed).shuffle(pool)
    if len(pool) < count:
        raise SystemExit(f"only {len(pool)} distinct sentences in {data}, {count} needed")
    return pool[:count]


class CrossEncoder:
    """The bundled MiniLM with a fresh 1-logit head, scoring sentence pairs the way a cross-encoder does."""

    def __init__(self, batch_size: int = 64) -> None:
        torch.manual_seed(0)
        self.tokenizer, self.model = load_pretrained(
            bundled_model_path(), "the bundled model", "AutoModelForSequenceClassification", num_labels=1
        )
        self.model.eval()
        self.batch_size = batch_size

    def score(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """One logit per pair (both sentences in one pass), in input order; batches sorted by length."""
        tokens = self.tokenizer([a for a, _ in pairs], [b for _, b in pairs], truncation=True, max_length=256)
        order = np.argsort([-len(ids) for ids in tokens["input_ids"]], kind="stable")
        out = np.empty(len(pairs), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                batch = self.tokenizer.pad({key: [tokens[key][i] for i in rows] for key in tokens}, return_tensors="pt")
                out[rows] = self.model(**batch).logits[:, 0].float().numpy()
        return out


def all_pairs(n: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(n) for j in range(i + 1, n)]


def time_mining(vectors: np.ndarray, runs: int) -> tuple[float, list]:
    """Median seconds of `mine_vectors(top=5)` over `runs` runs, and its pairs."""
    times, pairs = [], []
    for _ in range(runs):
        start = time.perf_counter()
        pairs = mine_vectors(vectors, top=5)
        times.append(time.perf_counter() - start)
    return statistics.median(times), pairs


def brute_force_top_pair(vectors: np.ndarray) -> tuple[int, int]:
    """The best pair from one full similarity matrix: the reference the chunked miner must match."""
    scores = vectors @ vectors.T
    scores[np.tril_indices(len(vectors))] = -np.inf
    i, j = np.unravel_index(int(np.argmax(scores)), scores.shape)
    return int(i), int(j)


def growth_exponent(sizes: list[int], seconds: list[float]) -> float | None:
    """Slope of log(time) against log(n): 1 is linear, 2 quadratic; None with fewer than two sizes."""
    if len(set(sizes)) < 2:
        return None
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])


def machine() -> dict:
    return machine_record(torch_threads=torch.get_num_threads(), gpu=False)


def load() -> float:
    return os.getloadavg()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "encoding" / "results" / "pair_mining.json")
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "pair_mining.png")
    parser.add_argument("--quick", action="store_true", help="small n and samples: a smoke test of about a minute")
    parser.add_argument("--sizes", type=int, nargs="+", help="bi-encoder sizes (default 1000 2000 5000 10000 20000)")
    parser.add_argument("--cross-sizes", type=int, nargs="+", help="sizes to extrapolate the cross-encoder to")
    parser.add_argument("--sample-pairs", type=int, help="cross-encoder pairs timed for the rate (default 3000)")
    parser.add_argument("--validate-n", type=int, help="score all pairs of this many sentences (default 100)")
    parser.add_argument("--index-n", type=int, help="sentences for the engine path (default 2000)")
    parser.add_argument(
        "--cross-encoder", type=Path,
        help="a trained cross-encoder directory (`searchengine train cross-encoder`) scored with "
        "searchengine.encoding.cross_encoder.CrossEncoder [default: the bundled MiniLM with a random 1-logit head]",
    )  # fmt: skip
    args = parser.parse_args()
    sizes = args.sizes or ([100, 200] if args.quick else [1000, 2000, 5000, 10000, 20000])
    cross_sizes = args.cross_sizes or ([100, 200] if args.quick else [1000, 2000, 5000, 10000])
    sample_pairs = args.sample_pairs or (60 if args.quick else 3000)
    validate_n = args.validate_n or (10 if args.quick else 100)
    index_n = args.index_n or (50 if args.quick else 2000)
    mining_runs = 3 if args.quick else 5

    pool = sentence_pool(args.data, max(sizes + cross_sizes + [validate_n, index_n]))
    results: dict = {
        "machine": machine(),
        "versions": {name: version(name) for name in ("torch", "transformers", "faiss-cpu", "numpy", "searchengine")},
        "load_average_at_start": load(),
        "quick": args.quick,
        "sentences": "distinct STS-B (train+dev+test) and Wikipedia sentences, shuffled with seed 0; "
        "each n is a prefix of the same pool",
    }
    print(f"{results['machine']}; load average {load():.1f}")

    # Bi-encoder: embed nested slices once, mine each prefix.
    encoder = Encoder()
    encoder.encode(pool[:256])  # warm-up
    vectors, encode_seconds, edges = [], 0.0, [0, *sorted(sizes)]
    bi_rows = []
    for low, high in zip(edges, edges[1:]):
        start = time.perf_counter()
        vectors.append(encoder.encode(pool[low:high]))
        encode_seconds += time.perf_counter() - start
        matrix = np.concatenate(vectors)
        mine_seconds, pairs = time_mining(matrix, mining_runs)
        bi_rows.append(
            {
                "n": high,
                "encode_s": encode_seconds,
                "mine_s": mine_seconds,
                "total_s": encode_seconds + mine_seconds,
                "top_pairs": [{"score": p.score, "first": pool[p.first], "second": pool[p.second]} for p in pairs[:3]],
            }
        )
        print(
            f"bi-encoder n={high}: encode {encode_seconds:.1f} s + mine {mine_seconds:.3f} s; top pair "
            f"{pairs[0].score:.4f}: {pool[pairs[0].first]!r} / {pool[pairs[0].second]!r}"
        )
    checked = min(matrix.shape[0], 10_000)
    top = mine_vectors(matrix[:checked], top=1)[0]
    assert (top.first, top.second) == brute_force_top_pair(matrix[:checked]), "chunked miner disagrees with brute force"
    results["bi_encoder"] = bi_rows
    results["bi_encoder_growth_exponent"] = growth_exponent([r["n"] for r in bi_rows], [r["total_s"] for r in bi_rows])

    with tempfile.TemporaryDirectory() as scratch:
        start = time.perf_counter()
        engine = SearchEngine.build(pool[:index_n], Path(scratch) / "index", encoder=encoder)
        built = time.perf_counter() - start
        start = time.perf_counter()
        engine_pairs = engine.mine(top=5)
        mined = time.perf_counter() - start
    results["engine_path"] = {
        "n": index_n,
        "build_s": built,
        "mine_s": mined,
        "total_s": built + mined,
        "top_pair": {
            "score": engine_pairs[0].score,
            "first": engine_pairs[0].first_text,
            "second": engine_pairs[0].second_text,
        },
    }
    print(f"engine path n={index_n}: build {built:.1f} s + SearchEngine.mine {mined:.3f} s")

    # Cross-encoder: a timed sample, extrapolated; validated on all pairs of a small n.
    if args.cross_encoder is not None:
        from searchengine.encoding.cross_encoder import CrossEncoder as TrainedCrossEncoder

        cross = TrainedCrossEncoder(args.cross_encoder, batch_size=64)
        cross_model = (
            f"cross-encoder {args.cross_encoder} (searchengine.encoding.cross_encoder.CrossEncoder, sigmoid scores)"
        )
    else:
        cross = CrossEncoder()
        cross_model = "bundled all-MiniLM-L6-v2 body + randomly initialised 1-logit regression head (untrained)"
    rng = np.random.default_rng(0)
    n_sample = max(cross_sizes)
    sample = []
    while len(sample) < sample_pairs:
        i, j = sorted(rng.choice(n_sample, 2, replace=False))
        sample.append((pool[i], pool[j]))
    cross.score(sample[:64])  # warm-up
    parts = np.array_split(np.arange(len(sample)), 3)
    rates = []
    for part in parts:
        start = time.perf_counter()
        cross.score([sample[k] for k in part])
        rates.append(len(part) / (time.perf_counter() - start))
    rate = statistics.median(rates)
    print(
        f"cross-encoder: {rate:.1f} pairs/s (median of {len(parts)} parts of {len(sample)} pairs: "
        f"{', '.join(f'{r:.1f}' for r in rates)})"
    )

    pair_indices = all_pairs(validate_n)
    start = time.perf_counter()
    cross_scores = cross.score([(pool[i], pool[j]) for i, j in pair_indices])
    measured = time.perf_counter() - start
    predicted = len(pair_indices) / rate
    bi_pairs = mine_vectors(matrix[:validate_n], top=len(pair_indices))
    same_pairs = {(p.first, p.second) for p in bi_pairs} == set(pair_indices) and len(bi_pairs) == len(pair_indices)
    assert same_pairs, "the bi-encoder miner and the cross-encoder did not consider the same pairs"
    cross_best = pair_indices[int(np.argmax(cross_scores))]
    results["cross_encoder"] = {
        "model": cross_model,
        "batch_size": cross.batch_size,
        "sample_pairs": len(sample),
        "sample_from_n": n_sample,
        "pairs_per_s": rate,
        "part_rates": rates,
        "validation": {
            "n": validate_n,
            "pairs": len(pair_indices),
            "measured_s": measured,
            "predicted_s": predicted,
            "measured_over_predicted": measured / predicted,
            "bi_encoder_top_pair": [pool[bi_pairs[0].first], pool[bi_pairs[0].second]],
            ("cross_encoder_top_pair" if args.cross_encoder else "cross_encoder_top_pair_untrained_head"): [
                pool[cross_best[0]],
                pool[cross_best[1]],
            ],
        },
    }
    print(
        f"validation n={validate_n}: {len(pair_indices)} pairs in {measured:.1f} s, predicted {predicted:.1f} s "
        f"(ratio {measured / predicted:.2f})"
    )

    by_n = {row["n"]: row for row in bi_rows}
    table = []
    for n in sorted(set(sizes) | set(cross_sizes)):
        pairs_n = n * (n - 1) // 2
        row = {"n": n, "pairs": pairs_n, "bi_encoder_s": by_n[n]["total_s"] if n in by_n else None}
        if n in cross_sizes:
            row["cross_encoder_s"] = pairs_n / rate
            row["cross_encoder_how"] = "extrapolated"
            if row["bi_encoder_s"]:
                row["ratio"] = row["cross_encoder_s"] / row["bi_encoder_s"]
        table.append(row)
    table.append(
        {
            "n": validate_n,
            "pairs": len(pair_indices),
            "bi_encoder_s": None,
            "cross_encoder_s": measured,
            "cross_encoder_how": "measured (all pairs)",
        }
    )
    results["table"] = table
    cross_rows = [row for row in table if row.get("cross_encoder_how") == "extrapolated"]
    results["cross_encoder_growth_exponent"] = growth_exponent(
        [row["n"] for row in cross_rows], [row["cross_encoder_s"] for row in cross_rows]
    )
    ten_k = by_n.get(10_000)
    results["paper_target"] = {
        "bi_encoder_10k_s": ten_k["total_s"] if ten_k else None,
        "target_s": PAPER_TARGET_S,
        "met": bool(ten_k and ten_k["total_s"] <= PAPER_TARGET_S),
    }
    results["checks"] = {"brute_force_top_pair_equals_miner": True, "validation_same_pair_set": same_pairs}
    results["load_average_at_end"] = load()
    for row in table:
        bi = f"{row['bi_encoder_s']:.2f} s" if row.get("bi_encoder_s") else "-"
        ce = f"{row['cross_encoder_s']:.0f} s ({row['cross_encoder_how']})" if row.get("cross_encoder_s") else "-"
        print(
            f"  n={row['n']:>6}  bi-encoder {bi:>10}  cross-encoder {ce}"
            + (f"  ratio {row['ratio']:.0f}x" if row.get("ratio") else "")
        )
    print(
        f"growth exponents (log-log slope): bi-encoder {results['bi_encoder_growth_exponent']}, "
        f"cross-encoder {results['cross_encoder_growth_exponent']}; load average {load():.1f}"
    )
    write_results(args.out, results, ensure_ascii=False)
    plot(results, args.plot)
    print(f"wrote {args.out} and {args.plot}")


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bi = results["bi_encoder"]
    extrapolated = [row for row in results["table"] if row.get("cross_encoder_how") == "extrapolated"]
    validation = results["cross_encoder"]["validation"]
    figure, axis = plt.subplots(figsize=(7, 4.5))
    axis.plot([r["n"] for r in bi], [r["total_s"] for r in bi], "o-", label="bi-encoder: embed + mine (measured)")
    axis.plot(
        [r["n"] for r in extrapolated],
        [r["cross_encoder_s"] for r in extrapolated],
        "s--",
        label="cross-encoder: all pairs (extrapolated)",
    )
    axis.plot([validation["n"]], [validation["measured_s"]], "k^", label="cross-encoder: all pairs (measured)")
    axis.axhline(PAPER_TARGET_S, color="grey", linewidth=0.8, linestyle=":")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("sentences n")
    axis.set_ylabel("seconds to find the most similar pair")
    axis.set_title(f"Pair mining on {results['machine']['cores']} CPU cores ({results['machine']['cpu']})")
    axis.legend()
    axis.grid(True, which="both", alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


if __name__ == "__main__":
    main()
