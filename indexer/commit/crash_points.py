"""A test hook that ends the process at a named step of a write, as a kill -9 would (tests/indexer/commit/test_crash_safety.py
names every step). Unset, it costs one environment lookup."""

from __future__ import annotations

import os
import sys

CRASH_ENV = "SEARCHENGINE_CRASH_AT"
"""The name of the step at which the process ends at once (os._exit, no clean-up, no flush of anything else)."""
STEPS = (
    "segment-written",
    "segment-synced",
    "before-commit",
    "after-commit",
    "cleanup",
    "merge-written",
    "merge-before-commit",
    "merge-after-commit",
    "adapt-documents-written",
    "adapt-saved",
    "build-before-commit",
    "originals-written",
    "template-written",
)
"""Every step a write, a merge, an adapt (its copy of the documents written, before training; its model saved, not yet
committed) or a build (its rows stored and its segments written, not yet committed) can be ended at, in the order
they come within each; last, a segment's originals file written, not yet synced (indexer/vectors/originals.py), in
any write that makes one, and a trained template's file written, not yet synced (indexer/vectors/template.py), in a
build, a first training merge or `compact --retrain`."""


def crash_point(step: str) -> None:
    """End the process here when $SEARCHENGINE_CRASH_AT names `step`."""
    if os.environ.get(CRASH_ENV) == step:
        sys.stderr.flush()
        os._exit(75)
