"""process_running (searchengine/processes.py): what decides whether a killed process's leftovers may be removed."""

from __future__ import annotations

import os
import subprocess
import sys

from searchengine.processes import process_running


def test_a_running_process_counts_and_an_ended_one_does_not() -> None:
    assert process_running(os.getpid())
    assert process_running(1)  # init: running, whoever owns it
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: its pid is free
    assert not process_running(child.pid)
