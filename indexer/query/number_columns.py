"""Numeric fields as columns in memory, kept per read snapshot (as Lucene keeps doc values per segment): a filter
that only compares numbers (`year >= 2020`, `id <= 5000`, `year in 2019,2020`) is answered with numpy over each
field's column, read from SQLite once per snapshot, instead of a scan of the table for every filter not seen
before. Anything else (text, lists, true/false, null, numbers beyond 2**53) is left to SQL (indexer/query/filter_sql.py),
so both give the same ids."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from searchengine.indexer.query.filter_sql import (
    COMPARISONS,
    AnyOf,
    Condition,
    FieldKinds,
    Filter,
    json_path,
    metadata_key,
)

EXACT = 2**53
"""Integers up to this size are exact as float64; a field or value beyond it goes to SQL."""
NUMBER_COLUMNS = ("id", "line")
"""Columns of the documents table that hold numbers (or null)."""
MAX_FIELDS = 8
"""How many fields a snapshot keeps as columns (8 bytes a document each, plus the ids)."""

Fetch = Callable[[str, list[object]], list[tuple]]
"""Runs a query on the store's read snapshot: (sql, parameters) -> rows."""


class NumberColumns:
    """The numeric columns of one read snapshot of the documents table, loaded on first use."""

    def __init__(self, table: str, fetch: Fetch, kinds_of: FieldKinds) -> None:
        self._table = table
        self._fetch = fetch
        self._kinds_of = kinds_of
        self._ids: np.ndarray | None = None
        self._columns: dict[str, np.ndarray | None] = {}

    def matching(self, filters: Sequence[Filter]) -> np.ndarray | None:
        """Ids (ascending) of the documents meeting every filter, None where a filter is not a comparison of
        numbers with a numeric field (the caller asks SQL then)."""
        groups = [item.conditions if isinstance(item, AnyOf) else (item,) for item in filters]
        if not groups or any(not group for group in groups):
            return None
        if not all(self._numeric(condition) for group in groups for condition in group):
            return None
        columns = {condition.field: self._column(condition.field) for group in groups for condition in group}
        if any(column is None for column in columns.values()):
            return None
        assert self._ids is not None
        keep = np.ones(len(self._ids), dtype=bool)
        for group in groups:
            either = np.zeros(len(self._ids), dtype=bool)
            for condition in group:
                either |= _holds(columns[condition.field], condition)
            keep &= either
        ids = self._ids[keep]
        ids.setflags(write=False)
        return ids

    def _numeric(self, condition: Condition) -> bool:
        """Whether a condition compares numbers with a field that holds numbers only (or null)."""
        if condition.operator not in (*COMPARISONS, "in"):
            return False
        values = condition.value if condition.operator == "in" else (condition.value,)
        if not isinstance(values, (tuple, list)) or not values or not all(map(_exact_number, values)):
            return False
        key = metadata_key(condition.field)
        if key is None:
            return condition.field in NUMBER_COLUMNS
        kinds = self._kinds_of(key)  # an unknown field raises, as SQL's path does
        return "number" in kinds and kinds <= {"number", "null"}

    def _column(self, field: str) -> np.ndarray | None:
        """A field's values by document (NaN where a document has none), None where one is not exact as a
        float64; read once per snapshot."""
        if field in self._columns:
            return self._columns[field]
        if len(self._columns) >= MAX_FIELDS:
            self._columns.pop(next(iter(self._columns)))
        if self._ids is None:
            rows = self._fetch(f"SELECT id FROM {self._table} ORDER BY id", [])
            self._ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        if field == "id":
            column = self._ids.astype(np.float64) if not len(self._ids) or np.abs(self._ids).max() <= EXACT else None
        else:
            key = metadata_key(field)
            target, parameters = (field, []) if key is None else ("json_extract(metadata, ?)", [json_path(key)])
            rows = self._fetch(f"SELECT {target} FROM {self._table} ORDER BY id", parameters)
            values = [row[0] for row in rows]
            column = None
            if len(values) == len(self._ids) and all(value is None or _exact_number(value) for value in values):
                column = np.array([math.nan if value is None else value for value in values], dtype=np.float64)
        self._columns[field] = column
        return column


def _exact_number(value: object) -> bool:
    """A finite int or float that float64 holds exactly enough to compare as SQLite does (no bools)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -EXACT <= value <= EXACT
    return isinstance(value, float) and math.isfinite(value)


def _holds(column: np.ndarray, condition: Condition) -> np.ndarray:
    """Where the condition holds on a column; a missing value (NaN) never does, as NULL in SQL."""
    value = condition.value
    with np.errstate(invalid="ignore"):
        if condition.operator == "in":
            return np.isin(column, np.array(value, dtype=np.float64))
        compare = {
            "=": np.equal,
            "!=": np.not_equal,
            ">": np.greater,
            ">=": np.greater_equal,
            "<": np.less,
            "<=": np.less_equal,
        }[condition.operator]
        held = compare(column, float(value))
    return held & ~np.isnan(column) if condition.operator == "!=" else held
