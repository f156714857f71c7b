"""Request and response bodies of the HTTP API: the same names as the CLI's options and its --json output."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from searchengine.engine.highlight import MAX_EMBEDDED_SENTENCES
from searchengine.engine.mode_registry import mode_names
from searchengine.engine.modes import MODES
from searchengine.engine.query_request import RESCORE_LIMIT
from searchengine.server.limits import MAX_DOCUMENTS, MAX_FILTERS, MAX_K, MAX_QUERIES

HIGHLIGHT_HELP = (
    "Give each hit its highlight: the sentences nearest to the query and the query's words in them (the search "
    f"page asks for it). Off unless asked: in dense and hybrid mode it embeds up to {MAX_EMBEDDED_SENTENCES} "
    "sentences of each hit."
)


RESCORE_HELP = (
    "On an index with compressed codes (PQ, SQ8, LSH): candidates per segment rescored exactly from the original "
    "vectors on disk (0: off; the library's default when missing)."
)
ALL_SHARDS_HELP = (
    "A whole answer or none: on a cluster index with a shard that has no live copy, answer 503 rather than hits "
    "from the other shards flagged partial. One index is always whole."
)
MIN_SCORE_HELP = (
    "Leave out hits scored below this (cosine in dense mode, 0..1 in keyword and hybrid), so that a query with no "
    "good answer gets none."
)


def _registered_mode(name: str) -> str:
    """`name` when a retrieval mode of that name is registered; else the error a Literal of the names would give."""
    if name not in MODES:
        names = [repr(known) for known in mode_names()]
        expected = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
        raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
    return name


ModeName = Annotated[str, AfterValidator(_registered_mode)]
"""A request's mode: the name of a registered retrieval mode (GET /info lists those the index offers)."""
MODE_FIELD_HELP = (
    f"The retrieval mode: {', '.join(mode.label for mode in MODES.values())}; the index's default when missing."
)


VECTOR_HELP = (
    "Search by this vector instead of queries (dense, nothing encoded): the index's own space, as /v1/embeddings "
    "and SearchEngine.encode give it (whitened where the index is); with k, where and min_score only."
)


class SearchRequest(BaseModel):
    """POST /search: several queries answered as one batch, with the options of `searchengine query`; or one
    `vector` to search by."""

    model_config = ConfigDict(extra="forbid")

    queries: list[str] | None = Field(
        None, min_length=1, max_length=MAX_QUERIES, description="What to search for (or give a vector)."
    )
    vector: list[float] | None = Field(None, max_length=65_536, description=VECTOR_HELP)
    k: int = Field(10, ge=1, le=MAX_K, strict=True, description="Results per query.")
    where: list[str] = Field(
        default_factory=list,
        max_length=MAX_FILTERS,
        description="Metadata filters FIELD OP VALUE (OP: = != > >= < <=), all of which must hold.",
    )
    mode: ModeName | None = Field(None, description=MODE_FIELD_HELP)
    rerank: str | None = Field(None, description="A cross-encoder the server was started with (--rerank).")
    rerank_top: int | None = Field(None, ge=1, le=MAX_K, strict=True, description="Candidates the cross-encoder rescores.")
    min_score: float | None = Field(None, allow_inf_nan=False, strict=True, description=MIN_SCORE_HELP)
    highlight: bool = Field(False, description=HIGHLIGHT_HELP)
    mode_options: dict[str, int | float] | None = Field(
        None, description='Options of the mode itself: mmr takes {"fetch_k": 20, "lambda_mult": 0.5}.'
    )
    rescore: int | None = Field(None, ge=0, le=RESCORE_LIMIT, strict=True, description=RESCORE_HELP)
    all_shards: bool = Field(False, description=ALL_SHARDS_HELP)

    @model_validator(mode="after")
    def _queries_or_vector(self) -> SearchRequest:
        """Refused unless it gives queries or a vector (not both), and a vector only with k, where and min_score."""
        if self.vector is None:
            if self.queries is None:
                raise ValueError("give queries (at least one) or a vector to search by")
        elif self.queries is not None:
            raise ValueError("give queries or a vector, not both")
        elif self.mode not in (None, "dense") or self.rerank is not None or self.rerank_top is not None or self.highlight:
            raise ValueError("a search by vector is dense and takes k, where and min_score only (no mode, rerank, highlight)")
        elif self.all_shards:
            raise ValueError("a search by vector takes k, where and min_score only: drop all_shards (its answer says "
                             "how many shards answered)")
        return self


