"""Turn an STS-B split into a BEIR-format retrieval set, and optionally evaluate a model on it.

No BEIR dataset is available offline, so this builds a small one from STS-B (the same shape as BEIR's Quora
duplicate-question set, where queries are also corpus entries):

- corpus.jsonl: every distinct sentence of the split (sentence1 and sentence2 of all pairs, whatever their
  score, in order of first appearance, surrounding whitespace stripped), ids `s0`, `s1`, ...; no titles.
- queries.jsonl: every distinct sentence1 of a pair with gold score >= --min-score (default 4.0), with the
  same id as its corpus entry. `searchengine eval retrieval` (like BEIR) never retrieves the document whose
  id equals the query's, so the query is ranked against the corpus minus itself.
- qrels/<split>.tsv (`query-id<TAB>corpus-id<TAB>score`): for each such pair, query = sentence1 and
  relevant document = sentence2 with grade round-half-up(gold), i.e. 4 for gold 4.0-4.4 and 5 for 4.5-5.0.
  A sentence1 with several such partners gets several judgements (the highest gold when a partner repeats).
  Pairs whose two sentences are the same text are skipped (the document would be the query itself).
  Everything else in the corpus counts as not relevant; some of it will be near-paraphrases, so absolute
  numbers are a lower bound and mainly useful for comparing models.

The output goes to a directory outside the repository (default /tmp/stsb-retrieval/<split>/); nothing is
copied into the repo.

Usage:
  .venv/bin/python benchmarks/retrieval/stsb_retrieval.py --splits test,dev [--out-dir /tmp/stsb-retrieval]
  .venv/bin/python benchmarks/retrieval/stsb_retrieval.py --splits test,dev --evaluate default \
      --results benchmarks/training/results/retrieval_base.json
then, for any model:
  searchengine eval retrieval --corpus /tmp/stsb-retrieval/test/corpus.jsonl \
      --queries /tmp/stsb-retrieval/test/queries.jsonl --qrels /tmp/stsb-retrieval/test/qrels/test.tsv --model M
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.results import write_results
from searchengine.evaluation.labelled_data import read_scored_pairs

MAX_SCORE = 5.0


def build(stsb_file: Path, out_dir: Path, split: str, min_score: float = 4.0) -> dict[str, int | str]:
    """Write corpus.jsonl, queries.jsonl and qrels/<split>.tsv for one STS-B file; return their sizes."""
    pairs = read_scored_pairs(stsb_file, MAX_SCORE)
    ids: dict[str, str] = {}
    for pair in pairs:
        for text in (pair.first, pair.second):
            ids.setdefault(text, f"s{len(ids)}")
    qrels: dict[str, dict[str, int]] = {}
    skipped_identical = 0
    for pair in pairs:
        gold = pair.score * MAX_SCORE
        if gold < min_score - 1e-9:
            continue
        if pair.first == pair.second:
            skipped_identical += 1
            continue
        grade = int(math.floor(gold + 0.5 + 1e-9))
        judged = qrels.setdefault(ids[pair.first], {})
        judged[ids[pair.second]] = max(grade, judged.get(ids[pair.second], 0))
    texts = {identifier: text for text, identifier in ids.items()}
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "qrels").mkdir(exist_ok=True)
    with (out_dir / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for text, identifier in ids.items():
            handle.write(json.dumps({"_id": identifier, "title": "", "text": text}, ensure_ascii=False) + "\n")
    with (out_dir / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for identifier in qrels:
            handle.write(json.dumps({"_id": identifier, "text": texts[identifier]}, ensure_ascii=False) + "\n")
    judgements = 0
    with (out_dir / "qrels" / f"{split}.tsv").open("w", encoding="utf-8") as handle:
        handle.write("query-id\tcorpus-id\tscore\n")
        for query, judged in qrels.items():
            for document, grade in judged.items():
                handle.write(f"{query}\t{document}\t{grade}\n")
                judgements += 1
    return {
        "source": str(stsb_file),
        "directory": str(out_dir),
        "pairs": len(pairs),
        "corpus": len(ids),
        "queries": len(qrels),
        "judgements": judgements,
        "skipped_identical_pairs": skipped_identical,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stsb", type=Path, default=DATA / "stsb")
    parser.add_argument("--splits", default="test,dev", help="comma-separated: train, dev, test")
    parser.add_argument("--out-dir", type=Path, default=Path("/tmp/stsb-retrieval"), help="one subdirectory per split")
    parser.add_argument("--min-score", type=float, default=4.0, help="gold score a pair needs to become a judgement")
    parser.add_argument("--evaluate", metavar="MODEL", help="also evaluate this model (e.g. default) on each split")
    parser.add_argument("--pooling", default=None)
    parser.add_argument("--results", type=Path, help="write the sets' sizes and the scores as JSON here")
    args = parser.parse_args()

    report: dict = {"min_score": args.min_score, "splits": {}}
    encoder = None
    if args.evaluate:
        from searchengine.encoding.encoder import Encoder

        encoder = Encoder(args.evaluate, pooling=args.pooling)
        report.update({"model": encoder.name, "pooling": encoder.pooling, "machine": platform.platform()})
    for split in args.splits.split(","):
        out_dir = args.out_dir / split
        sizes = build(args.stsb.resolve() / f"{split}.tsv", out_dir, split, args.min_score)
        print(json.dumps(sizes))
        report["splits"][split] = {"set": sizes}
        if encoder is not None:
            from searchengine.evaluation.retrieval import evaluate_retrieval, read_retrieval_set

            files = (out_dir / "corpus.jsonl", out_dir / "queries.jsonl", out_dir / "qrels" / f"{split}.tsv")
            dataset = read_retrieval_set(*files)
            started = time.perf_counter()
            scores = evaluate_retrieval(encoder.encode, dataset)
            report["splits"][split]["scores"] = {**scores.as_dict(), "seconds": round(time.perf_counter() - started, 2)}
            print(split, json.dumps(report["splits"][split]["scores"]))
    if args.results:
        write_results(args.results, report)


if __name__ == "__main__":
    main()
