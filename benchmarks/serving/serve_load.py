"""Load test of `searchengine serve`: queries/second, p50/p99 latency and errors at several concurrencies, alone
and while a writer adds documents through the API.

The index: the first --docs sentences of the Wikipedia sentences (unsup/wiki_sentences.txt.gz, 100,000 lines),
indexed with the bundled all-MiniLM-L6-v2 (exact search, "Flat", unless --index names another FAISS type),
built once into --cache-dir (another type from the Flat index's vectors). The queries: the first eight words of
sentences the index does not hold. The server runs as its own process
(`python -m searchengine serve --port 0` on 127.0.0.1); the clients are threads of this process, each with one
keep-alive connection, sending GET /search?q=...&k=10&mode=dense (--mode: dense unless told otherwise, as measured
before hybrid search was the default).

Bounded: each level stops after --requests requests or --seconds seconds, whichever comes first, and the whole
run after the levels listed; nothing but 127.0.0.1 is ever contacted. "With a writer": one more client posts
--write-batch new documents at a time to POST /documents, back to back, for as long as the level runs (each write
commits in place, a new segment and one SQLite transaction, and the readers pick it up before their next turn). Its texts are the held-out
sentences after the queries' 1,000, taken round again when they run out (a repeated text is a new document).
--mode hybrid measures the server's default search mode; --threads sets the server's encoder threads, --readers
its reader threads. Every half second it also reads the size of the store's SQLite write-ahead log: its peak and
what is left after the server stopped are in the results ("write_ahead_log").

    python benchmarks/serving/serve_load.py --docs 20000 --out benchmarks/serving/results/serve_load.json
    python benchmarks/serving/serve_load.py --quick          # a smoke run: 300 documents, a few requests per level
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlencode

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import machine_record
from benchmarks.harness.results import write_results

ROOT = Path(__file__).resolve().parents[2]
QUERY_WORDS = 8


@dataclass
class Level:
    """One measured run: `concurrency` clients sending searches (and maybe one writer) until a bound is hit."""

    concurrency: int
    with_writer: bool
    requests: int = 0
    errors: int = 0
    seconds: float = 0.0
    qps: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    writes: int = 0
    write_errors: int = 0
    documents_added: int = 0
    write_p50_ms: float | None = None
    write_max_ms: float | None = None
    error_samples: list[str] = field(default_factory=list)


class LogWatch:
    """The size of the store's write-ahead log (`*.db-wal` in the served index folder), sampled every
    `every` seconds in a thread: its peak while the server runs, and what is left once it stopped."""

    def __init__(self, index: Path, every: float = 0.5) -> None:
        self.index, self.every = index, every
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def bytes_now(self) -> int:
        return sum(log.stat().st_size for log in self.index.glob("*.db-wal") if log.exists())

    def _watch(self) -> None:
        while not self._stop.wait(self.every):
            with contextlib.suppress(OSError):  # the log may be removed between the listing and the stat
                self.peak_bytes = max(self.peak_bytes, self.bytes_now())

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def sentences(data: Path) -> list[str]:
    with gzip.open(data / "unsup" / "wiki_sentences.txt.gz", "rt", encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]


def build_index(corpus: list[str], path: Path, index_type: str, flat: Path) -> None:
    """The index of `corpus`, built once: a directory whose manifest exists is reused. A Flat index is encoded;
    any other type is built from the vectors of the Flat one at `flat` (built first), so it holds the same
    vectors and costs no second encoding."""
    if (path / "manifest.json").is_file():
        return
    from searchengine import SearchEngine
    from searchengine.engine.build_settings import BuildSettings

    started = time.perf_counter()
    if index_type == "Flat":
        SearchEngine.build(corpus, path, BuildSettings(index="Flat", progress=True)).close()
    else:
        from searchengine.indexer.commit.index_directory import IndexDirectory
        from searchengine.indexer.tables.store import Document

        from benchmarks.scale.index_scale import stored_vectors
        from searchengine.encoding.encoder import Encoder
        from searchengine.engine.indexing import Chunk, IndexSettings
        from searchengine.engine.indexing import build_index as build_from_chunks

        build_index(corpus, flat, "Flat", flat)
        chunk = Chunk([Document(text) for text in corpus], stored_vectors(flat))
        build_from_chunks(IndexDirectory(path), [chunk], Encoder(), IndexSettings(index_type), len(corpus))
    print(f"built {path} ({len(corpus)} texts) in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def in_process_latency(index: Path, queries: list[str], count: int, speed: tuple[str, str, int], mode: str) -> dict:
    """p50/p99 of SearchEngine.search on the same index and queries in this process, one at a time, on one thread
    as the server computes: what HTTP adds is the difference."""
    import faiss
    import torch

    from searchengine import EncoderSpeed, SearchEngine

    torch.set_num_threads(1)
    faiss.omp_set_num_threads(1)
    engine = SearchEngine.open(index, speed=EncoderSpeed(*speed))
    for query in queries[:10]:
        engine.search(query, k=10, mode=mode)
    latencies = []
    for query in queries[:count]:
        started = time.perf_counter()
        engine.search(query, k=10, mode=mode)
        latencies.append(time.perf_counter() - started)
    engine.close()
    ordered = sorted(latencies)
    return {
        "queries": len(ordered),
        "p50_ms": 1000 * ordered[len(ordered) // 2],
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
    }


def start_server(index: Path, log: Path, options: list[str]) -> tuple[subprocess.Popen, str]:
    """`searchengine serve` on a free 127.0.0.1 port; returns the process and its base URL once it listens."""
    sink = log.open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "searchengine",
            "serve",
            "-d",
            str(index),
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-access-log",
            *options,
        ],
        stdout=sink,
        stderr=sink,
    )
    deadline = time.monotonic() + 300
    while not (found := re.search(r"at (http://127\.0\.0\.1:\d+)/", log.read_text())):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise SystemExit("the server did not start:\n" + log.read_text())
        time.sleep(0.1)
    return process, found.group(1)


class Client:
    """One keep-alive connection to the server, reopened after a failure."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        try:
            self.connection.request(method, path, body, headers)
            response = self.connection.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException) as exc:
            self.connection.close()
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            return 0, repr(exc).encode()


