"""What indexing a folder costs, stage by stage, and what `sync` costs after one file changes, is deleted or is
added, against the target of issue 23: at most 2 s plus the encoding of the changed file's passages.

The folder is copied to a work folder first (the benchmark edits files). Then, in one process:

index    read_paths (walk + extract), then SearchEngine.build with passages (the stages IndexingReport times).
sync     `searchengine sync` as a user runs it (a new process: Python start, imports, the model loaded only when
         something must be embedded) and `sync_index` on an engine already open with its model loaded (what
         `sync --watch` does after the first change), for: nothing changed, one file edited (a paragraph added to
         a mid-sized file), one deleted, one added. Each scenario runs --runs times (edits alternate so each run
         changes something); medians are reported with the time to embed the changed file's passages alone
         (warm encoder, median of 3), so what sync adds on top is sync minus that.

Usage (the Python docs from Debian's python3.11-doc; install it first: apt-get install python3.11-doc):
  .venv/bin/python benchmarks/files/file_sync.py --folder /usr/share/doc/python3.11/html --include '*.html'
Writes benchmarks/files/results/file_sync.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from searchengine.engine.build_settings import BuildSettings
from searchengine.engine.files import files_record, read_paths, sync_index
from searchengine.engine.search_engine import SearchEngine
from searchengine.reading.file_rules import FileRules

RESULTS = Path(__file__).resolve().parent / "results" / "file_sync.json"
SEARCHENGINE = [sys.executable, "-m", "searchengine"]


def build(work: Path, index: Path, rules: FileRules, model: str | None) -> dict:
    """Index the work folder through the Python API, timing extraction and each indexing stage."""
    started = time.perf_counter()
    documents, files = read_paths([work], rules)
    extraction = time.perf_counter() - started
    engine = SearchEngine.build(
        documents,
        index,
        BuildSettings(model=model, passages=True, reading=files_record([work], work, rules), progress=True),
    )
    report = engine.last_report
    engine.close()
    return {
        "files_read": files.read,
        "files_skipped": [[skip.shown, skip.reason] for skip in files.skipped],
        "characters": sum(len(document.text) for document in documents),
        "vectors": report.vectors,
        "seconds_by_stage": {"extraction": extraction, **report.stages},
        "seconds": time.perf_counter() - started,
    }


def cli_sync(index: Path) -> float:
    """Seconds of one `searchengine sync -q` in a new process."""
    started = time.perf_counter()
    subprocess.run([*SEARCHENGINE, "sync", "-q", "-d", str(index)], check=True)
    return time.perf_counter() - started


def edit(path: Path, run: int) -> None:
    """Add a paragraph to the text of an HTML or Markdown file (a new one each run, so its text changes): in an
    HTML page, after the first paragraph of its main part (an edit of its navigation would change no text)."""
    text = path.read_text(encoding="utf-8")
    paragraph = f"Benchmark edit {run}: a new paragraph about sync, written at run {run}."
    main = max(text.find('role="main"'), text.find("<main"), 0)
    end = text.find("</p>", main)
    if end >= 0:
        text = f"{text[:end]}</p><p>{paragraph}</p>{text[end + len('</p>') :]}"
    else:
        text += f"\n\n{paragraph}\n"
    path.write_text(text, encoding="utf-8")


def encode_alone(engine: SearchEngine, path: Path, rules: FileRules) -> float:
    """Seconds to embed one file's passages with the engine's warm encoder (median of 3)."""
    documents, _ = read_paths([path], rules, base=path.parent)
    splitting = engine.manifest.passages
    spans = engine.encoder.passage_spans(
        [documents[0].text], splitting.tokens, splitting.overlap, [(documents[0].blocks, documents[0].section_starts)]
    )[0]
    texts = [documents[0].text[start:end] for start, end in spans]
    times = []
    for _ in range(3):
        started = time.perf_counter()
        engine.encoder.encode(texts)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def scenarios(work: Path, index: Path, rules: FileRules, runs: int, edited: Path) -> dict:
    """Sync times for each kind of change, as a new process and on an open engine."""
    results: dict[str, dict] = {}
    spare = work / "benchmark-added.html"
    source = edited.read_text(encoding="utf-8")
    for name in ("unchanged", "one_edited", "one_deleted", "one_added"):
        cli, warm = [], []
        for run in range(runs):
            for where in ("cli", "warm"):
                if name == "one_edited":
                    edit(edited, 2 * run + (where == "warm"))
                elif name == "one_deleted":
                    if not spare.exists():  # put one back to delete (synced first, not timed)
                        spare.write_text(source, encoding="utf-8")
                        cli_sync(index)
                    spare.unlink()
                elif name == "one_added":
                    if spare.exists():
                        spare.unlink()
                        cli_sync(index)
                    spare.write_text(source, encoding="utf-8")
                if where == "cli":
                    cli.append(cli_sync(index))
                else:
                    engine = SearchEngine.open(index)
                    engine.encoder.encode(["warm up"])
                    started = time.perf_counter()
                    report = sync_index(engine)
                    warm.append(time.perf_counter() - started)
                    stages = report.stages
                    engine.close()
        results[name] = {
            "cli_runs_s": cli,
            "cli_median_s": statistics.median(cli),
            "warm_runs_s": warm,
            "warm_median_s": statistics.median(warm),
            "warm_last_stages_s": stages,
        }
    engine = SearchEngine.open(index)
    results["encode_edited_file_alone_s"] = encode_alone(engine, edited, rules)
    engine.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--include", action="append", default=[])
    parser.add_argument("--exclude", action="append", default=[])
    parser.add_argument("--edit", default=None, help="The file (relative to --folder) to edit; default a mid-sized one")
    parser.add_argument("--model", default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    load = os.getloadavg()
    rules = FileRules(tuple(args.include), tuple(args.exclude))
    root = Path(args.work or tempfile.mkdtemp(prefix="file-sync-"))
    work, index = root / "folder", root / "index"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(args.folder, work)  # real copies: the benchmark edits files
    documents, _ = read_paths([work], rules)
    by_size = sorted(documents, key=lambda document: len(document.text))
    edited = work / (args.edit or by_size[len(by_size) // 2].external_id)
    record = {
        **run_record(load),
        "folder": str(args.folder),
        "rules": rules.as_json(),
        "edited_file": str(edited.relative_to(work)),
        "edited_file_characters": len(edited.read_text(encoding="utf-8")),
        "index": build(work, index, rules, args.model),
    }
    record["sync"] = scenarios(work, index, rules, args.runs, edited)
    write_results(args.out, record)
    print(json.dumps({key: record[key] for key in ("index", "sync")}, indent=2)[:4000])
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
