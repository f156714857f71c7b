"""The SQLite store at 10 million rows (issue 42, item 4): insert rate, size on disk, FTS5's size and merge cost, the
cost of fetching a hit's row, of a filtered query and of a keyword query, measured at steps as the store grows.

The store is the product's own: DocumentStore (indexer/tables/store.py) written as a build writes it
(engine/indexing.py: `store.start_build`, then `store.add` of CHUNK documents at a time, each its own transaction,
the keyword index kept by triggers, and the hash index made at the end: indexer/tables/build_hashes.py), with no
vectors, since only the store is measured; --as-adds fills it as adds to an index do (the hash index kept row by
row). At each step a build's hash index is made (timed: what a build of that size pays at its commit), the store
measured, and the build goes on without it (the keys of the rows so far read again, timed apart, not in the rate). Row n is two real Wikipedia sentences joined
(--texts, 100,000 lines): sentence n mod N, then sentence (n mod N + 1 + n div N) mod N, so every pair differs up to
N * (N - 1) rows; its vocabulary is the sentences', so posting lists grow with the rows while the number of distinct
words stays. Each row has an external id (`doc-<n>`), a source and line, and metadata for filters:
`year` (1950-2024), `views` (0-999,999), `score` (0-1) as numbers, `lang` (7 codes) and `category` (1,000 labels)
as text, spread by a fixed hash of n.

At each step (--steps) the filling stops and the store is measured: rows/s of the step and of each window of
--window rows (does it fall as the store grows?), each chunk's seconds (FTS5's automerge and SQLite's checkpoints
show as slow chunks), bytes per row of every table and index (dbstat), the log's size, FTS5's segments; then, from
a read-only DocumentStore (what a query process opens), a hit's row by id (warm; cold with the file's pages dropped
from the page cache by posix_fadvise), keyword queries (BM25 top 10, STS-B test sentences), filters as
DocumentFilters answers them in a fresh read snapshot, and keyword queries within a filter. After the last step:
FTS5's 'optimize' (merge into one segment), and what an index on a metadata field costs and gives. Results are
written after every step, so a run stopped early keeps its finished steps. The store is deleted at the end unless
--keep.

    .venv/bin/python benchmarks/storage/store_scale.py --steps 1000000,3000000,10000000 \\
        --work /work/tmp_store_scale --out benchmarks/storage/results/store_scale.json
"""

from __future__ import annotations

import argparse
import csv
import gzip
import os
import random
import shutil
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results

ROOT = Path(__file__).resolve().parents[2]
LANGS = ("en", "de", "fr", "es", "it", "nl", "pt")


