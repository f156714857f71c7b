"""`searchengine serve`: the HTTP API and search page over one index, the model loaded once."""

from __future__ import annotations

from pathlib import Path

import typer

from searchengine.cli.errors import user_errors
from searchengine.cli.options import (
    BackendOption,
    IndexDirOption,
    PrecisionOption,
    api_key_option,
    host_option,
    port_option,
    threads_option,
)
from searchengine.errors import SearchEngineError
from searchengine.server.limits import IDLE_CLOSE_S, MAX_READERS


def serve(
    index_dir: Path | None = IndexDirOption,
    host: str = host_option("Address to listen on; 0.0.0.0 reaches beyond this machine."),
    port: int = port_option(8000, "Port to listen on (0: any free one)."),
    api_key: str | None = api_key_option("Require 'Authorization: Bearer KEY' on what --api-key-for names."),
    api_key_for: str = typer.Option(
        "writes",
        "--api-key-for",
        help="What the API key guards: writes (POST /documents, DELETE) or all (searches and /info too; "
        "/health, the page and /docs stay open).",
    ),
    rerank: list[str] = typer.Option(
        [],
        "--rerank",
        help="A cross-encoder requests may rerank with (rerank=MODEL), loaded at start; repeat to offer several.",
    ),
    embedding_models: list[str] = typer.Option(
        [],
        "--embedding-model",
        help="Another model POST /v1/embeddings answers with (model=NAME; the index's own always), loaded at start; "
        "repeat to offer several.",
    ),
    max_batch: int = typer.Option(
        64, "--max-batch", min=1, help="Queries waiting together that are encoded in one call."
    ),
    readers: int = typer.Option(
        2,
        "--readers",
        min=1,
        max=MAX_READERS,
        help="Threads answering searches at once (each batches the queries waiting for it); "
        "one searches while another encodes.",
    ),
    mcp: bool = typer.Option(
        False,
        "--mcp",
        help="Also answer MCP clients over streamable HTTP at /mcp (tools search, add, delete, info; the 'mcp' "
        "extra), from the same loaded model; --api-key, if given, guards it whatever --api-key-for says.",
    ),
    access_log: bool = typer.Option(True, "--access-log/--no-access-log", help="Log one line per request."),
    collections: Path | None = typer.Option(
        None,
        "--collections",
        help="Serve every index directory directly under this folder as a collection named by its folder, at "
        "/collections/NAME/search, /documents and /info (GET and POST /collections, DELETE /collections/NAME); "
        "instead of -d.",
    ),
    idle_close: float = typer.Option(
        IDLE_CLOSE_S,
        "--idle-close",
        min=0,
        help="With --collections: seconds after its last request that a collection is closed (memory follows the "
        "collections in use); it opens again when asked.",
    ),
    collection_keys: Path | None = typer.Option(
        None,
        "--collection-keys",
        help='With --collections: a JSON file of keys per collection, {"NAME": {"read": [KEY], "read-write": '
        "[KEY]}}, each valid on its collection only, beside --api-key.",
    ),
    precision: str = PrecisionOption,
    backend: str = BackendOption,
    threads: int = threads_option(
        1, "CPU threads while encoding; 1 leaves the other cores to HTTP, and concurrent queries are batched."
    ),
) -> None:
    """Serve an index over HTTP: a JSON API (docs at /docs) and a search page at /.

    Endpoints: GET /health, GET /info, GET /search?q=...&k=10&where=..., POST /search {"queries": [...], "k": 10,
    "where": [...]}, POST /documents {"documents": [{"text": ...}, ...], "id_field": "id"}, DELETE
    /documents/ID (?external=true for your own ids), POST /v1/embeddings (OpenAI's API: the index's model, and any
    --embedding-model), and with --mcp the MCP server at /mcp. A write by another process (`searchengine add`) is
    picked up without a restart. Listens on 127.0.0.1 unless --host says otherwise. Ctrl+C stops it.

    Examples:

      searchengine serve

      searchengine serve -d ~/indexes/docs --port 8080 --api-key "$(cat key.txt)"
    """
    from searchengine.encoding.speed import EncoderSpeed
    from searchengine.engine.search_engine import default_index_dir

    if collections is not None:
        with user_errors(collections):
            if index_dir is not None:
                raise SearchEngineError("--collections serves the indexes under a folder; drop -d (--index-dir)")
            if embedding_models:
                raise SearchEngineError("--embedding-model is offered with one index, not with --collections")
        _serve_collections(
            collections,
            host,
            port,
            api_key,
            api_key_for,
            collection_keys,
            idle_close,
            EncoderSpeed(precision, backend, threads),
            rerank,
            max_batch,
            readers,
            access_log,
        )
        return
    target = index_dir or default_index_dir()
    with user_errors(target):
        if api_key_for not in ("writes", "all"):
            raise SearchEngineError(f"--api-key-for is writes or all, not {api_key_for!r}")
        if api_key is not None and not api_key.strip():
            raise SearchEngineError("--api-key is empty (is $SEARCHENGINE_API_KEY set to nothing?); give a key")
        if api_key_for == "all" and api_key is None:
            raise SearchEngineError(
                "--api-key-for all guards searches with the API key, but none is given: add --api-key KEY (or set "
                "$SEARCHENGINE_API_KEY)"
            )
        if mcp:
            from searchengine.integrations.mcp_server import add_mcp_route
        import uvicorn

        from searchengine.server.app import ServerSettings, create_app
        from searchengine.server.listener import http_url, is_loopback, listening_socket
        from searchengine.server.served_index import ServedIndex

        listener = listening_socket(host, port)
        try:
            index = ServedIndex(
                target,
                speed=EncoderSpeed(precision, backend, threads),
                rerank=rerank,
                max_batch=max_batch,
                embedding_models=embedding_models,
                readers=readers,
            )
        except BaseException:
            listener.close()
            raise
    try:
        app = create_app(index, ServerSettings(api_key=api_key, api_key_for=api_key_for))
        if mcp:
            add_mcp_route(app, index, host, api_key)
        address, bound_port = listener.getsockname()[:2]
        url = http_url(address, bound_port)
        also = f", MCP at {url}/mcp" if mcp else ""
        typer.echo(
            f"Serving {target} ({index.reader.run(len).result()} texts) at {url}/ (API docs at {url}/docs{also})",
            err=True,
        )
        if not is_loopback(host) and api_key is None:
            typer.echo(
                f"Warning: listening on {host} without --api-key: anyone who reaches it can add and delete.", err=True
            )
        config = uvicorn.Config(app, log_level="info", access_log=access_log, timeout_graceful_shutdown=5)
        try:
            uvicorn.Server(config).run(sockets=[listener])
        except KeyboardInterrupt:  # uvicorn stops gracefully on Ctrl+C, then raises it again: a requested stop
            typer.echo("Stopped.", err=True)
    finally:
        index.close()
        listener.close()


