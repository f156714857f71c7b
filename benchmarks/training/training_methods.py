"""Train every method of `searchengine train` from the bundled all-MiniLM-L6-v2 on ../shared/data, then measure
STS-B dev and test Spearman of each result: the table in docs/training.md.

Each row runs the exact `searchengine train ...` command printed in the table, as a subprocess, one at a time,
and times it (the wall time includes the dev evaluations done during training). Results go to
benchmarks/training/results/methods.json (merged row by row, so rows can be rerun alone with --only).

    python benchmarks/training/training_methods.py                  # every row (about an hour on 2 CPU cores)
    python benchmarks/training/training_methods.py --only simcse    # one row
    python benchmarks/training/training_methods.py --quick          # 3-step smoke run of two rows (about a minute)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.datasets.data_folder import DATA as DATA_FOLDER  # noqa: E402
from benchmarks.harness.results import read_results, write_results  # noqa: E402
from searchengine.encoding.encoder import Encoder  # noqa: E402
from searchengine.evaluation.labelled_data import read_scored_pairs  # noqa: E402
from searchengine.evaluation.sts import sts_spearman  # noqa: E402

DATA = os.path.relpath(DATA_FOLDER, ROOT)  # the commands run in the checkout: "../shared/data" or "data"
DEV = f"{DATA}/stsb/dev.tsv"
WIKI = f"{DATA}/unsup/wiki_sentences.txt.gz"

ROWS: dict[str, tuple[str, list[str]]] = {
    # name: (data description, arguments after `searchengine train`), in the order they run
    "sbert-sts": ("STS-B train (5,749 pairs)", ["sbert-sts", "--data", f"{DATA}/stsb/train.tsv", "--steps", "360"]),
    "sbert-nli": (
        "SNLI dev+test pairs (19,664)",
        ["sbert-nli", "--data", f"{DATA}/nli/train.tsv.gz", "--steps", "200", "--eval-every", "1000"],
    ),
    "simcse": (
        "Wikipedia sentences (first 20k)",
        ["simcse", "--data", WIKI, "--limit", "20000", "--batch-size", "32", "--steps", "60", "--eval-every", "1000"],
    ),
    "consert-unsup": (
        "Wikipedia sentences (first 20k)",
        [
            "consert",
            "--data",
            WIKI,
            "--limit",
            "20000",
            "--views",
            "shuffle,feature_cutoff:0.2",
            "--steps",
            "60",
            "--eval-every",
            "1000",
        ],
    ),
    "supervised-contrastive": (
        "NLI triplets (6,337)",
        [
            "supervised-contrastive",
            "--data",
            f"{DATA}/nli/triplets.tsv.gz",
            "--batch-size",
            "16",
            "--steps",
            "60",
            "--eval-every",
            "1000",
        ],
    ),
    "sbert-triplet": (
        "NLI triplets (6,337)",
        ["sbert-triplet", "--data", f"{DATA}/nli/triplets.tsv.gz", "--steps", "60", "--eval-every", "1000"],
    ),
    "consert-joint-adversarial": (
        "SNLI pairs",
        [
            "consert",
            "--schedule",
            "joint",
            "--nli",
            f"{DATA}/nli/train.tsv.gz",
            "--adversarial",
            "0.1",
            "--supervised-batch-size",
            "8",
            "--steps",
            "60",
            "--eval-every",
            "1000",
        ],
    ),
    "consert-joint": (
        "SNLI pairs",
        [
            "consert",
            "--schedule",
            "joint",
            "--nli",
            f"{DATA}/nli/train.tsv.gz",
            "--views",
            "shuffle,feature_cutoff:0.2",
            "--supervised-batch-size",
            "8",
            "--steps",
            "60",
            "--eval-every",
            "1000",
        ],
    ),
    "consert-sup-unsup": (
        "SNLI pairs, then Wikipedia (first 20k)",
        [
            "consert",
            "--schedule",
            "sup-unsup",
            "--nli",
            f"{DATA}/nli/train.tsv.gz",
            "--data",
            WIKI,
            "--limit",
            "20000",
            "--supervised-steps",
            "40",
            "--supervised-batch-size",
            "8",
            "--steps",
            "40",
            "--eval-every",
            "1000",
        ],
    ),  # fmt: skip
    "consert-joint-unsup": (
        "SNLI pairs, then Wikipedia (first 20k)",
        [
            "consert",
            "--schedule",
            "joint-unsup",
            "--nli",
            f"{DATA}/nli/train.tsv.gz",
            "--data",
            WIKI,
            "--limit",
            "20000",
            "--supervised-steps",
            "40",
            "--supervised-batch-size",
            "8",
            "--steps",
            "40",
            "--eval-every",
            "1000",
        ],
    ),  # fmt: skip
}
QUICK_ROWS = ("sbert-sts", "consert-unsup")


def run_row(name: str, arguments: list[str], out: Path, dev: str, test: str, quick: bool, reuse: bool) -> dict:
    command = [sys.executable, "-m", "searchengine", "train", *arguments, "--eval", dev, "--out", str(out), "--quiet"]
    if quick:
        command += ["--steps", "3", "--eval-every", "3"]
    if reuse and (out / "training_log.json").is_file():  # trained earlier (e.g. by a run that was stopped)
        log = json.loads((out / "training_log.json").read_text())
        seconds, summary = log["seconds"], ["reused the model trained earlier; time from its training_log.json"]
    else:
        started = time.perf_counter()
        completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        if completed.returncode != 0:
            raise SystemExit(f"{name} failed:\n{completed.stdout}\n{completed.stderr}")
        summary = completed.stdout.strip().splitlines()[-2:]
        log = json.loads((out / "training_log.json").read_text())
    encoder = Encoder(out)
    return {
        "method": name,
        "command": "searchengine train " + " ".join(arguments) + f" --eval {DEV} --out {name}",
        "wall_seconds": round(seconds, 1),
        "steps": log["steps"],
        "best_step": log["best_step"],
        "dev_during_training": [e["score"] for e in log["evaluations"]],
        "dev": round(sts_spearman(encoder.encode, read_scored_pairs(ROOT / dev)), 2),
        "test": round(sts_spearman(encoder.encode, read_scored_pairs(ROOT / test)), 2),
        "load_average_after": round(os.getloadavg()[0], 2),
        "summary": summary,
    }


def markdown_commands(results: dict) -> str:
    """The command of every row, in table order."""
    return "\n".join(
        f"- {name}: `{row['command']}`" for name, row in results.items() if name not in ("base", "machine")
    )


def markdown_table(results: dict) -> str:
    """One row per trained method: data, steps, wall time, STS-B dev/test and the change on test."""
    base = results["base"]
    lines = [
        "| method | data | steps | wall time | STS-B dev | STS-B test | test vs base |",
        "|---|---|---|---|---|---|---|",
        f"| base all-MiniLM-L6-v2 (no training) | - | - | - | {base['dev']:.2f} | {base['test']:.2f} | - |",
    ]
    for name, row in results.items():
        if name in ("base", "machine"):
            continue
        lines.append(
            f"| {name} | {row['data']} | {row['steps']} | {row['wall_seconds'] / 60:.1f} min{' †' * (row.get('torch_threads') == 1)} | {row['dev']:.2f} | "
            f"{row['test']:.2f} | {row['test_minus_base']:+.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", choices=sorted(ROWS), help="Run only these rows.")
    parser.add_argument("--quick", action="store_true", help="3 steps of two rows on 100-pair STS files.")
    parser.add_argument("--keep", type=Path, help="Keep the trained models under this directory.")
    parser.add_argument("--reuse", action="store_true", help="Evaluate models already trained under --keep.")
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks/training/results/methods.json")
    parser.add_argument("--markdown", action="store_true", help="Print the results file as a markdown table and stop.")
    args = parser.parse_args()
    if args.markdown:
        results = json.loads(args.results.read_text())
        print(markdown_table(results) + "\n\n" + markdown_commands(results))
        return
    names = list(QUICK_ROWS) if args.quick else (args.only or list(ROWS))
    workspace = Path(tempfile.mkdtemp(prefix="training-methods-"))
    dev, test = DEV, f"{DATA}/stsb/test.tsv"
    if args.quick:  # small STS files so the smoke run takes about a minute
        for split in ("dev", "test"):
            lines = (ROOT / DATA / "stsb" / f"{split}.tsv").read_text(encoding="utf-8").splitlines()[:101]
            (workspace / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        dev, test = str(workspace / "dev.tsv"), str(workspace / "test.tsv")
    results = {}
    if args.results.exists() and not args.quick:
        results = json.loads(args.results.read_text())
    if "base" not in results:  # measured once; rows rerun alone with --only reuse it
        base = Encoder()
        results["base"] = {
            "method": "base (all-MiniLM-L6-v2, no training)",
            "dev": round(sts_spearman(base.encode, read_scored_pairs(ROOT / dev)), 2),
            "test": round(sts_spearman(base.encode, read_scored_pairs(ROOT / test)), 2),
        }
    results["machine"] = {
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
    }
    try:
        for name in names:
            data, arguments = ROWS[name]
            out = (args.keep or workspace) / name
            row = run_row(name, arguments, out, dev, test, args.quick, args.reuse and args.keep is not None)
            row["data"] = data
            row["test_minus_base"] = round(row["test"] - results["base"]["test"], 2)
            results[name] = row
            print(f"{name:<28} dev {row['dev']:6.2f}  test {row['test']:6.2f} ({row['test_minus_base']:+.2f})  "
                  f"{row['steps']} steps, {row['wall_seconds']:.0f} s", flush=True)  # fmt: skip
            if not args.quick:  # merged into what is on disk now, so runs of different rows can overlap
                saved = read_results(args.results)
                write_results(args.results, {**saved, "base": results["base"], "machine": results["machine"], name: row})
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    main()
