"""One error root: every exception class the package defines is a SearchEngineError, so catching that one class
catches every problem the library raises on purpose."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from types import ModuleType

from searchengine.indexer.errors import IndexerError, IndexLockedError

import searchengine
from searchengine import SearchEngineError

PACKAGES = ("searchengine", "searchengine.indexer", "searchengine.training")
"""The package and the two folders that install into it (indexer/, training/): in an editable install they live
outside searchengine/, where walking searchengine alone would not find them."""


def every_module() -> Iterator[ModuleType]:
    """Every module of the package, imported (`__main__` would run the command line, so it is left out)."""
    seen = set()
    for name in PACKAGES:
        package = importlib.import_module(name)
        yield package
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{name}."):
            if info.name not in seen and not info.name.endswith(".__main__"):
                seen.add(info.name)
                yield importlib.import_module(info.name)


def defined_exceptions() -> dict[str, type[BaseException]]:
    """Exception classes by qualified name, each found in the module that defines it."""
    return {
        f"{module.__name__}.{name}": value
        for module in every_module()
        for name, value in vars(module).items()
        if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__
    }


def test_the_walk_reaches_every_layer() -> None:
    names = {module.__name__ for module in every_module()}
    for expected in ("searchengine.cli.errors", "searchengine.indexer.commit.index_directory", "searchengine.training.loop"):
        assert expected in names


def test_every_exception_the_package_defines_derives_from_search_engine_error() -> None:
    found = defined_exceptions()
    assert {SearchEngineError, IndexerError, IndexLockedError} <= set(found.values())
    # Ctrl+C stays an interrupt (InterruptedAfterCommit): `except SearchEngineError` or `except Exception` must not
    # swallow it.
    errors = {name: cls for name, cls in found.items() if not issubclass(cls, KeyboardInterrupt)}
    assert [name for name, cls in errors.items() if not issubclass(cls, SearchEngineError)] == []
    assert [name for name, cls in found.items() if name not in errors] == [
        "searchengine.indexer.errors.InterruptedAfterCommit"
    ]


def test_the_root_is_public() -> None:
    assert searchengine.SearchEngineError is SearchEngineError and "SearchEngineError" in searchengine.__all__
