"""benchmarks/harness/machine.py: the machine record keeps the keys and order the results files have."""

from __future__ import annotations

import os
import sys

from benchmarks.harness.machine import machine_record, run_record


def test_the_record_names_the_command_and_the_machine_in_the_committed_order() -> None:
    record = run_record((1.0, 2.0, 3.0))
    assert record["command"].split()[1:] == sys.argv
    assert list(record["machine"]) == ["cpu", "cores", "gpu", "load_before", "load_after"]
    assert record["machine"]["cores"] == os.cpu_count()
    assert record["machine"]["load_before"] == (1.0, 2.0, 3.0)


def test_what_a_script_adds_follows_the_cpu_and_the_cores() -> None:
    assert list(machine_record(torch_threads=2, shared=True)) == ["cpu", "cores", "torch_threads", "shared"]
