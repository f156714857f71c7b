"""One file's result from `IndexDirectory.verify` (indexer/commit/index_directory.py), in a module of its own so that
the checks verify runs (store_check.py) and the directory both name it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileCheck:
    """One file's result from `IndexDirectory.verify`."""

    role: str
    name: str
    has_checksum: bool
    """False for manifests written before checksums were recorded: only the size could be checked."""
    problem: str | None
    """What is wrong, or None when the file is as the manifest records it."""
    checked: str = ""
    """What was checked, when it is not the manifest's size and checksum."""
    unreadable: bool = False
    """The problem is that this process may not read the file (or the store's WAL files): a matter of permissions,
    which says nothing about whether the file is damaged."""
