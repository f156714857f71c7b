"""Tried, not kept (docs/files-benchmark.md, "Keyword search by passage"): would the keyword side rank long
documents better by their best PASSAGE's BM25 than by the whole document's? Queries only, on the whole-corpus
folder indexes `file_search.py --whole --folder-only` builds (nothing is encoded or written to them).

Variants per mode (keyword, hybrid), scored with file_search.py's recall@5 and MRR@10 (R manuals: also with the
help pages of file_refman_answers.py):
  today      engine.search_batch(q, 10, mode): the product as it is
  doc-repro  today's ranking rebuilt through this script's path (a check: must equal `today`)
  passage    keyword side = max BM25 over the document's passages (a scratch contentless FTS5 table with the
             index's porter tokenizer, passages cut as the index's `passages` table records them; a document not
             split is one passage), its bound from that table (bm25_bound), fused by the engine's own fuse()
  passage-nospan  the same ranking, keyword-only hits without the passage's span
  mix        the mean of a document's whole-text share and its best passage's share, each bounded on its own
Also the keyword side's time per query (depth 100 and the bound), whole documents against passages, alternated.

Usage: .venv/bin/python benchmarks/files/passage_keyword.py --work /tmp/filebench-whole \
           --out benchmarks/files/results/passage_keyword.json
"""

# ruff: noqa: SLF001 (the engine's keyword side and fusion inputs, to swap one side for the experiment's)
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from searchengine.indexer.query.keyword_query import bm25_bound, match_expression
from searchengine.indexer.tables.keyword_table import TOKENIZER

from benchmarks.files.file_refman_answers import first_rank
from benchmarks.files.file_search import MRR_AT, RECALL_AT, folder_hit_location, read_questions
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from searchengine import SearchEngine
from searchengine.engine.fusion import bounded_keyword, fuse
from searchengine.engine.modes import DEFAULT_FUSION
from searchengine.engine.search import Scored, dense_rankings, hits_of

BENCH = Path(__file__).resolve().parent
INDEX = "folder-index-passage-headings"
"""The index `file_search.py --whole --folder-only --folder-variants passage-headings` builds for each corpus."""
TABLE = "passages_fts"


class PassageKeyword:
    """BM25 over passages in a scratch contentless FTS5 table; a document scores by its best passage."""

    def __init__(self, index: Path, target: Path) -> None:
        source = sqlite3.connect(f"file:{next(index.glob('documents.*.db'))}?mode=ro", uri=True)
        spans: dict[int, list[tuple[int, int, int]]] = {}
        for vid, doc, start, end in source.execute("SELECT id, document, start, end FROM passages"):
            spans.setdefault(doc, []).append((vid, start, end))
        target.unlink(missing_ok=True)
        self.conn = sqlite3.connect(target)
        self.conn.execute(f"CREATE VIRTUAL TABLE {TABLE} USING fts5(text, content='', tokenize='{TOKENIZER}')")
        self.where: dict[int, tuple[int, int, int]] = {}
        started = time.perf_counter()
        rows = []
        for doc, text in source.execute("SELECT id, text FROM documents"):
            for vid, start, end in spans.get(doc, [(doc, 0, len(text))]):
                self.where[vid] = (doc, start, end)
                rows.append((vid, text[start:end]))
        self.conn.executemany(f"INSERT INTO {TABLE} (rowid, text) VALUES (?, ?)", rows)
        self.conn.commit()
        self.build_seconds = time.perf_counter() - started
        self.count = len(rows)
        self.split_documents = len(spans)
        self.holding: dict[str, int] = {}

    def search(self, text: str, k: int) -> tuple[list[tuple[int, float]], dict[int, tuple[int, int]]]:
        """The k best documents by their best passage's BM25, with that passage's span."""
        expression = match_expression(self.conn, text, TABLE, TOKENIZER, self.count, self.holding)
        if expression is None:
            return [], {}
        rows = self.conn.execute(
            f"SELECT rowid, -bm25({TABLE}) FROM {TABLE} WHERE {TABLE} MATCH ? ORDER BY bm25({TABLE}), rowid",
            [expression],
        )
        best: dict[int, float] = {}
        spans: dict[int, tuple[int, int]] = {}
        for rowid, score in rows:
            doc, start, end = self.where[rowid]
            if doc not in best:
                best[doc], spans[doc] = float(score), (start, end)
                if len(best) == k:
                    break
        return list(best.items()), spans

    def bound(self, text: str) -> float:
        return bm25_bound(self.conn, text, TABLE, TOKENIZER, self.count, self.holding)


