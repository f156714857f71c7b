"""A word-salad corpus from the tiny model's vocabulary, for fitting post-processing transforms in tests."""

from __future__ import annotations

import random
from pathlib import Path

from tests.conftest import WORDS


def word_salad(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) for _ in range(count)]


def write_corpus(path: Path, count: int = 300, seed: int = 0) -> Path:
    path.write_text("\n".join(word_salad(count, seed)) + "\n", encoding="utf-8")
    return path
