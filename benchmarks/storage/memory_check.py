"""The quick memory check of issue 42: build an index of --vectors vectors within --memory-budget (encoding left
out), then measure it in a fresh process. Its last stdout line is one JSON object.

Vectors. The real vectors of the Wikipedia sentences (unsup/wiki_sentences.txt.gz; the first --real of them,
embedded once with the default Encoder and cached as .npy blocks under --cache-dir, as
benchmarks/scale/search_speed.py caches them), then noisy copies of them up to --vectors
(benchmarks/scale/synthetic.py: a real vector plus Gaussian noise of sigma --noise a dimension, renormalised).
Texts: each sentence, a copy's with " [copy j]". Queries: held-out STS-B test sentences (none a Wikipedia line).
The vectors are written block by block into a memory-mapped file beside the index, or into --work (float32, or
float16 with --vectors-dtype to halve the disk at 10M; benchmarks/storage/vectors_on_disk.py), and the texts are made
as they are read, so the check itself holds no corpus in memory. The exact top-10 of each query over every vector is
computed block by block as the blocks are written (vectors_on_disk.RunningTop), and over the real vectors alone
after; with --work all of it is kept there under a key of the settings (key.json, written last) and reused by a
later run with the same settings (--prepare-only: make them and stop).

Build (this process). SearchEngine.build with `--index auto --memory-budget`, its encoder handing back each text's
row of the vectors' file (so encoding is left out; the build spools and adds in blocks). Its report carries wall
and CPU seconds (this process's, every thread: resource.getrusage), whole (build_s, build_cpu_s) and per stage
(build_stages_s, build_stages_cpu_s: IndexingReport.stages and stages_cpu), so a run on a loaded machine still says
what the build cost.

Measure (a fresh process, `--measure DIR`). Imports, then VmRSS (/proc/self/status) as the baseline; opens the
index (the model is never loaded: queries are given as vectors), runs --warmup queries, then each query alone
through the engine's dense path less encoding (dense_rankings over the segments, then the hits' rows from the
store, as SearchEngine.search does after encoding), FAISS on one thread. Then:
  resident_mb       the process's VmRSS after the queries (interpreter and libraries included, no model), less
                    the pages of the index's own mapped files in it (mapped_rss_mb, from /proc/self/smaps: page cache,
                    counted in mapped_cache_mb); vm_rss_mb is VmRSS whole
  index_resident_mb that less the baseline: what opening and searching the index added
  mapped_cache_mb   the page cache held by the index's memory-mapped files (mincore over each file; the
                    segments' codes and any full-vector files beside them), shared and evictable, reported apart
  recall_at_10      against exact search over every vector; recall_at_10_real: the same search restricted to the
                    real vectors (a filter of their ids) against exact search over them alone
  p50_ms, p99_ms    per query, each IVF segment probing as this code's engine stores it (vector_index.ivf_nprobe;
                    set again on opening, so an index kept by an older build is measured by today's rule): nprobe
  cold_p50_ms, cold_p99_ms, cold_recall_at_10
                    with --cold: one pass of the queries before the warm-up, the index's files dropped from the page
                    cache first (posix_fadvise DONTNEED on each: the rest of the machine's cache is left alone)
  scanned_codes_sweep
                    with --scanned-codes N...: for each N, recall (all, real only) and latency with every IVF segment
                    probing half its lists but at most N codes (the engine's own rule, vector_index.ivf_nprobe, also
                    probes at least IVF_LEAST_PROBED_SHARE of them: about 2M codes at 10M)
  info_mb           `searchengine info`'s parts (searchengine/engine/index_memory.py): its `resident` is codes + ids +
                    fixed (+ graph); the codes are memory-mapped, so this check counts them in mapped_rss_mb and
                    mapped_cache_mb, and index_resident_mb is about info's ids + fixed (+ graph), the store's cache
                    and what the interpreter allocates while searching
  add10_ms          adding 10 documents (append_to_index with their vectors given, less its encoding stage, then
                    the merges the policy asks for), the median of --add-runs adds (each listed), and `retrained`: whether
                    anything was trained (a new template; in an index without one, a new segment of a trained type).

Usage:
  .venv/bin/python benchmarks/storage/memory_check.py --vectors 1000000 --memory-budget 300MB \
      --out benchmarks/storage/results/memory_check_1m.json
  At 10M, make the vectors, queries and exact top 10s once (untimed, at low priority; --work keeps them, outside the
  repository), then build and measure reusing them (a --work folder made with other settings is refused):
    nice -n 10 .venv/bin/python benchmarks/storage/memory_check.py --vectors 10000000 --vectors-dtype float16 \
        --work ../tenm-data --prepare-only
    .venv/bin/python benchmarks/storage/memory_check.py --vectors 10000000 --vectors-dtype float16 \
        --work ../tenm-data --memory-budget 1500MB --cold --scanned-codes 600000 1200000 5000000 \
        --out benchmarks/storage/results/memory_check_10m.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import overload

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`

from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import command_line, machine_record
from benchmarks.harness.results import write_results
from benchmarks.harness.rounds import percentile_ms
from benchmarks.storage.vectors_on_disk import RunningTop, exact_top_blocks, noisy_copies_file

K = 10
ADDED = 10
DEFAULT_CACHE = Path.home() / ".cache" / "searchengine-bench" / "blocks"


def vm_kib(field: str) -> int:
    """A field of /proc/self/status in KiB (VmRSS, RssAnon, RssFile)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def mapped_rss_kib(folder: Path) -> int:
    """KiB of this process's resident set that are pages of files under `folder` mapped into it (/proc/self/smaps:
    the Rss of each mapping whose path lies there): the index's mapped codes and full vectors, page cache."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
            inside = len(fields) >= 6 and fields[5].startswith(str(folder))
        elif inside and fields[:1] == ["Rss:"]:
            total += int(fields[1])
    return total


class CopyTexts(Sequence[str]):
    """A distinct text per vector, made when read: the sentences, then each copy's sentence with " [tag j]"."""

    def __init__(self, wiki: list[str], count: int, tag: str = "copy") -> None:
        self.wiki, self.count, self.tag = wiki, count, tag

    def __len__(self) -> int:
        return self.count

    @overload
    def __getitem__(self, row: int) -> str: ...
    @overload
    def __getitem__(self, row: slice) -> list[str]: ...
    def __getitem__(self, row: int | slice) -> str | list[str]:
        if isinstance(row, slice):
            return [self[i] for i in range(*row.indices(self.count))]
        if not -self.count <= row < self.count:
            raise IndexError(row)
        row %= self.count
        copy = row // len(self.wiki)
        return self.wiki[row % len(self.wiki)] + (f" [{self.tag} {copy}]" if copy else "")


