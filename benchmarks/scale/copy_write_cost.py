"""CPU a cluster write costs one shard copy (issue 41's "add 10" target), in process and without Ray: the CPU ms of
`ShardCopy.apply` of 10 documents with their vectors, and of `SearchEngine.add` of the same 10 (given vectors,
merge=False as the server's request path adds) to one index of every shard's documents, alternated write by write.

A routed add of 10 documents over 4 shards x 2 copies runs `apply` on 8 copies; one index runs one add. So the
copy's CPU an apply, against one index's CPU an add, says what the cluster's write costs the machine before Ray's
own calls. Each round builds, in a fresh process per system, one copy of --documents documents as a cluster build
makes it (ShardCopy.begin_build / write_batch / finish_build, with the model's identity and no model loaded) and one
index of --documents x --shards documents, then times --writes writes of each, alternately (new external ids,
further Wikipedia sentences). With --baseline (an older checkout: a git worktree, or `git archive` of a commit
unpacked), the rounds alternate between it and this checkout, and the ratios of their medians are given.

The documents are the shared Wikipedia sentences, their vectors the default model's, read from the cached .npy
blocks (search_speed.cached_embeddings' cache; never encoded here: a block missing is an error). CPU is the
process's (time.process_time: user and system), so it counts fsync's system time too; wall is perf_counter.
Each process makes WARM_UP untimed writes of each kind first. --profile adds cProfile's top entries (CPU time) of
further applies, after the timed ones, in this checkout's last round. The last line on stdout is one JSON object;
the same record goes to --out.

Usage: .venv/bin/python benchmarks/scale/copy_write_cost.py [--documents 5000] [--shards 4] [--writes 40]
       [--rounds 3] [--baseline ../base] [--profile] [--out benchmarks/scale/results/copy_write_cost.json]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.environments import baseline_path, system_env
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "results" / "copy_write_cost.json"
CACHE = Path.home() / ".cache" / "searchengine-bench" / "blocks"
PER_WRITE = 10
"""Documents a write adds: the target's add of 10."""
BUILD_BATCH = 1000
"""Documents a cluster build hands a copy at a time (write_batch)."""
TIMES = ("apply_cpu_ms", "apply_wall_ms", "apply_reload_cpu_ms", "apply_cleanup_cpu_ms", "add_cpu_ms", "add_wall_ms")
"""What each system's record gives, as medians over every round's writes: an apply's CPU and wall ms, the CPU of
its reload after the commit (IndexSnapshot._load_or_close) and of its clean-up of unreferenced files
(IndexDirectory.remove_unreferenced), and one index's add's CPU and wall ms."""
WARM_UP = 3
"""Untimed writes of each kind first (the first write of a process opens and upgrades what later ones reuse)."""


