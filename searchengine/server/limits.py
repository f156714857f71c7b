"""The bounds every request is held to, in one place so the API, its docs and the page agree."""

MAX_K = 1000
"""Results per query."""
MAX_QUERIES = 256
"""Queries in one POST /search."""
MAX_FILTERS = 32
"""`where` conditions in one request."""
MAX_DOCUMENTS = 1000
"""Documents in one POST /documents (each write copies the index once, so send them together)."""
MAX_BODY_BYTES = 8 * 1024 * 1024
"""Request body size; larger bodies get 413 before they are read whole."""
MAX_EMBEDDING_INPUTS = MAX_QUERIES
"""Texts in one POST /v1/embeddings: as many as queries in one POST /search, since both are encoded in one call."""
MAX_READERS = 64
"""Reader threads of one server (`serve --readers`): each holds a SQLite connection and takes turns at the cores,
so past their number more only wait; the bound turns a mistyped count into an error, not thousands of threads."""
IDLE_CLOSE_S = 600.0
"""Seconds a collection of `serve --collections` stays open after its last request, unless --idle-close says."""
