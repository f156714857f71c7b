"""What a small write costs: add 10 documents, delete 1, at 10,000 to 1,000,000 documents, beside chroma and LanceDB.

Every system gets the same vectors, texts and metadata, and encoding is left out everywhere:

Vectors. The real vectors of a small index the project built (--vectors-from; by default this script builds one
with `searchengine index` of the first --vector-lines Wikipedia sentences), then noisy copies of them
(benchmarks/scale/synthetic.py) until there are N. Texts: the Wikipedia sentences of ../shared/data/unsup/
wiki_sentences.txt.gz, cycled, less the last lines, which are held out as queries and as the texts written.
Metadata: `year`, uniform over 1990-2025 (seeded), so a filter year >= 2020 keeps about 1 document in 6.
The held-out texts are encoded once here, with the project's encoder; the peers get those vectors in .npy files.

Per system and size, each part in a fresh process (so its peak memory is its own):

build     searchengine: build_index with Chunk(documents, vectors), as `index_scale.py --part stages` does (the
          index type the project picks for N: Flat up to 200,000, HNSW32 above). chroma: PersistentClient, add in
          batches within its max batch size (HNSW, cosine). LanceDB: create_table from an Arrow table (no vector
          index: exact search, like Flat). Wall time, peak memory (VmHWM), size on disk.
measure   open the index, then: filtered dense query p50 (k=10, year >= 2020, one query a call, --queries queries
          after 10 warm-up ones; every query must get k hits), add 10 documents (median of --runs after 1 warm-up),
          delete 1 document (median of --runs after 1 warm-up), the filtered query p50 again after those writes.
          searchengine's write path takes texts and encodes them: SearchEngine.add(10 Documents) is timed and the
          report's stages["encoding"] subtracted; its queries are texts, answered with their vectors encoded
          beforehand (the encoder's encode_queries looks them up), so the query times leave out encoding as the
          peers' (which are given vectors) do. The peers add vectors.
memory    open the index and run one query (searchengine: also load the encoder), record the resident memory,
          reset the peak (VmHWM, through /proc/self/clear_refs), add 10 documents, read the peak: the write's extra
          peak memory (peak during the write less resident before it), and the process's total peak. Not ru_maxrss:
          Linux carries it across exec, so every part would report at least the orchestrator's peak.
fsync     (where strace is installed) the same open, add 10 and delete 1 under `strace -f`: how many fsync,
          fdatasync, sync_file_range and msync calls each write makes, i.e. whether it is durable when it returns.
cli       (searchengine only) `python -m searchengine add` of a 10-line .jsonl file, wall time, median of
          --cli-runs (model load included), and a cold `python -m searchengine query` (dense, filtered) beside it.

Systems: searchengine (the code this script's checkout imports, its working tree, recorded with its
commit and whether the product code is modified), baseline (--baseline DIR: an older checkout, imported in
its own processes through a package directory of symlinks put first on PYTHONPATH, since the repository maps
indexer/ and training/ to searchengine.indexer and searchengine.training), chroma and lancedb (run by
--peer-python, a separate virtual environment: this script with --peer, which never imports searchengine).

Usage:
  python3 -m venv ../bench-venv && ../bench-venv/bin/pip install chromadb lancedb numpy psutil  # the peers, once
  git worktree add ../baseline a1b0769                                 # an older searchengine, detached
  .venv/bin/python benchmarks/storage/write_cost.py --sizes 10000,100000 --baseline ../baseline
  .venv/bin/python benchmarks/storage/write_cost.py --sizes 1000000 --systems searchengine,lancedb
  .venv/bin/python benchmarks/storage/write_cost.py --table                    # the markdown table of the results
Each system and size is merged into benchmarks/storage/results/write_cost.json as soon as it is measured.
"""

from __future__ import annotations

import argparse
import fcntl
import gzip
import hashlib
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.environments import CODE_VARIABLE, PEER_PYTHON, baseline_path, system_env
from benchmarks.harness.machine import command_line, machine_record, wait_for_quiet
from benchmarks.harness.results import read_results, write_results

ROOT = Path(__file__).resolve().parents[2]
SENTENCES = DATA / "unsup" / "wiki_sentences.txt.gz"
ENGINES = ("searchengine", "baseline")
PEERS = ("chroma", "lancedb")
FILTER = "year>=2020"
K = 10
WRITE_BATCHES = 16
"""Batches of 10 held-out texts to write: warm-up and --runs adds, the memory and fsync probes, --cli-runs."""
PRODUCT_CODE = ("searchengine", "indexer", "training", "pyproject.toml")
SYNC_CALLS = ("fsync", "fdatasync", "sync_file_range", "msync", "syncfs")


# ----------------------------------------------------------------------------------------------------------------
# Shared by every process: the data directory, timing, memory.


