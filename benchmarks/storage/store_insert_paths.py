"""The store's insert paths side by side on one filled store (issue 42, item 4), in one run so the ratios hold on a
loaded machine: each round copies the store (made by store_scale.py --keep) and adds --chunks adds of 2,048 rows
to the copy, by each path in turn:

- `before`: as before the fix, rows inserted by sqlite-utils' insert_all (142 rows a statement, so FTS5 wrote a
  segment before each) into a store keeping its text-hash index row by row (the distinct-texts triggers dropped,
  as that store had none);
- `adds`: an add to an index now (one statement through a temporary table; hash index and counters kept);
- `build`: a build now (`start_build`: no hash index until the commit, which is timed apart as `finish_s`).

Reported per path: rows/s (wall), CPU seconds per 1,000 rows (user + system: what the path costs whatever the
load), bytes handed to write() per row, and, for `build`, the seconds its commit takes to make the hash index.

    .venv/bin/python benchmarks/storage/store_insert_paths.py --store /tmp/store_scale/w/documents.db \\
        --rounds 3 --out benchmarks/storage/results/store_insert_paths.json
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from benchmarks.storage.store_scale import row_metadata, row_text, sentences

ROOT = Path(__file__).resolve().parents[2]
PATHS = ("before", "adds", "build")
CHUNK = 2048


def written_bytes() -> int:
    """Bytes this process has handed to write() so far (Linux /proc/self/io's wchar)."""
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["wchar"])


def insert_all_before(store) -> None:  # noqa: ANN001
    """Make `store` insert as before the fix: sqlite-utils' insert_all, no distinct-texts triggers."""
    from searchengine.indexer.tables.row_checksums import record_row_checksums

    def insert(rows: list[dict]) -> None:
        store.db["documents"].insert_all(rows, batch_size=1000)
        record_row_checksums(store.db, [row["id"] for row in rows])

    store.documents.insert = insert
    with store.db.atomic():
        for event in ("insert", "delete", "update"):
            store.db.execute(f"DROP TRIGGER IF EXISTS counters_distinct_texts_{event}")


def one_path(path: str, source: Path, copy: Path, texts: list[str], chunks: int) -> dict:
    """Copy the store, add `chunks` adds of CHUNK rows to the copy by `path`; what it cost."""
    from searchengine.indexer.tables.store import Document, DocumentStore

    for name in (copy, Path(f"{copy}-wal"), Path(f"{copy}-shm")):
        name.unlink(missing_ok=True)
    shutil.copyfile(source, copy)
    store = DocumentStore(copy, writable=True)
    if path == "before":
        insert_all_before(store)
    elif path == "build":
        store.start_build()  # reads the keys of the rows stored: not timed (a build starts empty)
    first = store.next_id()
    wall = cpu = 0.0
    written = 0
    for k in range(chunks):
        documents = [
            Document(row_text(texts, n), "wiki.jsonl", n + 1, row_metadata(n), f"doc-{n}")
            for n in range(first + k * CHUNK, first + (k + 1) * CHUNK)
        ]
        times, bytes_before, began = os.times(), written_bytes(), time.perf_counter()
        store.add(documents)
        wall += time.perf_counter() - began
        after = os.times()
        cpu += after.user - times.user + after.system - times.system
        written += written_bytes() - bytes_before
    result = {
        "rows_per_s": round(chunks * CHUNK / wall, 1),
        "cpu_s_per_1000_rows": round(1000 * cpu / (chunks * CHUNK), 3),
        "write_bytes_per_row": round(written / (chunks * CHUNK)),
    }
    if path == "build":
        began = time.perf_counter()
        with store.db.atomic():
            store.finish_build()
        result["finish_s"] = round(time.perf_counter() - began, 2)
    store.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True, help="a store filled by store_scale.py --keep")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=10, help="adds of 2,048 rows per path and round")
    parser.add_argument("--texts", type=Path, default=DATA / "unsup" / "wiki_sentences.txt.gz")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "storage" / "results" / "store_insert_paths.json"
    )
    arguments = parser.parse_args()
    from searchengine.indexer.tables.store import DocumentStore

    texts = sentences(arguments.texts)
    reader = DocumentStore(arguments.store)
    rows = reader.count()
    reader.close()
    copy = arguments.store.with_name("insert_paths_copy.db")
    record: dict = {**run_record(os.getloadavg()), "store_rows": rows, "chunk_rows": CHUNK, "rounds": []}
    try:
        for _ in range(arguments.rounds):
            record["rounds"].append(
                {path: one_path(path, arguments.store, copy, texts, arguments.chunks) for path in PATHS}
            )
            print(record["rounds"][-1], flush=True)
            write_results(arguments.out, record)
    finally:
        for name in (copy, Path(f"{copy}-wal"), Path(f"{copy}-shm")):
            name.unlink(missing_ok=True)
    median = {
        path: {key: statistics.median(r[path][key] for r in record["rounds"]) for key in record["rounds"][0][path]}
        for path in PATHS
    }
    record["median"] = median
    record["ratios_to_before"] = {
        path: {
            "rows_per_s": round(median[path]["rows_per_s"] / median["before"]["rows_per_s"], 2),
            "cpu_per_row": round(median[path]["cpu_s_per_1000_rows"] / median["before"]["cpu_s_per_1000_rows"], 2),
            "write_bytes_per_row": round(
                median[path]["write_bytes_per_row"] / median["before"]["write_bytes_per_row"], 2
            ),
        }
        for path in PATHS
    }
    record["machine"]["load_after"] = os.getloadavg()
    print(record["median"], record["ratios_to_before"], flush=True)
    write_results(arguments.out, record)


if __name__ == "__main__":
    main()
