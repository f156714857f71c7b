"""The document store (documents.<generation>.db, SQLite through sqlite-utils): `DocumentStore` (store.py), the
one connection and transaction every table is read and written through, and one module per table (documents,
keyword index, passages, tombstones, segments and commit state, settings, clustering, duplicates, counters),
with what a document is on its way in and out, and the upkeep of the store's write-ahead log."""
