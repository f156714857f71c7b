"""The clustering tables of the document store: `clustering` (one row: how the stored clustering was made) and
`cluster_members` (one row per clustered document: its cluster and its cosine to the cluster's centroid)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from searchengine.indexer.tables.sql_chunks import in_chunks
from searchengine.indexer.tables.store_table import StoreTable

TABLE = "clustering"
MEMBERS_TABLE = "cluster_members"
DOCUMENTS = "documents"


@dataclass(frozen=True)
class ClusteringRecord:
    """The stored clustering's description: its method and parameters, and how many clusters and documents."""

    method: str
    parameters: dict[str, Any]
    clusters: int
    documents: int
    """Documents in some cluster (community detection leaves outliers out; later additions are in none)."""
    created_at: str


class ClusteringTable(StoreTable):
    """The stored clustering of one store (none until `searchengine cluster`)."""

    name = TABLE

    def save(
        self,
        method: str,
        parameters: dict[str, Any],
        ids: Sequence[int],
        clusters: Sequence[int],
        centrality: Sequence[float],
        created_at: str,
    ) -> None:
        """Replace any stored clustering: document `ids[i]` is in cluster `clusters[i]`, at cosine `centrality[i]`
        to that cluster's centroid."""
        rows = [(int(i), int(c), float(s)) for i, c, s in zip(ids, clusters, centrality)]
        with self._guard(), self.db.atomic():
            for table in (TABLE, MEMBERS_TABLE):
                self.db.execute(f"DROP TABLE IF EXISTS {table}")
            self.db[TABLE].insert(
                {
                    "method": method,
                    "parameters": json.dumps(parameters),
                    "clusters": len({row[1] for row in rows}),
                    "documents": len(rows),
                    "created_at": created_at,
                }
            )
            self.db[MEMBERS_TABLE].create({"document": int, "cluster": int, "centrality": float}, pk="document")
            self.db.conn.executemany(
                f"INSERT INTO {MEMBERS_TABLE} (document, cluster, centrality) VALUES (?, ?, ?)", rows
            )
            self.db[MEMBERS_TABLE].create_index(["cluster", "centrality"])

    def record(self) -> ClusteringRecord | None:
        """How the stored clustering was made, or None when the index has not been clustered."""
        with self._guard():
            if not self.exists():
                return None
            row = next(iter(self.db.query(f"SELECT * FROM {TABLE}")))
        return ClusteringRecord(
            method=row["method"],
            parameters=json.loads(row["parameters"]),
            clusters=row["clusters"],
            documents=row["documents"],
            created_at=row["created_at"],
        )

    def clusters_of(self, ids: Sequence[int]) -> dict[int, int]:
        """The stored cluster of each of `ids` that is in one (empty when there is no clustering)."""
        with self._guard():
            if MEMBERS_TABLE not in self.db.table_names():
                return {}
            sql = f"SELECT document, cluster FROM {MEMBERS_TABLE} WHERE document IN"
            return dict(in_chunks(self.db, sql, sorted(set(int(i) for i in ids))))

    def members(self) -> dict[int, list[int]]:
        """Every stored cluster's document ids, most central first, by cluster id (empty without a clustering).
        Documents deleted since the clustering was made are left out."""
        members: dict[int, list[int]] = {}
        with self._guard():
            if MEMBERS_TABLE not in self.db.table_names():
                return members
            rows = self.db.execute(
                f"SELECT m.cluster, m.document FROM {MEMBERS_TABLE} AS m JOIN {DOCUMENTS} AS d "
                "ON d.id = m.document ORDER BY m.cluster, m.centrality DESC, m.document"
            )
            for cluster, document in rows:
                members.setdefault(cluster, []).append(document)
        return members
