"""Metadata filter syntax for queries: 'lang=en', 'year>=2020', 'source!=notes.txt'."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from searchengine.indexer.store import Condition
from searchengine.errors import SearchEngineError

_CONDITION = re.compile(r"^\s*([^=!<>\s]+)\s*(>=|<=|!=|=|>|<)\s*(.*?)\s*$")

Filters = Sequence[str | Condition] | Mapping[str, Any] | None
"""Conditions as strings ('year>=2020'), Condition objects, or a {field: value} mapping for equality."""


def parse_condition(text: str) -> Condition:
    """'year>=2020' -> Condition('year', '>=', 2020); numbers and true/false are typed, the rest is text
    (quote a value to keep it text: lang="123")."""
    match = _CONDITION.match(text)
    if match is None or not match.group(3):
        raise SearchEngineError(
            f"cannot read the filter {text!r}; write FIELD OP VALUE with OP one of = != > >= < <=, e.g. year>=2020"
        )
    field, operator, raw = match.groups()
    if raw[0] in "=!<>":
        raise SearchEngineError(
            f"cannot read the filter {text!r}: the value starts with {raw[0]!r}; operators are = != > >= < <=, "
            'and a value that starts with one must be quoted, e.g. note="=x"'
        )
    value = _typed(raw)
    if operator not in ("=", "!=") and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise SearchEngineError(f"the filter {text!r} compares with {raw!r}, which is not a number")
    return Condition(field, operator, value)


def _typed(raw: str) -> Any:
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        return raw[1:-1]
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if isinstance(value, (int, float, bool)) else raw


def conditions_of(filters: Filters) -> list[Condition]:
    """Normalise any accepted filter form to a list of Conditions (all must hold)."""
    if filters is None:
        return []
    if isinstance(filters, Mapping):
        return [Condition(str(field), "=", value) for field, value in filters.items()]
    if isinstance(filters, str):
        filters = [filters]
    return [item if isinstance(item, Condition) else parse_condition(item) for item in filters]
