"""What `verify`'s checks of the store cost on a large store: SQLite's quick_check (what verify ran before) and
integrity_check (what it runs now), the row checksums compared (indexer/commit/row_check.py) and FTS5's check of
the keyword index, and what writing the checksums costs: migration 4 over a store written without them, and the
share of an add's store write they take.

The store is made in --work from Wikipedia sentences (--texts, default ../shared/data/unsup, cycled with a
number so every text differs), each document with an external id and metadata, through DocumentStore.add in
batches of 10,000, as an index's build writes it (no vectors: they are not the store's checks). Each check runs
--runs times on a cold-ish page cache (the file was just written, so mostly warm: the figures are the CPU's).

    .venv/bin/python benchmarks/storage/verify_cost.py --documents 1000000 \\
        --out benchmarks/storage/results/verify_cost.json
"""

from __future__ import annotations

import argparse
import gzip
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import machine_record
from benchmarks.harness.results import write_results

ROOT = Path(__file__).resolve().parents[2]
BATCH = 10_000


def sentences(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        return [line.strip() for line in lines if line.strip()]


def timed(action, runs: int) -> list[float]:  # noqa: ANN001
    """Seconds of `runs` calls of `action`."""
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        seconds.append(time.perf_counter() - start)
    return seconds


def build(path: Path, texts: list[str], count: int, document, store_class) -> list[float]:  # noqa: ANN001
    """Write a store of `count` documents at `path` in batches of BATCH; seconds of each batch's add."""
    store = store_class(path, writable=True)
    adding = []
    for start in range(0, count, BATCH):
        batch = [
            document(f"{texts[n % len(texts)]} ({n})", "corpus.jsonl", n + 1, {"n": n, "lang": "en"}, f"doc-{n}")
            for n in range(start, min(start + BATCH, count))
        ]
        began = time.perf_counter()
        store.add(batch)
        adding.append(time.perf_counter() - began)
    store.close()
    return adding


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--texts", type=Path, default=DATA / "unsup" / "wiki_sentences.txt.gz")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--baseline", action="store_true", help="also build the store without row checksums, to time what they add"
    )
    parser.add_argument("--work", type=Path, default=None, help="folder for the store (default: a temporary one)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "storage" / "results" / "verify_cost.json")
    arguments = parser.parse_args()

    from searchengine.indexer.commit.row_check import rows_problem
    from searchengine.indexer.tables import document_table
    from searchengine.indexer.tables.row_checksums import record_missing_row_checksums
    from searchengine.indexer.tables.store import Document, DocumentStore

    texts = sentences(arguments.texts)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(dir=arguments.work) as work:
        unsummed = None
        if arguments.baseline:
            recording = document_table.record_row_checksums
            document_table.record_row_checksums = lambda _db, _ids: None  # the store write as it was before them
            unsummed = sum(build(Path(work) / "unsummed.db", texts, arguments.documents, Document, DocumentStore))
            (Path(work) / "unsummed.db").unlink()
            document_table.record_row_checksums = recording
        path = Path(work) / "documents.db"
        adding = build(path, texts, arguments.documents, Document, DocumentStore)
        size = path.stat().st_size
        connection = sqlite3.connect(path)

        def pragma(name: str) -> None:
            assert connection.execute(f"PRAGMA {name}").fetchall() == [("ok",)]

        quick = timed(lambda: pragma("quick_check"), arguments.runs)
        integrity = timed(lambda: pragma("integrity_check"), arguments.runs)
        keyword = timed(
            lambda: connection.execute("INSERT INTO documents_fts (documents_fts) VALUES ('integrity-check')"),
            arguments.runs,
        )
        connection.rollback()
        reader = DocumentStore(path)
        reader.read_snapshot()

        def rows() -> None:
            problem, _ = rows_problem(reader)
            assert problem is None, problem

        rows_and_keyword = timed(rows, arguments.runs)
        reader.close()
        checksum_rows = connection.execute("SELECT count(*) FROM row_checksums").fetchone()[0]
        connection.execute("DELETE FROM row_checksums")  # as a store written before migration 4
        connection.commit()
        writer = DocumentStore(path, writable=True)
        began = time.perf_counter()
        with writer.db.atomic():
            written = record_missing_row_checksums(writer.db)
        migration = time.perf_counter() - began
        writer.close()
        connection.close()
    assert checksum_rows == written == arguments.documents
    record = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": machine_record(load_before=load_before, load_after=os.getloadavg()),
        "documents": arguments.documents,
        "store_bytes": size,
        "seconds": {
            "build_store": round(sum(adding), 2),
            "build_store_without_row_checksums": None if unsummed is None else round(unsummed, 2),
            "quick_check": [round(s, 2) for s in quick],
            "integrity_check": [round(s, 2) for s in integrity],
            "keyword_index_check": [round(s, 2) for s in keyword],
            "row_checksums_and_keyword_check": [round(s, 2) for s in rows_and_keyword],
            "migration_4_checksums_written": round(migration, 2),
        },
        "median_seconds": {
            "quick_check": round(statistics.median(quick), 2),
            "integrity_check": round(statistics.median(integrity), 2),
            "keyword_index_check": round(statistics.median(keyword), 2),
            "row_checksums_only": round(statistics.median(rows_and_keyword) - statistics.median(keyword), 2),
        },
    }
    print(record)
    write_results(arguments.out, record)


if __name__ == "__main__":
    main()