def memory_mib() -> dict[str, float]:
    """This process's resident memory now ("rss") and its peak ("peak"), in MiB. The peak is /proc's VmHWM, the
    high-water mark of this program's own memory: ru_maxrss is no good here, since Linux carries it across exec,
    so a part started by the orchestrator (which has the encoder loaded) would report the orchestrator's peak."""
    try:
        status = Path("/proc/self/status").read_text()
        fields = dict(re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB", status, re.M))
        return {"rss": int(fields["VmRSS"]) / 1024, "peak": int(fields["VmHWM"]) / 1024}
    except (OSError, KeyError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return {"rss": peak, "peak": peak}


def peak_mib() -> float:
    return memory_mib()["peak"]


def reset_peak() -> bool:
    """Reset VmHWM to the current resident memory (Linux 4.0+), so a later peak is the peak since now."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def write_memory(write) -> dict:
    """The extra peak memory of `write()`: its peak resident memory less the resident memory before it (the peak
    since a reset of VmHWM; without one, the growth of the process's peak, which misses a write that stays under
    the peak of opening the index), and the process's total peak."""
    before = memory_mib()
    reset = reset_peak()
    write()
    after = memory_mib()
    extra = after["peak"] - (before["rss"] if reset else before["peak"])
    return {
        "rss_before_mib": round(before["rss"], 1),
        "peak_before_mib": round(before["peak"], 1),
        "peak_during_write_mib": round(after["peak"], 1) if reset else None,
        "extra_mib": round(extra, 1),
        "peak_total_mib": round(max(before["peak"], after["peak"]), 1),
        "method": "VmHWM reset before the write" if reset else "growth of VmHWM",
    }


def disk_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 2**20


def summary(seconds: list[float]) -> dict:
    """Milliseconds: median, min, max, and every run."""
    ms = [s * 1000 for s in seconds]
    return {
        "median_ms": round(statistics.median(ms), 2),
        "min_ms": round(min(ms), 2),
        "max_ms": round(max(ms), 2),
        "runs_ms": [round(m, 2) for m in ms],
    }


def lines(path: Path) -> list[str]:
    """The lines of a file this script wrote, split at newlines only (str.splitlines also splits at \\x1c, \\u2028 and
    others, which a sentence may hold)."""
    return path.read_bytes().decode("utf-8").removesuffix("\n").split("\n")


class Data:
    """The files of one size: vectors.npy, years.npy, texts.txt (the indexed documents, in id order), and the
    held-out queries and writes (texts, their vectors, and the writes' years)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        meta = json.loads((directory / "data.json").read_text(encoding="utf-8"))
        self.n = meta["n"]
        self.vectors = np.load(directory / "vectors.npy", mmap_mode="r")
        self.years = np.load(directory / "years.npy")
        self.query_texts = lines(directory / "queries.txt")
        self.query_vectors = np.load(directory / "queries.npy")
        self.write_texts = lines(directory / "writes.txt")
        self.write_vectors = np.load(directory / "writes.npy")
        self.write_years = np.load(directory / "writes_years.npy")

    def texts(self) -> list[str]:
        return lines(self.directory / "texts.txt")

    def batch(self, number: int) -> tuple[list[str], np.ndarray, list[int]]:
        """Held-out batch `number` of 10: texts, vectors, years."""
        rows = slice(10 * number, 10 * number + 10)
        return self.write_texts[rows], self.write_vectors[rows], [int(y) for y in self.write_years[rows]]

    def id_limit(self, number: int) -> int:
        """The largest id query `number` keeps in its second filter (id <= it): a different one for every query,
        from n - 1 down to about n / 2, so no two queries have the same filter."""
        step = max(1, self.n // (2 * len(self.query_texts)))
        return self.n - 1 - (number + 1) * step

    def delete_id(self, number: int) -> int:
        """A document id to delete (ids are row numbers, 0..n-1, in every system), a different one for each number
        up to n / 7."""
        return (self.n // 3 + 7 * number) % self.n


# Batches of held-out writes, by use (each system writes its own index, so they can reuse the same texts).
WARM_UP, FIRST_RUN = 0, 1  # runs: batches FIRST_RUN .. FIRST_RUN + runs - 1 (at most 9)
MEMORY_BATCH, FSYNC_BATCH, FIRST_CLI = 10, 11, 12  # cli: 12 .. 15
DELETE_FSYNC = 50  # delete_id numbers: 0 warm-up, 1.. runs; the fsync probe's is apart


def query_p50(search, queries: int, warm=None) -> dict:
    """`search(number)` answers held-out query `number` and returns its hits; 10 warm-up queries (by `warm`, else
    `search`), then `queries` timed ones, each checked to get K hits."""
    for number in range(min(10, queries)):
        (warm or search)(number)
    seconds, short = [], 0
    for number in range(queries):
        started = time.perf_counter()
        hits = search(number)
        seconds.append(time.perf_counter() - started)
        short += len(hits) < K
    ms = sorted(s * 1000 for s in seconds)
    return {
        "p50_ms": round(statistics.median(ms), 3),
        "p90_ms": round(ms[int(0.9 * (len(ms) - 1))], 3),
        "queries": queries,
        "all_k_returned": short == 0,
        "queries_short_of_k": short,
    }


def mark(name: str, marks: Path | None) -> None:
    """A system call strace can see, naming a point of the fsync probe (an access() of a path that is not there)."""
    if marks is not None:
        os.access(marks / f"MARK-{name}", os.F_OK)


# ----------------------------------------------------------------------------------------------------------------
# searchengine (this checkout's, or --baseline's through PYTHONPATH): the worker parts.


def engine_origin() -> dict:
    """Where the imported searchengine comes from; refuses a mix of two checkouts."""
    import searchengine.indexer  # binds searchengine too

    package = Path(searchengine.__file__).resolve().parent
    indexer = Path(searchengine.indexer.__file__).resolve().parent
    expected = os.environ.get(CODE_VARIABLE)
    if expected is not None:
        base = Path(expected).resolve()
        if package != base / "searchengine" or indexer != base / "indexer":
            raise SystemExit(f"imported searchengine from {package} and {indexer}, not from {base}")
    return {"searchengine": str(package), "indexer": str(indexer)}


def engine_documents(texts: list[str], years: list[int], first_line: int = 1) -> list:
    from searchengine.indexer.tables.store import Document

    return [
        Document(text, "write_cost", first_line + number, {"year": int(year)})
        for number, (text, year) in enumerate(zip(texts, years))
    ]


def engine_build(data: Data, target: Path) -> dict:
    from searchengine.indexer.commit.index_directory import IndexDirectory

    from searchengine.encoding.encoder import Encoder
    from searchengine.engine.indexing import CHUNK, Chunk, IndexSettings, build_index

    texts, years = data.texts(), data.years

    def chunks():
        for start in range(0, data.n, CHUNK):
            stop = min(start + CHUNK, data.n)
            documents = engine_documents(texts[start:stop], years[start:stop], start + 1)
            yield Chunk(documents, np.ascontiguousarray(data.vectors[start:stop]))

    encoder = Encoder()  # names the model in the manifest; encodes nothing here
    started = time.perf_counter()
    report = build_index(IndexDirectory(target), chunks(), encoder, IndexSettings(), data.n)
    wall = time.perf_counter() - started
    return {
        "documents": report.documents,
        "index_type": report.index_type,
        "build_s": round(wall, 2),
        "build_stages_s": {stage: round(seconds, 2) for stage, seconds in report.stages.items()},
        "build_peak_mib": round(peak_mib(), 1),
        "disk_mib": round(disk_mib(target), 1),
    }


def engine_open(data: Data, target: Path):
    """The index opened with a loaded encoder whose encode_queries answers the held-out queries from vectors
    encoded beforehand (by that same encoder), so a timed search leaves out encoding."""
    from searchengine import SearchEngine
    from searchengine.encoding.encoder import Encoder

    encoder = Encoder()
    encoded = dict(zip(data.query_texts, encoder.encode_queries(data.query_texts)))
    encode = encoder.encode_queries

    def encode_queries(texts, *batching):  # batching: a batch size, where the code measured takes one
        if all(text in encoded for text in texts):
            return np.stack([encoded[text] for text in texts])
        return encode(texts, *batching)

    encoder.encode_queries = encode_queries
    return SearchEngine.open(target, encoder=encoder)


def engine_search(engine, data: Data, distinct: bool = False):
    """Held-out query `number`, filtered by year >= 2020, and with `distinct` also by id <= data.id_limit(number)."""

    def search(number: int) -> list:
        where = [FILTER, f"id<={data.id_limit(number)}"] if distinct else [FILTER]
        return engine.search(data.query_texts[number], k=K, where=where, mode="dense")

    return search


def engine_add(engine, data: Data, batch: int) -> tuple[float, float, dict]:
    """Wall seconds of adding held-out batch `batch`, the report's encoding seconds, and its stages."""
    texts, _, years = data.batch(batch)
    documents = engine_documents(texts, years)
    started = time.perf_counter()
    report = engine.add(documents)
    wall = time.perf_counter() - started
    if report.added != len(documents):
        raise SystemExit(f"added {report.added} of {len(documents)} documents")
    return wall, report.stages.get("encoding", 0.0), dict(report.stages)


def engine_delete(engine, data: Data, number: int) -> float:
    target = data.delete_id(number)
    started = time.perf_counter()
    deleted = engine.delete([target])
    seconds = time.perf_counter() - started
    if list(deleted) != [target]:
        raise SystemExit(f"deleting document {target} deleted {deleted}")
    return seconds


def engine_measure(data: Data, target: Path, runs: int, queries: int) -> dict:
    engine = engine_open(data, target)
    search, distinct = engine_search(engine, data), engine_search(engine, data, distinct=True)
    fresh = query_p50(search, queries)
    fresh_distinct = query_p50(distinct, queries, warm=search)
    engine_add(engine, data, WARM_UP)
    walls, encodings, stages = [], [], []
    for batch in range(FIRST_RUN, FIRST_RUN + runs):
        wall, encoding, stage = engine_add(engine, data, batch)
        walls.append(wall)
        encodings.append(encoding)
        stages.append(stage)
    engine_delete(engine, data, 0)
    deletes = [engine_delete(engine, data, number) for number in range(1, runs + 1)]
    after = query_p50(search, queries)
    after_distinct = query_p50(distinct, queries, warm=search)
    documents = len(engine)
    engine.close()
    stage_names = dict.fromkeys(name for stage in stages for name in stage)
    return {
        "query": fresh,
        "add10": {
            **summary([wall - encoding for wall, encoding in zip(walls, encodings)]),
            "wall": summary(walls),
            "encoding": summary(encodings),
            "stages_median_ms": {
                name: round(statistics.median(stage.get(name, 0.0) for stage in stages) * 1000, 2)
                for name in stage_names
            },
        },
        "delete1": summary(deletes),
        "query_after_writes": after,
        "query_distinct_filters": fresh_distinct,
        "query_distinct_filters_after_writes": after_distinct,
        "documents_after_writes": documents,
        "disk_mib_after_writes": round(disk_mib(target), 1),
    }


def marked_writes(add, delete, marks: Path | None) -> dict:  # noqa: ANN001 (a system's add and delete)
    """One add of 10 with its extra peak memory (`write_memory`); with `marks` (the fsync probe) the add and then
    one delete, each between marks strace can see."""

    def write() -> None:
        mark("add-start", marks)
        add(FSYNC_BATCH if marks else MEMORY_BATCH)
        mark("add-end", marks)

    result = write_memory(write)
    if marks is not None:
        mark("delete-start", marks)
        delete(DELETE_FSYNC)
        mark("delete-end", marks)
    return result


def engine_memory(data: Data, target: Path, marks: Path | None = None) -> dict:
    engine = engine_open(data, target)
    engine.encode(["load the encoder before measuring"])
    engine_search(engine, data)(0)

    result = marked_writes(
        lambda batch: engine_add(engine, data, batch), lambda number: engine_delete(engine, data, number), marks
    )
    engine.close()
    return result


# ----------------------------------------------------------------------------------------------------------------
# The peers (run by --peer-python; never import searchengine here).


def peer_versions(peer: str) -> dict:
    from importlib.metadata import version

    return {
        "chroma": {"chromadb": version("chromadb")},
        "lancedb": {"lancedb": version("lancedb"), "pylance": _maybe_version("pylance")},
    }[peer]


def _maybe_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


class Chroma:
    NAME = "write_cost"

    def __init__(self, target: Path, create: bool = False) -> None:
        import chromadb
        from chromadb.config import Settings

        self.client = chromadb.PersistentClient(path=str(target), settings=Settings(anonymized_telemetry=False))
        if create:
            self.collection = self.client.create_collection(
                self.NAME, embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
            )
        else:
            self.collection = self.client.get_collection(self.NAME, embedding_function=None)

    def add(self, ids: list[int], vectors: np.ndarray, texts: list[str], years: list[int]) -> None:
        self.collection.add(
            ids=[str(i) for i in ids],
            embeddings=np.ascontiguousarray(vectors, dtype=np.float32),
            documents=texts,
            metadatas=[{"year": int(year), "row": int(i)} for i, year in zip(ids, years)],
        )

    def build(self, data: Data) -> None:
        texts, batch = data.texts(), min(self.client.get_max_batch_size(), 5000)
        for start in range(0, data.n, batch):
            stop = min(start + batch, data.n)
            self.add(list(range(start, stop)), data.vectors[start:stop], texts[start:stop], data.years[start:stop])

    def delete(self, document: int) -> None:
        self.collection.delete(ids=[str(document)])

    def search(self, vector: np.ndarray, id_limit: int | None = None) -> list:
        where = {"year": {"$gte": 2020}}
        if id_limit is not None:
            where = {"$and": [where, {"row": {"$lte": id_limit}}]}
        result = self.collection.query(
            query_embeddings=vector[None, :].astype(np.float32),
            n_results=K,
            where=where,
            include=["documents", "metadatas", "distances"],
        )
        return result["ids"][0]

    def count(self) -> int:
        return self.collection.count()


class Lance:
    NAME = "write_cost"

    def __init__(self, target: Path, create: bool = False) -> None:
        import lancedb

        self.db = lancedb.connect(str(target))
        self.table = None if create else self.db.open_table(self.NAME)

    @staticmethod
    def arrow(ids: list[int], vectors: np.ndarray, texts: list[str], years: list[int]):
        import pyarrow as pa

        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "text": pa.array(texts, pa.string()),
                "year": pa.array([int(y) for y in years], pa.int32()),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), vectors.shape[1]),
            }
        )

    def build(self, data: Data) -> None:
        table = self.arrow(list(range(data.n)), data.vectors, data.texts(), data.years)
        self.table = self.db.create_table(self.NAME, data=table)

    def add(self, ids: list[int], vectors: np.ndarray, texts: list[str], years: list[int]) -> None:
        self.table.add(self.arrow(ids, vectors, texts, years))

    def delete(self, document: int) -> None:
        self.table.delete(f"id = {int(document)}")

    def search(self, vector: np.ndarray, id_limit: int | None = None) -> list:
        where = "year >= 2020" if id_limit is None else f"year >= 2020 AND id <= {id_limit}"
        return (
            self.table.search(vector.astype(np.float32), vector_column_name="vector")
            .distance_type("cosine")
            .where(where, prefilter=True)
            .select(["id", "text", "year"])
            .limit(K)
            .to_list()
        )

    def count(self) -> int:
        return self.table.count_rows()


