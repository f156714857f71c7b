"""one_thread: blocks in several threads at once each run on one thread, and each restores its own setting."""

from __future__ import annotations

import threading

import faiss
import torch

from searchengine.engine.search import one_thread


def test_overlapping_blocks_in_two_threads_each_run_on_one_thread_and_restore_their_own() -> None:
    torch.set_num_threads(2)
    faiss.omp_set_num_threads(2)
    inside, release = threading.Event(), threading.Event()
    seen: dict[str, tuple[int, int]] = {}

    def other() -> None:
        torch.set_num_threads(2)
        faiss.omp_set_num_threads(2)
        with one_thread():
            inside.set()
            release.wait(30)
            seen["other inside, after the first ended"] = (torch.get_num_threads(), faiss.omp_get_max_threads())
        seen["other after"] = (torch.get_num_threads(), faiss.omp_get_max_threads())

    thread = threading.Thread(target=other)
    with one_thread():
        thread.start()
        assert inside.wait(30)
        seen["first inside"] = (torch.get_num_threads(), faiss.omp_get_max_threads())
    seen["first after"] = (torch.get_num_threads(), faiss.omp_get_max_threads())
    release.set()
    thread.join(30)
    assert seen == {
        "first inside": (1, 1),
        "first after": (2, 2),
        "other inside, after the first ended": (1, 1),
        "other after": (2, 2),
    }