def _serve_collections(
    folder: Path,
    host: str,
    port: int,
    api_key: str | None,
    api_key_for: str,
    keys_file: Path | None,
    idle_close: float,
    speed: object,
    rerank: list[str],
    max_batch: int,
    readers: int,
    access_log: bool,
) -> None:
    """`serve --collections FOLDER`: the collections under FOLDER, each opened on its first request."""
    with user_errors(folder):
        import uvicorn

        from searchengine.server.app import ServerSettings, create_app
        from searchengine.server.collection_keys import read_collection_keys
        from searchengine.server.collections import served_collections
        from searchengine.server.listener import http_url, is_loopback, listening_socket

        keys = read_collection_keys(keys_file) if keys_file is not None else {}
        settings = ServerSettings(api_key=api_key, api_key_for=api_key_for, collection_keys=keys)  # type: ignore[arg-type]
        held = served_collections(
            folder, speed=speed, rerank=rerank, max_batch=max_batch, readers=readers, idle_close_s=idle_close  # type: ignore[arg-type]
        )
        listener = listening_socket(host, port)
    try:
        app = create_app(None, settings, held)
        address, bound_port = listener.getsockname()[:2]
        url = http_url(address, bound_port)
        names = held.names()
        typer.echo(
            f"Serving {len(names)} collections of {folder} ({', '.join(names) or 'none yet'}) at {url}/ "
            f"(API docs at {url}/docs; idle ones close after {idle_close:g} s)",
            err=True,
        )
        if not is_loopback(host) and api_key is None:
            typer.echo(
                f"Warning: listening on {host} without --api-key: anyone who reaches it can make and delete "
                "collections.",
                err=True,
            )
        config = uvicorn.Config(app, log_level="info", access_log=access_log, timeout_graceful_shutdown=5)
        try:
            uvicorn.Server(config).run(sockets=[listener])
        except KeyboardInterrupt:
            typer.echo("Stopped.", err=True)
    finally:
        held.close()
        listener.close()