PEER_CLASSES = {"chroma": Chroma, "lancedb": Lance}


def peer_build(peer: str, data: Data, target: Path) -> dict:
    started = time.perf_counter()
    system = PEER_CLASSES[peer](target, create=True)
    system.build(data)
    wall = time.perf_counter() - started
    count = system.count()
    if count != data.n:
        raise SystemExit(f"{peer} holds {count} documents, not {data.n}")
    return {
        "documents": count,
        "index_type": {"chroma": "HNSW (M 16, cosine)", "lancedb": "no vector index (exact scan), cosine"}[peer],
        "build_s": round(wall, 2),
        "build_peak_mib": round(peak_mib(), 1),
        "disk_mib": round(disk_mib(target), 1),
        "versions": peer_versions(peer),
    }


def peer_add(system, data: Data, batch: int) -> float:
    texts, vectors, years = data.batch(batch)
    ids = [data.n + 10 * batch + offset for offset in range(10)]  # new ids, above every built one
    started = time.perf_counter()
    system.add(ids, vectors, texts, years)
    return time.perf_counter() - started


def peer_delete(system, data: Data, number: int) -> float:
    started = time.perf_counter()
    system.delete(data.delete_id(number))
    return time.perf_counter() - started


def peer_measure(peer: str, data: Data, target: Path, runs: int, queries: int) -> dict:
    system = PEER_CLASSES[peer](target)

    def search(number: int) -> list:
        return system.search(data.query_vectors[number])

    def distinct(number: int) -> list:
        return system.search(data.query_vectors[number], data.id_limit(number))

    fresh = query_p50(search, queries)
    fresh_distinct = query_p50(distinct, queries, warm=search)
    peer_add(system, data, WARM_UP)
    adds = [peer_add(system, data, batch) for batch in range(FIRST_RUN, FIRST_RUN + runs)]
    peer_delete(system, data, 0)
    deletes = [peer_delete(system, data, number) for number in range(1, runs + 1)]
    after = query_p50(search, queries)
    after_distinct = query_p50(distinct, queries, warm=search)
    documents = system.count()
    expected = data.n + 10 * (runs + 1) - (runs + 1)
    if documents != expected:
        raise SystemExit(f"{peer} holds {documents} documents after the writes, not {expected}")
    return {
        "query": fresh,
        "add10": summary(adds),
        "delete1": summary(deletes),
        "query_after_writes": after,
        "query_distinct_filters": fresh_distinct,
        "query_distinct_filters_after_writes": after_distinct,
        "documents_after_writes": documents,
        "disk_mib_after_writes": round(disk_mib(target), 1),
    }


