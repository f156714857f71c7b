"""BEIR-style retrieval evaluation: metrics against hand-computed values, exact search, file checks, the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path
from unittest.mock import ANY

import numpy as np
import pytest
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.errors import SearchEngineError
from searchengine.evaluation.retrieval import (
    document_text,
    evaluate_retrieval,
    exact_search,
    query_metrics,
    read_retrieval_set,
    score_rankings,
)

runner = CliRunner()


def test_metrics_of_a_hand_made_ranking() -> None:
    # Relevant: d2 (grade 2) at rank 2, d4 (grade 1) at rank 4, d9 (grade 3) not retrieved; d3 judged 0.
    metrics = query_metrics(["d1", "d2", "d3", "d4"], {"d2": 2, "d4": 1, "d9": 3, "d3": 0})
    dcg = 2 / math.log2(3) + 1 / math.log2(5)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert metrics["ndcg@10"] == pytest.approx(dcg / idcg)
    assert metrics["ndcg@10"] == pytest.approx(0.355436, abs=1e-6)
    assert metrics["recall@100"] == pytest.approx(2 / 3)
    assert metrics["mrr@10"] == pytest.approx(0.5)


def test_cutoffs() -> None:
    ranking = [f"x{i}" for i in range(10)] + ["hit"] + [f"y{i}" for i in range(89)] + ["late"]
    metrics = query_metrics(ranking, {"hit": 1, "late": 1})
    assert metrics["ndcg@10"] == 0.0 and metrics["mrr@10"] == 0.0  # rank 11 is past both cutoffs
    assert metrics["recall@100"] == pytest.approx(0.5)  # rank 11 counts, rank 101 does not
    perfect = query_metrics(["b", "a", "c"], {"a": 1, "b": 3})
    assert perfect == {"ndcg@10": pytest.approx(1.0), "recall@100": 1.0, "mrr@10": 1.0}
    swapped = query_metrics(["a", "b"], {"a": 1, "b": 3})
    assert swapped["ndcg@10"] == pytest.approx((1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3)))
    assert swapped["mrr@10"] == 1.0


def test_averages_skip_queries_without_relevant_judgements() -> None:
    rankings = {"q1": ["a"], "q2": ["x", "b"], "q3": ["c"]}
    scores = score_rankings(rankings, {"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 0}}, documents=5)
    assert scores.queries == 2 and scores.documents == 5
    assert scores.mrr_at_10 == pytest.approx((1 + 0.5) / 2)
    assert scores.ndcg_at_10 == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert scores.recall_at_100 == 1.0


def test_exact_search_order_exclusion_and_top_k() -> None:
    documents = np.array([[1, 0], [0, 1], [1, 1], [-1, 0]], dtype=np.float32)
    queries = np.array([[1, 0.1], [0, 2]], dtype=np.float32)
    assert exact_search(queries, documents, top_k=4) == [[0, 2, 1, 3], [1, 2, 0, 3]]
    assert exact_search(queries, documents, top_k=2) == [[0, 2], [1, 2]]
    assert exact_search(queries, documents, top_k=4, excluded=[0, -1]) == [[2, 1, 3], [1, 2, 0, 3]]
    assert exact_search(queries, documents, top_k=2, excluded=[0, 1]) == [[2, 1], [2, 0]]


def test_exact_search_in_blocks() -> None:
    rng = np.random.default_rng(0)
    documents, queries = rng.normal(size=(50, 8)), rng.normal(size=(7, 8))
    whole = exact_search(queries, documents, top_k=5)
    assert exact_search(queries, documents, top_k=5, score_budget_bytes=4 * 50 * 2) == whole  # 2 queries a block


def write_set(directory: Path, corpus: list[dict], queries: list[dict], qrels: str) -> tuple[Path, Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = directory / "corpus.jsonl", directory / "queries.jsonl", directory / "qrels.tsv"
    paths[0].write_text("".join(json.dumps(row) + "\n" for row in corpus), encoding="utf-8")
    paths[1].write_text("".join(json.dumps(row) + "\n" for row in queries), encoding="utf-8")
    paths[2].write_text(qrels, encoding="utf-8")
    return paths


CORPUS = [
    {"_id": "d1", "title": "Pets", "text": "the cat sat on the mat"},
    {"_id": "d2", "title": "", "text": "stock prices fell as the market rate rose"},
    {"_id": "d3", "text": "bake the bread in a hot oven"},
    {"_id": "q1", "title": "", "text": "the cat sat"},
]
QUERIES = [{"_id": "q1", "text": "the cat sat"}, {"_id": "q2", "text": "market prices"}, {"_id": "q3", "text": "x"}]
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td3\t0\nq2\td2\t1\n"


def test_a_judged_document_missing_from_the_corpus_is_kept_and_scores_0(tmp_path: Path) -> None:
    """As BEIR and MTEB score ArguAna, whose qrels name 5 documents its corpus lacks; qrels naming no document
    of the corpus at all are refused (the ids are of something else)."""
    qrels = QRELS + "q2\tgone\t1\n"
    dataset = read_retrieval_set(*write_set(tmp_path, CORPUS, QUERIES, qrels))
    assert dataset.qrels["q2"] == {"d2": 1, "gone": 1}
    scores = score_rankings({"q1": ["d1"], "q2": ["d2"]}, dataset.qrels, len(CORPUS))
    assert scores.per_query["q2"]["recall@100"] == 0.5 and scores.per_query["q1"]["ndcg@10"] == 1.0
    with pytest.raises(SearchEngineError, match=r"qrels.tsv:2: corpus-id 'gone' is not in the corpus file"):
        read_retrieval_set(*write_set(tmp_path, CORPUS, QUERIES, "query-id\tcorpus-id\tscore\nq1\tgone\t1\n"))


def test_reading_joins_title_and_text(tmp_path: Path) -> None:
    dataset = read_retrieval_set(*write_set(tmp_path, CORPUS, QUERIES, QRELS))
    assert dataset.corpus_texts[:3] == ["Pets the cat sat on the mat", CORPUS[1]["text"], CORPUS[2]["text"]]
    assert dataset.qrels == {"q1": {"d1": 2, "d3": 0}, "q2": {"d2": 1}}
    assert document_text("T", "body") == "T body" and document_text("", " body ") == "body"


def test_evaluation_ignores_identical_ids(tmp_path: Path) -> None:
    dataset = read_retrieval_set(*write_set(tmp_path, CORPUS, QUERIES, QRELS))
    vectors = {
        "Pets the cat sat on the mat": [1.0, 0.0, 0.0],
        CORPUS[1]["text"]: [0.0, 1.0, 0.0],
        CORPUS[2]["text"]: [0.9, 0.0, 0.5],
        "the cat sat": [0.8, 0.0, 0.6],  # closest to d3 (grade 0), then d1
        "market prices": [0.0, 1.0, 0.1],
    }
    embed = lambda texts: np.array([vectors[t] for t in texts], dtype=np.float32)  # noqa: E731
    scores = evaluate_retrieval(embed, dataset)
    # q1: its own id (the corpus copy of the query) is skipped; d3 (grade 0) then d1 (grade 2): MRR 1/2.
    assert scores.per_query["q1"]["mrr@10"] == 0.5
    assert scores.per_query["q1"]["ndcg@10"] == pytest.approx((2 / math.log2(3)) / 2)
    assert scores.per_query["q2"] == {"ndcg@10": 1.0, "recall@100": 1.0, "mrr@10": 1.0}
    assert scores.queries == 2 and scores.documents == 4
    kept = evaluate_retrieval(embed, dataset, ignore_identical_ids=False)
    assert kept.per_query["q1"]["mrr@10"] == pytest.approx(1 / 3)  # q1's own copy now ranks first


@pytest.mark.parametrize(
    ("which", "content", "fragments"),
    [
        ("corpus", '{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": \n', ["corpus.jsonl:2", "not valid JSON"]),
        ("corpus", '{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n', ["corpus.jsonl:2", "used on line 1"]),
        ("corpus", '{"_id": "d1"}\n', ["corpus.jsonl:1", '"text" is missing']),
        ("corpus", "[1, 2]\n", ["corpus.jsonl:1", "expected a JSON object"]),
        ("corpus", "", ["corpus.jsonl", "no lines"]),
        ("queries", '{"_id": "q1", "text": 5}\n', ["queries.jsonl:1", '"text" is a int']),
        ("qrels", "query\tdoc\tscore\nq1\td1\t1\n", ["qrels.tsv:1", "header"]),
        ("qrels", "query-id\tcorpus-id\tscore\nq1\tnope\t1\n", ["qrels.tsv:2", "corpus-id 'nope'"]),
        ("qrels", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq9\td1\t1\n", ["qrels.tsv:3", "query-id 'q9'"]),
        ("qrels", "query-id\tcorpus-id\tscore\nq1\td1\thigh\n", ["qrels.tsv:2", "not an integer"]),
        ("qrels", "query-id\tcorpus-id\tscore\nq1\td1\n", ["qrels.tsv:2", "2 tab-separated fields"]),
        ("qrels", "query-id\tcorpus-id\tscore\nq1\td1\t0\n", ["qrels.tsv", "no query has a judgement with score > 0"]),
        ("qrels", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n", ["qrels.tsv:3", "judged twice"]),
    ],
)
def test_bad_input_names_file_and_line(tmp_path: Path, which: str, content: str, fragments: list[str]) -> None:
    paths = write_set(tmp_path, CORPUS, QUERIES, QRELS)
    {"corpus": paths[0], "queries": paths[1], "qrels": paths[2]}[which].write_text(content, encoding="utf-8")
    with pytest.raises(SearchEngineError) as error:
        read_retrieval_set(*paths)
    for fragment in fragments:
        assert fragment in str(error.value)


def test_missing_file(tmp_path: Path) -> None:
    paths = write_set(tmp_path, CORPUS, QUERIES, QRELS)
    with pytest.raises(SearchEngineError, match="nothing.jsonl: no such file"):
        read_retrieval_set(paths[0], tmp_path / "nothing.jsonl", paths[2])


def test_a_folder_given_for_a_file_is_named_as_a_folder(tmp_path: Path) -> None:
    """`eval retrieval --corpus FOLDER` (a BEIR data set's folder) said "no such file"."""
    paths = write_set(tmp_path, CORPUS, QUERIES, QRELS)
    with pytest.raises(SearchEngineError, match=r": a folder, not the corpus \.jsonl file; give the file in it"):
        read_retrieval_set(tmp_path, paths[1], paths[2])
    with pytest.raises(SearchEngineError, match=r": a folder, not the qrels \.tsv file"):
        read_retrieval_set(paths[0], paths[1], tmp_path)


def test_files_behind_a_byte_order_mark_are_read(tmp_path: Path) -> None:
    """UTF-8 with a byte-order mark (as Excel and Notepad save it): the qrels' header and the first JSON line were
    refused ("the header is '\\ufeffquery-id…'", "not valid JSON")."""
    paths = write_set(tmp_path, CORPUS, QUERIES, QRELS)
    for path in paths:
        path.write_text(path.read_text(encoding="utf-8"), encoding="utf-8-sig")
    assert read_retrieval_set(*paths) == read_retrieval_set(*write_set(tmp_path / "plain", CORPUS, QUERIES, QRELS))


def test_cli_end_to_end(tmp_path: Path, tiny_model: Path) -> None:
    corpus = [
        {"_id": f"d{i}", "text": text}
        for i, text in enumerate(
            ["the cat sat on the mat", "stock prices fell", "bake the bread in a hot oven", "the king and queen"]
        )
    ]
    queries = [{"_id": "a", "text": "the cat sat on the mat"}, {"_id": "b", "text": "bake the bread in a hot oven"}]
    paths = write_set(tmp_path, corpus, queries, "query-id\tcorpus-id\tscore\na\td0\t1\nb\td2\t2\n")
    args = ["eval", "retrieval", "--corpus", paths[0], "--queries", paths[1], "--qrels", paths[2]]
    args += ["--model", tiny_model]
    result = runner.invoke(app, [str(a) for a in [*args, "--json"]])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    # Each query's text is in the corpus under another id: cosine 1, rank 1.
    assert payload["ndcg@10"] == pytest.approx(1.0) and payload["mrr@10"] == pytest.approx(1.0)
    assert payload["recall@100"] == 1.0 and payload["queries"] == 2 and payload["documents"] == 4
    text = runner.invoke(app, [str(a) for a in args])
    assert text.exit_code == 0 and "nDCG@10     1.0000" in text.output and "2 queries, 4 documents" in text.output
    paths[2].write_text("query-id\tcorpus-id\tscore\na\td7\t1\n", encoding="utf-8")
    bad = runner.invoke(app, [str(a) for a in args])
    assert bad.exit_code == 1 and "Traceback" not in bad.output
    message = bad.output.strip()
    assert message.startswith("Error: ") and "\n" not in message and "qrels.tsv:2" in message and "'d7'" in message


def test_an_index_built_from_the_corpus_scores_as_exact_search(tmp_path: Path, tiny_model: Path) -> None:
    """`--index-dir` searches a Flat index built with --id-field/--title-field: the same rankings, so the same scores,
    as exact search over the corpus file; a qrels id the index lacks is named; --corpus and --index-dir exclude; the
    old name --index still works, with a note."""
    paths = write_set(tmp_path, CORPUS, QUERIES, QRELS)
    index = tmp_path / "index"
    build = ["index", paths[0], "-d", index, "--id-field", "_id", "--title-field", "title", "--model", tiny_model]
    assert runner.invoke(app, [str(a) for a in [*build, "-q", "--index", "Flat"]]).exit_code == 0
    common = ["eval", "retrieval", "--queries", paths[1], "--qrels", paths[2], "--json"]
    exact = runner.invoke(app, [str(a) for a in [*common, "--corpus", paths[0], "--model", tiny_model]])
    searched = runner.invoke(app, [str(a) for a in [*common, "--index-dir", index, "--mode", "dense"]])
    assert exact.exit_code == 0 and searched.exit_code == 0, exact.output + searched.output
    exact_scores, searched_scores = json.loads(exact.output), json.loads(searched.output)
    for metric in ("ndcg@10", "recall@100", "mrr@10", "queries", "documents"):
        assert searched_scores[metric] == pytest.approx(exact_scores[metric]), metric
    assert searched_scores["index"] == str(index)
    old = runner.invoke(app, [str(a) for a in [*common, "--index", index, "--mode", "dense"]])
    assert old.exit_code == 0 and json.loads(old.stdout) == {**searched_scores, "seconds": ANY}, old.output
    assert "--index DIR is now --index-dir DIR" in old.stderr
    paths[2].write_text("query-id\tcorpus-id\tscore\nq1\tnot-indexed\t1\n", encoding="utf-8")
    missing = runner.invoke(app, [str(a) for a in [*common, "--index-dir", index]])
    assert (
        missing.exit_code == 1 and "'not-indexed' is not in index" in missing.output and "--id-field" in missing.output
    )
    both = runner.invoke(app, [str(a) for a in [*common, "--index-dir", index, "--corpus", paths[0]]])
    assert both.exit_code == 1 and "either as --corpus FILE or as an --index-dir DIR" in both.output


def test_an_index_is_evaluated_in_each_mode_with_the_fusion_given(tmp_path: Path, tiny_model: Path) -> None:
    """Keyword mode ranks by BM25: 'market prices' finds d2 first and 'the cat sat' its own text (dropped) and
    d1; hybrid reports the fusion it ran with; fusion settings need --mode hybrid, and --mode needs --index-dir."""
    paths = write_set(tmp_path, CORPUS, QUERIES, QRELS)
    index = tmp_path / "index"
    build = ["index", paths[0], "-d", index, "--id-field", "_id", "--title-field", "title", "--model", tiny_model]
    assert runner.invoke(app, [str(a) for a in [*build, "-q"]]).exit_code == 0
    common = ["eval", "retrieval", "--queries", paths[1], "--qrels", paths[2], "--index-dir", index, "--json"]
    keyword = runner.invoke(app, [str(a) for a in [*common, "--mode", "keyword"]])
    assert keyword.exit_code == 0, keyword.output
    scores = json.loads(keyword.output)
    assert scores["mode"] == "keyword" and scores["fusion"] is None
    assert scores["mrr@10"] == 1.0 and scores["recall@100"] == 1.0
    hybrid = runner.invoke(app, [str(a) for a in [*common, "--mode", "hybrid", "--fusion", "minmax", "--depth", "7"]])
    assert hybrid.exit_code == 0, hybrid.output
    scores = json.loads(hybrid.output)
    assert scores["mode"] == "hybrid" and scores["fusion"]["method"] == "minmax" and scores["fusion"]["depth"] == 7
    text = runner.invoke(app, [str(a) for a in common[:-1] + ["--mode", "hybrid", "--fusion", "rrf", "--rrf-k", "10"]])
    assert text.exit_code == 0 and "hybrid (rrf k=10," in text.output, text.output
    minmax_k = runner.invoke(
        app, [str(a) for a in common + ["--mode", "hybrid", "--fusion", "minmax", "--rrf-k", "10"]]
    )
    assert minmax_k.exit_code == 1 and "add --fusion rrf" in minmax_k.output, minmax_k.output
    default = json.loads(runner.invoke(app, [str(a) for a in common]).output)
    assert default["mode"] == "hybrid"  # an index with a keyword index is searched as `query` searches it
    for extra, message in (
        (["--dense-weight", "0.3"], "add --mode hybrid"),
        (["--mode", "dense", "--fusion", "rrf"], "add --mode hybrid"),
    ):
        refused = runner.invoke(app, [str(a) for a in [*common, *extra]])
        assert refused.exit_code == 1 and message in refused.output, refused.output
    exact = ["eval", "retrieval", "--queries", paths[1], "--qrels", paths[2], "--corpus", paths[0], "--mode", "dense"]
    refused = runner.invoke(app, [str(a) for a in [*exact, "--model", tiny_model]])
    assert refused.exit_code == 1 and "give --index-dir DIR" in refused.output