def sentences(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        return [line.strip() for line in lines if line.strip()]


def queries(path: Path, count: int) -> list[str]:
    """The first `count` distinct first sentences of STS-B's test pairs: real short queries."""
    with path.open(encoding="utf-8") as file:
        rows = csv.reader(file, delimiter="\t", quoting=csv.QUOTE_NONE)
        next(rows)
        return list(dict.fromkeys(row[1] for row in rows if len(row) > 2))[:count]


def row_text(texts: list[str], n: int) -> str:
    """Row n's text: two sentences, a distinct pair for every n below N * (N - 1)."""
    first = n % len(texts)
    second = (first + 1 + n // len(texts)) % len(texts)
    return f"{texts[first]} {texts[second]}"


def row_metadata(n: int) -> dict:
    """Row n's metadata: numbers and text spread by a fixed hash of n (Knuth's multiplicative hash)."""
    mixed = (n * 2654435761) % 2**32
    return {
        "year": 1950 + mixed % 75,
        "views": (mixed >> 7) % 1_000_000,
        "score": round((mixed >> 3) % 10_007 / 10_007, 4),
        "lang": LANGS[(mixed >> 11) % len(LANGS)],
        "category": f"c{(mixed >> 5) % 1000}",
    }


def percentiles(seconds: list[float]) -> dict:
    """p50, p99 and max in milliseconds."""
    ordered = sorted(seconds)
    return {
        "n": len(ordered),
        "p50_ms": round(1000 * statistics.median(ordered), 3),
        "p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 3),
        "max_ms": round(1000 * ordered[-1], 3),
    }


def timed(action) -> tuple[float, object]:  # noqa: ANN001
    began = time.perf_counter()
    result = action()
    return time.perf_counter() - began, result


def drop_page_cache(path: Path) -> None:
    """Drop the store's files from the OS page cache (clean pages only; the writer is idle meanwhile)."""
    for name in (path, Path(f"{path}-wal")):
        if name.exists():
            descriptor = os.open(name, os.O_RDONLY)
            try:
                os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(descriptor)


def sizes(path: Path, rows: int) -> dict:
    """Bytes on disk, whole and per row, of every table and index (SQLite's dbstat), and of the log."""
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        by_name = dict(connection.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall())
        segments = connection.execute("SELECT count(DISTINCT segid) FROM documents_fts_idx").fetchone()[0]
    finally:
        connection.close()
    keyword = {name: size for name, size in by_name.items() if name.startswith("documents_fts")}
    wal = Path(f"{path}-wal")
    file_bytes = path.stat().st_size
    return {
        "file_bytes": file_bytes,
        "wal_bytes": wal.stat().st_size if wal.exists() else 0,
        "bytes_per_row": round(file_bytes / rows, 1),
        "keyword_index_bytes_per_row": round(sum(keyword.values()) / rows, 1),
        "fts5_segments": segments,
        "bytes_per_row_by_part": {name: round(size / rows, 1) for name, size in sorted(by_name.items()) if size > 0},
    }


def fetch_costs(reader, rows: int, lookups: int, cold_lookups: int, rng: random.Random) -> dict:  # noqa: ANN001
    """A hit's row by id (store.get, as search reads its hits): one random id at a time warm, ten (a page of hits)
    warm, and one at a time with the file dropped from the page cache before each."""
    single = [timed(lambda i=rng.randrange(rows): reader.get([i]))[0] for _ in range(lookups)]
    page = [timed(lambda: reader.get(rng.sample(range(rows), 10)))[0] for _ in range(lookups // 5)]
    cold = []
    for _ in range(cold_lookups):
        drop_page_cache(reader.path)
        cold.append(timed(lambda i=rng.randrange(rows): reader.get([i]))[0])
    return {"one_warm": percentiles(single), "ten_warm": percentiles(page), "one_cold": percentiles(cold)}


def keyword_costs(reader, texts: list[str]) -> dict:  # noqa: ANN001
    """BM25 top 10 of each query: a first pass (the snapshot's stem counts not yet kept), then a second."""
    first = [timed(lambda q=q: reader.keyword.search(q, 10))[0] for q in texts]
    second = [timed(lambda q=q: reader.keyword.search(q, 10))[0] for q in texts]
    return {"first_pass": percentiles(first), "second_pass": percentiles(second)}


FILTERS = {
    "lang = de (text, 1/7 of rows)": [("lang", "=", "de")],
    "category = c123 (text, 1/1000)": [("category", "=", "c123")],
    "2015 <= year < 2020 (numbers, 1/15)": [("year", ">=", 2015), ("year", "<", 2020)],
    "views < 1000 (numbers, 1/1000)": [("views", "<", 1000)],
}


def filter_costs(reader, texts: list[str], runs: int, names: list[str] | None = None) -> dict:  # noqa: ANN001
    """Each filter (of `names`; all when None) as DocumentFilters answers it: first in a fresh read snapshot (nothing
    kept yet: what the first query after every commit pays), then again in the same snapshot; and keyword queries
    within it."""
    from searchengine.indexer.query.filter_sql import Condition

    results = {}
    for name, conditions in FILTERS.items():
        if names is not None and name not in names:
            continue
        filters = [Condition(*condition) for condition in conditions]
        fresh = []
        for _ in range(runs):
            reader.read_snapshot()
            seconds, ids = timed(lambda filters=filters: reader.filters.matching_ids(filters))
            fresh.append(seconds)
        again, _ = timed(lambda filters=filters: reader.filters.matching_ids(filters))
        within = [timed(lambda q=q, ids=ids: reader.keyword.search(q, 10, allowed=ids))[0] for q in texts]
        results[name] = {
            "matches": len(ids),
            "fresh_snapshot_s": [round(s, 4) for s in fresh],
            "same_snapshot_ms": round(1000 * again, 3),
            "keyword_top10_within": percentiles(within),
        }
    return results


def index_costs(path: Path, runs: int) -> dict:
    """What an index on a metadata field costs and gives: the SQL a text filter runs (the path bound as a
    parameter, which no index can serve), then with the path written in the SQL, before and after an expression
    index on it, and the index's build time and size."""
    connection = sqlite3.connect(str(path))
    expression = """json_extract(metadata, '$."category"')"""
    bound = "SELECT id FROM documents WHERE json_extract(metadata, ?) = ? ORDER BY id"
    literal = f"SELECT id FROM documents WHERE {expression} = ? ORDER BY id"
    try:
        scans = [timed(lambda: connection.execute(bound, ['$."category"', "c123"]).fetchall())[0] for _ in range(runs)]
        build, _ = timed(lambda: connection.execute(f"CREATE INDEX bench_category ON documents({expression})"))
        connection.commit()
        size = connection.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'bench_category'").fetchone()[0]
        indexed = [timed(lambda: connection.execute(literal, ["c123"]).fetchall())[0] for _ in range(runs * 10)]
        plan = connection.execute(f"EXPLAIN QUERY PLAN {literal}", ["c123"]).fetchall()
        still_bound = [
            timed(lambda: connection.execute(bound, ['$."category"', "c123"]).fetchall())[0] for _ in range(runs)
        ]
        connection.execute("DROP INDEX bench_category")
        connection.commit()
    finally:
        connection.close()
    return {
        "scan_bound_path_s": [round(s, 3) for s in scans],
        "index_build_s": round(build, 2),
        "index_bytes": size,
        "literal_path_with_index": percentiles(indexed),
        "plan_with_index": [row[-1] for row in plan],
        "bound_path_with_index_s": [round(s, 3) for s in still_bound],
    }


def optimize_cost(path: Path) -> dict:
    """FTS5's 'optimize': every segment merged into one, in one transaction (what a writer would wait for)."""
    before = sizes(path, 1)
    connection = sqlite3.connect(str(path))
    try:
        seconds, _ = timed(lambda: connection.execute("INSERT INTO documents_fts(documents_fts) VALUES ('optimize')"))
        commit_seconds, _ = timed(connection.commit)
        checkpoint_seconds, _ = timed(lambda: connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())
    finally:
        connection.close()
    after = sizes(path, 1)
    return {
        "seconds": round(seconds, 2),
        "commit_seconds": round(commit_seconds, 2),
        "checkpoint_seconds": round(checkpoint_seconds, 2),
        "segments_before": before["fts5_segments"],
        "segments_after": after["fts5_segments"],
        "keyword_index_bytes_before": before["keyword_index_bytes_per_row"],
        "keyword_index_bytes_after": after["keyword_index_bytes_per_row"],
    }


def insert_rate(path: Path, texts: list[str], rows: int, chunk: int) -> float:
    """Rows/s of adding `rows` more rows (numbered after those stored) as a build or an add writes them."""
    from searchengine.indexer.tables.store import Document, DocumentStore

    writer = DocumentStore(path, writable=True)
    try:
        first = writer.next_id()
        seconds = 0.0
        for start in range(first, first + rows, chunk):
            documents = [
                Document(row_text(texts, n), "wiki.jsonl", n + 1, row_metadata(n), f"doc-{n}")
                for n in range(start, min(start + chunk, first + rows))
            ]
            seconds += timed(lambda documents=documents: writer.add(documents))[0]
    finally:
        writer.close()
    return round(rows / seconds, 1)


def keyword_within_every_match(reader, texts: list[str]) -> dict:  # noqa: ANN001
    """Keyword queries within two filters that keep a large share, every match's score read (as before the best
    matches were taken first: KeywordTable.search), for the ratio with `with_index`'s in the same run."""
    from searchengine.indexer.query.filter_sql import Condition
    from searchengine.indexer.tables import keyword_table

    deepest = keyword_table.MAX_FILTER_DEPTH
    keyword_table.MAX_FILTER_DEPTH = 0
    try:
        results = {}
        for name in ("lang = de (text, 1/7 of rows)", "2015 <= year < 2020 (numbers, 1/15)"):
            ids = reader.filters.matching_ids([Condition(*condition) for condition in FILTERS[name]])
            results[name] = percentiles(
                [timed(lambda q=q, ids=ids: reader.keyword.search(q, 10, allowed=ids))[0] for q in texts]
            )
    finally:
        keyword_table.MAX_FILTER_DEPTH = deepest
    return results


def fixes(
    path: Path,
    texts: list[str],
    query_texts: list[str],
    more_rows: int,
    chunk: int,
    optimize: bool,
    save: Callable[[dict], None],
) -> dict:
    """On a store already filled (--existing), in one run, each part saved as it ends (`save`), cheapest first:
    size and a hit's row; two filters without an index; indexing their fields (store.field_indexes, what
    `searchengine filter-index` makes: build time, bytes); the filters with the indexes, and keyword queries within
    them, with every match read too; FTS5's 'optimize' with keyword queries before and after it; and the insert
    rate with the four indexes, then without them (dropped)."""
    from searchengine.indexer.query.filter_sql import Condition
    from searchengine.indexer.tables.store import DocumentStore

    fields = ["lang", "category", "year", "views"]
    result: dict = {}
    reader = DocumentStore(path)
    reader.read_snapshot()
    rows = reader.count()
    result["rows"] = rows
    result["size"] = sizes(path, rows)
    result["fetch"] = fetch_costs(reader, rows, 1000, 100, random.Random(42))
    save(result)
    before = {}
    for name in ("category = c123 (text, 1/1000)", "views < 1000 (numbers, 1/1000)"):
        reader.read_snapshot()
        filters = [Condition(*condition) for condition in FILTERS[name]]
        before[name] = round(timed(lambda filters=filters: reader.filters.matching_ids(filters))[0], 3)
        result["filters_fresh_snapshot_s_without_index"] = before
        save(result)
    reader.close()
    writer = DocumentStore(path, writable=True)
    built: dict = {}
    for field in fields:
        with writer.db.atomic():
            built[field] = round(timed(lambda field=field: writer.field_indexes.create([field]))[0], 2)
        result["index_build_s"] = built
        save(result)
    writer.close()
    result["index_bytes_per_row"] = {
        name: size
        for name, size in sizes(path, rows)["bytes_per_row_by_part"].items()
        if name.startswith("documents_field_")
    }
    reader = DocumentStore(path)
    reader.read_snapshot()
    result["with_index"] = filter_costs(reader, query_texts[:10], 2)
    save(result)
    result["keyword_within_every_match_read"] = keyword_within_every_match(reader, query_texts[:10])
    save(result)
    reader.close()
    if optimize:
        reader = DocumentStore(path)
        reader.read_snapshot()
        result["keyword_before_optimize"] = keyword_costs(reader, query_texts)
        reader.close()
        save(result)
        result["fts5_optimize"] = optimize_cost(path)
        reader = DocumentStore(path)
        reader.read_snapshot()
        result["keyword_after_optimize"] = keyword_costs(reader, query_texts)
        reader.close()
        save(result)
    result["insert_rows_per_s_with_4_indexes"] = insert_rate(path, texts, more_rows, chunk)
    save(result)
    writer = DocumentStore(path, writable=True)
    with writer.db.atomic():
        writer.field_indexes.drop(fields)
    writer.close()
    result["insert_rows_per_s_without_them"] = insert_rate(path, texts, more_rows, chunk)
    save(result)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", default="1000000,3000000,10000000", help="row counts to measure at, ascending")
    parser.add_argument("--texts", type=Path, default=DATA / "unsup" / "wiki_sentences.txt.gz")
    parser.add_argument("--queries", type=Path, default=DATA / "stsb" / "test.tsv")
    parser.add_argument("--keyword-queries", type=int, default=100)
    parser.add_argument("--lookups", type=int, default=1000)
    parser.add_argument("--cold-lookups", type=int, default=100)
    parser.add_argument("--filter-runs", type=int, default=2)
    parser.add_argument(
        "--filters",
        default="all",
        help="which filters to time at each step: 'all', or their numbers in FILTERS from 0, e.g. '3' (each reads "
        "every row: minutes at 10M)",
    )
    parser.add_argument(
        "--no-metadata-index", action="store_true", help="skip the metadata index's cost after the last step"
    )
    parser.add_argument("--window", type=int, default=250_000, help="rows per insert-rate window")
    parser.add_argument("--work", type=Path, required=True, help="folder for the store (made; removed unless --keep)")
    parser.add_argument(
        "--as-adds",
        action="store_true",
        help="fill the store as adds to an index fill it (its hash index kept up row by row), not as a build",
    )
    parser.add_argument("--keep", action="store_true", help="keep the store at the end")
    parser.add_argument("--no-optimize", action="store_true", help="skip FTS5's optimize after the last step")
    parser.add_argument(
        "--existing",
        action="store_true",
        help="measure the fixes on the store already in --work (filled by an earlier run, stopped with SIGTERM, "
        "which keeps it) instead of filling one: indexes on metadata fields, FTS5's optimize",
    )
    parser.add_argument("--more-rows", type=int, default=20_480, help="rows added to time inserts (--existing)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "storage" / "results" / "store_scale.json")
    arguments = parser.parse_args()

    from searchengine.indexer.tables.store import Document, DocumentStore

    from searchengine.engine.indexing import CHUNK

    steps = sorted(int(step) for step in arguments.steps.split(","))
    texts = sentences(arguments.texts)
    query_texts = queries(arguments.queries, arguments.keyword_queries)
    if not arguments.existing and steps[-1] > len(texts) * (len(texts) - 1):
        raise SystemExit(f"{len(texts)} sentences make at most {len(texts) * (len(texts) - 1)} distinct rows")
    arguments.work.mkdir(parents=True, exist_ok=True)
    path = arguments.work / "documents.db"
    if arguments.existing:
        record = {**run_record(os.getloadavg()), "sentences": len(texts), "chunk_rows": CHUNK}
        try:

            def save(part: dict) -> None:
                record["fixes"] = part
                write_results(arguments.out, record)

            fixes(path, texts, query_texts, arguments.more_rows, CHUNK, not arguments.no_optimize, save)
            record["machine"]["load_after"] = os.getloadavg()
            print(record, flush=True)
            write_results(arguments.out, record)
        finally:
            if not arguments.keep:
                shutil.rmtree(arguments.work, ignore_errors=True)
        return
    if path.exists():
        raise SystemExit(f"{path} exists: give an empty --work")
    load_before = os.getloadavg()
    record: dict = {
        **run_record(load_before),
        "rows_made": "two Wikipedia sentences joined per row (see the module's docstring)",
        "sentences": len(texts),
        "chunk_rows": CHUNK,
        "steps": [],
    }
    rng = random.Random(42)
    writer = DocumentStore(path, writable=True)
    record["filled_as"] = "adds to a store with its hash index" if arguments.as_adds else "a build (start_build)"
    if not arguments.as_adds:
        writer.start_build()
    written = 0
    try:
        for step in steps:
            step_start = written
            keys_reloaded = None
            if written and not arguments.as_adds:  # the step before made the hash index: a build's goes on without it
                keys_reloaded, _ = timed(writer.start_build)
            chunk_seconds: list[float] = []
            windows: list[dict] = []
            window_start, window_seconds = written, 0.0
            while written < step:
                count = min(CHUNK, step - written)
                documents = [
                    Document(row_text(texts, n), "wiki.jsonl", n + 1, row_metadata(n), f"doc-{n}")
                    for n in range(written, written + count)
                ]
                seconds, _ = timed(lambda documents=documents: writer.add(documents))
                chunk_seconds.append(seconds)
                window_seconds += seconds
                written += count
                if written - window_start >= arguments.window or written == step:
                    windows.append({"rows": written, "rows_per_s": round((written - window_start) / window_seconds, 1)})
                    print(windows[-1], flush=True)
                    window_start, window_seconds = written, 0.0
            median_chunk = statistics.median(chunk_seconds)
            entry: dict = {
                "rows": written,
                "insert": {
                    "rows_per_s": round((written - step_start) / sum(chunk_seconds), 1),
                    "seconds": round(sum(chunk_seconds), 1),
                    "chunk": percentiles(chunk_seconds),
                    "chunks_over_5x_median": sum(s > 5 * median_chunk for s in chunk_seconds),
                    "windows": windows,
                },
                "load": os.getloadavg(),
            }
            if not arguments.as_adds:
                with writer.db.atomic():
                    entry["hash_index_made_s"] = round(timed(writer.finish_build)[0], 2)
                entry["hash_keys_reloaded_s"] = None if keys_reloaded is None else round(keys_reloaded, 2)
            entry["size"] = sizes(path, written)
            record["steps"].append(entry)
            write_results(arguments.out, record)
            reader = DocumentStore(path)
            reader.read_snapshot()
            try:
                entry["fetch"] = fetch_costs(reader, written, arguments.lookups, arguments.cold_lookups, rng)
                write_results(arguments.out, record)
                entry["keyword"] = keyword_costs(reader, query_texts)
                write_results(arguments.out, record)
                names = (
                    None
                    if arguments.filters == "all"
                    else [list(FILTERS)[int(i)] for i in arguments.filters.split(",")]
                )
                entry["filters"] = filter_costs(reader, query_texts[:10], arguments.filter_runs, names)
            finally:
                reader.close()
            entry["load_after"] = os.getloadavg()
            print(entry, flush=True)
            write_results(arguments.out, record)
        writer.close()
        if not arguments.no_metadata_index:
            record["metadata_index"] = index_costs(path, arguments.filter_runs)
            write_results(arguments.out, record)
        if not arguments.no_optimize:
            record["fts5_optimize"] = optimize_cost(path)
        record["machine"]["load_after"] = os.getloadavg()
        print(record, flush=True)
        write_results(arguments.out, record)
    finally:
        if not writer.closed:
            writer.close()
        if not arguments.keep:
            shutil.rmtree(arguments.work, ignore_errors=True)


if __name__ == "__main__":
    main()
