"""`searchengine serve` as a real process on a free 127.0.0.1 port, for the tests that talk to it over HTTP."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def serve_process(arguments: list[str], log: Path, cwd: Path | None = None, env: dict | None = None) -> Iterator[str]:
    """Run `searchengine serve --port 0 --no-access-log ARGUMENTS` until the block ends, then stop it with Ctrl+C
    and require a clean exit; yields the address it serves at. Its output goes to `log`."""
    with log.open("w") as sink:
        process = subprocess.Popen(
            serve_command(arguments),
            cwd=cwd,
            env=env,
            stderr=sink,
            stdout=sink,
        )
    try:
        yield served_address(process, log)
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(60) == 0, log.read_text()


def serve_command(arguments: list[str]) -> list[str]:
    """The command line of `searchengine serve --port 0 --no-access-log ARGUMENTS` in this Python."""
    return [sys.executable, "-m", "searchengine", "serve", *arguments, "--port", "0", "--no-access-log"]


def served_address(process: subprocess.Popen, log: Path) -> str:
    """The address a started `searchengine serve` process announces in `log`, once it serves."""
    deadline = time.monotonic() + 180
    while not (found := re.search(r"at (http://127\.0\.0\.1:\d+)/", log.read_text())):
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "searchengine serve did not start: " + log.read_text()
        time.sleep(0.1)
    return found.group(1)
