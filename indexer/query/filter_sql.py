"""Metadata filters as parameterised SQL over the document store: typed, so numbers compare as numbers, and
refused with a one-line reason when a condition could only match all or nothing by accident."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from searchengine.indexer.errors import FieldKindError, IndexerError, UnknownFieldError

Value = str | int | float | bool | None

COMPARISONS = ("=", "!=", ">", ">=", "<", "<=")
FILTER_OPERATORS = (*COMPARISONS, "in", "contains", "^=", "like", "includes", "is empty")
COLUMN_TYPES = {
    "id": "number",
    "external_id": "text",
    "source": "text",
    "line": "number",
    "text": "text",
}
"""Filterable fields that are columns, and what they hold; any other field name is a metadata key."""
METADATA_PREFIX = "metadata."
"""A field named `metadata.KEY` is always the metadata key KEY, also one named as a column: a document's own
"source" key is `metadata.source`, where `source` is the file the document came from."""
_INT64 = (-(2**63), 2**63 - 1)
JSON_KINDS = {
    "integer": "number",
    "real": "number",
    "text": "text",
    "true": "true/false",
    "false": "true/false",
    "array": "list",
    "object": "object",
    "null": "null",
}
"""SQLite's json_type names -> the kinds filter messages speak of."""


@dataclass(frozen=True)
class Condition:
    """A metadata filter such as year >= 2020: `field` is a column in COLUMN_TYPES or a metadata key.

    `value` is one plain value, or a tuple of them for `in`; `contains` looks inside list fields, `^=` is a
    text prefix, `includes` a piece of text anywhere in it (case-sensitive) and `like` a SQL LIKE pattern (% any
    run, _ one character; ASCII case-insensitive); `is empty` (value None) holds where the field is missing, null,
    empty text or an empty list, on any field name. On a metadata key a number matches only numbers and text only
    text, whatever else the key holds in other documents."""

    field: str
    operator: str
    value: Value | tuple[Value, ...]


@dataclass(frozen=True)
class AnyOf:
    """Conditions of which at least one must hold: `lang=en or lang=de`."""

    conditions: tuple[Condition, ...]


Filter = Condition | AnyOf
FieldKinds = Callable[[str], set[str]]
"""A metadata key -> the kinds its stored values have ('number', 'text', 'list', ...); empty when none has it."""


MAX_JOINED = 500
"""Conditions one 'or' joins, and filters that must all hold: SQLite nests each in its expression tree, at most 1000
deep (past it the query failed, which read as a corrupt store); `FIELD in A,B,C` takes any number of values."""


def where_clause(
    filters: Sequence[Filter], kinds_of: FieldKinds, indexed: frozenset[str] = frozenset()
) -> tuple[str, list[object]]:
    """The SQL condition (over the documents table) that every filter holds, and its parameters; conditions on
    the metadata fields in `indexed` are written so their indexes serve them (indexer/tables/field_indexes.py)."""
    if len(filters) > MAX_JOINED:
        raise IndexerError(
            f"{len(filters)} filters must all hold, more than {MAX_JOINED}; join values of one field "
            "with in (FIELD in A,B,C)"
        )
    clauses, parameters = [], []
    for item in filters:
        group = item.conditions if isinstance(item, AnyOf) else (item,)
        if not group:
            raise IndexerError("an 'or' filter needs at least one condition")
        if len(group) > MAX_JOINED:
            field = group[0].field if isinstance(group[0], Condition) else "FIELD"
            raise IndexerError(
                f"a filter joins {len(group)} conditions with 'or', more than {MAX_JOINED}; write {field} in "
                "A,B,C for many values of one field"
            )
        parts = []
        for condition in group:
            sql, values = _condition_sql(condition, kinds_of, indexed)
            parts.append(sql)
            parameters.extend(values)
        clauses.append(parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")")
    return " AND ".join(clauses) or "1", parameters


def metadata_key(field: str) -> str | None:
    """The metadata key a filter's `field` names (METADATA_PREFIX taken off); None where it names a column."""
    if field.startswith(METADATA_PREFIX):
        return field[len(METADATA_PREFIX) :]
    return None if field in COLUMN_TYPES else field


