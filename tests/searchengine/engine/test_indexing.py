"""The indexing progress bar: whole-document counts, and shown on a terminal only."""

from __future__ import annotations

import io
import sys

import pytest

from searchengine.engine.progress_bar import progress_bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_counts_whole_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", _Terminal())
    with progress_bar(33, True, "Indexing") as bar:
        bar.update(33)
        shown = str(bar)
    assert "33/33" in shown and "33.0" not in shown


def test_no_bar_when_stderr_is_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipe or log would get every redraw of the bar and, at the end, the final bar twice."""
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with progress_bar(33, True, "Indexing") as bar:
        assert bar.disable
        bar.update(33)
    assert sys.stderr.getvalue() == ""


def test_no_bar_when_progress_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert progress_bar(33, False, "Indexing").disable
