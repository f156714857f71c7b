"""The Ray build's driver, before and after workers write the segments (issue 22, part 4), in one run.

The driver's work is timed without Ray, on the chunks a Ray build hands it (chunks of 2,048 documents, in order),
for the first --sentences Wikipedia sentences embedded once here by the bundled model:
- vectors back (what the driver did before workers wrote segments, and for fitted or trained indexes until they
  were fitted and trained on a sample first):
  the chunks carry their vectors; the driver stores the rows and builds the vector index in --shards shards
  (Flat, and HNSW32), then commits;
- segments written: the chunks carry only the ids and the records of the segments the workers wrote (one per part,
  cut as `searchengine index --ray` cuts the corpus for --workers actors); the driver stores the rows, adopts the
  segments (a stat each) and commits the segment list. The workers' writing of those segments (whiten, Flat add,
  save, fsync, checksum: searchengine.engine.ray_embedding.write_worker_segment) is timed separately, outside
  the driver.
Variants alternate within each round, in a rotating order; medians over rounds and per-round ratios are reported.

Usage: .venv/bin/python benchmarks/scale/ray_driver.py [--sentences 6000] [--rounds 5] [--shards 2] [--workers 2]
       [--out benchmarks/scale/results/ray_driver.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results

if TYPE_CHECKING:
    from searchengine import Encoder

ROOT = Path(__file__).resolve().parents[2]


def corpus_and_vectors(folder: Path, sentences: int, data: Path, encoder: Encoder) -> tuple[Path, np.ndarray]:
    """The first `sentences` Wikipedia sentences as a corpus file, and their vectors from the bundled model."""
    with gzip.open(data / "unsup" / "wiki_sentences.txt.gz", "rt", encoding="utf-8") as handle:
        lines = [line.strip() for line in islice(handle, sentences)]
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return corpus, encoder.encode(lines)


def vectors_back(
    corpus: Path, vectors: np.ndarray, index_type: str, shards: int, target: Path, encoder: Encoder
) -> float:
    """Seconds the driver takes to store the rows and build the vector index from vectors sent back."""
    from searchengine.indexer.commit.index_directory import IndexDirectory

    from searchengine.engine.indexing import CHUNK, Chunk, IndexSettings, build_index
    from searchengine.reading.corpus import read_corpus

    documents = list(read_corpus(corpus))
    chunks = [Chunk(documents[s : s + CHUNK], vectors[s : s + CHUNK]) for s in range(0, len(documents), CHUNK)]
    started = time.perf_counter()
    build_index(IndexDirectory(target), chunks, encoder, IndexSettings(index_type=index_type, shards=shards))
    return time.perf_counter() - started


def segments_written(
    corpus: Path, vectors: np.ndarray, target: Path, encoder: Encoder, workers: int
) -> tuple[float, float]:
    """Seconds the workers take to write the segments (all parts, one after another), and seconds the driver
    takes to store the rows and commit those segments."""
    from searchengine.indexer.commit.index_directory import IndexDirectory
    from searchengine.indexer.vectors.segments import reserve_segment_numbers

    from searchengine.engine.indexing import CHUNK, Chunk, IndexSettings, build_index
    from searchengine.engine.ray_embedding import SegmentTarget, plan_parts, segment_parts, write_worker_segment
    from searchengine.reading.corpus import read_corpus

    documents = list(read_corpus(corpus))
    parts = segment_parts(plan_parts([corpus], None), workers)
    target.mkdir()
    segment_target = SegmentTarget(str(target), reserve_segment_numbers(len(documents)), "Flat")
    started = time.perf_counter()
    records, first = [], 0
    for part in parts:
        ids = np.arange(first, first + part.documents, dtype=np.int64)
        records.append(write_worker_segment(segment_target, vectors[first : first + part.documents], ids))
        first += part.documents
    workers = time.perf_counter() - started
    chunks = [
        Chunk(
            documents[s : s + CHUNK],
            None,
            0,
            np.arange(s, min(s + CHUNK, len(documents)), dtype=np.int64),
            tuple(r for r in records if s <= r.first_id < s + CHUNK),
        )
        for s in range(0, len(documents), CHUNK)
    ]
    started = time.perf_counter()
    settings = IndexSettings(index_type="Flat", segments_written=True)
    build_index(IndexDirectory(target), chunks, encoder, settings, total=len(documents))
    return workers, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=6000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--shards", type=int, default=2, help="shards of the vectors-back variants (Ray's default: one per worker)"
    )
    parser.add_argument("--workers", type=int, default=2, help="Ray encoder actors the parts are cut for")
    parser.add_argument("--data", type=Path, default=DATA, help="the data folder (benchmarks/datasets/get_data.py)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "scale" / "results" / "ray_driver.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    from searchengine import Encoder

    encoder = Encoder()  # the driver loads the model too: it names it in the manifest
    rounds = []
    with tempfile.TemporaryDirectory() as scratch:
        corpus, vectors = corpus_and_vectors(Path(scratch), args.sentences, args.data, encoder)
        variants = ["Flat", "HNSW32", "segments"]
        for number in range(args.rounds + 1):  # round 0 warms up and is left out
            seconds: dict[str, float] = {}
            for variant in variants[number % 3 :] + variants[: number % 3]:
                target = Path(scratch) / f"index-{number}-{variant}"
                if variant == "segments":
                    seconds["workers_writing_segments"], seconds["segments"] = segments_written(
                        corpus, vectors, target, encoder, args.workers
                    )
                else:
                    seconds[variant] = vectors_back(corpus, vectors, variant, args.shards, target, encoder)
            if number:
                rounds.append({key: args.sentences / value for key, value in seconds.items()})
                print(json.dumps({key: round(value, 1) for key, value in rounds[-1].items()}), flush=True)

    def median(key: str) -> float:
        return round(statistics.median(r[key] for r in rounds), 1)

    def ratio(key: str) -> float:
        return round(statistics.median(r["segments"] / r[key] for r in rounds), 2)

    summary = {
        "driver_vectors_back_Flat_per_s": median("Flat"),
        "driver_vectors_back_HNSW32_per_s": median("HNSW32"),
        "driver_segments_written_per_s": median("segments"),
        "segments_over_vectors_back_Flat": ratio("Flat"),
        "segments_over_vectors_back_HNSW32": ratio("HNSW32"),
        "workers_writing_segments_per_s": median("workers_writing_segments"),
    }
    result = {
        **run_record(load_before),  # the load averages at start and end (os.getloadavg)
        "sentences": args.sentences,
        "shards": args.shards,
        "workers": args.workers,
        "summary": summary,
        "rounds": rounds,
    }
    write_results(args.out, result, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
