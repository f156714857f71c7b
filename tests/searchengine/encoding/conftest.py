"""Fixtures of the encoding tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchengine.encoding import openvino_backend


@pytest.fixture
def short_calibration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sentences: list[str]) -> Path:
    """A few calibration texts, so calibrating the tiny model's OpenVINO int8 takes a second, not half a minute
    (the full calibration text is for real models)."""
    path = tmp_path / "calibration.txt"
    path.write_text("# test texts\n" + "\n".join(sentences * 2) + "\n", encoding="utf-8")
    monkeypatch.setattr(openvino_backend, "CALIBRATION_TEXT", path)
    return path