def peer_memory(peer: str, data: Data, target: Path, marks: Path | None = None) -> dict:
    system = PEER_CLASSES[peer](target)
    system.search(data.query_vectors[0])

    return marked_writes(
        lambda batch: peer_add(system, data, batch), lambda number: peer_delete(system, data, number), marks
    )


def worker(arguments: argparse.Namespace) -> None:
    """One part in this process (--engine-part or --peer with --part), its result written to --result."""
    data, target = Data(arguments.data), arguments.target
    part = arguments.part
    marks = arguments.marks
    if arguments.peer is not None:
        peer = arguments.peer
        if part == "build":
            result = peer_build(peer, data, target)
        elif part == "measure":
            result = peer_measure(peer, data, target, arguments.runs, arguments.queries)
        else:
            result = peer_memory(peer, data, target, marks if part == "fsync" else None)
    else:
        origin = engine_origin()
        if part == "build":
            result = {**engine_build(data, target), "imported_from": origin}
        elif part == "measure":
            result = engine_measure(data, target, arguments.runs, arguments.queries)
        else:
            result = engine_memory(data, target, marks if part == "fsync" else None)
    if "searchengine" in sys.modules and arguments.peer is not None:
        raise SystemExit("the peer part imported searchengine")
    write_results(arguments.result, result)