class CopyEncoder:
    """The real encoder, except that `encode` returns each text's row of `vectors` (CopyTexts's order: a sentence's
    row, plus its copy number times the sentences), so the build stores exactly the vectors it would have encoded,
    and no table of every text is held."""

    def __init__(self, encoder: object, wiki: list[str], vectors: np.ndarray) -> None:
        self._encoder = encoder
        self._sentence = {text: row for row, text in enumerate(wiki)}
        self._sentences = len(wiki)
        self._vectors = vectors

    def __getattr__(self, name: str) -> object:
        return getattr(self._encoder, name)

    def row(self, text: str) -> int:
        sentence, copy = text, 0
        if text.endswith("]") and " [copy " in text:
            sentence, number = text[:-1].rsplit(" [copy ", 1)
            copy = int(number)
        return self._sentence[sentence] + copy * self._sentences

    def encode(self, texts: Sequence[str], batch_size: int | None = None, **_: object) -> np.ndarray:  # noqa: ARG002
        return np.asarray(self._vectors[[self.row(text) for text in texts]], dtype=np.float32)


def sources(args: argparse.Namespace, encoder: object) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The Wikipedia sentences, their real vectors and the queries' vectors (read from the cache of embeddings)."""
    from benchmarks.scale.search_speed import cached_embeddings, read_stsb_test, read_wiki

    wiki = read_wiki(args.data, args.real)
    left, right, _ = read_stsb_test(args.data, None)
    lines = set(wiki)
    held_out = [text for text in dict.fromkeys(left + right) if text not in lines]
    query_vectors, _ = cached_embeddings(encoder, held_out, args.cache_dir, "stsb-queries")
    real, _ = cached_embeddings(encoder, wiki, args.cache_dir, "wiki")
    return wiki, real, np.ascontiguousarray(query_vectors[: args.queries])


