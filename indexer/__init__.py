"""The storage layer: an index directory on disk and everything read from or written to it. It knows nothing of
models; the engine (searchengine.engine) hands it texts and vectors.

    tables/    the SQLite document store, one module per table, and its connection
    vectors/   the vector files: FAISS segments, the whitening transform
    commit/    how a write becomes durable and visible: the index directory, manifest, lock, live writes, rewrites,
               merges, crash points, verify
    query/     what a search asks of the store: metadata filters as SQL, keyword queries as FTS5
    upgrades/  what brings an index written by an older version to the current shape
    errors.py  the errors every part raises
"""