# ----------------------------------------------------------------------------------------------------------------
# The orchestrator (this checkout's venv): data, the parts of every system and size, the results.


def git(code: Path, *arguments: str) -> str:
    completed = subprocess.run(["git", "-C", str(code), *arguments], capture_output=True, text=True, check=False)
    return completed.stdout.rstrip("\n")


def code_state(code: Path) -> dict:
    """Commit of `code`, its modified product files (searchengine/, indexer/, training/), and a hash of their
    contents (to see whether the code changed while it was measured)."""
    changed = git(code, "status", "--porcelain", "--", *PRODUCT_CODE).splitlines()
    digest = hashlib.sha256()
    for name in PRODUCT_CODE:
        for path in sorted((code / name).rglob("*.py")) if (code / name).is_dir() else []:
            digest.update(str(path.relative_to(code)).encode() + b"\0" + path.read_bytes())
    return {
        "code": str(code),
        "commit": git(code, "rev-parse", "HEAD"),
        "dirty": bool(changed),
        "changed_files": changed[:60],
        "source_sha256": digest.hexdigest()[:16],
    }


def run_part(
    arguments: argparse.Namespace,
    system: str,
    part: str,
    data: Path,
    target: Path,
    env: dict,
    strace: str | None = None,
) -> dict:
    """Run one part in a fresh process; its result (JSON). Under strace for the fsync part: the counts."""
    result = arguments.work / "part.json"
    result.unlink(missing_ok=True)
    python = str(arguments.peer_python) if system in PEERS else sys.executable
    role = ["--peer", system] if system in PEERS else ["--engine-part"]
    command = [python, str(Path(__file__).resolve()), *role, "--part", part, "--data", str(data)]
    command += ["--target", str(target), "--result", str(result), "--runs", str(arguments.runs)]
    command += ["--queries", str(arguments.queries)]
    trace = None
    if strace is not None:
        marks = arguments.work / "marks"
        marks.mkdir(exist_ok=True)
        trace = arguments.work / "strace.txt"
        calls = ",".join([*SYNC_CALLS, "access", "faccessat", "faccessat2"])
        command = [strace, "-f", "-qq", "-e", f"trace={calls}", "-e", "signal=none", "-o", str(trace), *command]
        command += ["--marks", str(marks)]
    waited = wait_for_quiet(arguments.max_load, arguments.max_wait)
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    completed = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"{system} {part} failed ({completed.returncode}):\n{completed.stderr[-4000:]}")
    print(f"  {system} {part}: {time.perf_counter() - started:.1f} s (load {load_before:.2f})", flush=True)
    outcome = json.loads(result.read_text(encoding="utf-8"))
    outcome["load"] = {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2), "waited_s": waited}
    if trace is not None:
        outcome["sync_calls"] = count_sync_calls(trace.read_text(encoding="utf-8", errors="replace"))
    return outcome


