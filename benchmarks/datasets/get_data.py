"""Download the public data the benchmarks and the docs' worked examples read, and lay it out as they expect.

The layout (the one ../shared/data has on the project's machines, so `--data DIR` of every benchmark takes it):

  stsb/{train,dev,test}.tsv       score<TAB>sentence1<TAB>sentence2, scores 0-5   (sentence-transformers' STS-B copy)
  nli/train.tsv.gz                premise<TAB>hypothesis<TAB>label                 (AllNLI: SNLI + MultiNLI train)
  nli/triplets.tsv.gz             anchor<TAB>positive<TAB>negative                 (SimCSE's nli_for_simcse.csv)
  unsup/wiki_sentences.txt.gz     one sentence a line, 100,000 sampled with seed 0 (SimCSE's wiki1m_for_simcse.txt)
  retrieval/{nfcorpus,arguana}/   corpus.jsonl ({_id, title, text}), queries.jsonl (the queries with test
                                  judgements, {_id, text}), qrels_test.tsv (query-id<TAB>corpus-id<TAB>score)

Each .tsv has one header line and exactly three fields a line, with no quoting.

Not the same files as ../shared/data: that NLI data is SNLI's dev and test splits only (19,664 pairs, 6,337
triplets) and its Wikipedia sentences come from another dump, because the full files could not be fetched there.
The numbers in docs/training.md were measured on that smaller NLI data; STS-B and the two BEIR sets are the same
public releases.

This script was written on a machine that reaches no dataset host, so its downloads have never run; its layout
step is tested (tests/benchmarks/datasets/test_get_data.py) on files shaped like the downloads. If a download fails, fetch
the file by hand into a folder and pass that folder as --downloads: files found there are used as they are.

Usage: .venv/bin/python benchmarks/datasets/get_data.py DIR [--downloads FOLDER] [--only stsb,nli,unsup,retrieval]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import random
import re
import shutil
import sys
import urllib.request
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

SOURCES = {
    "stsbenchmark.tsv.gz": "https://sbert.net/datasets/stsbenchmark.tsv.gz",
    "AllNLI.tsv.gz": "https://sbert.net/datasets/AllNLI.tsv.gz",
    "nli_for_simcse.csv": "https://huggingface.co/datasets/princeton-nlp/datasets-for-simcse/resolve/main/nli_for_simcse.csv",
    "wiki1m_for_simcse.txt": "https://huggingface.co/datasets/princeton-nlp/datasets-for-simcse/resolve/main/wiki1m_for_simcse.txt",
    "nfcorpus.zip": "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/nfcorpus.zip",
    "arguana.zip": "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/arguana.zip",
}
PARTS = {
    "stsb": ("stsbenchmark.tsv.gz",),
    "nli": ("AllNLI.tsv.gz", "nli_for_simcse.csv"),
    "unsup": ("wiki1m_for_simcse.txt",),
    "retrieval": ("nfcorpus.zip", "arguana.zip"),
}
WIKI_SENTENCES = 100_000
csv.field_size_limit(sys.maxsize)


def fetch(name: str, downloads: Path) -> Path:
    """The downloaded file `name`: the one in `downloads` if it is there, otherwise downloaded into it."""
    target = downloads / name
    if not target.exists():
        print(f"downloading {SOURCES[name]}", file=sys.stderr)
        partial = target.with_name(target.name + ".part")
        with urllib.request.urlopen(SOURCES[name]) as response, partial.open("wb") as sink:
            shutil.copyfileobj(response, sink)
        partial.replace(target)
    return target


def clean(text: str) -> str:
    """One field of a .tsv: tabs and line breaks inside made spaces, surrounding whitespace stripped, the rest as is."""
    return re.sub(r"[\t\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]+", " ", text).strip()


def write_tsv(path: Path, header: tuple[str, str, str], rows: Iterable[tuple[str, str, str]]) -> int:
    """Write a three-field .tsv (gzip-compressed when the name ends in .gz, with mtime 0); returns its rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = path.open("wb")
    sink = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if path.suffix == ".gz" else raw
    count = 0
    with raw, sink, io.TextIOWrapper(sink, encoding="utf-8", newline="\n") as text:
        text.write("\t".join(header) + "\n")
        for row in rows:
            fields = [clean(field) for field in row]
            if all(fields):
                text.write("\t".join(fields) + "\n")
                count += 1
    print(f"wrote {path} ({count:,} rows)", file=sys.stderr)
    return count


