"""Training's thread defaults: OMP_NUM_THREADS or every core the process may use, and OpenMP waits that sleep
unless the user chose a policy."""

from __future__ import annotations

import os

import pytest
from searchengine.training.threads import available_cores, default_threads, use_passive_openmp_waits


def test_threads_are_omp_num_threads_if_set_else_the_process_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    assert available_cores() == len(os.sched_getaffinity(0))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert default_threads() == available_cores()
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert default_threads() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "0")
    assert default_threads() == available_cores()


def test_openmp_waits_are_passive_unless_the_user_set_a_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    use_passive_openmp_waits()
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    use_passive_openmp_waits()
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