def count_sync_calls(trace: str) -> dict:
    """fsync-family calls between the probe's marks, from `strace -f -o` output."""
    counts, section = {"add10": 0, "delete1": 0}, None
    starts = {"MARK-add-start": "add10", "MARK-delete-start": "delete1"}
    pattern = re.compile(r"\b(" + "|".join(SYNC_CALLS) + r")\(")
    for line in trace.splitlines():
        found = next(
            (name for name in ("add-start", "add-end", "delete-start", "delete-end") if f"MARK-{name}" in line), None
        )
        if found is not None:
            section = starts.get(f"MARK-{found}")
        elif section is not None and pattern.search(line):
            counts[section] += 1
    return counts


def cli_costs(arguments: argparse.Namespace, data_dir: Path, target: Path, env: dict) -> dict:
    """`python -m searchengine add` of 10 held-out texts (.jsonl with their year), and a cold filtered query."""
    data = Data(data_dir)
    adds, queries = [], []
    waited = wait_for_quiet(arguments.max_load, arguments.max_wait)
    load_before = os.getloadavg()[0]
    for run in range(arguments.cli_runs):
        texts, _, years = data.batch(FIRST_CLI + run)
        corpus = arguments.work / f"cli-add-{run}.jsonl"
        corpus.write_text("".join(json.dumps({"text": t, "year": y}) + "\n" for t, y in zip(texts, years)), "utf-8")
        command = [sys.executable, "-m", "searchengine", "add", str(corpus), "--index-dir", str(target), "--quiet"]
        adds.append(timed(command, env))
        query = data.query_texts[run]
        command = [sys.executable, "-m", "searchengine", "query", query, "--index-dir", str(target), "-k", str(K)]
        queries.append(timed([*command, "--mode", "dense", "--where", FILTER], env))
    load = {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2), "waited_s": waited}
    return {"cli_add10": summary(adds), "cli_query_cold": summary(queries), "cli_load": load}


def timed(command: list[str], env: dict) -> float:
    started = time.perf_counter()
    completed = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:4])} failed:\n{completed.stderr[-3000:]}")
    return seconds


def source_vectors(arguments: argparse.Namespace) -> tuple[np.ndarray, str]:
    """The real vectors to copy: of --vectors-from, else of an index built here from the first --vector-lines
    sentences (cached as .npy in --work)."""
    from searchengine import SearchEngine

    index = arguments.vectors_from
    if index is None:
        index = arguments.work / f"vectors-source-{arguments.vector_lines}"
        if not index.is_dir():
            lines = arguments.work / f"first-{arguments.vector_lines}.txt"
            sentences = read_sentences(arguments.sentences)[: arguments.vector_lines]
            lines.write_text("\n".join(sentences) + "\n", encoding="utf-8")
            command = [sys.executable, "-m", "searchengine", "index", str(lines), "--index-dir", str(index), "-q"]
            subprocess.run(command, check=True, env=system_env("searchengine", None, None))
    cache = arguments.work / f"real-{hashlib.sha256(str(index.resolve()).encode()).hexdigest()[:12]}.npy"
    if not cache.is_file():
        with SearchEngine.open(index) as engine:
            ids, rows = [], []
            for batch_ids, batch in engine.stored_vectors():
                ids.append(batch_ids)
                rows.append(batch)
        real = np.concatenate(rows)[np.argsort(np.concatenate(ids))]
        np.save(cache, real.astype(np.float32))
    return np.load(cache), str(index)


