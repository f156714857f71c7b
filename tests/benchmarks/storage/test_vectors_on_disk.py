"""benchmarks/storage/vectors_on_disk.py: the file holds the rows noisy_copies returns, and the blockwise exact top k
is the top k of one search over every row."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np

from benchmarks.scale.synthetic import noisy_copies
from benchmarks.storage.vectors_on_disk import RunningTop, exact_top_blocks, noisy_copies_file


def unit_rows(count: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, 16)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_the_file_holds_the_rows_noisy_copies_makes(tmp_path: Path) -> None:
    real = unit_rows(300, 0)
    written = noisy_copies_file(real, 1000, 0.05, tmp_path / "v.npy")
    assert np.array_equal(np.load(tmp_path / "v.npy"), noisy_copies(real, 1000, 0.05))
    halved = noisy_copies_file(real, 1000, 0.05, tmp_path / "h.npy", "float16")
    assert halved.dtype == np.float16 and np.allclose(halved, written, atol=1e-3)


def test_blockwise_exact_search_finds_what_one_search_finds() -> None:
    vectors, queries = unit_rows(2000, 1), unit_rows(25, 2)
    flat = faiss.IndexFlatIP(16)
    flat.add(vectors)
    expected = flat.search(queries, 10)[1]
    assert np.array_equal(exact_top_blocks(vectors, queries, 10, block=300), expected)


def test_the_writer_hands_its_blocks_to_the_exact_top_k(tmp_path: Path) -> None:
    real, queries = unit_rows(300, 3), unit_rows(20, 4)
    top = RunningTop(queries, 10)
    written = noisy_copies_file(real, 1000, 0.05, tmp_path / "h.npy", "float16", top=top)
    assert np.array_equal(top.rows, exact_top_blocks(written, queries, 10, block=128))
    flat = faiss.IndexFlatIP(16)
    flat.add(np.asarray(written, dtype=np.float32))
    assert np.array_equal(top.rows, flat.search(queries, 10)[1])
