"""Is `searchengine index DIR` better than a converter written by hand? A paired comparison, question by question.

benchmarks/files/file_search.py records, for every question, the rank of the first hit that answers it in each index and
mode. Differences of one to three questions in recall@5 are noise at 11 to 25 questions a corpus; this reads the
ranks of one or more of its result files (run on the same indexes with different question files, e.g. the first
questions and the held-out ones) and compares the folder reader with the converter on the same questions:

- recall@5 and MRR@10 of each, over all the questions of the files given;
- questions where the folder reader ranks the answer higher (a win), lower (a loss), or the same (a tie; two
  misses are a tie), and the two-sided sign test's p-value over wins and losses (scipy's `binomtest`);
- a 95% interval for the difference of MRR@10 by the paired bootstrap (questions resampled, 10,000 draws, seed 0).

The converter is the first extractor of the corpus's format (benchmarks/files/file_extractors.py: BeautifulSoup's
`get_text()`, pypdf, the raw Markdown) indexed with `--passages` (`--against no_passages`: its index of one vector
per line); the folder reader is `--folder`'s
"passage-headings" index (the product's defaults).

Usage:
  .venv/bin/python benchmarks/files/file_paired.py benchmarks/files/results/file_whole_amx_final.json \
      benchmarks/files/results/file_whole_amx_final_heldout.json --out benchmarks/files/results/file_whole_amx_paired.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from scipy.stats import binomtest

from benchmarks.files.file_extractors import EXTRACTORS
from benchmarks.files.file_search import MODES, MRR_AT, RECALL_AT
from benchmarks.harness.results import write_results

DRAWS = 10_000


def reciprocal(rank: int | None) -> float:
    """1/rank within MRR@10, 0 for a miss."""
    return 0.0 if rank is None or rank > MRR_AT else 1.0 / rank


def compare(folder: list[int | None], converter: list[int | None]) -> dict[str, Any]:
    """The paired comparison of two lists of first-answer ranks over the same questions (see the module)."""
    mine, theirs = np.array([reciprocal(r) for r in folder]), np.array([reciprocal(r) for r in converter])
    wins, losses = int((mine > theirs).sum()), int((mine < theirs).sum())
    draws = np.random.default_rng(0).integers(0, len(mine), size=(DRAWS, len(mine)))
    differences = (mine[draws] - theirs[draws]).mean(axis=1)
    low, high = np.percentile(differences, [2.5, 97.5])
    return {
        "questions": len(mine),
        f"folder_recall@{RECALL_AT}": sum(r is not None and r <= RECALL_AT for r in folder) / len(folder),
        f"converter_recall@{RECALL_AT}": sum(r is not None and r <= RECALL_AT for r in converter) / len(converter),
        f"folder_mrr@{MRR_AT}": float(mine.mean()),
        f"converter_mrr@{MRR_AT}": float(theirs.mean()),
        "wins": wins,
        "losses": losses,
        "ties": len(mine) - wins - losses,
        "sign_test_p": binomtest(wins, wins + losses).pvalue if wins + losses else 1.0,
        "mrr_difference_95": [float(low), float(high)],
    }


def ranks_of(result: dict[str, Any], against: str = "passages") -> dict[str, dict[str, tuple[list, list]]]:
    """Per corpus and mode, the folder reader's and the converter's ranks in one result file of file_search.py;
    `against`: the converter's index with passages ("passages") or one vector per line ("no_passages")."""
    out: dict[str, dict[str, tuple[list, list]]] = {}
    for name, corpus in result["corpora"].items():
        converter = corpus["variants"].get(next(iter(EXTRACTORS[corpus["format"]])), {}).get(against)
        folder = corpus.get("folder", {}).get("passage-headings")
        if not converter or not folder or "modes" not in folder:
            raise SystemExit(f"{name}: the result holds no folder index and converter ({against}) to compare")
        out[name] = {
            mode: (folder["modes"][mode]["ranks"], converter["modes"][mode]["ranks"])
            for mode in MODES
            if mode in folder["modes"] and mode in converter["modes"]
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, nargs="+", help="result files of file_search.py, their questions pooled")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    parser.add_argument(
        "--against", choices=("passages", "no_passages"), default="passages",
        help="the converter's index: with --passages (the default, issue 23's baseline) or one vector per line",
    )  # fmt: skip
    args = parser.parse_args()
    pooled: dict[str, dict[str, tuple[list, list]]] = {}
    for path in args.results:
        for corpus, modes in ranks_of(json.loads(path.read_text(encoding="utf-8")), args.against).items():
            for mode, (folder, converter) in modes.items():
                mine, theirs = pooled.setdefault(corpus, {}).setdefault(mode, ([], []))
                mine += folder
                theirs += converter
    report = {
        "results": [str(path) for path in args.results],
        "against": args.against,
        "corpora": {
            corpus: {mode: compare(*ranks) for mode, ranks in modes.items()} for corpus, modes in pooled.items()
        },
    }
    every = {mode: ([], []) for mode in MODES}
    for modes in pooled.values():
        for mode, (folder, converter) in modes.items():
            every[mode][0].extend(folder)
            every[mode][1].extend(converter)
    report["all"] = {mode: compare(*ranks) for mode, ranks in every.items() if ranks[0]}
    write_results(args.out, report)
    for corpus, modes in {**report["corpora"], "all": report["all"]}.items():
        for mode, row in modes.items():
            print(
                f"{corpus:16} {mode:8} n={row['questions']:3} recall@{RECALL_AT} {row[f'folder_recall@{RECALL_AT}']:.3f}"
                f" vs {row[f'converter_recall@{RECALL_AT}']:.3f}  MRR@{MRR_AT} {row[f'folder_mrr@{MRR_AT}']:.3f} vs "
                f"{row[f'converter_mrr@{MRR_AT}']:.3f}  wins {row['wins']} losses {row['losses']} ties {row['ties']}"
                f"  p={row['sign_test_p']:.3f}  diff 95% [{row['mrr_difference_95'][0]:+.3f}, "
                f"{row['mrr_difference_95'][1]:+.3f}]",
                file=sys.stdout,
            )
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