def embedded(count: int) -> tuple[Any, list[str], Any]:
    """The default model's identity (what a copy's build records, without loading the model), the first `count`
    Wikipedia sentences and their cached vectors."""
    import numpy as np

    from benchmarks.scale.search_speed import BLOCK, block_path, read_wiki
    from searchengine.cluster.embedded_model import EmbeddedModel
    from searchengine.encoding.model_source import locate_model

    source = locate_model(None)
    fingerprint = source.fingerprint()
    texts = read_wiki(DATA, BLOCK * -(-count // BLOCK))
    model = EmbeddedModel(source, fingerprint, 0, source.max_seq_length or 0)
    blocks = []
    for start in range(0, len(texts), BLOCK):
        path = block_path(model, texts[start : start + BLOCK], start, CACHE, "wiki")
        if not path.is_file():
            raise SystemExit(f"no cached vectors at {path}: run benchmarks/scale/search_speed.py once to cache them")
        blocks.append(np.load(path))
    vectors = np.concatenate(blocks)[:count]
    return EmbeddedModel(source, fingerprint, vectors.shape[1], source.max_seq_length or 0), texts[:count], vectors


def build_copy(folder: Path, model: Any, documents: list[Any], vectors: Any) -> Any:  # noqa: ANN401
    """A shard copy of `documents`, built as a cluster build builds one (on a node named "bench")."""
    from searchengine.cluster.shard_copy import ShardCopy

    copy = ShardCopy(str(folder / "bench" / "copy"), 0, str(folder), node="bench")
    copy.begin_build(model, "Flat")
    for start in range(0, len(documents), BUILD_BATCH):
        copy.write_batch(documents[start : start + BUILD_BATCH], vectors[start : start + BUILD_BATCH])
    copy.finish_build()
    return copy


@contextlib.contextmanager
def timed_parts(parts: dict[str, tuple[type, str]], spent: dict[str, float]) -> Iterator[None]:
    """While inside: the CPU seconds each method of `parts` (name: (class, method name), methods both checkouts
    have) takes, added to `spent[name]`."""
    originals = {name: getattr(owner, method) for name, (owner, method) in parts.items()}

    def timing(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **options: Any) -> Any:  # noqa: ANN401
            started = time.process_time()
            try:
                return original(*args, **options)
            finally:
                spent[name] += time.process_time() - started

        return timed

    for name, (owner, method) in parts.items():
        setattr(owner, method, timing(name, originals[name]))
    try:
        yield
    finally:
        for name, (owner, method) in parts.items():
            setattr(owner, method, originals[name])


def measure(documents: int, shards: int, writes: int, profile: bool) -> dict[str, Any]:
    """In this process: CPU and wall ms of each of `writes` copy applies and one-index adds, alternated, after
    WARM_UP untimed writes of each; with `profile`, then `writes` more applies under cProfile (CPU time)."""
    from searchengine.indexer.commit.index_directory import IndexDirectory
    from searchengine.indexer.tables.documents import Document

    from searchengine.engine.index_snapshot import IndexSnapshot
    from searchengine.engine.search_engine import SearchEngine

    total = documents * shards
    model, texts, vectors = embedded(total + (2 * WARM_UP + 3 * writes) * PER_WRITE)
    stored = [Document(text, external_id=f"doc-{n}") for n, text in enumerate(texts[:total])]
    unused = iter(range(total, len(texts), PER_WRITE))
    result: dict[str, Any] = {"apply_cpu_ms": [], "apply_wall_ms": [], "add_cpu_ms": [], "add_wall_ms": []}
    with tempfile.TemporaryDirectory() as work:
        copy = build_copy(Path(work) / "copies", model, stored[:documents], vectors[:documents])
        build_copy(Path(work) / "one", model, stored, vectors).reader.close()  # one index of every shard's documents
        engine = SearchEngine.open(Path(work) / "one" / "bench" / "copy")

        def new_documents() -> tuple[list[Any], Any]:
            first = next(unused)
            rows = range(first, first + PER_WRITE)
            return [Document(texts[row], external_id=f"new-{row}") for row in rows], vectors[first : first + PER_WRITE]

        def apply() -> None:
            added, given = new_documents()
            copy.apply(copy.sequence() + 1, added, given, [])

        def add() -> None:
            added, given = new_documents()
            engine.add(added, embeddings=given, merge=False)

        for _ in range(WARM_UP):
            apply()
            add()
        parts = {"reload": (IndexSnapshot, "_load_or_close"), "cleanup": (IndexDirectory, "remove_unreferenced")}
        for name in parts:
            result[f"apply_{name}_cpu_ms"] = []
        for _ in range(writes):
            for kind, write in (("apply", apply), ("add", add)):
                spent = dict.fromkeys(parts, 0.0)
                with timed_parts(parts, spent) if kind == "apply" else contextlib.nullcontext():
                    started, clock = time.process_time(), time.perf_counter()
                    write()
                    result[f"{kind}_cpu_ms"].append(1000 * (time.process_time() - started))
                    result[f"{kind}_wall_ms"].append(1000 * (time.perf_counter() - clock))
                if kind == "apply":
                    for name, seconds in spent.items():
                        result[f"apply_{name}_cpu_ms"].append(1000 * seconds)
        result["copy_segments"] = len(copy.reader.vectors.segments)
        if profile:
            profiler = cProfile.Profile(time.process_time)
            for _ in range(writes):
                profiler.runcall(apply)
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(25)
            result["profile"] = text.getvalue().splitlines()
        engine.close()
        copy.reader.close()
    return result


def run_system(system: str, args: argparse.Namespace, shim: Path | None, profile: bool) -> dict[str, Any]:
    """One round of `system` ("searchengine" or "baseline") in a fresh process; its measure() record."""
    command = [sys.executable, __file__, "--worker", "--documents", str(args.documents), "--shards", str(args.shards)]
    command += ["--writes", str(args.writes)] + (["--profile"] if profile else [])
    done = subprocess.run(
        command, env=system_env(system, args.baseline, shim), capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise SystemExit(f"the {system} round failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=5000, help="Documents of the copy (one shard).")
    parser.add_argument("--shards", type=int, default=4, help="One index holds documents x shards.")
    parser.add_argument("--writes", type=int, default=40, help="Writes of 10 documents timed per round and system.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="An older checkout to compare with, alternated round by round.")
    parser.add_argument("--profile", action="store_true", help="cProfile's top entries of this checkout's applies.")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(measure(args.documents, args.shards, args.writes, args.profile)))
        return
    load_before = os.getloadavg()
    systems = ["searchengine"] + (["baseline"] if args.baseline else [])
    rounds: dict[str, list[dict[str, Any]]] = {system: [] for system in systems}
    profile: list[str] = []
    with tempfile.TemporaryDirectory() as work:
        shim = baseline_path(args.baseline, Path(work)) if args.baseline else None
        for number in range(args.rounds):
            for system in systems if number % 2 == 0 else systems[::-1]:
                last = args.profile and system == "searchengine" and number >= args.rounds - 2
                measured = run_system(system, args, shim, last)  # profiled after its timed writes
                profile = measured.pop("profile", profile)
                rounds[system].append(measured)
                print(f"round {number + 1} {system}: apply {statistics.median(measured['apply_cpu_ms']):.2f} ms CPU, "
                      f"add {statistics.median(measured['add_cpu_ms']):.2f} ms CPU", flush=True)  # fmt: skip
    record: dict[str, Any] = {**run_record(load_before), "documents": args.documents, "shards": args.shards}
    record.update(writes=args.writes, rounds=args.rounds, per_write=PER_WRITE)
    for system, measured in rounds.items():
        record[system] = {
            key: round(statistics.median(value for one in measured for value in one[key]), 3) for key in TIMES
        }
        record[system]["copy_segments"] = measured[-1]["copy_segments"]
    if args.baseline:
        record["baseline_checkout"] = str(args.baseline)
        record["ratios"] = {key: round(record["searchengine"][key] / record["baseline"][key], 3) for key in TIMES}
        record["round_ratios"] = {
            key: [
                round(statistics.median(new[key]) / statistics.median(old[key]), 3)
                for new, old in zip(*rounds.values())
            ]
            for key in ("apply_cpu_ms", "add_cpu_ms")
        }
    if profile:
        record["profile"] = profile
    write_results(args.out, record)
    print(json.dumps({key: value for key, value in record.items() if key != "profile"}))


if __name__ == "__main__":
    main()