def read_sentences(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as file:
        return [line.strip() for line in file if line.strip()]


def prepare(arguments: argparse.Namespace, n: int) -> Path:
    """The data directory of size n (written once per run)."""
    from benchmarks.scale.synthetic import noisy_copies
    from searchengine.encoding.encoder import Encoder

    directory = arguments.work / f"data-{n}"
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    sentences = read_sentences(arguments.sentences)
    held_out = arguments.queries + 10 * WRITE_BATCHES
    if len(sentences) <= held_out:
        raise SystemExit(f"{arguments.sentences} has {len(sentences)} sentences; more than {held_out} are needed")
    indexed, writes, queries = (
        sentences[:-held_out],
        sentences[-held_out : -arguments.queries],
        sentences[-arguments.queries :],
    )
    real, source = source_vectors(arguments)
    vectors = noisy_copies(real, n)
    np.save(directory / "vectors.npy", vectors)
    del vectors
    np.save(directory / "years.npy", np.random.default_rng(2020).integers(1990, 2026, n).astype(np.int32))
    with (directory / "texts.txt").open("w", encoding="utf-8") as file:
        for row in range(n):
            file.write(indexed[row % len(indexed)] + "\n")
    encoder = Encoder()
    for name, texts in (("queries", queries), ("writes", writes)):
        vectors = encoder.encode_queries(texts) if name == "queries" else encoder.encode(texts)
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        np.save(directory / f"{name}.npy", vectors.astype(np.float32))
        (directory / f"{name}.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    np.save(
        directory / "writes_years.npy", np.random.default_rng(2021).integers(1990, 2026, len(writes)).astype(np.int32)
    )
    meta = {
        "n": n,
        "vectors": f"{n:,}: the {len(real):,} real vectors of {source}, then noisy copies (synthetic.py)",
        "texts": f"{arguments.sentences}, cycled over its first {len(indexed):,} sentences",
        "queries": f"its last {len(queries)} sentences",
        "writes": f"the {len(writes)} sentences before those",
    }
    write_results((directory / "data.json"), meta)
    return directory


def measure_system(arguments: argparse.Namespace, system: str, data_dir: Path, shim: Path | None, row: dict) -> None:
    """Every part of `system` on the data of `data_dir`, into `row` (which keeps the parts done if one fails)."""
    target = arguments.work / f"{system}-{data_dir.name.split('-')[1]}"
    if target.exists():
        shutil.rmtree(target)
    env = system_env(system, arguments.baseline, shim)
    code = ROOT if system == "searchengine" else arguments.baseline
    before = code_state(code) if system in ENGINES else None
    load_before = os.getloadavg()
    row["build"] = run_part(arguments, system, "build", data_dir, target, env)
    measured = run_part(arguments, system, "measure", data_dir, target, env)
    row["measure_load"] = measured.pop("load")
    row.update(measured)
    row["write_memory"] = run_part(arguments, system, "memory", data_dir, target, env)
    strace = shutil.which("strace")
    if strace is not None and not arguments.no_fsync_probe:
        row["sync_calls"] = run_part(arguments, system, "fsync", data_dir, target, env, strace)["sync_calls"]
    else:
        row["sync_calls"] = "not checked (no strace)" if strace is None else "not checked"
    if system in ENGINES and arguments.cli_runs > 0:
        row.update(cli_costs(arguments, data_dir, target, env))
        print(f"  {system} cli: done", flush=True)
    if system in ENGINES:
        after = code_state(code)
        row["code"] = {**before, "unchanged_while_measured": after["source_sha256"] == before["source_sha256"]}
    row["command"] = command_line()
    row["data"] = json.loads((data_dir / "data.json").read_text(encoding="utf-8"))
    row["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    row["machine"] = machine_record(load_before=load_before, load_after=os.getloadavg())
    if not arguments.keep:
        shutil.rmtree(target, ignore_errors=True)


NOTES = {
    "timings": "add10: wall ms of adding 10 documents, less searchengine's encoding stage (peers get vectors); "
    "delete1: one document by id; medians of --runs after a warm-up; query: dense, k=10, year>=2020, one query "
    "a call, encoding left out; write memory: peak resident memory (VmHWM, reset just before) during one add of "
    "10 in a process that opened the index and queried it, less its resident memory before the add",
    "sync_calls": "fsync, fdatasync, sync_file_range, msync and syncfs calls seen by strace -f during one add of "
    "10 and one delete of 1",
    "cli": "python -m searchengine (add: 10-line .jsonl; query: dense, -k 10, --where year>=2020), wall time "
    "of the whole process, model load included; page cache warm",
    "chroma": "HNSW (approximate) whatever N, its defaults (M 16, ef_search 100); writes are logged in SQLite and "
    "applied to the HNSW index in batches (batch_size 100, sync_threshold 1000: its defaults).",
    "lancedb": "no vector index: exact scan, as Flat; each write adds a fragment or a deletion file and a new version.",
}


def table(results: dict) -> str:
    """The markdown table of every system and size in `results` (query columns: p50 ms on the fresh index / after
    the timed writes; "new filter each": year >= 2020 and a different id <= L for every query)."""

    def number(value, digits: int = 1) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    def queries(row: dict, name: str) -> str:
        fresh, after = row.get(name), row.get(f"{name}_after_writes")
        if fresh is None or after is None:
            return "-"
        return f"{number(fresh['p50_ms'], 2)} / {number(after['p50_ms'], 2)}"

    rows = [
        "| system | N | build s | add 10 ms | delete 1 ms | write extra MiB | process peak MiB | query p50 ms | "
        "query p50 ms, new filter each | all k | fsyncs add/delete | CLI add 10 s | CLI query s | disk MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|",
    ]
    for system, sizes in results.get("runs", {}).items():
        for n, row in sorted(sizes.items(), key=lambda item: int(item[0])):
            if "error" in row:
                last = [line.strip() for line in row["error"].splitlines() if line.strip()][-1]
                rows.append(f"| {system} | {int(n):,} | failed: {last[:100].replace('|', '/')} |" + " |" * 12)
                continue
            syncs = row.get("sync_calls")
            syncs = f"{syncs['add10']}/{syncs['delete1']}" if isinstance(syncs, dict) else "not checked"
            cli_add, cli_query = row.get("cli_add10"), row.get("cli_query_cold")
            names = ("query", "query_after_writes", "query_distinct_filters", "query_distinct_filters_after_writes")
            all_k = all(row[name]["all_k_returned"] for name in names if name in row)
            rows.append(
                f"| {system} | {int(n):,} | {number(row['build']['build_s'])} | {number(row['add10']['median_ms'])} "
                f"| {number(row['delete1']['median_ms'])} | {number(row['write_memory']['extra_mib'])} "
                f"| {number(row['write_memory']['peak_total_mib'], 0)} | {queries(row, 'query')} "
                f"| {queries(row, 'query_distinct_filters')} | {'yes' if all_k else 'NO'} "
                f"| {syncs} | {number(cli_add and cli_add['median_ms'] / 1000, 2)} "
                f"| {number(cli_query and cli_query['median_ms'] / 1000, 2)} | {number(row['build']['disk_mib'])} |"
            )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="Comma-separated N (1000000 works, and takes long).")
    parser.add_argument(
        "--systems",
        default=None,
        help="Comma-separated: searchengine, baseline, chroma, lancedb "
        "(default: searchengine, baseline when --baseline is given, chroma, lancedb).",
    )
    parser.add_argument("--baseline", type=Path, help="A checkout of an older searchengine to measure beside this one.")
    parser.add_argument("--vectors-from", type=Path, help="An index the project built, whose vectors are copied.")
    parser.add_argument("--vector-lines", type=int, default=2000, help="Without --vectors-from: sentences to index.")
    parser.add_argument("--sentences", type=Path, default=SENTENCES, help="Sentences, one per line (.gz or not).")
    parser.add_argument("--queries", type=int, default=200, help="Timed filtered queries (held-out sentences).")
    parser.add_argument("--runs", type=int, default=5, help="Timed adds and deletes, each after one warm-up (max 9).")
    parser.add_argument("--cli-runs", type=int, default=3, help="Timed `searchengine add` and cold queries (0: none).")
    parser.add_argument("--peer-python", type=Path, default=PEER_PYTHON, help="Python of the peers' environment.")
    parser.add_argument("--no-fsync-probe", action="store_true", help="Skip counting sync calls under strace.")
    parser.add_argument("--keep", action="store_true", help="Keep the indexes in --work.")
    parser.add_argument(
        "--max-load", type=float, help="Before each part, wait for the 1-minute load to fall under this."
    )
    parser.add_argument("--max-wait", type=float, default=900, help="Seconds to wait for --max-load at most.")
    parser.add_argument("--work", type=Path, default=Path("/tmp/write-cost"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "storage" / "results" / "write_cost.json")
    parser.add_argument("--table", action="store_true", help="Print the markdown table of --out and exit.")
    # One part in this process (the orchestrator runs these).
    parser.add_argument("--peer", choices=PEERS, help=argparse.SUPPRESS)
    parser.add_argument("--engine-part", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--part", choices=["build", "measure", "memory", "fsync"], help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--target", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--marks", type=Path, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.peer is not None or arguments.engine_part:
        worker(arguments)
        return
    if arguments.table:
        print(table(json.loads(arguments.out.read_text(encoding="utf-8"))))
        return
    if not 1 <= arguments.runs <= 9 or not 0 <= arguments.cli_runs <= 4:
        raise SystemExit("--runs must be 1 to 9 and --cli-runs 0 to 4 (the held-out writes are that many)")
    default = ["searchengine", *(["baseline"] if arguments.baseline else []), *PEERS]
    systems = arguments.systems.split(",") if arguments.systems else default
    unknown = set(systems) - {*ENGINES, *PEERS}
    if unknown or ("baseline" in systems and arguments.baseline is None):
        raise SystemExit(f"unknown systems {sorted(unknown)}, or baseline without --baseline DIR")
    if any(system in PEERS for system in systems) and not arguments.peer_python.exists():
        raise SystemExit(f"no {arguments.peer_python}: make the peers' environment (see --help) or give --peer-python")
    arguments.work.mkdir(parents=True, exist_ok=True)
    lock = (arguments.work / ".lock").open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SystemExit(f"another write_cost run is using {arguments.work}; give this one its own --work") from None
    shim = baseline_path(arguments.baseline, arguments.work) if "baseline" in systems else None
    for n in (int(size) for size in arguments.sizes.split(",")):
        print(f"N = {n:,}: preparing the data", flush=True)
        data_dir = prepare(arguments, n)
        for system in systems:
            print(f"N = {n:,}: {system}", flush=True)
            row: dict = {}
            try:
                measure_system(arguments, system, data_dir, shim, row)
            except RuntimeError as exc:  # a part failed: keep the parts done, and why
                print(exc, file=sys.stderr, flush=True)
                row["error"] = str(exc)[-3000:]
                row["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            save(arguments.out, system, n, row)
        shutil.rmtree(data_dir, ignore_errors=True)
    print(table(json.loads(arguments.out.read_text(encoding="utf-8"))))


def save(out: Path, system: str, n: int, row: dict) -> None:
    """Merge one system and size into `out`, read again just before (another run may have written it since)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:16]
    with (Path(tempfile.gettempdir()) / f"write_cost-{name}.lock").open("w") as lock:  # not beside the results
        fcntl.flock(lock, fcntl.LOCK_EX)
        results = read_results(out)
        results.setdefault("runs", {}).setdefault(system, {})[str(n)] = row
        results["date"] = row["date"]
        results["machine"] = machine_record()
        results["notes"] = NOTES
        partial = out.with_name(out.name + ".partial")
        write_results(partial, results)
        partial.replace(out)


if __name__ == "__main__":
    main()
