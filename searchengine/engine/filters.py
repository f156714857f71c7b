"""Metadata filter syntax for queries: 'lang=en', 'year>=2020', 'lang in en,de', 'tags contains x',
'title ^= Intro', 'title like Intro%', 'title includes intro', 'tags is empty', 'lang=en or lang=de',
'`my field`=x'."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from searchengine.errors import SearchEngineError
from searchengine.indexer.query.filter_sql import AnyOf, Condition, Filter, Value

Filters = Sequence[str | Condition | AnyOf] | Mapping[str, Any] | str | None
"""Conditions as strings ('year>=2020', 'lang=en or lang=de'), Condition or AnyOf objects, or a {field: value}
mapping for equality. All must hold."""

SYNTAX = (
    "write FIELD OP VALUE with OP one of = != > >= < <= ^= or the words in, contains, like, includes "
    "(e.g. year>=2020, lang in en,de, tags contains news, title like Intro%, title includes Intro), or FIELD is "
    "empty; join alternatives with ' or ', and quote a field name with spaces in backticks (`my field`=x)"
)
_SYMBOL = re.compile(r"\s*(>=|<=|!=|\^=|=|>|<)\s*(.*?)\s*$", re.S)
_WORD = re.compile(r"\s+(in|contains|like|includes)(?:\s+(.*?))?\s*$", re.S | re.I)
_EMPTY = re.compile(r"\s+is\s+empty\s*$", re.I)
_BARE_FIELD = re.compile(r"\s*([^=!<>^\s`\"']+)")
_OR = re.compile(r"(?:^|\s+)or(?:\s+|$)", re.I)


def parse_filter(text: str) -> Filter:
    """'lang=en or year>=2020' -> AnyOf((Condition('lang', '=', 'en'), Condition('year', '>=', 2020)));
    one condition alone comes back as a Condition."""
    parts = _split_outside_quotes(text, _OR)
    if len(parts) == 1:
        return parse_condition(parts[0])
    if any(not part.strip() for part in parts):
        raise SearchEngineError(f"cannot read the filter {text!r}: 'or' needs a condition on each side")
    return AnyOf(tuple(parse_condition(part) for part in parts))


def parse_condition(text: str) -> Condition:
    """'year>=2020' -> Condition('year', '>=', 2020); numbers and true/false are typed, the rest is text
    (quote a value to keep it text: lang="123")."""
    field, rest = _field(text)
    if _EMPTY.fullmatch(rest):
        return Condition(field, "is empty", None)
    symbol = _SYMBOL.match(rest)
    word = None if symbol else _WORD.match(rest)
    if symbol is None and word is None:
        raise SearchEngineError(f"cannot read the filter {text!r}; {SYNTAX}")
    operator, raw = (symbol or word).groups()
    operator = operator.lower()
    if not raw:
        raise SearchEngineError(f"the filter {text!r} has no value after {operator!r}; {SYNTAX}")
    if symbol and raw[0] in "=!<>":
        raise SearchEngineError(
            f"cannot read the filter {text!r}: the value starts with {raw[0]!r}; operators are = != > >= < <= ^=, "
            'and a value that starts with one must be quoted, e.g. note="=x"'
        )
    if operator == "in":
        items = _split_outside_quotes(raw, re.compile(r","))
        if any(not item.strip() for item in items):
            raise SearchEngineError(f"the filter {text!r} has an empty value in its list; write e.g. lang in en,de")
        return Condition(field, "in", tuple(_typed(item.strip()) for item in items))
    if operator in ("^=", "like", "includes"):
        return Condition(field, operator, _unquoted(raw))
    value = _typed(raw)
    if operator not in ("=", "!=", "contains") and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise SearchEngineError(f"the filter {text!r} compares with {raw!r}, which is not a number")
    return Condition(field, operator, value)


def _field(text: str) -> tuple[str, str]:
    """The field name at the start of a condition (bare, or in backticks or double quotes) and the rest."""
    stripped = text.lstrip()
    if stripped[:1] in ("`", '"'):
        close = stripped.find(stripped[0], 1)
        if close < 0:
            raise SearchEngineError(f"cannot read the filter {text!r}: the field name's {stripped[0]} is not closed")
        field = stripped[1:close]
        if not field.strip():
            raise SearchEngineError(f"cannot read the filter {text!r}: the quoted field name is empty")
        return field, stripped[close + 1 :]
    match = _BARE_FIELD.match(stripped)
    if match is None:
        raise SearchEngineError(f"cannot read the filter {text!r}; {SYNTAX}")
    return match.group(1), stripped[match.end() :]


def _split_outside_quotes(text: str, separator: re.Pattern[str]) -> list[str]:
    """`text` split at matches of `separator` that are not inside quotes or backticks."""
    inside, quote = [], None
    for char in text:
        if quote is None and char in "\"'`":
            quote = char
        elif char == quote:
            quote = None
        inside.append(quote is not None)
    parts, start = [], 0
    for match in separator.finditer(text):
        if not inside[match.start()] and match.end() > start:
            parts.append(text[start : match.start()])
            start = match.end()
    parts.append(text[start:])
    return parts


def _unquoted(raw: str) -> str:
    return raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'" else raw


def _typed(raw: str) -> Value:
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        return raw[1:-1]
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if isinstance(value, (int, float, bool)) else raw


def conditions_of(filters: Filters) -> list[Filter]:
    """Normalise any accepted filter form to a list of filters (all must hold)."""
    if filters is None:
        return []
    if isinstance(filters, Mapping):
        return [Condition(str(field), "=", value) for field, value in filters.items()]
    if isinstance(filters, str):
        filters = [filters]
    if not isinstance(filters, Sequence):
        raise SearchEngineError(
            f"filters are a list of conditions such as ['year>=2020'] or a {{field: value}} dict, not {filters!r}"
        )
    for item in filters:
        if not isinstance(item, (str, Condition, AnyOf)):
            raise SearchEngineError(
                f"each filter is one string such as 'year>=2020', not {item!r}; pass one list of strings, e.g. "
                "where=['year>=2020', 'lang=en']"
            )
    return [item if isinstance(item, (Condition, AnyOf)) else parse_filter(item) for item in filters]
