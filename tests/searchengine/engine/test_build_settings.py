"""The settings of a build check themselves where they are made, so a rule holds in every front end: the Python API
and the command line refuse the same settings with the same message."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchengine import BuildSettings, SearchEngine
from searchengine.cli import app
from searchengine.encoding.encoder import Encoder
from searchengine.errors import SearchEngineError

WHITEN_FIT_ALONE = "--whiten-fit says what to fit whitening on; add --whiten-k K to use it"


def test_whiten_fit_without_whiten_k_is_refused_by_the_settings(tmp_path: Path) -> None:
    with pytest.raises(SearchEngineError, match=WHITEN_FIT_ALONE):
        BuildSettings(whiten_fit=["a text to fit on"])
    assert BuildSettings(whiten_k=4, whiten_fit=["a text to fit on"]).whiten_fit == ["a text to fit on"]


def test_the_python_api_refuses_whiten_fit_without_whiten_k(tmp_path: Path, tiny_encoder: Encoder) -> None:
    with pytest.raises(SearchEngineError, match=WHITEN_FIT_ALONE):
        SearchEngine.build(["a cat", "a dog"], tmp_path / "i", BuildSettings(whiten_fit=["fit"]), encoder=tiny_encoder)
    assert not (tmp_path / "i").exists()


def test_the_cli_refuses_whiten_fit_without_whiten_k(tmp_path: Path, tiny_model: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("a cat\na dog\n", encoding="utf-8")
    args = ["index", str(corpus), "-d", str(tmp_path / "i"), "--model", str(tiny_model), "--whiten-fit", str(corpus)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and result.output.strip() == f"Error: {WHITEN_FIT_ALONE}", result.output
    assert not (tmp_path / "i").exists()


def test_settings_that_cannot_go_together_are_refused_before_any_model_loads() -> None:
    with pytest.raises(SearchEngineError, match="shards must be at least 1, not 0"):
        BuildSettings(shards=0)
