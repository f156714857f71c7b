"""What every benchmark records about the machine it ran on (imported by the scripts beside it)."""

from __future__ import annotations

import os
import platform
import sys
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


def run_record(load_before: tuple[float, float, float]) -> dict:
    """The command that ran and the machine it ran on, with the load average before the run and now."""
    return {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {
            "cpu": cpu_name(),
            "cores": os.cpu_count(),
            "gpu": gpu_name(),
            "load_before": load_before,
            "load_after": os.getloadavg(),
        },
    }