def rankings(engine, passages: PassageKeyword, texts: list[str]) -> dict[str, list[list[Scored]]]:
    store, fusion, k = engine.reader.store, DEFAULT_FUSION, MRR_AT
    depth = max(k, fusion.depth)
    excluded = engine.reader.tombstones if len(engine.reader.tombstones) else None
    query_vectors = engine.reader.query_vectors(engine.reader.encoders.for_queries(), texts)
    dense_sides = dense_rankings(engine.reader.vectors, store, query_vectors, min(depth, len(engine)), None, excluded)
    out: dict[str, list[list[Scored]]] = {}
    for name in ("doc-repro", "passage", "passage-nospan", "mix"):
        out[f"keyword/{name}"], out[f"hybrid/{name}"] = [], []
    for text, dense_side in zip(texts, dense_sides):
        dense = {s.id: s.score for s in dense_side}
        dense_spans = {s.id: s.span for s in dense_side}
        doc_side = store.keyword.search(text, depth)
        doc_bound = store.keyword.bound(text) if doc_side else 0.0
        pas_side, pas_spans = passages.search(text, depth)
        pas_bound = passages.bound(text) if pas_side else 0.0
        every_doc = store.keyword.search(text, 10**6)
        every_pas, _ = passages.search(text, 10**6)
        doc_share = bounded_keyword(every_doc, doc_bound)
        pas_share = bounded_keyword(every_pas, pas_bound)
        mix_side = sorted(
            ((d, (doc_share.get(d, 0.0) + pas_share.get(d, 0.0)) / 2) for d in doc_share.keys() | pas_share.keys()),
            key=lambda item: (-item[1], item[0]),
        )[:depth]
        for name, side, bound, kspans in (
            ("mix", mix_side, 1.0 if mix_side else 0.0, pas_spans),
            ("doc-repro", doc_side, doc_bound, {}),
            ("passage", pas_side, pas_bound, pas_spans),
            ("passage-nospan", pas_side, pas_bound, {}),
        ):
            shares = bounded_keyword(side[:k], bound)
            out[f"keyword/{name}"].append(
                [Scored(doc, shares[doc], ("keyword",), span=kspans.get(doc)) for doc, _ in side[:k]]
            )
            fused = fuse(list(dense.items()), side, fusion, bound)[:k]
            out[f"hybrid/{name}"].append(
                [Scored(doc, s, (), span=dense_spans.get(doc) or kspans.get(doc)) for doc, s in fused]
            )
    return out


def scores(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {
        f"recall@{RECALL_AT}": round(sum(r is not None and r <= RECALL_AT for r in ranks) / n, 4),
        f"mrr@{MRR_AT}": round(sum(1 / r for r in ranks if r is not None) / n, 4),
    }


def timing(engine, passages: PassageKeyword, texts: list[str], rounds: int = 5) -> dict:
    """Keyword-side time per query (depth 100 + bound), document FTS vs passage FTS, alternated per query."""
    store = engine.reader.store
    doc_t, pas_t = [], []
    for text in texts:  # warm-up (stem counts cached on both sides)
        store.keyword.search(text, 100), store.keyword.bound(text), passages.search(text, 100), passages.bound(text)
    for _ in range(rounds):
        for text in texts:
            t0 = time.perf_counter()
            store.keyword.search(text, 100)
            store.keyword.bound(text)
            t1 = time.perf_counter()
            passages.search(text, 100)
            passages.bound(text)
            t2 = time.perf_counter()
            doc_t.append(t1 - t0)
            pas_t.append(t2 - t1)
    ratios = [p / d for p, d in zip(pas_t, doc_t)]
    return {
        "document_ms_median": round(statistics.median(doc_t) * 1000, 2),
        "passage_ms_median": round(statistics.median(pas_t) * 1000, 2),
        "ratio_median": round(statistics.median(ratios), 2),
        "rounds": rounds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="file_search.py's --work of the --whole run")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    args = parser.parse_args()
    load_before = os.getloadavg()
    scratch = Path(tempfile.mkdtemp(prefix="passage-keyword-"))
    refman = json.loads((BENCH / "results/file_whole_refman.json").read_text())["refman_pages"]
    questions_all = read_questions(BENCH / "file_questions.jsonl")
    report = {}
    for corpus in ("python-docs", "r-manuals"):
        questions = [q for q in questions_all if q.corpus == corpus]
        texts = [q.question for q in questions]
        engine = SearchEngine.open(args.work / corpus / INDEX)
        passages = PassageKeyword(args.work / corpus / INDEX, scratch / f"{corpus}.db")
        judgings = {"section": lambda _q: set()}
        if corpus == "r-manuals":
            judgings["section or help page"] = lambda q: set(refman.get(q.question, []))
        located: dict[str, list[list]] = {}
        for mode in ("keyword", "hybrid"):
            located[f"{mode}/today"] = [
                [folder_hit_location(h) for h in hits] for hits in engine.search_batch(texts, MRR_AT, mode=mode)
            ]
        for name, ranking in rankings(engine, passages, texts).items():
            located[name] = [[folder_hit_location(h) for h in hits] for hits in hits_of(engine.reader.store, ranking)]
        result = {
            "documents": len(engine),
            "passages": passages.count,
            "split_documents": passages.split_documents,
            "passage_fts_build_s": round(passages.build_seconds, 1),
            "judgings": {},
        }
        for judging, extra in judgings.items():
            per = {}
            for name, rows in located.items():
                ranks = [first_rank(q, extra(q), r) for q, r in zip(questions, rows)]
                per[name] = {**scores(ranks), "ranks": ranks}
            changed = {}
            for mode in ("keyword", "hybrid"):
                for variant in ("passage", "mix"):
                    a, b = per[f"{mode}/today"]["ranks"], per[f"{mode}/{variant}"]["ranks"]
                    changed[f"{mode}/{variant}"] = [
                        {"question": q.question, "today": x, "passage": y} for q, x, y in zip(questions, a, b) if x != y
                    ]
                assert per[f"{mode}/today"]["ranks"] == per[f"{mode}/doc-repro"]["ranks"], (corpus, mode)
            result["judgings"][judging] = {"scores": per, "changed": changed}
        result["keyword_side_timing"] = timing(engine, passages, texts)
        report[corpus] = result
        engine.close()
    write_results(args.out, {**run_record(load_before), "corpora": report}, indent=1)
    for corpus, result in report.items():
        print(corpus, {k: v for k, v in result.items() if k != "judgings"})
        for judging, body in result["judgings"].items():
            print(" ", judging)
            for name, s in body["scores"].items():
                print(f"    {name:22s} R@5 {s['recall@5']:.3f}  MRR@10 {s['mrr@10']:.3f}")
            for name, rows in body["changed"].items():
                for row in rows:
                    print(f"    changed {name}: {row['today']} -> {row['passage']}  {row['question']}")


if __name__ == "__main__":
    main()
