"""An index as searchengine wrote it before segments (format 1), made from a freshly built one: the tests of
opening, searching and converting such indexes start from it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from searchengine.indexer.commit.index_directory import file_checksum

NEW_TABLES = ("segments", "index_state", "schema_migrations")


def downgrade_to_format_1(index: Path) -> None:
    """Rewrite the format-2 index at `index` (one segment, no writes since its build) as format 1 wrote it: the
    segment as `vectors.<n>.faiss`, the store in rollback-journal mode without the tables format 2 added, and a
    manifest that names every file with its size and checksum and records the counts."""
    manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
    current = index / manifest["files"]["documents"]
    prefix, number, suffix = current.name.split(".")
    store = index / f"{prefix}.{int(number) + 1}.{suffix}"  # a copy: an engine may still hold the current one
    source = sqlite3.connect(f"{current.resolve().as_uri()}?mode=ro", uri=True)
    connection = sqlite3.connect(str(store))
    source.backup(connection)
    source.close()
    manifest["files"]["documents"] = store.name
    (segment,) = [row[0] for row in connection.execute("SELECT name FROM segments")]
    documents = connection.execute("SELECT count(*) FROM documents").fetchone()[0]
    passages = connection.execute("SELECT count(*) FROM passages WHERE id != document").fetchone()[0]
    tombstones = connection.execute("SELECT count(*) FROM tombstones").fetchone()[0]
    for table in NEW_TABLES:
        connection.execute(f"DROP TABLE {table}")
    connection.commit()
    connection.execute("PRAGMA journal_mode = DELETE")
    connection.close()
    vectors = index / segment.replace("segment.", "vectors.")
    (index / segment).rename(vectors)
    files = {"vectors": vectors.name, **manifest["files"]}
    old = {
        "format_version": 1,
        "model": manifest["model"],
        "whitening": manifest["whitening"],
        "index": manifest["index"],
        "count": {"vectors": documents + passages, "documents": documents, "tombstones": tombstones},
        "created_at": manifest["created_at"],
        "updated_at": manifest["created_at"],
        "versions": manifest["versions"],
        "files": files,
        "sizes": {role: (index / name).stat().st_size for role, name in files.items()},
        "checksums": {role: file_checksum(index / name) for role, name in files.items()},
        **({"passages": manifest["passages"]} if "passages" in manifest else {}),
    }
    (index / "manifest.json").write_text(json.dumps(old, indent=2) + "\n", encoding="utf-8")
