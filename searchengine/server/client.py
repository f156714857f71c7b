"""searchengine.Client: a running `searchengine serve` from Python, with the methods of SearchEngine that make
sense remotely (search, search_batch, search_by_vector, add, upsert, get, delete, info, collections), giving the
same results (Hit, Document, IndexingReport, IndexInfo) and raising the same exception classes as the local
engine, so one script runs against either. `Client(url).collection(name)` acts on one collection of a server of
many; create_collection and delete_collection make and remove one. Standard library only at import, so
`searchengine query --server URL` and `searchengine collections` (which use it) start fast."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from searchengine.errors import ApiKeyError, SearchEngineError, ServerUnreachableError, UnavailableError
from searchengine.indexer import errors as indexer_errors

if TYPE_CHECKING:
    from searchengine.engine.index_info import IndexInfo
    from searchengine.engine.indexing_report import IndexingReport
    from searchengine.engine.search import Hit
    from searchengine.indexer.tables.documents import Document

ERROR_CLASS_HEADER = "X-SearchEngine-Error"
"""The header a server names the class of its error in (searchengine.server.error_responses)."""
ERROR_OF_STATUS = {
    401: ApiKeyError,
    404: indexer_errors.UnknownDocumentError,
    409: indexer_errors.IndexLockedError,
    503: UnavailableError,
    507: indexer_errors.StorageFullError,
}
"""The class of an error answered without the header (another proxy, an older server), by its status."""


class Client:
    """A searchengine server at `url` (e.g. http://127.0.0.1:8000). `api_key`: sent as a bearer token (None reads
    $SEARCHENGINE_API_KEY). Every problem raises a SearchEngineError of the class the server's engine raised."""

    def __init__(self, url: str, api_key: str | None = None, timeout: float = 120.0, *, _prefix: str = "") -> None:
        self.url = _checked_address(url)
        self.api_key = api_key if api_key is not None else os.environ.get("SEARCHENGINE_API_KEY")
        self.timeout = timeout
        self._prefix = _prefix

    def collection(self, name: str) -> Client:
        """The same methods, on the collection `name` of a server of many (`searchengine serve --collections`)."""
        if not isinstance(name, str) or not name or "/" in name:
            raise SearchEngineError(f"a collection's name is a folder name, such as 'news', not {name!r}")
        return Client(self.url, self.api_key, self.timeout, _prefix=f"/collections/{urllib.parse.quote(name)}")

    def collections(self) -> list[dict[str, Any]]:
        """The server's collections: [{"name": ..., "documents": ...}, ...]."""
        return self.request("GET", "/collections", whole_server=True)["collections"]

    def create_collection(self, name: str, model: str | None = None) -> Client:
        """Make the empty collection `name` on a server of many, with `model` (a Hub id, or a directory the server
        can read; the bundled one if None), and return its Client. Needs the server-wide key, never a collection's."""
        self.collection(name)  # refuses a name that cannot be one before asking
        self.request("POST", "/collections", {"name": name, "model": model}, whole_server=True)
        return self.collection(name)

    def delete_collection(self, name: str) -> None:
        """Remove the collection `name` of a server of many, its folder and documents with it (UnknownCollectionError
        when there is none). Needs the server-wide key, never a collection's."""
        self.collection(name).request("DELETE", "")

    def search(self, query: str, k: int = 10, where: Sequence[str] | Mapping[str, Any] | str | None = None, **options: Any) -> list[Hit]:
        """The k documents that best match `query`, best first (SearchEngine.search; `fusion` is not sent)."""
        return self.search_batch([query], k, where, **options)[0]

    def search_batch(
        self, queries: Sequence[str], k: int = 10, where: Sequence[str] | Mapping[str, Any] | str | None = None, **options: Any
    ) -> list[list[Hit]]:
        """`search` for many queries at once, as one batch."""
        return [_hits(result) for result in self.search_records(list(queries), k, where, **options)]

    def search_records(
        self, queries: list[str], k: int = 10, where: Sequence[str] | Mapping[str, Any] | str | None = None, **options: Any
    ) -> list[dict[str, Any]]:
        """POST /search: one {"query", "mode", "rerank", "hits"} per query, as `searchengine query --json` prints."""
        if isinstance(queries, str):
            raise SearchEngineError(f"give a list of queries, not the string {queries!r}; write [{queries!r}]")
        unknown = set(options) - {"mode", "rerank", "rerank_top", "min_score", "highlight", "mode_options", "rescore", "all_shards"}
        if unknown:
            raise SearchEngineError(f"unknown search option {', '.join(sorted(unknown))} for a server")
        body = {"queries": queries, "k": k, "where": _where(where), **options}
        results = self.request("POST", "/search", body).get("results")
        if isinstance(results, list) and all(isinstance(result, dict) for result in results):
            return results
        raise SearchEngineError(
            f"{self.url} did not answer as a searchengine server (POST /search gave no results list): check the "
            "address, which a `searchengine serve` prints when it starts"
        )

    def search_by_vector(
        self, vector: Sequence[float], k: int = 10, where: Sequence[str] | Mapping[str, Any] | str | None = None
    ) -> list[Hit]:
        """The k documents nearest to `vector` (in the index's space), best first (SearchEngine.search_by_vector)."""
        body = {"vector": _floats(vector), "k": k, "where": _where(where)}
        return _hits(self.request("POST", "/search", body)["results"][0])

    def add(
        self,
        corpus: Sequence[str | Document] | None = None,
        *,
        ids: Sequence[str] | None = None,
        documents: Sequence[str] | None = None,
        metadatas: Sequence[dict[str, Any] | None] | None = None,
        embeddings: Any = None,  # noqa: ANN401 (an array, or lists of numbers)
    ) -> IndexingReport:
        """Add texts or Documents, or chroma-style columns, with `embeddings` if given (SearchEngine.add); one whose
        id is stored replaces it. Sent as one POST /documents, written in one commit."""
        from searchengine.engine.document_columns import added_corpus
        from searchengine.engine.indexing_report import IndexingReport
        from searchengine.indexer.tables.documents import Document, refuse_unstorable

        given = added_corpus(None if corpus is None else list(corpus), ids, documents, metadatas)
        chosen = [item if isinstance(item, Document) else Document(str(item).strip()) for item in given]
        refuse_unstorable(chosen)  # as SearchEngine.add: sent as JSON, an int id would be read as its text
        taken = {name for document in chosen for name in document.metadata}
        text_field, id_field = _free_name("text", taken), _free_name("id", taken)
        source_field, line_field = _free_name("source", taken), _free_name("line", taken)
        with_ids = any(document.external_id is not None for document in chosen)
        if with_ids and not all(document.external_id is not None for document in chosen):
            raise SearchEngineError("give every document an id, or none (the server reads one id field for all)")
        records = [
            {
                **document.metadata,
                text_field: document.text,
                **({id_field: document.external_id} if with_ids else {}),
                **({source_field: document.source} if document.source is not None else {}),
                **({line_field: document.line} if document.line is not None else {}),
            }
            for document in chosen
        ]
        body: dict[str, Any] = {
            "documents": records,
            "text_field": text_field,
            "id_field": id_field if with_ids else None,
            "source_field": source_field,
            "line_field": line_field,
        }
        if embeddings is not None:
            body["embeddings"] = [_floats(row) for row in embeddings]
        answer = self.request("POST", "/documents", body)
        answer.pop("index_size", None)
        return IndexingReport(**{name: answer[name] for name in answer if name in IndexingReport.__dataclass_fields__})

    def upsert(
        self,
        ids: Sequence[str],
        documents: Sequence[str],
        metadatas: Sequence[dict[str, Any] | None] | None = None,
        embeddings: Any = None,  # noqa: ANN401 (an array, or lists of numbers)
    ) -> IndexingReport:
        """Add these documents, replacing the stored ones with the same ids (SearchEngine.upsert)."""
        if ids is None:
            raise SearchEngineError("upsert replaces documents by id: give ids=['a', ...], one per document")
        return self.add(ids=ids, documents=documents, metadatas=metadatas, embeddings=embeddings)

    def get(self, ids: Sequence[str] | None = None, where: Sequence[str] | Mapping[str, Any] | str | None = None) -> list[Document]:
        """The stored documents with these ids (in their order) and/or meeting `where` (SearchEngine.get)."""
        from searchengine.indexer.tables.documents import Document

        if isinstance(ids, (str, bytes)):
            raise SearchEngineError(f"give a list of ids, not the string {ids!r}; write [{ids!r}]")
        if ids is None and not where:
            raise SearchEngineError("say which documents to get: give ids=['a', ...] and/or where={'field': value}")
        query: list[tuple[str, str]] = [("ids", str(name)) for name in ids or ()] + [("where", w) for w in _where(where)]
        if ids is not None and not ids:
            return []
        stored = self.request("GET", "/documents?" + urllib.parse.urlencode(query))["documents"]
        return [Document(d["text"], d["source"], d["line"], d["metadata"], d["id"]) for d in stored]

    def delete(self, ids: Sequence[int] = (), external_ids: Sequence[str] = ()) -> list[int]:
        """Delete documents by id and/or external id, all or none (SearchEngine.delete); returns the ids deleted."""
        if not ids and not external_ids:
            raise SearchEngineError("say which documents to delete: give ids or external ids")
        if isinstance(external_ids, (str, bytes)):
            raise SearchEngineError(f"give a list of ids, not the string {external_ids!r}; write [{external_ids!r}]")
        body = {"ids": list(ids), "external_ids": list(external_ids)}
        return self.request("POST", "/documents/delete", body)["deleted"]

    def info(self) -> IndexInfo:
        """What the index holds, as `searchengine info` shows it (the server's path)."""
        from searchengine.engine.index_info import IndexInfo
        from searchengine.indexer.commit.manifest import PassageSplitting
        from searchengine.indexer.tables.clustering_table import ClusteringRecord

        details = self.request("GET", "/info")
        values = {name: details[name] for name in IndexInfo.__dataclass_fields__ if name in details}
        if values.get("passages") is not None:
            values["passages"] = PassageSplitting(**values["passages"])
        if values.get("clustering") is not None:
            values["clustering"] = ClusteringRecord(**values["clustering"])
        return IndexInfo(**values)

    def __len__(self) -> int:
        """Number of documents in the index."""
        return self.info().documents

    def request(
        self, method: str, path: str, body: dict[str, Any] | None = None, *, whole_server: bool = False
    ) -> dict[str, Any]:
        """`method` on `path` of this client's collection (or of the whole server), with `body` as JSON; the answer
        read as a JSON object. An error answer raises its SearchEngineError class with the server's one line."""
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = None if body is None else json.dumps(body).encode("utf-8")
        address = self.url + ("" if whole_server else self._prefix) + path
        request = urllib.request.Request(address, data, headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = response.read()
        except urllib.error.HTTPError as exc:
            raise _error(exc, self.url) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ServerUnreachableError(
                f"cannot reach a searchengine server at {self.url} ({reason}); start one with `searchengine serve` "
                "or drop --server (and $SEARCHENGINE_SERVER)",
                str(reason),
            ) from None
        try:
            parsed = json.loads(answer)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise SearchEngineError(
                f"{self.url} did not answer as a searchengine server ({method} {path} gave no JSON object): check "
                "the address, which a `searchengine serve` prints when it starts"
            )
        return parsed


def search_remote(
    server: str,
    queries: list[str],
    k: int = 10,
    where: list[str] | None = None,
    rerank: str | None = None,
    rerank_top: int | None = None,
    mode: str | None = None,
    api_key: str | None = None,
    timeout: float = 120.0,
    min_score: float | None = None,
    highlight: bool = False,
    rescore: int | None = None,
) -> list[dict[str, Any]]:
    """POST /search on `server` through a Client: one {"query", "mode", "rerank", "hits"} per query (what
    `searchengine query --server URL` prints)."""
    options = {"mode": mode, "rerank": rerank, "rerank_top": rerank_top, "min_score": min_score, "highlight": highlight}
    if rescore is not None:
        options["rescore"] = rescore
    return Client(server, api_key, timeout).search_records(queries, k, where, **options)


def _error(exc: urllib.error.HTTPError, base: str) -> SearchEngineError:
    """The error an HTTP error answer stands for: the class the server names (ERROR_CLASS_HEADER), else the one
    its status stands for, with its one-line message."""
    try:
        message = json.loads(exc.read())["error"]
    except (ValueError, KeyError, TypeError):
        message = f"{exc.code} {exc.reason}"
    if isinstance(message, dict):  # OpenAI's shape, under /v1/
        message = message.get("message", message)
    kind = _error_class(exc.headers.get(ERROR_CLASS_HEADER)) or ERROR_OF_STATUS.get(exc.code, SearchEngineError)
    return kind(f"the server at {base} says: {message}")


def _error_class(name: str | None) -> type[SearchEngineError] | None:
    """The SearchEngineError subclass called `name` (searchengine.errors, indexer.errors), if any."""
    if not name:
        return None
    pending: list[type[SearchEngineError]] = [SearchEngineError]
    while pending:
        kind = pending.pop()
        if kind.__name__ == name:
            return kind
        pending += kind.__subclasses__()
    return None


def _hits(result: dict[str, Any]) -> list[Hit]:
    """A result's hit records as Hits, as the local engine gives them."""
    from searchengine.engine.search import Hit
    from searchengine.engine.snippets import Highlight

    hits = []
    for record in result["hits"]:
        light = record.get("highlight")
        hits.append(
            Hit(
                id=record["id"],
                score=record["score"],
                text=record["text"],
                source=record["source"],
                line=record["line"],
                metadata=record["metadata"],
                count=record["count"],
                external_id=record["external_id"],
                cluster=record["cluster"],
                retrieval_score=record["retrieval_score"],
                found_by=tuple(record["found_by"]),
                dense_score=record["dense_score"],
                keyword_score=record["keyword_score"],
                span=None if record["span"] is None else tuple(record["span"]),
                highlight=None
                if light is None
                else Highlight(tuple(light["span"]), tuple(tuple(word) for word in light["words"])),
            )
        )
    return hits


def _where(where: Sequence[str] | Mapping[str, Any] | str | None) -> list[str]:
    """Filters as the server takes them: a list of FIELD OP VALUE strings ({field: value} written as `field`=value,
    the value in JSON so that a text stays text and a number a number)."""
    if where is None:
        return []
    if isinstance(where, str):
        return [where]
    if isinstance(where, Mapping):
        return [f"`{field}`={json.dumps(value)}" for field, value in where.items()]
    return [str(item) for item in where]


def _floats(vector: Any) -> list[float]:  # noqa: ANN401 (an array or a list of numbers)
    """A vector as a JSON list of numbers (a NumPy array's too)."""
    return [float(value) for value in (vector.tolist() if hasattr(vector, "tolist") else vector)]


def _free_name(name: str, taken: set[str]) -> str:
    """`name`, or `name` after underscores, whichever no metadata field is called."""
    while name in taken:
        name = f"_{name}"
    return name


def _checked_address(server: str) -> str:
    """`server` without a trailing slash, refused with one line unless it is an http(s) URL with a host and, if
    any, a numeric port (urllib would raise ValueError or http.client.InvalidURL only when it connects)."""
    base = server.rstrip("/")
    example = "write it as http://HOST:PORT, e.g. http://127.0.0.1:8000 or http://[::1]:8000"
    if not base.startswith(("http://", "https://")):
        raise SearchEngineError(f"the server address {server!r} needs http:// or https://; {example}")
    try:
        parts = urllib.parse.urlsplit(base)
        parts.port  # noqa: B018 (reading it checks the port: a ValueError when it is not a number from 0 to 65535)
    except ValueError as exc:
        raise SearchEngineError(f"the server address {server!r} is not a valid URL ({exc}); {example}") from None
    if not parts.hostname:
        raise SearchEngineError(f"the server address {server!r} names no host; {example}")
    return base