class HighlightOut(BaseModel):
    span: tuple[int, int] = Field(description="Characters [start, end) of text: the sentences nearest to the query.")
    words: list[tuple[int, int]] = Field(description="Characters [start, end) of text holding each query word there.")


class HitOut(BaseModel):
    """One result, as `searchengine query --json` prints it (searchengine.engine.hit_records)."""

    id: int
    external_id: str | None = Field(description="The document's own id, given with id_field (null when none).")
    text: str
    snippet: str = Field(description="One line to show: the sentences nearest to the query, cut.")
    location: str | None = Field(description="The heading path or page of a file's passage that matched (or null).")
    score: float
    source: str | None
    line: int | None
    metadata: dict[str, Any]
    count: int
    cluster: int | None
    retrieval_score: float | None
    found_by: list[str] = Field(description="The sides whose candidates held the document: dense, keyword or both.")
    dense_score: float | None = Field(description="The cosine to the query (dense and hybrid modes).")
    keyword_score: float | None = Field(description="The BM25 score of the query's words (keyword and hybrid modes).")
    span: tuple[int, int] | None = Field(
        description="Characters [start, end) of text that matched best, for a document split into passages."
    )
    highlight: HighlightOut | None = Field(description="Why the hit matched, as character offsets into text.")


class RerankOut(BaseModel):
    model: str
    top: int


class ShardsOut(BaseModel):
    asked: int = Field(description="The cluster index's shards.")
    answered: int = Field(description="Shards that answered: fewer than asked when a shard had no live copy.")
    partial: bool = Field(description="Whether some shard did not answer, so better hits may be missing.")


class QueryResult(BaseModel):
    query: str | None = Field(description="The query; null for a search by vector.")
    mode: str = Field(description="The mode that answered: the one asked for, or the server's default.")
    rerank: RerankOut | None = Field(None, description="The cross-encoder and candidate count, when reranked.")
    hits: list[HitOut]
    shards: ShardsOut | None = Field(
        None,
        exclude_if=lambda shards: shards is None,
        description="How many of the index's shards answered: given by a cluster index's server (`searchengine "
        "cluster-index serve`); left out by `searchengine serve`, whose one index always answers whole.",
    )


class SearchResults(BaseModel):
    results: list[QueryResult]


class DocumentsRequest(BaseModel):
    """POST /documents: JSON objects like the lines of a .jsonl corpus (a "text" field, the rest metadata)."""

    model_config = ConfigDict(extra="forbid")

    documents: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_DOCUMENTS)
    embeddings: list[list[float]] | None = Field(
        None,
        description="One vector per document, stored instead of embedding its text (still stored for keyword search "
        "and snippets), in the index's own space as /v1/embeddings gives it (whitened where the index is).",
    )
    id_field: str | None = Field(
        None, description="A field holding each document's own id: adding that id again replaces it (upsert)."
    )
    text_field: str = Field("text", description="The field holding each document's text.")
    title_field: str | None = Field(
        None, description="A field holding a title, embedded before the text and kept as metadata."
    )
    source_field: str | None = Field(
        None,
        description="A field holding each document's source (a file name, a URL), stored as its origin (the hits' "
        "source), not as metadata.",
    )
    line_field: str | None = Field(
        None, description="A field holding each document's line in its source (a whole number), stored with it."
    )


class AddedOut(BaseModel):
    """What an add did, as `searchengine add` reports it, and the index size after it."""

    documents: int
    added: int
    repeats: int
    replaced: int
    updated: int
    """Upserts that kept the stored text: origin and metadata replaced, the vector kept."""
    superseded: int
    """Documents replaced by a later one with the same id in the same request, so never stored (ids are text: 1
    and "1" are one id)."""
    truncated: int
    seconds: float
    index_size: int


class DeleteRequest(BaseModel):
    """POST /documents/delete: documents by the index's ids and/or their own ids, all or none."""

    model_config = ConfigDict(extra="forbid")

    ids: list[int] = Field(default_factory=list, max_length=MAX_DOCUMENTS, description="The index's ids.")
    external_ids: list[str] = Field(default_factory=list, max_length=MAX_DOCUMENTS, description="Their own ids.")


class StoredDocumentOut(BaseModel):
    id: str | None = Field(description="The document's own id (null when none).")
    text: str
    source: str | None
    line: int | None
    metadata: dict[str, Any]


class StoredDocumentsOut(BaseModel):
    documents: list[StoredDocumentOut]


class DeletedOut(BaseModel):
    deleted: list[int]
    index_size: int


class ErrorOut(BaseModel):
    error: str = Field(description="One line: what is wrong and how to fix it.")
