"""Unlabelled training sentences: any corpus file searchengine can index (.txt, .jsonl, .gz)."""

from __future__ import annotations

from pathlib import Path

from searchengine.errors import SearchEngineError
from searchengine.reading.corpus import read_corpus


def read_sentences(path: Path, limit: int | None = None) -> list[str]:
    """The non-empty texts of `path`, in file order, at most `limit` of them; at least two are needed."""
    texts = []
    for document in read_corpus(Path(path)):
        if document.text.strip():
            texts.append(document.text)
            if limit is not None and len(texts) >= limit:
                break
    if len(texts) < 2:
        raise SearchEngineError(f"{path}: {len(texts)} non-empty sentence(s); contrastive training needs at least 2")
    return texts
