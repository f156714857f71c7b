"""Whether a process of this machine still runs: what a killed process left behind (a scratch folder, a half-made
copy) is removed only once the process that made it is gone, so a live one's work is never taken from under it."""

from __future__ import annotations

import os


def process_running(pid: int) -> bool:
    """Whether process `pid` of this machine is running (one of another user counts: signal 0 is refused it, not
    delivered). A process's parent reaps it when it ends, so an ended child does not count either."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