def field_name(key: str) -> str:
    """How a filter names metadata key `key`: `metadata.KEY` where a column has its name, else the key itself."""
    return METADATA_PREFIX + key if key in COLUMN_TYPES else key


def json_path(key: str) -> str:
    """The JSON path of a top-level metadata key, refusing names that would need escaping (SQLite ends a path at a
    NUL, so that one too: it read as a broken path, reported as a corrupt store)."""
    if not key or any(ch in key for ch in '"\\\x00'):
        raise IndexerError(
            f"field name {key!r} cannot be filtered on; use names without quotes, backslashes or NUL characters"
        )
    return f'$."{key}"'


def path_literal(key: str) -> str:
    """The JSON path of metadata key `key` as an SQL string literal: an expression index on a field
    (indexer/tables/field_indexes.py) serves only a query that writes the same expression, which a bound parameter
    never matches."""
    return "'" + json_path(key).replace("'", "''") + "'"


def _condition_sql(
    condition: Condition, kinds_of: FieldKinds, indexed: frozenset[str] = frozenset()
) -> tuple[str, list[object]]:
    operator = condition.operator
    if operator not in FILTER_OPERATORS:
        raise IndexerError(f"unknown operator {operator!r}; use one of {' '.join(FILTER_OPERATORS)}")
    if operator == "is empty":
        return _empty_sql(condition.field)
    values = _checked_values(condition)
    key = metadata_key(condition.field)
    if key is None:
        target, prefix = condition.field, []
        kinds = {COLUMN_TYPES[condition.field]}
    else:
        path = json_path(key)
        kinds = kinds_of(key)
        if not kinds:
            raise UnknownFieldError(f"no document has a field {condition.field!r}; name a field the documents have")
        target, prefix = "json_extract(metadata, ?)", [path]
    _check_kinds(condition, values, kinds)
    if key is not None and key in indexed and operator != "contains":
        return _indexed_sql(key, operator, values)
    if operator == "contains":
        return "EXISTS (SELECT 1 FROM json_each(metadata, ?) WHERE json_each.value = ?)", [*prefix, values[0]]
    if operator == "in":
        sql, parameters = f"{target} IN ({', '.join('?' * len(values))})", [*prefix, *values]
    elif operator == "^=":
        sql, parameters = f"substr({target}, 1, ?) = ?", [*prefix, len(values[0]), values[0]]
    elif operator == "like":
        sql, parameters = f"{target} LIKE ?", [*prefix, values[0]]
    elif operator == "includes":
        sql, parameters = f"instr({target}, ?) > 0", [*prefix, values[0]]
    else:
        sql, parameters = f"{target} {operator} ?", [*prefix, values[0]]
    mixed = len(kinds - {"null"}) > 1  # a key of one kind needs no guard: _check_kinds refused other values
    types = _same_kind_types(values) if prefix and mixed else None
    if types is None:
        return sql, parameters
    return f"(json_type(metadata, ?) IN ({', '.join('?' * len(types))}) AND {sql})", [*prefix, *types, *parameters]


def _empty_sql(field: str) -> tuple[str, list[object]]:
    """Where `field` is missing, null, empty text or an empty list (a field no document has is empty in all)."""
    key = metadata_key(field)
    if key is None:
        return f"coalesce({field}, '') = ''", []
    path = json_path(key)
    sql = (
        "(CASE coalesce(json_type(metadata, ?), 'null') WHEN 'null' THEN 1 WHEN 'text' THEN json_extract(metadata, ?) "
        "= '' WHEN 'array' THEN json_array_length(metadata, ?) = 0 ELSE 0 END)"
    )
    return sql, [path, path, path]


