"""A retrieval mode is one class and one registration (searchengine.engine.mode_registry): a toy mode registered
here is offered by the server (/info) and the search page, searched through /search, the page and `query --mode`,
and gone once it is removed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.engine.hybrid import keyword_rankings
from searchengine.engine.mode_registry import MODES, RankRequest, RetrievalMode, register_mode
from searchengine.engine.search import Scored
from searchengine.errors import SearchEngineError
from searchengine.server.app import create_app
from searchengine.server.served_index import ServedIndex
from tests.searchengine.cli.usage_errors import assert_usage_error


class WorstWordsFirst(RetrievalMode):
    """Keyword search's candidates, the weakest first: a ranking no built-in mode gives."""

    name = "toy"
    description = "keyword candidates, the weakest first"
    label = "toy (weakest words first)"
    score_name = "toy score"
    short_score_name = "toy"
    sides = ("keyword",)
    side_scores = ("keyword",)

    def rank(self, request: RankRequest) -> list[list[Scored]]:
        return [
            ranking[::-1] for ranking in keyword_rankings(request.store, request.texts, request.k, request.matching)
        ]


@pytest.fixture
def toy() -> Iterator[RetrievalMode]:
    mode = register_mode(WorstWordsFirst())
    yield mode
    del MODES[mode.name]


def test_a_registered_mode_is_offered_and_searched_by_the_server(toy: RetrievalMode, served: ServedIndex) -> None:
    with TestClient(create_app(served)) as client:
        server = client.get("/info").json()["server"]
        assert server["modes"] == ["dense", "keyword", "hybrid", "mmr", "toy"]
        assert server["mode_details"]["toy"] == {
            "label": "toy (weakest words first)",
            "score_name": "toy score",
            "sides": ["keyword"],
            "side_scores": ["keyword"],
        }
        keyword = client.get("/search", params={"q": "cat piano password market", "k": 3, "mode": "keyword"}).json()
        reversed_ = client.post(
            "/search", json={"queries": ["cat piano password market"], "k": 3, "mode": "toy"}
        ).json()
    result = reversed_["results"][0]
    assert result["mode"] == "toy" and len(result["hits"]) == len(keyword["hits"]) == 3
    assert [hit["id"] for hit in result["hits"]] == [hit["id"] for hit in keyword["hits"]][::-1]


def test_a_registered_mode_is_searched_by_the_cli_and_gone_once_removed(tmp_path: Path, tiny_model: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a piano\na piano and a piano song\nthe cat\na dog\nan oven\nthe rain\n", encoding="utf-8")
    runner = CliRunner()
    index = ["-d", str(tmp_path / "idx")]
    assert runner.invoke(app, ["index", str(corpus), *index, "--model", str(tiny_model), "-q"]).exit_code == 0
    mode = register_mode(WorstWordsFirst())
    try:
        found = {
            mode: runner.invoke(app, ["query", "piano song", "--mode", mode, "--json", *index])
            for mode in ("keyword", "toy")
        }
        assert all(result.exit_code == 0 for result in found.values()), found["toy"].output
        keyword, toy = (json.loads(found[mode].stdout) for mode in ("keyword", "toy"))
        assert toy["mode"] == "toy" and len(toy["hits"]) == 2
        assert [hit["id"] for hit in toy["hits"]] == [hit["id"] for hit in keyword["hits"]][::-1]
        shown = runner.invoke(app, ["query", "piano song", "--mode", "toy", *index])
        assert shown.exit_code == 0 and "(bm25 " in shown.output, shown.output
    finally:
        del MODES[mode.name]
    assert_usage_error(runner.invoke(app, ["query", "piano", "--mode", "toy", *index]), "--mode", "'toy' is not one of")


def test_a_name_is_registered_once(toy: RetrievalMode) -> None:
    with pytest.raises(SearchEngineError, match="a retrieval mode named 'toy' is already registered"):
        register_mode(WorstWordsFirst())


def test_the_search_page_offers_a_registered_mode_and_shows_its_scores(toy: RetrievalMode, page) -> None:  # noqa: ANN001
    assert page.locator("#mode option").all_inner_texts()[-1] == "toy (weakest words first)"
    page.select_option("#mode", "toy")
    page.fill("#q", "cat piano password market")
    page.press("#q", "Enter")
    page.wait_for_selector("li.hit")
    assert ", toy" in page.inner_text("#status") and "mode=toy" in page.url
    meta = page.locator("li.hit .meta").first.inner_text()
    assert "BM25 " in meta and "found by" not in meta  # the toy shows its one side's score
