"""Adapted models kept inside an index directory (`searchengine adapt`): `adapted-<method>.<number>/`, the hidden
siblings a model is written through (`.adapted-....partial-<pid>`, `.old-<pid>`), the scratch folder an adapt
keeps its copy of the documents in while it trains (`.adapted-....scratch-<pid>`: inside the index, under the
same claim, never in the system's temporary folder, where a killed adapt left the index's texts and metadata for
good), and the claim file an adapt in progress holds (`.adapted-<method>.<number>.claim`).

An adapt claims its number before it trains, as a merge claims its segment file: the claim is created
exclusively and share-locked (flock), so a writer's clean-up leaves a model being trained or about to be
committed alone. Once that process ends, the lock goes with it, and the next clean-up removes every folder of
that number that the committed manifest does not name: what an adapt killed between saving its model and its
commit leaves behind (tens of MB each)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from searchengine.indexer.commit.durable_files import ClaimedFile, in_use
from searchengine.indexer.commit.manifest import INSIDE_INDEX, model_location

PREFIX = "adapted-"
_ENTRY = re.compile(r"^\.?(adapted-[a-z-]+\.\d+)(\.(partial|old|scratch)-\d+|\.claim)?$")
"""An adapted model's folder, a hidden sibling it is written through, or its claim: group 1 is the model's name."""


def claim_model_folder(folder: Path) -> ClaimedFile:
    """Hold the name of the model folder `folder` (inside an index directory) for this process until released."""
    return ClaimedFile(_claim_path(folder.parent, folder.name))


def scratch_folder(folder: Path) -> Path:
    """Where the adapt that writes the model folder `folder` keeps its training data: a hidden sibling under the
    folder's claim, which the next clean-up removes once that adapt's process has ended."""
    return folder.parent / f".{folder.name}.scratch-{os.getpid()}"


def named_model_folder(spec: str, index: Path) -> str | None:
    """The name of the model folder that the model spec `spec` names (relative to the index directory `index`, or
    an absolute path, as older manifests recorded it), or None where it names no directory (a Hub id, 'default').
    An absolute path counts by its name alone: an index moved since it was recorded keeps its model folder."""
    location = Path(model_location(spec, index))
    return location.name if spec.startswith(INSIDE_INDEX) or location.is_absolute() else None


def unreferenced_model_entries(index: Path, named: str | None, entries: list[str] | None = None) -> list[Path]:
    """The adapted-model entries in the index directory `index` that no committed state needs: not the model
    folder `named` (the manifest's, by name; None when it names none there) and not claimed by a live adapt.
    `entries`: the names in `index`, where the caller listed them already."""
    found: dict[str, list[Path]] = {}
    for name in os.listdir(index) if entries is None else entries:
        match = _ENTRY.match(name)
        if match and match.group(1) != named:
            found.setdefault(match.group(1), []).append(index / name)
    return sorted(entry for name, entries in found.items() if not in_use(_claim_path(index, name)) for entry in entries)


def remove_entries(entries: list[Path]) -> None:
    """Remove adapted-model folders and claim files (what `unreferenced_model_entries` found)."""
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _claim_path(index: Path, name: str) -> Path:
    return index / f".{name}.claim"
