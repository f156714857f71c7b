"""`searchengine query --mode`, the hybrid text and JSON output, and the keyword index of older indexes through
`info` and `compact`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchengine.cli import app
from tests.searchengine.cli.usage_errors import assert_usage_error
from tests.searchengine.engine.test_hybrid import _drop_keyword_index

runner = CliRunner()


def run(*args: object):  # noqa: ANN201
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def index_dir(tmp_path: Path, tiny_model: Path, sentences: list[str]) -> Path:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    target = tmp_path / "idx"
    assert run("index", corpus, "-d", target, "--model", tiny_model, "-q").exit_code == 0
    return target


def test_the_default_mode_is_hybrid_and_json_gives_both_scores(index_dir: Path) -> None:
    result = run("query", "the cat sat on the mat", "-k", "3", "--json", "-d", index_dir)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["mode"] == "hybrid" and len(payload["hits"]) == 3
    best = payload["hits"][0]
    assert best["text"] == "the cat sat on the mat" and best["found_by"] == ["dense", "keyword"]
    assert best["dense_score"] == pytest.approx(1.0, abs=1e-4) and best["keyword_score"] > 0
    assert all(hit["dense_score"] is not None and hit["keyword_score"] is not None for hit in payload["hits"])


def test_hybrid_text_output_shows_each_sides_score(index_dir: Path) -> None:
    result = run("query", "the cat sat on the mat", "-k", "2", "-d", index_dir)
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()[0]
    assert "(cos 1.0000, bm25 " in first and first.endswith("the cat sat on the mat")
    assert "(hybrid search: fused score, then each side's: cosine and BM25)" in result.stderr


def test_keyword_mode_prints_bm25_and_finds_only_documents_with_a_word(index_dir: Path) -> None:
    result = run("query", "piano", "--mode", "keyword", "--json", "-d", index_dir)
    payload = json.loads(result.stdout)
    assert payload["mode"] == "keyword"
    assert [hit["text"] for hit in payload["hits"]] == ["she played a song on the piano"]
    assert payload["hits"][0]["found_by"] == ["keyword"] and payload["hits"][0]["dense_score"] is None
    text = run("query", "piano", "--mode", "keyword", "-d", index_dir)
    rank, score, bm25_label, bm25, doc_id, *words = text.stdout.split()
    assert (rank, doc_id, " ".join(words)) == ("1", "#9", "she played a song on the piano")
    assert bm25_label == "(bm25" and float(bm25.rstrip(")")) == pytest.approx(payload["hits"][0]["keyword_score"], 1e-3)
    assert 0 < float(score) <= 1  # BM25 over the most the query's words let a document reach


def test_a_keyword_query_no_document_matches_says_so_in_one_line(index_dir: Path) -> None:
    for query in ("zzyzx qwv", '"*" --'):
        result = run("query", query, "--mode", "keyword", "-d", index_dir)
        assert result.exit_code == 0 and result.stdout == ""
        assert result.stderr.count("\n") == 1 and "no document holds a word of" in result.stderr
        assert "--mode hybrid" in result.stderr


def test_dense_mode_prints_the_cosine_as_before(index_dir: Path, sentences: list[str]) -> None:
    result = run("query", sentences[2], "-k", "3", "--mode", "dense", "-d", index_dir)
    rank, score, doc_id, *text = result.stdout.splitlines()[0].split()
    assert (rank, doc_id, " ".join(text)) == ("1", "#2", sentences[2]) and float(score) == pytest.approx(1.0, abs=1e-4)


def test_fts_syntax_in_a_query_is_searched_as_words(index_dir: Path) -> None:
    for query in ['"piano', "piano*", "NEAR(piano song)", "-piano", "piano AND", "(piano OR) NOT"]:
        result = run("query", "--mode", "keyword", "--json", "-d", index_dir, "--", query)
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["hits"][0]["text"] == "she played a song on the piano", query


def test_an_unknown_mode_is_a_usage_error(index_dir: Path) -> None:
    assert_usage_error(run("query", "cat", "--mode", "sparse", "-d", index_dir), "--mode", "sparse")


def test_an_older_index_searches_dense_until_compact_adds_the_keyword_index(index_dir: Path) -> None:
    _drop_keyword_index(index_dir)
    assert "keyword index:          none (written before keyword search)" in run("info", "-d", index_dir).stdout
    plain = run("query", "piano", "--json", "-d", index_dir)
    assert plain.exit_code == 0 and json.loads(plain.stdout)["mode"] == "dense"
    assert "has no keyword index yet; `searchengine compact -d" in plain.stderr
    refused = run("query", "piano", "--mode", "keyword", "-d", index_dir)
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    message = refused.output.strip()
    assert message.startswith("Error: ") and "\n" not in message and "`searchengine compact --index-dir" in message
    compacted = run("compact", "-d", index_dir)
    assert compacted.exit_code == 0 and "Added the keyword index (12 documents)" in compacted.stdout
    assert json.loads(run("query", "piano", "--json", "-d", index_dir).stdout)["mode"] == "hybrid"
    assert "keyword index:          FTS5, BM25" in run("info", "-d", index_dir).stdout
    assert json.loads(run("info", "-d", index_dir, "--json").stdout)["keyword_index"] is True
    assert "Nothing to compact" in run("compact", "-d", index_dir).stdout


def test_a_query_with_a_byte_that_is_not_utf8_is_one_error_line(index_dir: Path) -> None:
    """A Latin-1 "é" typed in a non-UTF-8 terminal reaches Python as the surrogate escape \\udce9."""
    result = run("query", "caf\udce9 cat", "-d", index_dir)
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: the query holds the byte 0xe9, which is not UTF-8; use a UTF-8 terminal or text"
    ]


@pytest.mark.parametrize("mode", ["keyword", "hybrid", "dense"])
def test_a_k_beyond_64_bits_gives_every_match(index_dir: Path, sentences: list[str], mode: str) -> None:
    """k = 2**63 once ended keyword and hybrid search in OverflowError (SQLite's LIMIT is a 64-bit integer)."""
    result = run("query", "the cat sat on the mat", "-k", str(2**63), "--mode", mode, "--json", "-d", index_dir)
    assert result.exit_code == 0, result.output
    assert 0 < len(json.loads(result.stdout)["hits"]) <= len(sentences)


def test_min_score_leaves_a_query_with_no_good_answer_empty_and_says_so_in_one_line(index_dir: Path) -> None:
    result = run("query", "piano song", "--min-score", "1.01", "-d", index_dir)
    assert result.exit_code == 0 and result.stdout == ""
    assert result.stderr.count("\n") == 2  # the hybrid header and the one line
    assert "no hit scores 1.01 or more for 'piano song'" in result.stderr and "--min-score" in result.stderr
    printed = json.loads(run("query", "piano song", "--min-score", "1.01", "--json", "-d", index_dir).stdout)
    assert printed == {"query": "piano song", "mode": "hybrid", "rerank": None, "hits": []}
    every = json.loads(run("query", "piano song", "-k", "5", "--json", "-d", index_dir).stdout)["hits"]
    assert all(0 <= hit["score"] <= 1 for hit in every)  # bounded fusion
    middle = every[2]["score"]
    kept = json.loads(
        run("query", "piano song", "-k", "5", "--min-score", str(middle), "--json", "-d", index_dir).stdout
    )
    assert [hit["id"] for hit in kept["hits"]] == [hit["id"] for hit in every if hit["score"] >= middle]


def test_the_query_words_of_a_snippet_are_bold_on_a_terminal(index_dir: Path) -> None:
    styled = CliRunner().invoke(app, ["query", "piano", "--mode", "keyword", "-d", str(index_dir)], color=True)
    assert "\x1b[1mpiano\x1b[0m" in styled.stdout
    plain = run("query", "piano", "--mode", "keyword", "-d", index_dir)  # not a terminal: no escape codes
    assert "\x1b" not in plain.stdout and "piano" in plain.stdout


def test_a_query_shows_a_hit_whose_stored_metadata_nests_past_the_limit(index_dir: Path) -> None:
    """An index written before metadata nesting was limited may hold such a row; every query finding it failed."""
    (database,) = index_dir.glob("documents.*.db")
    with sqlite3.connect(database) as connection:
        connection.execute(
            "UPDATE documents SET metadata = ? WHERE text = 'the cat sat on the mat'",
            ['{"lang": "en", "d": ' + "[" * 900 + "]" * 900 + "}"],
        )
    connection.close()
    result = run("query", "the cat sat on the mat", "-k", "1", "--json", "-d", index_dir)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["hits"][0]["metadata"] == {
        "lang": "en",
        "unreadable_metadata": '"d" nested more than 64 levels deep, left out; add the document again with flatter '
        "metadata to show it",
    }
    filtered = run("query", "the cat sat on the mat", "-k", "1", "--where", "lang=en", "-d", index_dir)
    assert filtered.exit_code == 0 and filtered.stdout.rstrip().endswith("the cat sat on the mat"), filtered.output
