"""`searchengine mcp`: one index as an MCP server (Model Context Protocol), for agents and chat clients, over stdio
(the client starts the command) or streamable HTTP (`--http`: a long-running server clients connect to at /mcp).

Tools: search (dense, keyword or hybrid, k results, `where` filters), add, delete and info, the operations of
`searchengine query`, `add`, `delete` and `info`. Resources: each stored document at searchengine://documents/{id}
(the id search results give), the first MAX_LISTED_DOCUMENTS of them listed. Arguments are held to the schema the
tools publish: `k: "3"` is refused as a string, not read as 3. Built on the official MCP SDK's MCPServer (the FastMCP of SDK 1);
it reads through the server's batching reader and writes through its serial writer (ServedIndex), so the model
loads once, a write is seen by the next search, and a writer in another process is picked up without a restart."""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import asdict
from typing import Annotated, Any

from pydantic import Field, ValidationError
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from searchengine.engine.add_request import AddRequest
from searchengine.engine.hit_records import result_record
from searchengine.engine.query_request import QueryRequest
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError
from searchengine.indexer.query.filter_sql import Condition
from searchengine.integrations import MissingExtra
from searchengine.reading.corpus import JsonFields
from searchengine.server.error_responses import validation_message
from searchengine.server.limits import MAX_DOCUMENTS, MAX_FILTERS, MAX_K
from searchengine.server.models import MODE_FIELD_HELP, ModeName
from searchengine.server.reader import SearchOptions
from searchengine.server.served_index import ServedIndex

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
    from mcp.types import Resource
except ImportError as exc:
    raise MissingExtra.of("searchengine mcp", "mcp") from exc

DOCUMENT_URI = "searchengine://documents/{document_id}"
"""Where each stored document is an MCP resource, by the id search results give it."""
MAX_LISTED_DOCUMENTS = 1000
"""Documents a client's resource list names (the first, by id); every other one is read by its URI all the same."""


def mcp_server(index: ServedIndex) -> MCPServer:
    """An MCP server whose tools search and change `index`; run it with `.run()` (stdio). The caller closes
    `index` after the server stops. A problem with a call (an unreadable filter, an unknown id) comes back to the
    client as a tool error of one line."""
    server = _IndexMCPServer(
        index,
        name="searchengine",
        instructions=f"Semantic search over the index at {index.path}: search it by meaning (dense), by words "
        "(keyword) or both (hybrid); add and delete documents; info says what it holds and which metadata it has.",
    )

    @server.tool()
    def search(
        query: Annotated[str, Field(description="What to search for.")],
        k: Annotated[int, Field(ge=1, le=MAX_K, description="Number of results.")] = 10,
        mode: Annotated[ModeName | None, Field(description=MODE_FIELD_HELP)] = None,
        where: Annotated[
            list[str],
            Field(max_length=MAX_FILTERS, description='Metadata filters FIELD OP VALUE, all must hold: ["lang=en"].'),
        ] = [],  # noqa: B006 (a JSON default the SDK copies into the schema; never mutated)
    ) -> dict[str, Any]:
        """The k documents that best match the query, best first, with their text, score and metadata."""
        with _tool_errors():
            asked = QueryRequest([query], k, tuple(where), mode)
            hits = index.reader.search([query], SearchOptions(asked.k, asked.where, asked.mode)).result()[0]
        return result_record(query, mode or index.reader.default_mode, hits)

    @server.tool()
    def add(
        documents: Annotated[
            list[dict[str, Any]],
            Field(
                min_length=1,
                max_length=MAX_DOCUMENTS,
                description='Documents as JSON objects: {"text": ...}, every other field kept as metadata.',
            ),
        ],
        id_field: Annotated[
            str | None, Field(description="A field holding each document's own id; adding that id again replaces it.")
        ] = None,
        text_field: Annotated[str, Field(description="The field holding each document's text.")] = "text",
        title_field: Annotated[
            str | None, Field(description="A field holding a title, embedded before the text.")
        ] = None,
    ) -> dict[str, Any]:
        """Add documents to the index (or replace those whose id_field id is stored); they are searchable at once."""
        with _tool_errors():
            adding = AddRequest(documents, JsonFields(text_field, title_field, id_field))
            answer = index.writer.submit(adding.run).result()
        index.writer.submit_background(lambda engine: engine.merge())
        return answer

    @server.tool()
    def delete(
        ids: Annotated[list[int], Field(description="Document ids, as search results give them (id).")] = [],  # noqa: B006
        external_ids: Annotated[
            list[str], Field(description="Your own ids, given with id_field when added (external_id).")
        ] = [],  # noqa: B006
    ) -> dict[str, Any]:
        """Delete documents by id or by your own id: all of them, or none when one is unknown."""
        with _tool_errors():
            deleted = index.writer.submit(lambda engine: (engine.delete(ids, external_ids, merge=False), len(engine)))
            removed, size = deleted.result()
        index.writer.submit_background(lambda engine: engine.merge())
        return {"deleted": removed, "index_size": size}

    @server.tool()
    def info() -> dict[str, Any]:
        """What the index holds: documents, model, dimension, whether it has a keyword index, and more."""
        with _tool_errors():
            return index.reader.run(lambda engine: asdict(engine.info())).result()

    @server.resource(
        DOCUMENT_URI,
        name="document",
        mime_type="application/json",
        description="A stored document by its id (as search results give it): its text, source, line, metadata and "
        "external_id (your own id, when it has one).",
    )
    def document(document_id: str) -> str:
        number = int(document_id) if document_id.isdecimal() and len(document_id) < 19 else None
        found = (
            index.reader.run(lambda engine: engine.reader.store.get([number])).result() if number is not None else {}
        )
        if number not in found:
            raise ResourceNotFoundError(
                f"no document has id {document_id!r}; ids are the numbers search results give as id"
            )
        return json.dumps(_document_record(number, found[number]), ensure_ascii=False)

    return server


