"""The duplicates table of the document store: near-duplicates marked by `searchengine mine --dedupe`, each a
document, the earlier document it duplicates, and their cosine."""

from __future__ import annotations

from collections.abc import Sequence

from searchengine.indexer.tables.store_table import StoreTable

TABLE = "duplicates"
DOCUMENTS = "documents"


class DuplicatesTable(StoreTable):
    """Near-duplicate marks of one store."""

    name = TABLE

    def replace(self, marks: Sequence[tuple[int, int, float]]) -> None:
        """Replace every mark with `marks`: (id, id of the earlier document it duplicates, cosine)."""
        rows = [(int(i), int(original), float(score)) for i, original, score in marks]
        with self._guard(), self.db.atomic():
            self.db.execute(f"DROP TABLE IF EXISTS {TABLE}")
            self.db[TABLE].create({"id": int, "duplicate_of": int, "score": float}, pk="id")
            self.db.conn.executemany(f"INSERT INTO {TABLE} (id, duplicate_of, score) VALUES (?, ?, ?)", rows)

    def marks(self) -> dict[int, int]:
        """Each document marked a near-duplicate -> the earlier document it duplicates (deleted ones left out)."""
        with self._guard():
            if not self.exists():
                return {}
            rows = self.db.execute(
                f"SELECT m.id, m.duplicate_of FROM {TABLE} AS m JOIN {DOCUMENTS} AS d ON d.id = m.id "
                f"JOIN {DOCUMENTS} AS o ON o.id = m.duplicate_of ORDER BY m.id"
            ).fetchall()
        return dict(rows)
