"""Metadata filters in the Mongo-style operators that chroma, PGVector and Pinecone take through LangChain
(`{"n": {"$in": [1, 2]}}`, `{"$or": [{"lang": "en"}, {"year": {"$gte": 2020}}]}`), as the engine's filters.

The engine's filters are conditions that must all hold, each one condition or an 'or' of conditions; so an `$or`
branch holds one condition (or another `$or`), and any other nesting is refused with the reason. As in the engine,
a condition on a field matches only documents that have it: `$ne` and `$nin` leave out documents without the
field (Mongo's would keep them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from searchengine.errors import SearchEngineError
from searchengine.indexer.query.filter_sql import AnyOf, Condition, Filter

COMPARISONS = {"$eq": "=", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
"""Mongo's comparison operators -> the engine's."""
OPERATORS = (*COMPARISONS, "$in", "$nin", "$and", "$or")


def operator_filters(given: Mapping[str, Any]) -> list[Filter]:
    """The engine's filters (all must hold) for a filter dict: `{field: value}` for equality, `{field: {"$op":
    value}}` for the operators, `$and` and `$or` over lists of such dicts."""
    filters: list[Filter] = []
    for key, value in given.items():
        if key == "$and":
            for part in _parts(key, value):
                filters += operator_filters(part)
        elif key == "$or":
            filters.append(_any_of(_parts(key, value)))
        elif isinstance(key, str) and key.startswith("$"):
            raise SearchEngineError(
                f"unknown filter operator {key!r} outside a field; use $and or $or there, or a field's name "
                f"({', '.join(OPERATORS)} go inside it: {{'year': {{'$gte': 2020}}}})"
            )
        else:
            filters += _field_conditions(str(key), value)
    return filters


def _field_conditions(field: str, value: Any) -> list[Condition]:
    """The conditions one field's value asks for: a plain value (equality) or a dict of operators."""
    if not isinstance(value, Mapping):
        return [Condition(field, "=", value)]
    if not value:
        raise SearchEngineError(f"the filter on {field!r} is an empty dict; give an operator such as {{'$eq': 1}}")
    conditions = []
    for operator, operand in value.items():
        if operator in COMPARISONS:
            conditions.append(Condition(field, COMPARISONS[operator], operand))
        elif operator == "$in":
            conditions.append(Condition(field, "in", tuple(_values(field, operator, operand))))
        elif operator == "$nin":
            conditions += [Condition(field, "!=", item) for item in _values(field, operator, operand)]
        else:
            raise SearchEngineError(
                f"unknown filter operator {operator!r} on {field!r}; use one of {', '.join(OPERATORS[:-2])}"
            )
    return conditions


def _values(field: str, operator: str, operand: Any) -> list[Any]:
    if isinstance(operand, (str, bytes)) or not isinstance(operand, Sequence):
        raise SearchEngineError(
            f"{operator} on {field!r} takes a list of values, not {operand!r}: {{{field!r}: {{{operator!r}: [1, 2]}}}}"
        )
    return list(operand)


def _parts(operator: str, value: Any) -> list[Mapping[str, Any]]:
    """The filter dicts an `$and` or `$or` joins."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
        raise SearchEngineError(f"{operator} takes a non-empty list of filter dicts, not {value!r}")
    for part in value:
        if not isinstance(part, Mapping):
            raise SearchEngineError(f"{operator} takes a list of filter dicts; {part!r} is not one")
    return list(value)


def _any_of(parts: list[Mapping[str, Any]]) -> AnyOf:
    """One 'or' of the conditions of `parts`, each of which must come to one condition (or an 'or')."""
    conditions: list[Condition] = []
    for part in parts:
        filters = operator_filters(part)
        if len(filters) != 1:
            raise SearchEngineError(
                f"each branch of $or must be one condition, but {dict(part)!r} holds {len(filters)}; the filters "
                "here are conditions that all hold, each one condition or an $or of single conditions"
            )
        only = filters[0]
        conditions += only.conditions if isinstance(only, AnyOf) else (only,)
    return AnyOf(tuple(conditions))
