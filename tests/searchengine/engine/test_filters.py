"""Filter syntax: FIELD OP VALUE, typed values, clear errors."""

from __future__ import annotations

import pytest
from searchengine.indexer.query.filter_sql import AnyOf, Condition

from searchengine.engine.filters import conditions_of, parse_condition, parse_filter
from searchengine.errors import SearchEngineError


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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("lang in en,de", Condition("lang", "in", ("en", "de"))),
        ("year IN 2019, 2020", Condition("year", "in", (2019, 2020))),
        ('code in "1,2",3', Condition("code", "in", ("1,2", 3))),
        ("tags contains news", Condition("tags", "contains", "news")),
        ("title ^= Intro", Condition("title", "^=", "Intro")),
        ("title like Intro%", Condition("title", "like", "Intro%")),
        ("title includes to c", Condition("title", "includes", "to c")),
        ("tags is empty", Condition("tags", "is empty", None)),
        ("`my field` IS  Empty", Condition("my field", "is empty", None)),
        ('title ^= "123"', Condition("title", "^=", "123")),
        ("`my field`=x", Condition("my field", "=", "x")),
        ('"my field" >= 3', Condition("my field", ">=", 3)),
        ("lang=en or lang=de", AnyOf((Condition("lang", "=", "en"), Condition("lang", "=", "de")))),
        ("lang=en OR year>2020", AnyOf((Condition("lang", "=", "en"), Condition("year", ">", 2020)))),
        ('title="this or that"', Condition("title", "=", "this or that")),
        ("orange=1", Condition("orange", "=", 1)),
    ],
)
def test_parse_richer_filters(text: str, expected: object) -> None:
    assert parse_filter(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("lang=en or", "'or' needs a condition on each side"),
        ("or lang=en", "'or' needs a condition on each side"),
        ("lang in", "no value after 'in'"),
        ("lang in en,,de", "empty value"),
        ("`my field=x", "is not closed"),
        ("``=x", "quoted field name is empty"),
        ("year>=abc", "not a number"),
    ],
)
def test_malformed_richer_filters(text: str, message: str) -> None:
    with pytest.raises(SearchEngineError, match=message):
        parse_filter(text)


def test_strings_may_hold_or_groups() -> None:
    assert conditions_of(["lang=en or lang=de", "year>1"]) == [
        AnyOf((Condition("lang", "=", "en"), Condition("lang", "=", "de"))),
        Condition("year", ">", 1),
    ]
