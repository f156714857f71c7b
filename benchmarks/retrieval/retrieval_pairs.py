"""Retrieval-shaped training pairs for a cross-encoder, from data that holds no BEIR test query (docs/reranking.md):

- NFCorpus documents: title -> its own abstract (1), and title -> an abstract TF-IDF ranks in the title's top 10
  (0: a lexical hard negative; the title's own abstract excluded). Titles are not the test queries, though
  NFCorpus's queries are title-like, which is why this source is in domain.
- ArguAna documents: first sentence -> the rest of the same argument (1), and -> the rest of a random other
  argument (0). No hard negatives here: ArguAna's relevant document is the counter-argument, on the same topic,
  which a lexical hard negative would often be, so labelling such pairs 0 would teach the opposite of the task.
  The pro/con pairing of ArguAna's ids (what its qrels are made of) is never used.
- SNLI: premise -> an entailed hypothesis (1), and -> a random hypothesis of another premise (0).
  Contradictions are left out for the same reason as ArguAna's hard negatives.
- STS-B train: sentence1 -> sentence2 with the gold score / 5.

Every source is capped (--per-source pairs each, positives and negatives half and half where both exist),
pooled and shuffled with a fixed seed, and written as score<TAB>query<TAB>passage, the file
`searchengine train cross-encoder --data FILE --max-score 1 --one-order` reads.

Usage: .venv/bin/python benchmarks/retrieval/retrieval_pairs.py [--data ../shared/data] [--out /tmp/retrieval-pairs.tsv]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from sklearn.feature_extraction.text import TfidfVectorizer

from benchmarks.datasets.data_folder import DATA

ROOT = Path(__file__).resolve().parents[2]
SEED = 0
HARD_NEGATIVE_RANKS = 10
"""A hard negative is drawn from the title's top this many TF-IDF neighbours (its own abstract excluded)."""
MIN_WORDS = 3


def clean(text: str) -> str:
    return " ".join(text.split())


def beir_documents(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def first_sentence_split(text: str) -> tuple[str, str] | None:
    """(first sentence, the rest), split at the first '. ' followed by a capital letter, or None."""
    for position in range(len(text) - 2):
        if text[position] in ".!?" and text[position + 1] == " " and text[position + 2].isupper():
            first, rest = text[: position + 1].strip(), text[position + 2 :].strip()
            if len(first.split()) >= MIN_WORDS and len(rest.split()) >= 8:
                return first, rest
            return None
    return None


def nfcorpus_pairs(path: Path, limit: int, generator: random.Random) -> list[tuple[float, str, str]]:
    documents = [d for d in beir_documents(path) if len(d.get("title", "").split()) >= MIN_WORDS and d["text"]]
    titles, texts = [clean(d["title"]) for d in documents], [clean(d["text"]) for d in documents]
    tfidf = TfidfVectorizer(sublinear_tf=True, stop_words="english").fit(texts + titles)
    scores = (tfidf.transform(titles) @ tfidf.transform(texts).T).toarray()
    np.fill_diagonal(scores, -1.0)
    order = generator.sample(range(len(documents)), min(len(documents), limit // 2))
    pairs = []
    for row in order:
        neighbours = np.argsort(-scores[row])[:HARD_NEGATIVE_RANKS]
        pairs.append((1.0, titles[row], texts[row]))
        pairs.append((0.0, titles[row], texts[int(generator.choice(list(neighbours)))]))
    return pairs


def arguana_pairs(path: Path, limit: int, generator: random.Random) -> list[tuple[float, str, str]]:
    splits = [s for s in (first_sentence_split(clean(d["text"])) for d in beir_documents(path)) if s is not None]
    chosen = generator.sample(range(len(splits)), min(len(splits), limit // 2))
    pairs = []
    for row in chosen:
        other = generator.randrange(len(splits) - 1)
        other += other >= row
        pairs.append((1.0, splits[row][0], splits[row][1]))
        pairs.append((0.0, splits[row][0], splits[other][1]))
    return pairs


def nli_pairs(path: Path, limit: int, generator: random.Random) -> list[tuple[float, str, str]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = [line.rstrip("\n").split("\t") for line in handle][1:]
    entailed = [(premise, hypothesis) for premise, hypothesis, label in rows if label == "entailment"]
    hypotheses = [hypothesis for _, hypothesis, _ in rows]
    pairs = []
    for premise, hypothesis in generator.sample(entailed, min(len(entailed), limit // 2)):
        pairs.append((1.0, premise, hypothesis))
        negative = generator.choice(hypotheses)
        while negative == hypothesis:
            negative = generator.choice(hypotheses)
        pairs.append((0.0, premise, negative))
    return pairs


def stsb_pairs(path: Path, limit: int, generator: random.Random) -> list[tuple[float, str, str]]:
    rows = [line.rstrip("\n").split("\t") for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    rows = generator.sample(rows, min(len(rows), limit))
    return [(float(score) / 5.0, first, second) for score, first, second in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=Path("/tmp/retrieval-pairs.tsv"))
    parser.add_argument("--per-source", type=int, default=4000, help="Pairs at most from each source.")
    parser.add_argument("--seed", type=int, default=SEED)
    arguments = parser.parse_args()
    generator = random.Random(arguments.seed)
    data, limit = arguments.data, arguments.per_source
    sources = {
        "nfcorpus title->abstract": nfcorpus_pairs(data / "retrieval/nfcorpus/corpus.jsonl", limit, generator),
        "arguana first sentence->rest": arguana_pairs(data / "retrieval/arguana/corpus.jsonl", limit, generator),
        "snli premise->entailment": nli_pairs(data / "nli/train.tsv.gz", limit, generator),
        "stsb train": stsb_pairs(data / "stsb/train.tsv", limit, generator),
    }
    pairs = [pair for rows in sources.values() for pair in rows]
    generator.shuffle(pairs)
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    with arguments.out.open("w", encoding="utf-8") as handle:
        handle.write("score\tsentence1\tsentence2\n")
        for score, query, passage in pairs:
            handle.write(f"{score:.3f}\t{query}\t{passage}\n")
    for name, rows in sources.items():
        labels = Counter("positive" if score >= 0.5 else "negative" for score, _, _ in rows)
        print(f"{name:<30} {len(rows):>6} pairs ({labels['positive']} positive, {labels['negative']} negative)")
    print(f"{len(pairs)} pairs -> {arguments.out}")


if __name__ == "__main__":
    main()
