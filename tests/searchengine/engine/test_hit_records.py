"""A hit as the JSON object `query --json`, /search and the MCP tool give: its keys in order, its values as lists
and plain values, JSON as they are."""

from __future__ import annotations

import json

from searchengine.engine.hit_records import hit_record, result_record
from searchengine.engine.search import Hit
from searchengine.engine.snippets import Highlight


def test_a_hit_record_holds_every_field_in_order() -> None:
    sections = [[0, "Guide"], [20, "Guide › Install"]]
    hit = Hit(
        7, 0.75, "The guide starts. Install it with pip, then run it.", "guide.md", 3, {"sections": sections},
        count=2, external_id="g-1", retrieval_score=0.5, found_by=("dense", "keyword"), dense_score=0.7,
        keyword_score=1.5, span=(18, 51), highlight=Highlight((18, 51), ((18, 25),)),
    )  # fmt: skip
    record = hit_record(hit)
    assert list(record) == [
        "id", "external_id", "text", "snippet", "location", "score", "source", "line", "metadata", "count", "cluster",
        "retrieval_score", "found_by", "dense_score", "keyword_score", "span", "highlight",
    ]  # fmt: skip
    assert record["snippet"] == "…Install it with pip, then run it."
    assert record["location"] == "Guide"
    assert record["metadata"] == {"sections": sections} and record["cluster"] is None
    assert record["found_by"] == ["dense", "keyword"] and record["span"] == [18, 51]
    assert record["highlight"] == {"span": [18, 51], "words": [[18, 25]]}
    assert json.loads(json.dumps(record)) == record  # lists, not tuples: what a client reads back


def test_a_result_record_names_its_query_mode_and_rerank() -> None:
    hits = [Hit(1, 0.5, "one"), Hit(2, 0.25, "two")]
    record = result_record("q", "hybrid", hits, {"model": "m", "top": 5})
    assert [hit["id"] for hit in record["hits"]] == [1, 2]
    assert {key: record[key] for key in ("query", "mode", "rerank")} == {
        "query": "q", "mode": "hybrid", "rerank": {"model": "m", "top": 5}
    }  # fmt: skip
    assert record["hits"][0]["highlight"] is None and record["hits"][0]["span"] is None
