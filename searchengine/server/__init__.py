"""`searchengine serve`: an HTTP API and a search page over one index directory (FastAPI + uvicorn).

Layer: above searchengine.engine, below the CLI. Reader threads (`--readers`), each owning a SearchEngine, answer
queries (batching those that wait together into one encoder call, reopening the index when a writer commits), one
writer thread adds and deletes; the event loop only parses and answers HTTP."""
