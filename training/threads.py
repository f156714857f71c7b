"""CPU threads for training, chosen so a run keeps its speed when other jobs share the machine.

Measured on 2 shared cores (docs/benchmarks.md#training-speed): with OpenMP's default of spinning while it waits,
2 torch threads trained many times slower than 1 thread, because a spinning thread burns the time slice its
descheduled partner needs. With OMP_WAIT_POLICY=PASSIVE (waiting threads sleep) 2 threads ran as fast as 1 there,
so the default is every core this process may use (or OMP_NUM_THREADS where the user set it), with passive waits.
Nothing here imports torch: the policy must be in the environment before torch's OpenMP library loads."""

from __future__ import annotations

import os


def use_passive_openmp_waits() -> None:
    """OMP_WAIT_POLICY=PASSIVE unless the user set a policy. Takes effect only if torch is not imported yet."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def default_threads() -> int:
    """OMP_NUM_THREADS where the user set it to a number, else every core this process may use."""
    setting = os.environ.get("OMP_NUM_THREADS", "")
    return int(setting) if setting.isdigit() and int(setting) > 0 else available_cores()


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. under taskset or a container's cpuset)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no sched_getaffinity (macOS)
        return os.cpu_count() or 1
