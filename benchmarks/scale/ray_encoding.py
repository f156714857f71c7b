"""Ray against one process (issue 14, part 2): the same Wikipedia sentences embedded in this process and by a local
Ray cluster's encoder actors, in one run, and what the driver costs per document.

Each round runs every variant in a fresh subprocess (so each has its own peak memory), in turn:
- local: the bundled model's default Encoder (ONNX Runtime fp32 where installed, all cores) embeds the sentences
  in chunks of 2,048, as `searchengine index` does in one process;
- local, one thread: the same with threads=1, the rate of one core (what each Ray actor below has);
- ray: ray.init(num_cpus=cores) starts a local cluster (timed: Ray's start-up), a pass over 64 sentences times
  the pipeline's fixed start-up (actors start and load the model), then the Ray Data pipeline of
  `searchengine index --ray` (searchengine.engine.ray_embedding: a reader task, --workers encoder actors with one
  model and --threads threads each) embeds the sentences and streams them back. Its steady rate is the sentences
  over (the whole pass minus that start-up).
Ratios are taken within each round; medians over rounds are reported.

Then, once, the driver's own work: storing the documents and indexing the vectors Ray sent back (build_index from
chunks that carry their vectors, no encoding), for Flat and HNSW32 in --workers shards; and how fast the driver
reads and checks the corpus up front to cut it into parts (plan_parts).

Memory: peak resident set (VmHWM) of the driver process and of each encoder actor.

Usage: .venv/bin/python benchmarks/scale/ray_encoding.py [--sentences 10000] [--rounds 3] [--workers 2] [--threads 1]
       [--out benchmarks/scale/results/ray_encoding.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import machine_record
from benchmarks.harness.results import write_results

ROOT = Path(__file__).resolve().parents[2]


def write_corpus(folder: Path, sentences: int, shards: int, data: Path) -> Path:
    """The first `sentences` Wikipedia sentences of the data folder as `shards` .txt files in `folder`."""
    with gzip.open(data / "unsup" / "wiki_sentences.txt.gz", "rt", encoding="utf-8") as handle:
        lines = [line.strip() for line in islice(handle, sentences)]
    corpus = folder / "corpus"
    corpus.mkdir(exist_ok=True)
    size = -(-len(lines) // shards)
    for number in range(shards):
        (corpus / f"part{number:02d}.txt").write_text("\n".join(lines[number * size : (number + 1) * size]) + "\n")
    return corpus


def peak_rss_mib(pid: int | str = "self") -> float:
    """The peak resident set of a process (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def actor_peaks_mib() -> dict[str, float]:
    """Peak resident set of each live encoder actor process (Ray names them ray::MapWorker(...EncoderWorker...))."""
    peaks = {}
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"EncoderWorker" in (entry / "cmdline").read_bytes():
                peaks[entry.name] = round(peak_rss_mib(entry.name), 1)
        except OSError:
            continue
    return peaks


def run_local(corpus: Path, threads: int | None) -> dict:
    from searchengine import Encoder
    from searchengine.engine.indexing import document_chunks
    from searchengine.reading.corpus import corpus_files, read_corpus

    encoder = Encoder(threads=threads)
    encoder.encode(["warm up the encoder"] * 64)
    started = time.perf_counter()
    count = 0
    for chunk in document_chunks(document for file in corpus_files(corpus) for document in read_corpus(file)):
        count += len(encoder.encode([document.text for document in chunk.documents]))
    seconds = time.perf_counter() - started
    return {"sentences": count, "seconds": seconds, "per_s": count / seconds, "driver_peak_mib": peak_rss_mib()}


def run_ray(corpus: Path, workers: int, threads: int, vectors_out: Path | None) -> dict:
    """Ray's start-up, the pipeline's start-up (a pass over 64 sentences) and a pass over the corpus."""
    import logging

    import ray

    from searchengine import Encoder
    from searchengine.engine.ray_embedding import RaySettings, plan_parts, ray_embedder
    from searchengine.reading.corpus import corpus_files

    encoder = Encoder()  # the driver loads the model too: it names it in the manifest
    started = time.perf_counter()
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    init_seconds = time.perf_counter() - started
    count, vectors, actors = 0, [], {}
    tiny = corpus.parent / "tiny.txt"
    tiny.write_text("\n".join(corpus_files(corpus)[0].read_text().splitlines()[:64]) + "\n")
    settings = RaySettings(workers=workers, threads=threads)
    parts = plan_parts(corpus_files(corpus), None, batch_size=settings.batch_size)
    with ray_embedder(settings, encoder) as embedder:
        started = time.perf_counter()
        for _ in embedder.chunks(plan_parts([tiny], None, batch_size=settings.batch_size), None):
            pass
        start_up = time.perf_counter() - started
        started = time.perf_counter()
        for chunk in embedder.chunks(parts, None):
            count += len(chunk.documents)
            vectors.append(chunk.vectors)
            actors.update(actor_peaks_mib())  # sampled while they run: they end with the pipeline
        seconds = time.perf_counter() - started
    ray.shutdown()
    if vectors_out is not None:
        np.save(vectors_out, np.concatenate(vectors))
    return {
        "sentences": count,
        "ray_init_seconds": init_seconds,
        "pipeline_start_seconds": start_up,
        "seconds": seconds,
        "per_s": count / seconds,
        "steady_per_s": count / (seconds - start_up),
        "driver_peak_mib": peak_rss_mib(),
        "actor_peak_mib": sorted(actors.values()),
    }


def run_driver(corpus: Path, vectors_file: Path, shards: int) -> dict:
    """What the driver does per document once vectors come back: store them, index them, and count the corpus."""
    from searchengine.indexer.commit.index_directory import IndexDirectory

    from searchengine import Encoder
    from searchengine.engine.indexing import CHUNK, Chunk, IndexSettings, build_index
    from searchengine.engine.ray_embedding import plan_parts
    from searchengine.reading.corpus import corpus_files, read_corpus

    vectors = np.load(vectors_file)
    documents = [document for file in corpus_files(corpus) for document in read_corpus(file)]
    started = time.perf_counter()
    counted = sum(part.documents for part in plan_parts(corpus_files(corpus), None))
    plan_per_s = counted / (time.perf_counter() - started)
    encoder = Encoder()
    results = {"plan_pass_per_s": plan_per_s}
    for index_type in ("Flat", "HNSW32"):
        chunks = [
            Chunk(documents[start : start + CHUNK], vectors[start : start + CHUNK])
            for start in range(0, len(documents), CHUNK)
        ]
        with tempfile.TemporaryDirectory() as scratch:
            started = time.perf_counter()
            build_index(
                IndexDirectory(Path(scratch) / "index"),
                chunks,
                encoder,
                IndexSettings(index_type=index_type, shards=shards),
                total=len(documents),
            )
            seconds = time.perf_counter() - started
        results[f"store_and_index_{index_type}_per_s"] = len(documents) / seconds
    return results


def child(args: argparse.Namespace) -> None:
    corpus = Path(args.corpus)
    if args.child == "local":
        result = run_local(corpus, None)
    elif args.child == "local-1-thread":
        result = run_local(corpus, 1)
    elif args.child == "ray":
        result = run_ray(corpus, args.workers, args.threads, Path(args.vectors) if args.vectors else None)
    else:
        result = run_driver(corpus, Path(args.vectors), args.workers)
    result["max_rss_mib_getrusage"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def in_subprocess(kind: str, corpus: Path, args: argparse.Namespace, vectors: Path | None = None) -> dict:
    command = [sys.executable, __file__, "--child", kind, "--corpus", str(corpus), "--workers", str(args.workers)]
    command += ["--threads", str(args.threads)] + (["--vectors", str(vectors)] if vectors else [])
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{completed.stderr[-3000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DATA, help="the data folder (benchmarks/datasets/get_data.py)")
    parser.add_argument("--workers", type=int, default=2, help="Ray encoder actors (and shards)")
    parser.add_argument("--threads", type=int, default=1, help="threads per actor")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "scale" / "results" / "ray_encoding.json")
    parser.add_argument("--child", choices=["local", "local-1-thread", "ray", "driver"], help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--vectors", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    command = "python benchmarks/scale/ray_encoding.py " + " ".join(sys.argv[1:])
    loads = [os.getloadavg()[0]]
    rounds = []
    with tempfile.TemporaryDirectory() as scratch:
        corpus = write_corpus(Path(scratch), args.sentences, args.workers, args.data)
        vectors = Path(scratch) / "vectors.npy"
        for number in range(args.rounds):
            local = in_subprocess("local", corpus, args)
            one = in_subprocess("local-1-thread", corpus, args)
            ray = in_subprocess("ray", corpus, args, vectors)
            rounds.append(
                {
                    "local": local,
                    "local_1_thread": one,
                    "ray": ray,
                    "ray_over_local": ray["per_s"] / local["per_s"],
                    "ray_steady_over_local": ray["steady_per_s"] / local["per_s"],
                    "ray_steady_over_1_thread": ray["steady_per_s"] / one["per_s"],
                }
            )
            loads.append(os.getloadavg()[0])
            print(
                f"round {number + 1}/{args.rounds}: local {local['per_s']:.1f}/s, one thread {one['per_s']:.1f}/s, "
                f"ray {ray['per_s']:.1f}/s (steady {ray['steady_per_s']:.1f}/s), load {loads[-1]:.2f}",
                flush=True,
            )
        driver = in_subprocess("driver", corpus, args, vectors)

    def median(kind: str, key: str | None = None) -> float:
        return round(statistics.median(r[kind] if key is None else r[kind][key] for r in rounds), 3)

    summary = {
        "local_per_s": median("local", "per_s"),
        "local_1_thread_per_s": median("local_1_thread", "per_s"),
        "ray_per_s": median("ray", "per_s"),
        "ray_steady_per_s": median("ray", "steady_per_s"),
        "ray_over_local": median("ray_over_local"),
        "ray_steady_over_local": median("ray_steady_over_local"),
        "ray_steady_over_1_thread": median("ray_steady_over_1_thread"),
        "ray_init_seconds": median("ray", "ray_init_seconds"),
        "ray_pipeline_start_seconds": median("ray", "pipeline_start_seconds"),
        "driver_peak_mib_local": median("local", "driver_peak_mib"),
        "driver_peak_mib_ray": median("ray", "driver_peak_mib"),
        "actor_peak_mib": rounds[-1]["ray"]["actor_peak_mib"],
        **{key: round(value, 1) for key, value in driver.items() if key.endswith("per_s")},
    }
    result = {
        "command": command,
        "machine": machine_record(shared=True),
        "load_average_1min": loads,
        "sentences": args.sentences,
        "workers": args.workers,
        "threads_per_worker": args.threads,
        "summary": summary,
        "rounds": rounds,
        "driver": driver,
    }
    write_results(args.out, result, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