def _document_record(number: int, stored: Any) -> dict[str, Any]:
    """A stored document as its resource holds it."""
    return {
        "id": number,
        "external_id": stored.external_id,
        "text": stored.text,
        "source": stored.source,
        "line": stored.line,
        "metadata": stored.metadata,
    }


class _OneLineErrors(MCPServer):
    """MCPServer whose refused arguments come back in one line, as the HTTP API's do: the SDK answers pydantic's
    report of several lines with a link; and an argument the tool does not take is refused, not ignored (a
    misnamed `filters` would otherwise search without them)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:  # noqa: ANN401
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            known = list(tool.parameters.get("properties", {}))
            unknown = [argument for argument in arguments if argument not in known]
            if unknown:
                raise ToolError(f"unknown argument {unknown[0]!r}; {name} takes {', '.join(known) or 'none'}")
            try:  # strictly, as the schema says: the SDK would read k "3" as 3 and where '["a=b"]' as a list
                tool.fn_metadata.arg_model.model_validate(arguments, strict=True)
            except ValidationError as exc:
                raise ToolError(validation_message(exc.errors())) from None
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(validation_message(exc.__cause__.errors())) from None
            raise


class _IndexMCPServer(_OneLineErrors):
    """The server of one index, whose resource list names its documents (the SDK lists only fixed resources)."""

    def __init__(self, index: ServedIndex, **settings: Any) -> None:
        super().__init__(**settings)
        self._index = index

    async def list_resources(self) -> list[Resource]:
        listed = await asyncio.wrap_future(self._index.reader.run(_first_documents))
        return [*await super().list_resources(), *listed]


def _first_documents(engine: SearchEngine) -> list[Resource]:
    """The first MAX_LISTED_DOCUMENTS documents of the index, by id, as resources named by their own id or text."""
    store = engine.reader.store
    ids = store.filters.matching_ids([Condition("id", ">=", 0)])[:MAX_LISTED_DOCUMENTS]
    return [
        Resource(
            uri=DOCUMENT_URI.format(document_id=number),
            name=stored.external_id or " ".join(stored.text.split()[:8]),
            mime_type="application/json",
            description=f"{stored.source}:{stored.line}" if stored.source else None,
        )
        for number, stored in sorted(store.get(ids.tolist()).items())
    ]


MCP_ROUTE = "/mcp"
"""Where MCP's streamable HTTP answers: on its own server (`searchengine mcp --http`) or beside the HTTP API
(`searchengine serve --mcp`)."""


def add_mcp_route(app: Starlette, index: ServedIndex, host: str = "127.0.0.1", api_key: str | None = None) -> None:
    """Answer MCP over streamable HTTP at /mcp of `app`, the HTTP API's app (`searchengine serve --mcp`): the tools
    use the app's own `index`, so the model loads once and one process serves both. The SDK's session manager runs
    in `app`'s lifespan. host and api_key as for mcp_http_app: the tools can write, so the key guards /mcp whatever
    the API key guards elsewhere."""
    server = mcp_server(index)
    [route] = [route for route in server.streamable_http_app(host=host).routes if route.path == MCP_ROUTE]
    endpoint = route.endpoint if api_key is None else BearerKey(route.endpoint, api_key)
    app.router.routes.append(Route(MCP_ROUTE, endpoint=endpoint))
    outer = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(served: Starlette) -> AsyncIterator[Any]:
        async with outer(served) as state, server.session_manager.run():
            yield state

    app.router.lifespan_context = lifespan


def mcp_http_app(index: ServedIndex, host: str = "127.0.0.1", api_key: str | None = None) -> ASGIApp:
    """The MCP server over streamable HTTP at /mcp, as an ASGI app for uvicorn (it runs its own lifespan).

    host: the address it listens on; on a loopback one the SDK also refuses requests whose Host or Origin header
    is another (DNS rebinding). api_key: None, or the key every request must carry as `Authorization: Bearer KEY`
    (the tools can write, so the key guards all of them, as `serve --api-key-for all` does)."""
    app = mcp_server(index).streamable_http_app(host=host)
    return app if api_key is None else BearerKey(app, api_key)


class BearerKey:
    """ASGI middleware: an HTTP request without `Authorization: Bearer KEY` gets 401 and a one-line JSON error."""

    def __init__(self, app: ASGIApp, key: str) -> None:
        if not key.strip():
            raise SearchEngineError("the API key is empty; give a non-empty key or none")
        self.app = app
        self.key = key.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scheme, _, given = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode("latin-1"), self.key):
                problem = "the API key is wrong" if given else "this MCP server needs an API key"
                response = JSONResponse(
                    {"error": f"{problem}: send the header 'Authorization: Bearer KEY'"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


@contextmanager
def _tool_errors() -> Iterator[None]:
    """A SearchEngineError becomes the SDK's ToolError: the client gets its one line, the log no traceback."""
    try:
        yield
    except SearchEngineError as exc:
        raise ToolError(str(exc)) from None
