"""What every benchmark records about the machine it ran on, and the load it ran under."""

from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo, else what the platform module reports."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_name() -> str | None:
    """The CUDA GPU torch would encode on, where the process has imported torch and one is present; else None."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_name(0)


def command_line() -> str:
    """The command that ran this benchmark, as a reader would type it again (`python benchmarks/...`)."""
    return " ".join([Path(sys.executable).name, *sys.argv])


def machine_record(**extra: object) -> dict:
    """The CPU model and core count, then `extra` (torch threads, load averages...), in that order."""
    return {"cpu": cpu_name(), "cores": os.cpu_count(), **extra}


def run_record(load_before: tuple[float, float, float]) -> dict:
    """The command that ran and the machine it ran on, with the load average before the run and now."""
    return {
        "command": command_line(),
        "machine": machine_record(gpu=gpu_name(), load_before=load_before, load_after=os.getloadavg()),
    }


def wait_for_quiet(max_load: float | None, max_wait: float) -> float:
    """Wait (at most `max_wait` seconds) until the 1-minute load average is under `max_load`; seconds waited."""
    started = time.perf_counter()
    while max_load is not None and os.getloadavg()[0] >= max_load and time.perf_counter() - started < max_wait:
        time.sleep(5)
    return round(time.perf_counter() - started, 1)