def corpus(
    args: argparse.Namespace, encoder: object, path: Path, dtype: str = "float32"
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """The Wikipedia sentences, their real vectors, every vector (the real ones and noisy copies up to --vectors,
    written to `path` as `dtype` and memory-mapped) and the queries' vectors, as made for the check
    (benchmarks/storage/side_by_side.py makes the same ones)."""
    wiki, real, queries = sources(args, encoder)
    return wiki, real, noisy_copies_file(real, args.vectors, args.noise, path, dtype), queries


@dataclass
class Prepared:
    """What a check is made of before its build: the corpus and each query's exact top 10 (row numbers, 0 first)
    over every vector and over the real vectors alone, and what making them took."""

    wiki: list[str]
    real: np.ndarray
    vectors: np.ndarray
    queries: np.ndarray
    truth_rows: np.ndarray
    truth_real_rows: np.ndarray
    made: dict


PREPARED_KEY = "key.json"
"""Written last into a --work folder: the settings its files were made with, and what making them took."""


def prepared_key(args: argparse.Namespace, encoder: object) -> dict:
    """The settings a --work folder's files depend on (the model by its fingerprint)."""
    return {
        "vectors": args.vectors,
        "real": args.real,
        "noise": args.noise,
        "queries": args.queries,
        "dtype": args.vectors_dtype,
        "model": encoder.fingerprint,
    }


def prepare(args: argparse.Namespace, encoder: object, folder: Path, reuse: bool) -> Prepared:
    """The check's vectors file, queries and exact top 10s in `folder`. With `reuse` (--work) a folder whose key
    matches these settings is read as it is; one made with other settings is refused (SystemExit naming both);
    anything else is made again. Each block of vectors is searched exactly as it is written (RunningTop), so the
    vectors are never read back for it."""
    key = prepared_key(args, encoder)
    key_path = folder / PREPARED_KEY
    wiki, real, queries = sources(args, encoder)
    if reuse and key_path.is_file():
        kept = json.loads(key_path.read_text(encoding="utf-8"))
        if kept.get("key") != key:
            raise SystemExit(
                f"memory_check: --work {folder} holds vectors made with {kept.get('key')}, and this run asks for "
                f"{key}: run with those settings, or give another --work folder"
            )
        vectors = np.load(folder / "vectors.npy", mmap_mode="r")
        truth, truth_real = (np.load(folder / name) for name in ("truth_rows.npy", "truth_real_rows.npy"))
        made = kept["made"] | {"reused": True}
        return Prepared(wiki, real, vectors, np.load(folder / "queries.npy"), truth, truth_real, made)
    key_path.unlink(missing_ok=True)
    started, cpu = time.perf_counter(), cpu_seconds()
    top = RunningTop(queries, K)
    vectors = noisy_copies_file(real, args.vectors, args.noise, folder / "vectors.npy", args.vectors_dtype, top=top)
    truth_real = exact_top_blocks(vectors[: len(real)], queries, K)  # as stored (float16 rounds them)
    for name, array in (("queries.npy", queries), ("truth_rows.npy", top.rows), ("truth_real_rows.npy", truth_real)):
        np.save(folder / name, array)
    made = {"seconds": round(time.perf_counter() - started, 1), "cpu_s": round(cpu_seconds() - cpu, 1)}
    key_path.write_text(json.dumps({"key": key, "made": made}), encoding="utf-8")
    return Prepared(wiki, real, vectors, queries, top.rows, truth_real, made | {"reused": False})


def cpu_seconds() -> float:
    """CPU seconds this process has used (every thread, user and system: resource.getrusage)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def build(args: argparse.Namespace, target: Path, prepared: Prepared, encoder: object) -> dict:
    """Build the index in `target` (encoding left out) and save what the measuring process needs beside it."""
    from benchmarks.scale.synthetic import noisy_copies
    from searchengine import BuildSettings, SearchEngine

    wiki, real, vectors, queries = prepared.wiki, prepared.real, prepared.vectors, prepared.queries
    count = len(vectors)
    started, cpu = time.perf_counter(), cpu_seconds()
    engine = SearchEngine.build(
        CopyTexts(wiki, len(vectors)),
        target / "index",
        BuildSettings(memory_budget=args.memory_budget),
        encoder=CopyEncoder(encoder, wiki, vectors),
    )
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    report = engine.last_report
    first_id = int(min(engine.reader.vectors.ids()))
    engine.close()
    added = noisy_copies(real, len(real) + ADDED, args.noise, seed=1)[len(real) :]
    np.save(target / "queries.npy", queries)
    np.save(target / "truth.npy", prepared.truth_rows + first_id)
    np.save(target / "truth_real.npy", prepared.truth_real_rows + first_id)
    np.save(target / "added.npy", added)
    (target / "added.json").write_text(json.dumps(CopyTexts(wiki, ADDED, "added")[:ADDED]), encoding="utf-8")
    return {
        "index_type": report.index_type,
        "index_type_reason": report.index_type_reason,
        "build_s": round(seconds, 1),
        "build_cpu_s": round(cpu, 1),
        "build_stages_s": {stage: round(value, 1) for stage, value in report.stages.items()},
        "build_stages_cpu_s": {stage: round(value, 1) for stage, value in report.stages_cpu.items()},
        "prepared": prepared.made,
        "vectors": count,
        "real_vectors": len(real),
        "first_id": first_id,
        "queries": len(queries),
        "noise": args.noise,
    }


def evict_from_page_cache(folder: Path) -> None:
    """Drop the page cache of every file under `folder` (written and fsynced by the build: clean pages), so the next
    reads come from disk, without touching the rest of the machine's cache (posix_fadvise DONTNEED)."""
    os.sync()
    for path in folder.rglob("*"):
        if path.is_file():
            descriptor = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(descriptor)


def set_probes(segments: object, probes_of: Callable[[int, int], int]) -> list[int]:
    """Make every IVF segment probe probes_of(its lists, its vectors) lists; the nprobe of each."""
    import faiss

    probes = []
    for segment in segments.segments:
        ivf = faiss.try_extract_index_ivf(segment.index.index)
        if ivf is not None:
            ivf.nprobe = probes_of(ivf.nlist, segment.index.count)
            probes.append(int(ivf.nprobe))
    return probes


def set_scanned_codes(segments: object, bound: int) -> list[int]:
    """Make every IVF segment probe half its lists but at most `bound` codes at its mean list size (as
    vector_index.ivf_nprobe bounds them with IVF_SCANNED_CODES, without its least share); the nprobe of each."""
    return set_probes(segments, lambda lists, count: max(1, min(lists // 2, math.ceil(bound * lists / max(count, 1)))))


def measure(
    target: Path,
    warmup: int,
    model: str | None,
    add_runs: int,
    cold: bool = False,
    scans: Sequence[int] = (),
    depths: Sequence[int] = (),
) -> dict:
    """In this fresh process: memory, recall, latency and a 10-document add of the index in `target`; with `cold`,
    first the latency of one pass with the index's files dropped from the page cache; for each of `scans`, recall
    and latency again with IVF segments probing at most that many codes; for each of `depths`, with that many
    candidates rescored from the originals (a query's --rescore), at the engine's own probing, or the last of `scans`
    when given (each entry says its nprobe)."""
    import faiss
    from searchengine.indexer.vectors.page_cache import cached_bytes
    from searchengine.indexer.vectors.vector_index import ivf_nprobe

    from searchengine import SearchEngine
    from searchengine.engine.search import dense_rankings, hits_of

    faiss.omp_set_num_threads(1)
    baseline = vm_kib("VmRSS")
    queries, truth, truth_real = (np.load(target / f"{name}.npy") for name in ("queries", "truth", "truth_real"))
    built = json.loads((target / "build.json").read_text(encoding="utf-8"))
    real_ids = np.arange(built["first_id"], built["first_id"] + built["real_vectors"], dtype=np.int64)
    if cold:
        evict_from_page_cache(target / "index")
    engine = SearchEngine.open(target / "index")
    reader = engine.reader
    probed = set_probes(reader.vectors, ivf_nprobe)  # this code's rule, also for an index an older build kept

    def dense(vector: np.ndarray, allowed: np.ndarray | None = None, vectors: object = None) -> list[int]:
        searched = reader.vectors if vectors is None else vectors
        rankings = dense_rankings(searched, reader.store, vector[None, :], K, allowed=allowed)
        return [hit.id for hit in hits_of(reader.store, rankings)[0]]

    def timed(allowed: np.ndarray | None = None, vectors: object = None) -> tuple[list[list[int]], list[float]]:
        seconds, found = [], []
        for query in queries:
            begin = time.perf_counter()
            found.append(dense(query, allowed, vectors))
            seconds.append(time.perf_counter() - begin)
        return found, seconds

    cold_figures = {}
    if cold:
        cold_found, cold_seconds = timed()
        cold_figures = {
            "cold_p50_ms": percentile_ms(cold_seconds, 50, 3),
            "cold_p99_ms": percentile_ms(cold_seconds, 99, 3),
        }
        cold_figures["cold_recall_at_10"] = _recall(cold_found, truth)
    for query in queries[:warmup]:
        dense(query)
    found, seconds = timed()
    found_real = [dense(query, real_ids) for query in queries]
    rss, anon, file_backed = vm_kib("VmRSS"), vm_kib("RssAnon"), vm_kib("RssFile")
    mapped_rss = mapped_rss_kib((target / "index").resolve())
    mapped = sum(cached_bytes(path) for path in (target / "index").rglob("*") if path.is_file() and _mapped(path))
    def swept_figures(vectors: object = None) -> dict:
        """Recall (every vector, real ones alone) and latency of the queries as `vectors` (the engine's) now search."""
        swept, swept_seconds = timed(vectors=vectors)
        swept_real, real_seconds = timed(real_ids, vectors)
        return {
            "recall_at_10": _recall(swept, truth),
            "recall_at_10_real": _recall(swept_real, truth_real),
            "p50_ms": percentile_ms(swept_seconds, 50, 3),
            "p99_ms": percentile_ms(swept_seconds, 99, 3),
            "real_p50_ms": percentile_ms(real_seconds, 50, 3),
        }

    sweep = [
        {"scanned_codes": bound, "nprobe": set_scanned_codes(reader.vectors, bound), **swept_figures()}
        for bound in scans
    ]
    rescore_sweep = []
    for depth in depths:  # another rescore depth (a query's --rescore N), at the probing the sweep above left
        rescoring = reader.vectors.rescoring(depth)
        probes = [
            int(ivf.nprobe)
            for ivf in (faiss.try_extract_index_ivf(segment.index.index) for segment in reader.vectors.segments)
            if ivf is not None
        ]
        rescore_sweep.append({"rescore": depth, "nprobe": probes, **swept_figures(rescoring)})
    segments_before = {record.name for record in reader.store.segments.records()}
    engine.close()
    info = info_memory(target / "index")
    added = add_ten(target, model, segments_before, add_runs) if add_runs else {}
    return {
        "resident_mb": round((rss - mapped_rss) / 1024, 1),
        "index_resident_mb": round((rss - mapped_rss - baseline) / 1024, 1),
        "vm_rss_mb": round(rss / 1024, 1),
        "mapped_rss_mb": round(mapped_rss / 1024, 1),
        "baseline_mb": round(baseline / 1024, 1),
        "rss_anon_mb": round(anon / 1024, 1),
        "rss_file_mb": round(file_backed / 1024, 1),
        "mapped_cache_mb": round(mapped / 2**20, 1),
        "recall_at_10": _recall(found, truth),
        "recall_at_10_real": _recall(found_real, truth_real),
        "p50_ms": percentile_ms(seconds, 50, 3),
        "p99_ms": percentile_ms(seconds, 99, 3),
        "nprobe": probed,
        "info_mb": info,
        **cold_figures,
        **({"scanned_codes_sweep": sweep} if scans else {}),
        **({"rescore_sweep": rescore_sweep} if depths else {}),
        **added,
    }


def info_memory(folder: Path) -> dict[str, float]:
    """`searchengine info`'s memory parts of the index in `folder`, in MiB, read after the check's own figures (it
    opens every segment again)."""
    from searchengine.indexer.commit.index_directory import IndexDirectory
    from searchengine.indexer.tables.store import DocumentStore

    from searchengine.engine.index_memory import memory_use

    directory = IndexDirectory(folder)
    manifest = directory.read_manifest()
    store = DocumentStore(directory.file(manifest, "documents"))
    try:
        use = memory_use(directory.path, manifest, store)
    finally:
        store.close()
    return {name: round(value / 2**20, 1) for name, value in use.as_json().items()}


def _mapped(path: Path) -> bool:
    """Files a query process maps: the segments (FAISS codes mapped) and full-vector files beside them."""
    return path.suffix not in {".json", ".sqlite", ".db", ".lock", ".wal", ".shm"} and "documents" not in path.name


def _recall(found: list[list[int]], truth: np.ndarray) -> float:
    return round(float(np.mean([len(set(f) & set(map(int, t))) / K for f, t in zip(found, truth, strict=True)])), 4)


def _template_name(directory: object) -> str | None:
    """The file of the index's trained template (None: it has none)."""
    from searchengine.indexer.tables.store import DocumentStore

    store = DocumentStore(directory.file(directory.read_settings(), "documents"))
    try:
        template = store.segments.template()
    finally:
        store.close()
    return None if template is None else template.name


def add_ten(target: Path, model: str | None, segments_before: set[str], runs: int = 3) -> dict:
    """Add ADDED documents with their vectors given, `runs` times: milliseconds of each less its encoding stage
    (the write, then the merges the policy asks for, timed apart), and whether any new segment needed training.
    The encoder is loaded only now, after the memory was read."""
    from searchengine.indexer.commit.index_directory import IndexDirectory
    from searchengine.indexer.commit.merge_policy import merge_as_needed
    from searchengine.indexer.tables.documents import Document
    from searchengine.indexer.tables.store import DocumentStore
    from searchengine.indexer.vectors.vector_index import VectorIndex

    from benchmarks.scale.search_speed import CachedEncoder
    from searchengine import Encoder
    from searchengine.engine.indexing import append_to_index

    base = json.loads((target / "added.json").read_text(encoding="utf-8"))
    vectors = np.load(target / "added.npy")
    real = Encoder(model) if model else Encoder()
    directory = IndexDirectory(target / "index")
    trained_before = _template_name(directory)
    writes, merges = [], []
    for run in range(runs):
        texts = [f"{text} [run {run}]" for text in base]
        started = time.perf_counter()
        report = append_to_index(directory, [Document(text) for text in texts], CachedEncoder(real, texts, vectors))
        writes.append(time.perf_counter() - started - report.stages.get("encoding", 0.0))
        started = time.perf_counter()
        merge_as_needed(directory)
        merges.append(time.perf_counter() - started)
    manifest = directory.read_manifest()
    store = DocumentStore(directory.file(manifest, "documents"))
    try:
        new = [record for record in store.segments.records() if record.name not in segments_before]
    finally:
        store.close()
    # With a template (indexer/vectors/template.py) new segments are copies of it: training shows as a new one;
    # without one, as a new segment of a type that needs training.
    untemplated = trained_before is None and any(
        VectorIndex.create(record.factory, manifest.index.dimension).needs_training for record in new
    )
    retrained = untemplated or _template_name(directory) != trained_before
    total = [write + merge for write, merge in zip(writes, merges, strict=True)]
    return {
        "add10_ms": round(float(np.median(total)) * 1000, 1),
        "add10_runs_ms": [round(value * 1000, 1) for value in total],
        "add10_merge_ms": [round(value * 1000, 1) for value in merges],
        "new_segment_types": sorted({record.factory for record in new}),
        "retrained": retrained,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", type=int, default=1_000_000)
    parser.add_argument("--memory-budget", default="300MB")
    parser.add_argument("--real", type=int, default=100_000, help="real vectors (the rest are noisy copies)")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--noise", type=float, default=0.02)
    parser.add_argument(
        "--vectors-dtype",
        choices=["float32", "float16"],
        default="float32",
        help="the vectors' file (float16 halves its disk; the build is given them as float32)",
    )
    parser.add_argument("--add-runs", type=int, default=3, help="10-document adds timed (their median is add10_ms)")
    parser.add_argument("--model", help="the model (default: the bundled default); tests use a tiny one")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--keep", type=Path, help="build in this folder and keep it (benchmarks/storage/side_by_side.py measures it)"
    )
    parser.add_argument(
        "--work",
        type=Path,
        help="keep the made vectors, queries and exact top 10s here, and reuse them in a later run with the same "
        "--vectors, --real, --noise, --queries, --vectors-dtype and model (a folder outside the repository)",
    )
    parser.add_argument("--prepare-only", action="store_true", help="make --work's files, then stop (no build)")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="first time one pass of the queries with the index's files dropped from the page cache (cold_p50_ms)",
    )
    parser.add_argument(
        "--scanned-codes",
        type=int,
        nargs="*",
        default=[],
        help="after the engine's own settings, measure recall and latency again with IVF segments probing at most "
        "each of these many codes (the engine's own rule is vector_index.ivf_nprobe)",
    )
    parser.add_argument(
        "--rescore",
        type=int,
        nargs="*",
        default=[],
        help="then measure recall and latency again with each of these many candidates rescored from the originals, "
        "at the last --scanned-codes bound if any, else the engine's own probing (the engine's own depth is "
        "indexer/vectors/rescore_depth.default_rescore)",
    )
    parser.add_argument(
        "--measure",
        type=Path,
        help="measure an index kept with --keep (the fresh process of a build runs this too): build nothing; with "
        "--out, the record carries the kept build's own (its build.json) under `build`",
    )
    args = parser.parse_args()
    if args.measure is not None:
        if not (args.measure / "build.json").is_file():
            parser.error(f"--measure {args.measure}: no index kept by --keep there (no build.json); give such a folder")
        figures = measure(
            args.measure, args.warmup, args.model, args.add_runs, args.cold, args.scanned_codes, args.rescore
        )
        if args.out:
            kept = args.measure / "build.json"
            built = json.loads(kept.read_text(encoding="utf-8")) if kept.exists() else {}
            record = {"index_type": built.get("index_type"), **figures, "build": built}
            write_results(args.out, {"machine": machine_record(), "command": command_line(), **record})
        print(json.dumps(figures))
        return
    if args.prepare_only and args.work is None:
        parser.error("--prepare-only makes the files of a --work folder: give --work DIR")
    from searchengine import Encoder

    encoder = Encoder(args.model) if args.model else Encoder()
    if args.prepare_only:
        args.work.mkdir(parents=True, exist_ok=True)
        prepared = prepare(args, encoder, args.work, reuse=True)
        print(json.dumps({"work": str(args.work), "vectors": len(prepared.vectors), "made": prepared.made}))
        return
    with tempfile.TemporaryDirectory(prefix="memory-check-") as scratch:
        target = Path(scratch) if args.keep is None else args.keep
        target.mkdir(parents=True, exist_ok=True)
        if args.work is not None:
            args.work.mkdir(parents=True, exist_ok=True)
        prepared = prepare(args, encoder, args.work or target, reuse=args.work is not None)
        print(f"vectors ready ({prepared.made})", flush=True)
        built = build(args, target, prepared, encoder)
        del prepared
        if args.work is None:
            for name in ("vectors.npy", "truth_rows.npy", "truth_real_rows.npy", PREPARED_KEY):  # queries.npy stays
                (target / name).unlink(missing_ok=True)
        (target / "build.json").write_text(json.dumps(built), encoding="utf-8")
        print(f"built {built['vectors']:,} vectors as {built['index_type']} in {built['build_s']} s", flush=True)
        command = [sys.executable, __file__, "--measure", str(target), "--warmup", str(args.warmup)]
        command += ["--add-runs", str(args.add_runs), "--scanned-codes", *map(str, args.scanned_codes)]
        command += ["--rescore", *map(str, args.rescore)]
        command += ["--cold"] if args.cold else []
        command += ["--model", args.model] if args.model else []
        answer = subprocess.run(command, check=True, capture_output=True, text=True)
        measured = json.loads(answer.stdout.strip().splitlines()[-1])
    result = {"index_type": built["index_type"], **measured, "build": built, "memory_budget": args.memory_budget}
    if args.out:
        write_results(args.out, {"machine": machine_record(), "command": command_line(), **result})
    print(json.dumps(result))


if __name__ == "__main__":
    main()
