"""Reading a manifest's JSON key by key, each key checked for its presence and type, so indexer/commit/manifest.py
builds its records from checked values only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NoReturn

from searchengine.indexer.errors import IndexerError

REBUILD = "rebuild the index from its corpus with `searchengine index`"
"""The fix every corrupt-manifest message ends with."""

_MISSING = object()


class ManifestObject:
    """One JSON object of a manifest, read key by key: a missing key, a null or a value of the wrong type is one
    IndexerError naming the manifest, the key's dotted path and the fix (`fix`: an index's rebuild by default; a
    cluster manifest names its own)."""

    def __init__(self, data: object, where: str, path: Path, fix: str = REBUILD) -> None:
        self.where, self.path, self.fix = where, path, fix
        if not isinstance(data, dict):
            what = f"key '{where}'" if where else "the manifest"
            raise IndexerError(f"{path} is corrupt: {what} should be a JSON object, not {_show(data)}; {fix}")
        self.data: dict[str, Any] = data

    def fail(self, key: str, problem: str, value: object = _MISSING) -> NoReturn:
        shown = "" if value is _MISSING else f" (it is {_show(value)})"
        raise IndexerError(f"{self.path} is corrupt: key '{self._key(key)}' {problem}{shown}; {self.fix}")

    def _key(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def get(self, key: str, kind: str, optional: bool = False) -> Any:  # noqa: ANN401 (any JSON value)
        """The value of `key`; None for an optional key that is absent or null (keys format 1 gained later)."""
        value = self.data.get(key, _MISSING)
        if value is _MISSING or value is None:
            if optional:
                return None
            self.fail(key, "is missing" if value is _MISSING else f"is null; it should be {kind}")
        return value

    def typed(self, key: str, expected: type, kind: str, optional: bool = False) -> Any:  # noqa: ANN401
        value = self.get(key, kind, optional)
        if value is not None and not _is(value, expected):
            self.fail(key, f"should be {kind}", value)
        return value

    def string(self, key: str) -> str:
        return self.typed(key, str, "a string")

    def boolean(self, key: str) -> bool:
        return self.typed(key, bool, "true or false")

    def integer(self, key: str, minimum: int = 0, optional: bool = False) -> int | None:
        number = self.typed(key, int, "a whole number", optional)
        if number is not None and number < minimum:
            self.fail(key, f"should be at least {minimum}", number)
        return number

    def object(self, key: str, optional: bool = False) -> ManifestObject | None:
        value = self.get(key, "a JSON object", optional)
        return None if value is None else ManifestObject(value, self._key(key), self.path, self.fix)

    def mapping(self, expected: type, kind: str) -> dict[str, Any]:
        """Every value of this object, each checked to be `expected` (and not negative, if a number)."""
        for key, value in self.data.items():
            if value is None:
                self.fail(key, f"is null; it should be {kind}")
            if not _is(value, expected):
                self.fail(key, f"should be {kind}", value)
            if expected is int and value < 0:
                self.fail(key, "should be at least 0", value)
        return dict(self.data)


def _is(value: object, expected: type) -> bool:
    """isinstance, except that JSON true/false are not numbers."""
    return isinstance(value, expected) and (expected is bool or not isinstance(value, bool))


def _show(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
