"""What passage headings cost in vectors: the passages `searchengine index DIR` cuts from a folder with and without
each passage's heading embedded (a shorter window leaves room for it), counted with the model's tokenizer and the
indexer's own splitting, without embedding anything (seconds, where building both indexes takes an hour on a
shared 2-core machine).

Usage (the folders benchmarks/files/file_search.py copies each corpus into):
  .venv/bin/python benchmarks/files/passage_cost.py /tmp/filebench/python-docs/folder-files \\
      /tmp/filebench/r-manuals/folder-files /tmp/filebench/package-readmes/folder-files \\
      --results benchmarks/files/results/passage_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from searchengine.encoding.encoder import Encoder
from searchengine.encoding.passages import default_overlap
from searchengine.engine.files import read_paths
from searchengine.reading.file_rules import FileRules


def passage_counts(folder: Path, encoder: Encoder) -> dict[str, int]:
    """Documents of `folder` and the vectors an index of it holds without and with passage headings."""
    documents, _ = read_paths([folder], FileRules())
    texts = [document.text for document in documents]
    structures = [(d.blocks, d.section_starts) if d.blocks else None for d in documents]
    tokens = encoder.text_tokens
    overlap = default_overlap(tokens)
    windows, _ = encoder.fit_headings([document.headings for document in documents], tokens)
    plain = encoder.passage_spans(texts, tokens, overlap, structures)
    headed = encoder.passage_spans(texts, windows, overlap, structures)
    return {
        "documents": len(documents),
        "vectors_without_headings": sum(len(spans) for spans in plain),
        "vectors_with_headings": sum(len(spans) for spans in headed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--model", default=None, help="model (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--results", type=Path, required=True, help="the JSON file to write")
    args = parser.parse_args()
    load = os.getloadavg()
    encoder = Encoder(args.model)
    counts = {str(folder): passage_counts(folder, encoder) for folder in args.folders}
    write_results(args.results, {**run_record(load), "folders": counts})
    print(json.dumps(counts, indent=2))


if __name__ == "__main__":
    main()