def run_level(
    port: int,
    queries: list[str],
    concurrency: int,
    requests: int,
    seconds: float,
    writer_texts: list[str] | None,
    write_batch: int,
    mode: str,
    add_docs: int | None = None,
) -> Level:
    """One level: `concurrency` clients search until `requests` or `seconds` run out, beside a writer when
    `writer_texts` is given. With `add_docs`, the writer posts that many documents and stops, and the clients
    search for as long as it writes (the level ends with the add)."""
    level = Level(concurrency, writer_texts is not None)
    latencies: list[float] = []
    write_latencies: list[float] = []
    lock = threading.Lock()
    issued = 0
    deadline = time.monotonic() + seconds
    done = threading.Event()

    def next_request() -> int | None:
        nonlocal issued
        with lock:
            if add_docs is not None:
                if done.is_set():
                    return None
            elif issued >= requests or time.monotonic() > deadline:
                return None
            issued += 1
            return issued

    def search() -> None:
        client = Client(port)
        while (number := next_request()) is not None:
            query = queries[number % len(queries)]
            started = time.perf_counter()
            status, body = client.request("GET", "/search?" + urlencode({"q": query, "k": 10, "mode": mode}))
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append(elapsed)
                if status != 200:
                    level.errors += 1
                    if len(level.error_samples) < 5:
                        level.error_samples.append(f"{status} {body[:200]!r}")

    def write() -> None:
        client = Client(port)
        position = 0
        while not done.is_set():  # round the held-out texts again when they run out: each write adds new rows
            if add_docs is not None and position >= add_docs:
                done.set()
                break
            size = write_batch if add_docs is None else min(write_batch, add_docs - position)
            batch = [writer_texts[(position + i) % len(writer_texts)] for i in range(size)]
            position += size
            started = time.perf_counter()
            body = json.dumps({"documents": [{"text": text, "origin": "load-test"} for text in batch]}).encode()
            status, answer = client.request("POST", "/documents", body)
            write_latencies.append(time.perf_counter() - started)
            level.writes += 1
            if status == 200:
                level.documents_added += json.loads(answer)["added"]
            else:
                level.write_errors += 1
                level.error_samples.append(f"write {status} {answer[:200]!r}")

    started = time.perf_counter()
    threads = [threading.Thread(target=search) for _ in range(concurrency)]
    writer = threading.Thread(target=write) if writer_texts is not None else None
    for thread in threads + ([writer] if writer else []):
        thread.start()
    for thread in threads:
        thread.join()
    level.seconds = time.perf_counter() - started
    done.set()
    if writer:
        writer.join()
    level.requests = len(latencies)
    level.qps = level.requests / level.seconds
    ordered = sorted(latencies)
    level.p50_ms = 1000 * ordered[len(ordered) // 2]
    level.p99_ms = 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    if write_latencies:
        level.write_p50_ms = 1000 * statistics.median(write_latencies)
        level.write_max_ms = 1000 * max(write_latencies)
    return level


def markdown(results: dict) -> str:
    rows = [
        "| clients | writer | requests | QPS | p50 ms | p99 ms | errors | writes (docs added) | write p50 / max ms |",
        "|---:|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for level in results["levels"]:
        writes = f"{level['writes']} ({level['documents_added']})" if level["with_writer"] else "–"
        write_p50 = (
            f"{level['write_p50_ms']:.0f} / {level['write_max_ms']:.0f}" if level["write_p50_ms"] is not None else "–"
        )
        errors = level["errors"] + level["write_errors"]
        rows.append(
            f"| {level['concurrency']} | {'yes' if level['with_writer'] else 'no'} | {level['requests']} | "
            f"{level['qps']:.1f} | {level['p50_ms']:.1f} | {level['p99_ms']:.1f} | {errors} | {writes} | {write_p50} |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run: 300 documents, 40 requests per level")
    parser.add_argument("--docs", type=int, help="documents in the index (default 100000; --quick 300)")
    parser.add_argument("--concurrency", default="1,8,32", help="comma-separated client counts (default 1,8,32)")
    parser.add_argument("--requests", type=int, help="requests per level at most (default 3000; --quick 40)")
    parser.add_argument("--seconds", type=float, help="seconds per level at most (default 60; --quick 30)")
    parser.add_argument("--write-batch", type=int, default=10, help="documents per POST /documents (default 10)")
    parser.add_argument("--max-batch", type=int, default=64, help="the server's --max-batch (default 64)")
    parser.add_argument("--precision", default="auto", help="the server's --precision (default auto)")
    parser.add_argument("--backend", default="auto", help="the server's --backend (default auto)")
    parser.add_argument("--index", default="Flat", help="the index type, a FAISS factory string (default Flat)")
    parser.add_argument("--threads", type=int, default=1, help="the server's --threads (default 1, as serve's)")
    parser.add_argument("--readers", type=int, default=2, help="the server's --readers (default 2, as serve's)")
    parser.add_argument(
        "--mode", default="dense", choices=["dense", "keyword", "hybrid"], help="the searches' mode (default dense)"
    )
    parser.add_argument(
        "--add-docs",
        type=int,
        help="with a writer, post this many documents (--write-batch at a time, e.g. 1000) and search for as long as "
        "the add runs, instead of writing small batches for --requests/--seconds",
    )
    parser.add_argument("--no-writer", action="store_true", help="skip the levels with a writer")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/searchengine-bench-cache"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    docs = args.docs or (300 if args.quick else 100_000)
    requests = args.requests or (40 if args.quick else 3000)
    seconds = args.seconds or (30.0 if args.quick else 60.0)
    levels = [int(value) for value in args.concurrency.split(",")]

    load_at_start = os.getloadavg()
    corpus = list(dict.fromkeys(sentences(args.data)))
    if docs >= len(corpus):
        raise SystemExit(f"--docs must leave sentences for queries and writes: at most {len(corpus) - 2000}")
    held_out = corpus[docs:]
    queries = [" ".join(text.split()[:QUERY_WORDS]) for text in held_out[:1000]]
    writer_texts = held_out[1000:]
    flat = args.cache_dir / f"serve-load-{docs}"
    index = flat if args.index == "Flat" else args.cache_dir / f"serve-load-{docs}-{args.index.replace(',', '_')}"
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    build_index(corpus[:docs], index, args.index, flat)
    # Writes change the index: each run serves a fresh copy of the built one.
    work = args.cache_dir / f"serve-load-{docs}-run"
    subprocess.run(["rm", "-rf", str(work)], check=True)
    subprocess.run(["cp", "-r", str(index), str(work)], check=True)

    speed = (args.precision, args.backend, args.threads)
    baseline = in_process_latency(work, queries, 50 if args.quick else 500, speed, args.mode)
    print(
        f"in process, one query at a time: p50 {baseline['p50_ms']:.1f} ms, p99 {baseline['p99_ms']:.1f} ms",
        file=sys.stderr,
    )
    options = ["--max-batch", str(args.max_batch), "--precision", args.precision, "--backend", args.backend]
    options += ["--threads", str(args.threads), "--readers", str(args.readers)]
    process, url = start_server(work, args.cache_dir / "serve-load.log", options)
    port = int(url.rsplit(":", 1)[1])
    log_watch = LogWatch(work)
    log_watch.start()
    try:
        warm = Client(port)
        served_with = json.loads(warm.request("GET", "/info")[1])["server"]
        for query in queries[:20]:
            status, body = warm.request("GET", "/search?" + urlencode({"q": query, "k": 10, "mode": args.mode}))
            if status != 200:
                raise SystemExit(f"warm-up query failed: {status} {body[:300]!r}")
        results_levels = []
        for with_writer in (False,) if args.no_writer else (False, True):
            for concurrency in levels:
                level = run_level(
                    port,
                    queries,
                    concurrency,
                    requests,
                    seconds,
                    writer_texts if with_writer else None,
                    args.write_batch,
                    args.mode,
                    args.add_docs if with_writer else None,
                )
                print(
                    f"clients {concurrency:>3} writer {'yes' if with_writer else 'no ':<3}: {level.qps:7.1f} QPS, "
                    f"p50 {level.p50_ms:6.1f} ms, p99 {level.p99_ms:7.1f} ms, "
                    f"errors {level.errors + level.write_errors}" + (f", {level.writes} writes" if with_writer else ""),
                    file=sys.stderr,
                )
                results_levels.append(asdict(level))
        status, body = Client(port).request("GET", "/info")
        final_size = json.loads(body)["vectors"] if status == 200 else None
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
        log_watch.stop()

    results = {
        "machine": machine_record(load_average_at_start=load_at_start, load_average_at_end=os.getloadavg()),
        "settings": {
            "docs": docs,
            "requests_per_level": requests,
            "seconds_per_level": seconds,
            "k": 10,
            "query_words": QUERY_WORDS,
            "write_batch": args.write_batch,
            "add_docs": args.add_docs,
            "max_batch": args.max_batch,
            "precision": served_with["precision"],
            "backend": served_with["backend"],
            "threads": args.threads,
            "readers": args.readers,
            "mode": args.mode,
            "index": args.index,
            "model": "bundled all-MiniLM-L6-v2",
        },
        "in_process": baseline,
        "levels": results_levels,
        "index_size_at_end": final_size,
        "write_ahead_log": {
            "peak_bytes": log_watch.peak_bytes,
            "bytes_after_stop": log_watch.bytes_now(),
            "store_bytes": sum(store.stat().st_size for store in work.glob("*.db")),
        },
        "checks": {
            "no_errors": all(level["errors"] == 0 and level["write_errors"] == 0 for level in results_levels),
            "every_level_answered": all(level["requests"] > 0 for level in results_levels),
            "writes_landed": args.no_writer
            or final_size == docs + sum(level["documents_added"] for level in results_levels),
        },
    }
    print(
        f"In process (SearchEngine.search, one query at a time): p50 {baseline['p50_ms']:.1f} ms, "
        f"p99 {baseline['p99_ms']:.1f} ms\n"
    )
    print(markdown(results))
    log = results["write_ahead_log"]
    print(
        f"\nSQLite's write-ahead log: peak {log['peak_bytes'] / 2**20:.1f} MiB, "
        f"{log['bytes_after_stop'] / 2**20:.1f} MiB after the server stopped (store: {log['store_bytes'] / 2**20:.1f} MiB)"
    )
    if args.out:
        write_results(args.out, results)


if __name__ == "__main__":
    main()
