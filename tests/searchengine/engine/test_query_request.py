"""QueryRequest: a search is checked once, when it is made, and every front end makes one: the Python API, the CLI
(also when it asks a server), the server's /search and the MCP search tool (tests/searchengine/server/test_app.py
and tests/searchengine/integrations/test_mcp_server.py check the last two)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.encoding.encoder import Encoder
from searchengine.engine.fusion import Fusion
from searchengine.engine.query_request import DEFAULT_RERANK_TOP, RERANK_TOP_ALONE, QueryRequest
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError

REFUSED = [
    ({"queries": ["cat"], "k": 0}, "k must be at least 1, not 0"),
    ({"queries": ["cat"], "rerank_top": 0, "rerank": "some-model"}, "rerank_top must be at least 1, not 0"),
    ({"queries": ["cat"], "rerank_top": 5}, RERANK_TOP_ALONE),
    ({"queries": ["cat", " "]}, "query number 2 is empty; say what to search for"),
    ({"queries": ["cat"], "mode": "sparse"}, "unknown search mode 'sparse'"),
    ({"queries": ["cat"], "min_score": float("nan")}, "min_score must be a number, such as 0.4, not nan"),
    ({"queries": ["cat"], "where": ["lang"]}, "cannot read the filter 'lang'"),
    ({"queries": ["cat"], "rescore": -1}, "rescore must be a whole number from 0 .off. to 100,000, such as 100, not -1"),
    ({"queries": ["cat"], "rescore": 2.5}, "rescore must be a whole number from 0 .off. to 100,000"),
    (
        {"queries": ["cat"], "mode": "dense", "fusion": Fusion("rrf")},
        "fusion sets how 'hybrid' search fuses its two sides, and mode='dense' fuses nothing: add mode='hybrid', or",
    ),
    ({"queries": "cat"}, r"the queries are a list of str, such as \['password help'\], not a str"),  # was c, a, t
    ({"queries": None}, "the queries are a list of str, .* not a NoneType"),
    ({"queries": ["cat"], "mode": "mmr", "mode_options": 5}, r"mode_options is a dict, such as \{'fetch_k': 20\}, not 5"),
]


@pytest.mark.parametrize(("fields", "message"), REFUSED)
def test_a_request_is_refused_when_made(fields: dict, message: str) -> None:
    with pytest.raises(SearchEngineError, match=message):
        QueryRequest(**fields)


def test_queries_from_a_generator_are_read_once_into_a_list() -> None:
    assert QueryRequest(query for query in ["cat", "dog"]).queries == ["cat", "dog"]


def test_the_api_refuses_an_option_it_does_not_know_in_one_line() -> None:
    """`search("cat", colour="red")` was a TypeError naming QueryRequest.__init__; it names the option and the
    options there are."""
    with pytest.raises(SearchEngineError, match="search takes no option 'colour'; its options: mode, fusion, rerank"):
        QueryRequest.of(["cat"], 10, None, {"colour": "red"})  # type: ignore[typeddict-unknown-key]


def test_a_reranked_request_retrieves_at_least_rerank_top_candidates() -> None:
    assert QueryRequest(["cat"], k=5).depth == 5
    assert QueryRequest(["cat"], k=5, rerank="model").depth == DEFAULT_RERANK_TOP
    assert QueryRequest(["cat"], k=50, rerank="model", rerank_top=20).depth == 50


def test_the_api_refuses_rerank_top_without_rerank(tmp_path: Path, tiny_encoder: Encoder) -> None:
    """The server and the CLI refused it; the API ignored it, so a forgotten rerank went unnoticed."""
    engine = SearchEngine.build(["a cat sat on the mat", "stocks fell sharply"], tmp_path / "index", encoder=tiny_encoder)
    with pytest.raises(SearchEngineError, match=RERANK_TOP_ALONE):
        engine.search("cat", rerank_top=5)
    with pytest.raises(SearchEngineError, match=RERANK_TOP_ALONE):
        engine.search_batch(["cat"], rerank_top=5)


def test_the_api_refuses_a_fusion_for_a_mode_that_fuses_nothing(tmp_path: Path, tiny_encoder: Encoder) -> None:
    """Only `searchengine eval` refused it (--fusion without --mode hybrid); the API ignored the fusion. The other
    front ends (`query`, the server's /search, the MCP search tool) take no fusion."""
    engine = SearchEngine.build(["a cat sat on the mat", "stocks fell sharply"], tmp_path / "index", encoder=tiny_encoder)
    for mode in ("dense", "keyword"):
        with pytest.raises(SearchEngineError, match=f"and mode='{mode}' fuses nothing: add mode='hybrid'"):
            engine.search("cat", mode=mode, fusion=Fusion("rrf"))
        with pytest.raises(SearchEngineError, match=f"and mode='{mode}' fuses nothing"):
            engine.search_batch(["cat"], mode=mode, fusion=Fusion("rrf"))
    assert engine.default_mode == "hybrid"
    for mode in ("hybrid", None):
        assert engine.search("cat", k=1, mode=mode, fusion=Fusion("rrf"))[0].text == "a cat sat on the mat"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["-k", "0"], "k must be at least 1, not 0"),
        (["--min-score", "nan"], "min_score must be a number, such as 0.4, not nan"),
        (["--where", "lang"], "cannot read the filter 'lang'"),
        (["--mode", "keyword", "-k", "-2"], "k must be at least 1, not -2"),
    ],
)
def test_the_cli_checks_a_request_to_a_server_before_sending_it(options: list[str], message: str) -> None:
    """Before, these went to the server (here none listens, so the CLI said it could not connect)."""
    result = CliRunner().invoke(app, ["query", "cat", "--server", "http://127.0.0.1:9", *options])
    assert result.exit_code != 0
    assert message in " ".join(result.output.split())


def test_help_shows_each_search_option_by_name() -> None:
    """search and search_batch take **options (Unpack[SearchOptions]): type checkers saw the names, help() did not."""
    import inspect
    import pydoc

    from searchengine.engine.index_reader import IndexReader
    from searchengine.engine.query_request import SearchOptions

    for method in (SearchEngine.search, SearchEngine.search_batch, IndexReader.search_batch):
        parameters = inspect.signature(method).parameters
        for name in SearchOptions.__annotations__:
            assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, (method, name)
        assert parameters["mode"].default is None and parameters["rerank_top"].default == DEFAULT_RERANK_TOP
        assert "rerank_top: 'int' = 100" in pydoc.render_doc(method, renderer=pydoc.plaintext)