def read_tsv(path: Path) -> Iterator[dict[str, str]]:
    """The rows of a (gzipped) tab-separated file with a header, read without quoting, as sentence-transformers does."""
    with gzip.open(path, "rt", encoding="utf-8", newline="") as lines:
        yield from csv.DictReader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)


def lay_out_stsb(downloads: Path, out: Path) -> None:
    rows = list(read_tsv(fetch("stsbenchmark.tsv.gz", downloads)))
    for split in ("train", "dev", "test"):
        chosen = ((row["score"], row["sentence1"], row["sentence2"]) for row in rows if row["split"] == split)
        write_tsv(out / "stsb" / f"{split}.tsv", ("score", "sentence1", "sentence2"), chosen)


def lay_out_nli(downloads: Path, out: Path) -> None:
    pairs = read_tsv(fetch("AllNLI.tsv.gz", downloads))
    train = ((row["sentence1"], row["sentence2"], row["label"]) for row in pairs if row["split"] == "train")
    write_tsv(out / "nli" / "train.tsv.gz", ("premise", "hypothesis", "label"), train)
    with fetch("nli_for_simcse.csv", downloads).open(encoding="utf-8", newline="") as lines:
        triplets = ((row["sent0"], row["sent1"], row["hard_neg"]) for row in csv.DictReader(lines))
        write_tsv(out / "nli" / "triplets.tsv.gz", ("anchor", "positive", "negative"), triplets)


def lay_out_unsup(downloads: Path, out: Path) -> None:
    with fetch("wiki1m_for_simcse.txt", downloads).open(encoding="utf-8") as lines:
        sentences = list(dict.fromkeys(clean(line) for line in lines if line.strip()))
    chosen = random.Random(0).sample(sentences, min(WIKI_SENTENCES, len(sentences)))
    target = out / "unsup" / "wiki_sentences.txt.gz"
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as sink:
        sink.write("".join(sentence + "\n" for sentence in chosen).encode("utf-8"))
    print(f"wrote {target} ({len(chosen):,} sentences)", file=sys.stderr)


def lay_out_beir(archive: Path, out: Path) -> None:
    """One BEIR zip as corpus.jsonl, queries.jsonl (only the judged test queries) and qrels_test.tsv."""
    name = archive.name.removesuffix(".zip")
    with zipfile.ZipFile(archive) as zipped:

        def lines(member: str) -> list[str]:
            return zipped.read(f"{name}/{member}").decode("utf-8").splitlines()

        qrels = [line.split("\t") for line in lines("qrels/test.tsv")[1:] if line.strip()]
        judged = {query for query, _, _ in qrels}
        target = out / "retrieval" / name
        target.mkdir(parents=True, exist_ok=True)
        with (target / "corpus.jsonl").open("w", encoding="utf-8", newline="\n") as corpus:
            for line in filter(str.strip, lines("corpus.jsonl")):
                document = json.loads(line)
                record = {"_id": document["_id"], "title": document.get("title", ""), "text": document["text"]}
                corpus.write(json.dumps(record, ensure_ascii=False) + "\n")
        with (target / "queries.jsonl").open("w", encoding="utf-8", newline="\n") as queries:
            for line in filter(str.strip, lines("queries.jsonl")):
                query = json.loads(line)
                if query["_id"] in judged:
                    queries.write(json.dumps({"_id": query["_id"], "text": query["text"]}, ensure_ascii=False) + "\n")
        write_tsv(target / "qrels_test.tsv", ("query-id", "corpus-id", "score"), (tuple(row) for row in qrels))


def lay_out_retrieval(downloads: Path, out: Path) -> None:
    for archive in PARTS["retrieval"]:
        lay_out_beir(fetch(archive, downloads), out)


LAY_OUT = {"stsb": lay_out_stsb, "nli": lay_out_nli, "unsup": lay_out_unsup, "retrieval": lay_out_retrieval}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the data folder to fill (pass it to the benchmarks as --data)")
    parser.add_argument("--downloads", type=Path, help="where downloads go, and files already there are used")
    parser.add_argument("--only", default=",".join(LAY_OUT), help="which parts, comma-separated: " + ",".join(LAY_OUT))
    args = parser.parse_args(argv)
    parts = [part.strip() for part in args.only.split(",") if part.strip()]
    if unknown := [part for part in parts if part not in LAY_OUT]:
        parser.error(f"unknown part {', '.join(unknown)}; the parts are {', '.join(LAY_OUT)}")
    downloads = args.downloads or args.out / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    for part in parts:
        LAY_OUT[part](downloads, args.out)


if __name__ == "__main__":
    main()
