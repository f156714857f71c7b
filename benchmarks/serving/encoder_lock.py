"""How long a write's tokenizing holds the encoder's lock, which a server's queries wait for (issue 22).

The server's readers and its writer share one Encoder; the fast tokenizer is not safe between threads, so each
tokenizing call holds the encoder's lock. This times every hold while the bundled model splits a POST's worth of
real documents (ArguAna's first --documents, each repeated --repeat times to make long documents) into passages:
"whole" tokenizes them in one hold (as before, emulated by slices larger than the input), "sliced" by the
Encoder's TOKENIZE_SLICE texts / TOKENIZE_SLICE_CHARS characters. The two alternate in rounds in one process.

    .venv/bin/python benchmarks/serving/encoder_lock.py --out benchmarks/serving/results/encoder_lock.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from searchengine.encoding import encoder as encoder_module
from searchengine.encoding.encoder import Encoder

CORPUS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "retrieval" / "arguana" / "corpus.jsonl"


class TimedLock:
    """A lock that records how long each hold lasted."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.holds: list[float] = []

    def __enter__(self) -> None:
        self._lock.acquire()
        self._start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.holds.append(time.perf_counter() - self._start)
        self._lock.release()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=6, help="copies of each document's text joined into one")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    load_before = os.getloadavg()
    with CORPUS.open(encoding="utf-8") as lines:
        texts = [" ".join([json.loads(next(lines))["text"]] * args.repeat) for _ in range(args.documents)]
    encoder = Encoder()
    sliced = (encoder_module.TOKENIZE_SLICE, encoder_module.TOKENIZE_SLICE_CHARS)
    variants = {"whole": (len(texts), sum(map(len, texts))), "sliced": sliced}
    results: dict[str, dict[str, list[float]]] = {name: {"longest_hold_s": [], "total_s": []} for name in variants}
    encoder.passage_spans(texts[:10], encoder.text_tokens, 32)  # warm up
    for _ in range(args.rounds):
        for name, (count, characters) in variants.items():
            encoder_module.TOKENIZE_SLICE, encoder_module.TOKENIZE_SLICE_CHARS = count, characters
            encoder._lock = TimedLock()  # noqa: SLF001 (timed here, restored below)
            start = time.perf_counter()
            encoder.passage_spans(texts, encoder.text_tokens, 32)
            results[name]["total_s"].append(time.perf_counter() - start)
            results[name]["longest_hold_s"].append(max(encoder._lock.holds))  # noqa: SLF001
    encoder_module.TOKENIZE_SLICE, encoder_module.TOKENIZE_SLICE_CHARS = sliced
    summary = {
        name: {f"median_{key}": round(statistics.median(values), 4) for key, values in measured.items()}
        for name, measured in results.items()
    }
    record = {
        **run_record(load_before),
        "documents": args.documents,
        "characters": sum(map(len, texts)),
        "slice": {"texts": sliced[0], "characters": sliced[1]},
        "rounds": results,
        "summary": summary,
    }
    write_results(args.out, record)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
