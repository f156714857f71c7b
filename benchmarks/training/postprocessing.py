"""Post-processing transforms (whitening, whitening-k, SN, NATSV, BERT-flow) fitted on Wikipedia sentences and
saved as model modules: STS-B dev/test Spearman x100 of each calibrated model, and the time of each fit.

The fit corpus (the first --fit-count sentences of unsup/wiki_sentences.txt.gz) is embedded once with the frozen
base encoder; every fit then starts from those vectors (training.fit_*(..., vectors=...)), so a fit's time here
is the time after embedding, and `embed_seconds` is what each `searchengine train ...` command adds on top of it.
Each model is written as a directory and read back with the Encoder's own module loader; STS sentences are
embedded once with the base encoder and passed through the loaded modules, as Encoder.encode would do.

Usage: .venv/bin/python benchmarks/training/postprocessing.py [--data ../shared/data] [--fit-count 20000]
       [--out benchmarks/training/results/postprocessing.json] [--only natsv-1,flow]
"""

from __future__ import annotations

import argparse
import gzip
import os
import platform
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

import numpy as np
import torch

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from searchengine.training.fit_flow import fit_flow
from searchengine.training.fit_normalisation import fit_natsv, fit_sn
from searchengine.training.fit_whitening import fit_whitening
from searchengine.training.postprocessing import embed_all, read_texts

from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.results import write_results
from searchengine.encoding.encoder import Encoder
from searchengine.encoding.model_source import locate_model
from searchengine.encoding.model_transforms import apply_transforms, load_transforms
from searchengine.evaluation.labelled_data import read_scored_pairs
from searchengine.evaluation.sts import sts_spearman

TRANSFORMS = {
    "whitening": (fit_whitening, {}),
    "whitening-256": (fit_whitening, {"k": 256}),
    "whitening-128": (fit_whitening, {"k": 128}),
    "sn": (fit_sn, {}),
    "natsv-1": (fit_natsv, {"k": 1}),
    "natsv-2": (fit_natsv, {"k": 2}),
    "natsv-5": (fit_natsv, {"k": 5}),
    "natsv-1-centred": (fit_natsv, {"k": 1, "centre": True}),
    "flow": (fit_flow, {}),
}
CLI = {
    "whitening": "whitening",
    "whitening-256": "whitening --k 256",
    "whitening-128": "whitening --k 128",
    "sn": "sn",
    "natsv-1": "natsv --k 1",
    "natsv-2": "natsv --k 2",
    "natsv-5": "natsv --k 5",
    "natsv-1-centred": "natsv --k 1 --centre",
    "flow": "flow",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--fit-count", type=int, default=20_000)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/training/results/postprocessing.json"))
    parser.add_argument("--only", default=",".join(TRANSFORMS), help="Comma-separated transform names.")
    args = parser.parse_args()
    names = [name for name in args.only.split(",") if name]

    with tempfile.TemporaryDirectory() as scratch:
        corpus = Path(scratch) / "wiki.txt"
        with gzip.open(args.data / "unsup" / "wiki_sentences.txt.gz", "rt", encoding="utf-8") as handle:
            corpus.write_text("".join(islice(handle, args.fit_count)), encoding="utf-8")
        base = Encoder("default")
        texts = read_texts(corpus)
        started = time.perf_counter()
        vectors = embed_all(base, texts, True, "the fit corpus")
        embed_seconds = time.perf_counter() - started
        splits = {split: read_scored_pairs(args.data / "stsb" / f"{split}.tsv") for split in ("dev", "test")}
        sts_texts = list(
            dict.fromkeys(t for pairs in splits.values() for pair in pairs for t in (pair.first, pair.second))
        )
        sts_base = dict(zip(sts_texts, base.encode(sts_texts, pre_normalize=True)))

        def scores(modules: list) -> dict[str, float]:  # noqa: ANN001
            def embed(batch: list[str]) -> np.ndarray:
                pooled = torch.from_numpy(np.stack([sts_base[text] for text in batch]))
                with torch.inference_mode():
                    return apply_transforms(modules, pooled).numpy()  # normalised inside sts_spearman

            return {split: round(sts_spearman(embed, pairs), 2) for split, pairs in splits.items()}

        results = {"base": {"command": None, "fit_seconds": 0.0, **scores([])}}
        for name in names:
            fit, options = TRANSFORMS[name]
            out = Path(scratch) / name
            started = time.perf_counter()
            report = fit(base="default", corpus=corpus, out=out, progress=True, vectors=vectors, **options)
            seconds = time.perf_counter() - started
            modules = load_transforms(locate_model(out), base.pooled_dimension)
            results[name] = {
                "command": f"searchengine train {CLI[name]} --base default --data wiki20k.txt --out DIR",
                "fit_seconds": round(seconds, 1),
                "dimension": report.output_dimension,
                **scores(modules),
                **({"details": report.details} if report.details else {}),
            }
            print(name, results[name], flush=True)

    payload = {
        "run": f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '')} .venv/bin/python {' '.join(sys.argv)}",
        "what": "STS-B Spearman x100 (cosine, 'all' setting) of all-MiniLM-L6-v2 + a post-processing module fitted "
        f"on the first {args.fit_count:,} sentences of unsup/wiki_sentences.txt.gz",
        "fit_texts": len(texts),
        "embed_seconds": round(embed_seconds, 1),
        "note": "fit_seconds excludes embedding the fit corpus (embed_seconds, done once and shared); a "
        "`searchengine train` command takes about embed_seconds + fit_seconds",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores shared with other jobs, torch "
        f"{torch.__version__}, {torch.get_num_threads()} threads",
        "results": results,
    }
    write_results(args.out, payload)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
