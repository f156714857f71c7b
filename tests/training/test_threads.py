"""Training's thread defaults: every core the process may use, and OpenMP waits that sleep unless the user chose."""

from __future__ import annotations

import os

import pytest
from searchengine.training.threads import available_cores, use_passive_openmp_waits


def test_available_cores_are_the_process_affinity() -> None:
    assert available_cores() == len(os.sched_getaffinity(0))


def test_openmp_waits_are_passive_unless_the_user_set_a_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    use_passive_openmp_waits()
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    use_passive_openmp_waits()
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