def _indexed_sql(key: str, operator: str, values: list[Value]) -> tuple[str, list[object]]:
    """A condition on an indexed metadata field, written with the expressions of its index so SQLite seeks it:
    the JSON types the condition may match (as for a field of mixed kinds: _same_kind_types), then the value."""
    path = path_literal(key)
    target = f"json_extract(metadata, {path})"
    if operator == "in":
        sql, parameters = f"{target} IN ({', '.join('?' * len(values))})", list(values)
    elif operator == "^=":
        sql, parameters = f"substr({target}, 1, ?) = ?", [len(values[0]), values[0]]
    elif operator == "like":
        sql, parameters = f"{target} LIKE ?", [values[0]]
    elif operator == "includes":
        sql, parameters = f"instr({target}, ?) > 0", [values[0]]
    else:
        sql, parameters = f"{target} {operator} ?", [values[0]]
    types = _same_kind_types(values)
    if types is None:
        return sql, parameters
    return f"(json_type(metadata, {path}) IN ({', '.join('?' * len(types))}) AND {sql})", [*types, *parameters]


def _same_kind_types(values: list[Value]) -> tuple[str, ...] | None:
    """The JSON types a metadata value may have for a condition on `values` to hold: a number matches only numbers
    and text only text (SQLite orders every text above every number, so `year >= 3000` held for year "unknown", and
    reads true as 1). None (no restriction) where a value is true/false, which keeps SQLite's meaning."""
    types: set[str] = set()
    for value in values:
        kind = _kind(value)
        if kind not in ("number", "text"):
            return None
        types.update(json_type for json_type, named in JSON_KINDS.items() if named == kind)
    return tuple(sorted(types))


def _checked_values(condition: Condition) -> list[Value]:
    """The condition's values as a list, each a plain value SQLite can compare (a filter value of the wrong
    shape is the caller's mistake, named as such)."""
    shown = f"{condition.field} {condition.operator} {condition.value!r}"
    if condition.operator == "in":
        if not isinstance(condition.value, (tuple, list)) or not condition.value:
            raise IndexerError(f"the filter {shown} needs a list of values for 'in', e.g. lang in en,de")
        values = list(condition.value)
    else:
        values = [condition.value]
    for value in values:
        if value is None:
            raise IndexerError(
                f"the filter {shown} compares with None (null), which no value equals, so it would match nothing; "
                f"to find documents without the field, write '{condition.field} is empty'"
            )
        if not isinstance(value, (str, int, float, bool)):
            raise IndexerError(
                f"the filter {shown} has a value of type {type(value).__name__}; a filter value is text, a number "
                "or true/false (to look inside a list field write FIELD contains VALUE)"
            )
        if isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value <= _INT64[1]:
            raise IndexerError(
                f"the filter {shown} holds the integer {value}, beyond the 64-bit range stored numbers have; "
                "use a smaller number"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise IndexerError(f"the filter {shown} compares with {value}, which is not a finite number")
        if isinstance(value, str) and "\x00" in value:
            raise IndexerError(f"the filter {shown} holds a NUL character; remove it")
    if condition.operator in ("^=", "like", "includes") and not isinstance(values[0], str):
        raise IndexerError(f"the filter {shown} needs text to match ('{condition.operator}' works on text)")
    return values


def _kind(value: Value) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "number"
    return "text"


def _check_kinds(condition: Condition, values: list[Value], kinds: set[str]) -> None:
    """Refuse a condition whose value can never equal or order with what the field holds."""
    field, operator = condition.field, condition.operator
    held = " and ".join(sorted(kinds))
    if operator == "contains":
        if "list" not in kinds:
            raise FieldKindError(
                f"'{field} contains ...' looks inside lists, but {field!r} holds {held}; use = or like instead"
            )
        return
    if operator in ("^=", "like", "includes"):
        if "text" not in kinds:
            raise FieldKindError(f"'{operator}' matches text, but {field!r} holds {held}; use = < > instead")
        return
    for value in values:
        kind = _kind(value)
        if kind in kinds or (kind == "true/false" and "number" in kinds):
            continue
        example = '"2004"' if kind == "number" else "2004"
        raise FieldKindError(
            f"the filter {field} {operator} {value!r} compares {kind} with the field {field!r}, which holds "
            f"{held}: it could never match. Compare {held} with {held}"
            + (f" (quote a value to make it text, e.g. {field}={example})" if "text" in kinds else "")
        )
