"""Where the time of `searchengine index` goes, stage by stage, up to 1,000,000 sentences (issue 14, part 1).

Two parts, one per run (each its own process, so peak memory is the part's own):

--part encode --n N
    Index the first N lines of the corpus exactly as `searchengine index FILE` does (SearchEngine.build with
    the CLI's defaults: precision and backend auto, index type chosen from N) and record the wall time of the
    whole call (including the counting pass that runs before indexing starts), the stages of IndexingReport,
    documents/s and peak memory (ru_maxrss).

--part stages --n N --vectors INDEX
    Index N documents whose vectors come with them, as Ray workers' do, so every stage except encoding runs at
    full size: reading the file, storing rows and the keyword index, building the vector index of the type
    chosen for N (HNSW32 above 200,000), committing. The vectors are the real vectors of INDEX (an index that
    `--part encode` built, read back from its Flat index), then noisy copies of them (benchmarks/scale/synthetic.py),
    one per line in order. This measures the non-encoding stages at 1M on this machine instead of extrapolating.

The corpus: the 100,000 Wikipedia sentences of ../shared/data/unsup/wiki_sentences.txt.gz, then copies of them
each with one word dropped at a random (seeded) position, until there are N lines; written once to --work
(never into the repository). A copy can repeat an earlier line (a short sentence has few words to drop), which
the report counts as a repeat.

Usage:
  .venv/bin/python benchmarks/scale/index_scale.py --part encode --n 100000
  .venv/bin/python benchmarks/scale/index_scale.py --part stages --n 1000000 --vectors /tmp/index-scale/encode-100000
Each run prints its row and merges it into benchmarks/scale/results/index_scale.json (keyed by part and N).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from searchengine.indexer.commit.index_directory import IndexDirectory

from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import read_results, write_results
from benchmarks.scale.synthetic import noisy_copies
from searchengine import BuildSettings, SearchEngine
from searchengine.engine.indexing import Chunk, IndexSettings, build_index
from searchengine.reading.corpus import read_corpus

ROOT = Path(__file__).resolve().parents[2]
SENTENCES = DATA / "unsup" / "wiki_sentences.txt.gz"


def corpus_file(n: int, work: Path, source: Path = SENTENCES) -> Path:
    """N lines: the real sentences, then one-word-dropped copies of them (seeded), written once to `work`."""
    path = work / f"corpus-{n}.txt"
    if path.is_file():
        return path
    real = [line.strip() for line in gzip.open(source, "rt", encoding="utf-8") if line.strip()]
    rng = random.Random(14)
    partial = path.with_suffix(".partial")
    with partial.open("w", encoding="utf-8") as out:
        for number in range(n):
            sentence = real[number % len(real)]
            if number >= len(real):
                words = sentence.split()
                if len(words) > 2:
                    del words[rng.randrange(len(words))]
                sentence = " ".join(words)
            out.write(sentence + "\n")
    partial.replace(path)
    return path


def peak_memory_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def encode_part(n: int, work: Path, sentences: Path) -> dict:
    corpus = corpus_file(n, work, sentences)
    target = work / f"encode-{n}"
    started = time.perf_counter()
    engine = SearchEngine.build(corpus, target, BuildSettings(progress=True))
    wall = time.perf_counter() - started
    report = engine.last_report
    engine.close()
    return {
        "documents": report.documents,
        "repeats": report.repeats,
        "index_type": report.index_type,
        "wall_seconds": round(wall, 1),
        "indexing_seconds": round(report.seconds, 1),
        "stages": {stage: round(seconds, 2) for stage, seconds in report.stages.items()},
        "documents_per_second": round(report.documents / wall, 1),
        "peak_memory_gib": round(peak_memory_gib(), 2),
        "encoder": {
            "precision": engine.encoder.precision,
            "backend": engine.encoder.backend,
            "bulk_precision": engine.encoder.bulk_precision,
        },
    }


def stored_vectors(index: Path) -> np.ndarray:
    """The vectors of a Flat index built by `--part encode`, in id order (read back from its segments)."""
    with SearchEngine.open(index) as engine:
        if engine.manifest.index.type != "Flat":
            raise SystemExit(f"{index} is not a Flat index built by --part encode")
        ids, rows = (np.concatenate(part) for part in zip(*engine.stored_vectors()))
    return rows[np.argsort(ids)]


def stages_part(n: int, work: Path, sentences: Path, vectors_from: Path) -> dict:
    corpus = corpus_file(n, work, sentences)
    real = stored_vectors(vectors_from)
    vectors = noisy_copies(real, n)
    del real

    def chunks() -> Iterator[Chunk]:
        documents, start = [], 0
        for document in read_corpus(corpus):
            documents.append(document)
            if len(documents) == 2048:
                yield Chunk(documents, vectors[start : start + len(documents)])
                start += len(documents)
                documents = []
        if documents:
            yield Chunk(documents, vectors[start : start + len(documents)])

    from searchengine.encoding.encoder import Encoder

    encoder = Encoder()  # names the model in the manifest; encodes nothing here
    target = work / f"stages-{n}"
    started = time.perf_counter()
    report = build_index(IndexDirectory(target), chunks(), encoder, IndexSettings(), n, progress=True)
    wall = time.perf_counter() - started
    return {
        "documents": report.documents,
        "repeats": report.repeats,
        "index_type": report.index_type,
        "wall_seconds": round(wall, 1),
        "stages": {stage: round(seconds, 2) for stage, seconds in report.stages.items()},
        "peak_memory_gib": round(peak_memory_gib(), 2),
        "vectors": f"{len(vectors):,}: the real vectors of {vectors_from}, then noisy copies (synthetic.py)",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", required=True, choices=["encode", "stages"])
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--vectors", type=Path, help="--part stages: the index --part encode built.")
    parser.add_argument("--sentences", type=Path, default=SENTENCES, help="Real sentences, one per line (.gz).")
    parser.add_argument("--work", type=Path, default=Path("/tmp/index-scale"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "scale" / "results" / "index_scale.json")
    arguments = parser.parse_args()
    arguments.work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    if arguments.part == "encode":
        row = encode_part(arguments.n, arguments.work, arguments.sentences)
    elif arguments.vectors is None:
        raise SystemExit("--part stages needs --vectors INDEX (built by --part encode)")
    else:
        row = stages_part(arguments.n, arguments.work, arguments.sentences, arguments.vectors)
    row.update(run_record(load_before))
    print(json.dumps(row, indent=2))
    results = read_results(arguments.out)
    results[f"{arguments.part}-{arguments.n}"] = row
    write_results(arguments.out, results)


if __name__ == "__main__":
    main()
