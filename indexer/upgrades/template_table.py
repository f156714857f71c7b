"""Upgrade step 8 (migration 6, recorded as `vector_template`): the table naming the trained template of an index of
a trained type (indexer/vectors/template.py: IVF, PQ, SQ8), with its size and checksum. A store needs it when it has
not recorded migration 6; it starts empty, and an index built before has no template until a merge trains one or
`compact --retrain`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchengine.indexer.tables.segment_table import create_template_table

if TYPE_CHECKING:
    import sqlite_utils


def vector_template(db: sqlite_utils.Database) -> None:
    """Create the vector_template table, empty."""
    create_template_table(db)
