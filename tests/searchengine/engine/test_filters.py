"""Filter syntax: FIELD OP VALUE, typed values, clear errors."""

from __future__ import annotations

import pytest

from searchengine.indexer.filter_sql import Condition
from searchengine.errors import SearchEngineError
from searchengine.engine.filters import conditions_of, parse_condition


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("lang=en", Condition("lang", "=", "en")),
        ("year>=2020", Condition("year", ">=", 2020)),
        ("score < 0.5", Condition("score", "<", 0.5)),
        ("draft!=true", Condition("draft", "!=", True)),
        ('code="123"', Condition("code", "=", "123")),
        ("title=two words", Condition("title", "=", "two words")),
        ("note=null", Condition("note", "=", "null")),
    ],
)
def test_parse_condition(text: str, expected: Condition) -> None:
    assert parse_condition(text) == expected


@pytest.mark.parametrize("text", ["lang", "=en", "year>=", "year=>2020 x"])
def test_malformed_conditions(text: str) -> None:
    with pytest.raises(SearchEngineError):
        parse_condition(text)


def test_comparison_needs_a_number() -> None:
    with pytest.raises(SearchEngineError, match="not a number"):
        parse_condition("lang>en")


def test_all_forms_normalise_to_conditions() -> None:
    condition = Condition("a", "=", 1)
    assert conditions_of(None) == []
    assert conditions_of({"lang": "en", "n": 2}) == [Condition("lang", "=", "en"), Condition("n", "=", 2)]
    assert conditions_of("x>1") == [Condition("x", ">", 1)]
    assert conditions_of(["x>1", condition]) == [Condition("x", ">", 1), condition]
