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

WHITEN_FIT_ALONE = "whiten_fit says what to fit whitening on; add whiten_k=K to use it"
"""The API names its parameters; the command line says the same with its flags (WHITEN_FIT_ALONE_FLAGS)."""
WHITEN_FIT_ALONE_FLAGS = "--whiten-fit says what to fit whitening on; add --whiten-k K to use it"


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
    assert result.exit_code == 1 and result.output.strip() == f"Error: {WHITEN_FIT_ALONE_FLAGS}", result.output
    assert not (tmp_path / "i").exists()


def test_settings_that_cannot_go_together_are_refused_before_any_model_loads() -> None:
    with pytest.raises(SearchEngineError, match="shards must be at least 1, not 0"):
        BuildSettings(shards=0)


def test_a_memory_budget_is_read_once_and_recorded_in_the_index(tmp_path: Path, tiny_encoder: Encoder) -> None:
    from searchengine.indexer.tables.store import DocumentStore
    from searchengine.indexer.vectors.index_choice import MEMORY_BUDGET

    settings = BuildSettings(index="auto", memory_budget="300MB")
    assert settings.memory_budget == 300 * 10**6 and settings.index is None
    engine = SearchEngine.build(["a cat", "a dog", "a bird"], tmp_path / "i", settings, encoder=tiny_encoder)
    assert engine.last_report.index_type == "Flat" and engine.last_report.index_type_chosen
    assert "within a memory budget of 300 MB" in engine.last_report.index_type_reason
    store = DocumentStore(engine.directory.file(engine.manifest, "documents"))
    try:
        assert store.settings.get(MEMORY_BUDGET) == 300 * 10**6
    finally:
        store.close()
        engine.close()


def test_a_memory_budget_with_a_named_index_type_is_refused() -> None:
    with pytest.raises(SearchEngineError, match="^memory_budget chooses the index type, and index='HNSW32' names one"):
        BuildSettings(index="HNSW32", memory_budget="8GB")


def test_the_api_names_parameters_not_flags_in_its_messages(tmp_path: Path, tiny_encoder: Encoder) -> None:
    """A Python caller has no --whiten-k to add: the API's messages name its parameters (they named flags)."""
    for settings in ({"whiten_fit": ["fit"]}, {"index": "Flat", "memory_budget": "8GB"}):
        with pytest.raises(SearchEngineError) as refused:
            SearchEngine.build(["a cat", "a dog"], tmp_path / "i", BuildSettings(**settings), encoder=tiny_encoder)
        assert "--" not in str(refused.value), refused.value


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--memory-budget", "lots"], "Error: memory budget 'lots' is not a size: write a number and a unit, such as"),
        (["--memory-budget", "300"], "Error: memory budget '300' is 300 bytes, under 1 MB: give a unit"),
        (["--memory-budget", "8GB", "--index", "Flat"], "Error: --memory-budget chooses the index type"),
    ],
)
def test_the_cli_refuses_a_bad_memory_budget_in_one_line(
    tmp_path: Path, tiny_model: Path, option: list[str], message: str
) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("a cat\na dog\n", encoding="utf-8")
    args = ["index", str(corpus), "-d", str(tmp_path / "i"), "--model", str(tiny_model), *option]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and result.output.startswith(message) and result.output.count("\n") == 1, result.output
    assert not (tmp_path / "i").exists()


def test_the_cli_says_which_type_the_budget_chose(tmp_path: Path, tiny_model: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("a cat\na dog\n", encoding="utf-8")
    args = ["index", str(corpus), "-d", str(tmp_path / "i"), "--model", str(tiny_model), "--memory-budget", "2GB"]
    result = CliRunner().invoke(app, [*args, "--index", "auto"])
    assert result.exit_code == 0, result.output
    assert "Index type Flat, chosen for 2 vectors within a memory budget of 2 GB, about " in result.output
    appended = CliRunner().invoke(app, [*args, "--append"])
    assert appended.exit_code == 1 and "drop --index, --memory-budget," in appended.output


def test_auto_above_the_exact_search_limit_builds_the_mid_size_default_whose_hits_are_rescored(
    tmp_path: Path, tiny_encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the exact-search limit `auto` builds HNSW32,SQ8 with its originals beside it, and a dense query's hits
    come back scored exactly from them: each text finds itself first, at a cosine of 1 within float16's precision."""
    from searchengine.indexer.vectors import index_choice

    from tests.conftest import SENTENCES

    monkeypatch.setattr(index_choice, "EXACT_SEARCH_LIMIT", 50)  # the rule at a size a test builds in seconds
    texts = [f"{first}, then {second}" for i, first in enumerate(SENTENCES) for second in SENTENCES[i + 1 :]]
    assert len(texts) > index_choice.EXACT_SEARCH_LIMIT
    engine = SearchEngine.build(texts, tmp_path / "auto", encoder=tiny_encoder)
    try:
        assert engine.last_report.index_type == index_choice.MID_SIZE_DEFAULT == "HNSW32,SQ8"
        assert engine.reader.vectors.has_originals
        for text in texts[::7]:
            best = engine.search(text, k=3, mode="dense")[0]
            assert best.text == text
            assert best.score == pytest.approx(1.0, abs=2e-3)
    finally:
        engine.close()


@pytest.mark.parametrize("index", ["", " ", "\t"])
def test_an_empty_index_type_is_refused_not_taken_for_auto(index: str) -> None:
    """`--index ""` (a script's unset variable) built with the type chosen for the corpus size without a word."""
    with pytest.raises(SearchEngineError, match="the index type is empty: give a FAISS factory string"):
        BuildSettings(index=index)
    assert BuildSettings(index="auto").index is None
