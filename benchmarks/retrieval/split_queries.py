"""The held-back protocol of docs/retrieval-adaptation.md: split a BEIR set's judged test queries into two halves by
a fixed seed, and write each half's qrels as its own file (outside the repository: the data is never copied in).

- tune half: the only labels any setting (method, steps, learning rate) may be chosen on;
- held-back half: where base and adapted models are compared, once the settings are fixed.

Only queries with at least one judgement of grade > 0 are split (the others count in no metric). The order is
the qrels file's, shuffled with random.Random(seed); the tune half gets the extra query of an odd count.

Usage: .venv/bin/python benchmarks/retrieval/split_queries.py [--data ../shared/data/retrieval] [--out /tmp/heldback]
Writes OUT/<set>/qrels_tune.tsv and OUT/<set>/qrels_heldback.tsv for nfcorpus and arguana, and prints the counts.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA

ROOT = Path(__file__).resolve().parents[2]
SETS = ("nfcorpus", "arguana")
SEED = 13
HEADER = "query-id\tcorpus-id\tscore\n"


def split(qrels: Path, out: Path, seed: int = SEED) -> tuple[int, int]:
    """Write out/qrels_tune.tsv and out/qrels_heldback.tsv; returns the queries in each."""
    rows = [line.rstrip("\n").split("\t") for line in qrels.read_text(encoding="utf-8").splitlines(True)[1:]]
    rows = [row for row in rows if len(row) == 3]
    judged = list(dict.fromkeys(query for query, _, grade in rows if int(grade) > 0))
    random.Random(seed).shuffle(judged)
    middle = (len(judged) + 1) // 2
    halves = {"tune": set(judged[:middle]), "heldback": set(judged[middle:])}
    out.mkdir(parents=True, exist_ok=True)
    for name, queries in halves.items():
        lines = ["\t".join(row) + "\n" for row in rows if row[0] in queries]
        (out / f"qrels_{name}.tsv").write_text(HEADER + "".join(lines), encoding="utf-8")
    return len(halves["tune"]), len(halves["heldback"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA / "retrieval")
    parser.add_argument("--out", type=Path, default=Path("/tmp/heldback"))
    parser.add_argument("--seed", type=int, default=SEED)
    arguments = parser.parse_args()
    for name in SETS:
        tune, heldback = split(arguments.data / name / "qrels_test.tsv", arguments.out / name, arguments.seed)
        print(f"{name}: {tune} tune queries, {heldback} held-back queries -> {arguments.out / name}")


if __name__ == "__main__":
    main()
