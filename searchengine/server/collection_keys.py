"""API keys of single collections, beside the server-wide key: each read-only ("read") or read-write
("read-write"), valid on its collection only. Read from a JSON file (`searchengine serve --collection-keys FILE`):

    {"news": {"read": ["KEY1"], "read-write": ["KEY2"]}, "notes": {"read-write": ["KEY3"]}}

A collection with keys needs one of them (or the server-wide key) for searches and writes alike; a collection
without keys is guarded as the server's own key says (--api-key, --api-key-for)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from searchengine.errors import SearchEngineError

ACCESS = ("read", "read-write")

CollectionKeys = Mapping[str, Mapping[str, bool]]
"""By collection name: each of its keys, and whether it may write."""


def read_collection_keys(path: Path) -> CollectionKeys:
    """The keys in the JSON file at `path`; SearchEngineError naming what is wrong with it."""
    try:
        given = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SearchEngineError(f"cannot read the collection keys in {path} ({exc}); give a JSON file") from None
    return collection_keys(given, str(path))


def collection_keys(given: object, where: str = "the collection keys") -> CollectionKeys:
    """`given` ({name: {"read": [keys], "read-write": [keys]}}) as CollectionKeys, checked."""
    example = 'write {"news": {"read": ["KEY1"], "read-write": ["KEY2"]}}'
    if not isinstance(given, dict):
        raise SearchEngineError(f"{where} must be a JSON object by collection name; {example}")
    keys: dict[str, dict[str, bool]] = {}
    for name, kinds in given.items():
        if not isinstance(kinds, dict) or not set(kinds) <= set(ACCESS):
            raise SearchEngineError(f"{where}: collection {name!r} needs an object of 'read' and 'read-write'; {example}")
        own: dict[str, bool] = {}
        for access, values in kinds.items():
            values = [values] if isinstance(values, str) else values
            if not isinstance(values, list) or not all(isinstance(v, str) and v.strip() for v in values):
                raise SearchEngineError(f"{where}: {name!r} {access} must be a list of non-empty keys; {example}")
            own.update({value: own.get(value, False) or access == "read-write" for value in values})
        keys[str(name)] = own
    return keys
