"""`searchengine collections`: list, create, delete and describe the collections of a running
`searchengine serve --collections FOLDER`, through searchengine.Client (GET and POST /collections, DELETE
/collections/NAME, GET /collections/NAME/info)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import typer

from searchengine.cli.errors import user_errors
from searchengine.cli.options import json_option, model_option
from searchengine.engine.wording import counted
from searchengine.errors import ApiKeyError, SearchEngineError, ServerUnreachableError, UnknownCollectionError

if TYPE_CHECKING:
    from searchengine.server.client import Client

collections_app = typer.Typer(
    help="The collections of a running `searchengine serve --collections FOLDER`: list, create, delete, info.",
    no_args_is_help=True,
)
ServerOption = typer.Option(
    None,
    "--server",
    envvar="SEARCHENGINE_SERVER",
    show_envvar=True,
    help="The running `searchengine serve --collections FOLDER` (e.g. http://127.0.0.1:8000); its API key, if any, "
    "comes from $SEARCHENGINE_API_KEY.",
)
NameArgument = typer.Argument(..., help="The collection's name: its folder's name under the server's FOLDER.")


@contextmanager
def _server(server: str | None, name: str | None = None, *, admin: bool = False) -> Iterator[Client]:
    """A Client of `server`, with what can go wrong said as one line in the command line's words: no server named,
    none answering, an unknown collection `name`, a key refused (`admin`: only the server-wide key will do)."""
    with user_errors():
        if not server:
            raise SearchEngineError(
                "name the server: --server http://HOST:PORT or $SEARCHENGINE_SERVER, the address a "
                "`searchengine serve --collections FOLDER` prints when it starts"
            )
        from searchengine.server.client import Client

        client = Client(server)
        try:
            yield client
        except ServerUnreachableError as exc:
            raise SearchEngineError(
                f"cannot reach a searchengine server at {client.url} ({exc.reason}); start one with `searchengine "
                "serve --collections FOLDER`, or name the right address with --server or $SEARCHENGINE_SERVER"
            ) from None
        except UnknownCollectionError:
            raise UnknownCollectionError(
                f"the server at {client.url} has no collection named {name!r}; `searchengine collections list` shows "
                "the ones it has"
            ) from None
        except ApiKeyError as exc:
            which = "the server's own key (its --api-key); a collection's key may not" if admin else "a key it takes"
            raise ApiKeyError(f"{exc}; set $SEARCHENGINE_API_KEY to {which}") from None


@collections_app.command("list")
def list_collections(
    server: str | None = ServerOption,
    as_json: bool = json_option('Print the server\'s answer: {"collections": [{"name": ..., "documents": ...}]}.'),
) -> None:
    """List the server's collections, one a line: its name and how many documents it holds.

    Examples:

      searchengine collections list --server http://127.0.0.1:8000

      SEARCHENGINE_SERVER=http://127.0.0.1:8000 searchengine collections list --json
    """
    with _server(server) as client:
        found = client.collections()
    if as_json:
        typer.echo(json.dumps({"collections": found}, ensure_ascii=False, indent=2))
        return
    if not found:
        typer.echo("(no collections yet: `searchengine collections create NAME` makes one)", err=True)
    width = max((len(collection["name"]) for collection in found), default=0)
    for collection in found:
        typer.echo(f"{collection['name']:<{width}}  {counted(collection['documents'], 'document')}")


@collections_app.command()
def create(
    name: str = NameArgument,
    model: str | None = model_option(
        "Its model: a Hub id, or a directory on the server's machine (relative to where it runs); every document "
        "added to the collection and every query of it is encoded with it."
    ),
    server: str | None = ServerOption,
    as_json: bool = json_option('Print {"name": NAME, "documents": 0}, as POST /collections answers.'),
) -> None:
    """Make an empty collection on the server, with its own model, settings and writer.

    Fill it with `searchengine.Client(URL).collection(NAME).add(...)` or POST /collections/NAME/documents. Only the
    server-wide key (`serve --api-key`, here in $SEARCHENGINE_API_KEY) creates collections; a collection's key
    cannot.

    Examples:

      searchengine collections create notes --server http://127.0.0.1:8000

      searchengine collections create papers --model sentence-transformers/all-mpnet-base-v2
    """
    with _server(server, admin=True) as client:
        client.create_collection(name, model)
    if as_json:
        typer.echo(json.dumps({"name": name, "documents": 0}))
        return
    typer.echo(
        f"Created collection {name!r} at {client.url}, empty; search it at {client.url}/collections/{name}/search."
    )


@collections_app.command()
def delete(
    name: str = NameArgument,
    server: str | None = ServerOption,
    as_json: bool = json_option('Print {"deleted": NAME}, as DELETE /collections/NAME answers.'),
) -> None:
    """Delete a collection from the server: its folder and every document in it, for good.

    Only the server-wide key (`serve --api-key`, here in $SEARCHENGINE_API_KEY) deletes collections; a collection's
    key cannot.

    Example:

      searchengine collections delete notes --server http://127.0.0.1:8000
    """
    with _server(server, name, admin=True) as client:
        client.delete_collection(name)
    if as_json:
        typer.echo(json.dumps({"deleted": name}))
        return
    typer.echo(f"Deleted collection {name!r} and its documents from {client.url}.")


@collections_app.command()
def info(
    name: str = NameArgument,
    server: str | None = ServerOption,
    as_json: bool = json_option("Print it as searchengine.Client(URL).collection(NAME).info() has it, as JSON."),
) -> None:
    """Show what a collection holds: documents, vectors, model, dimension, index type, size, dates.

    Example:

      searchengine collections info notes --server http://127.0.0.1:8000
    """
    with _server(server, name) as client:
        details = asdict(client.collection(name).info())
    if as_json:
        typer.echo(json.dumps(details, ensure_ascii=False, indent=2))
        return
    for label, value in _shown(name, details).items():
        typer.echo(f"{label:<14} {value}")


def _shown(name: str, details: dict[str, Any]) -> dict[str, str]:
    """The lines `info` prints for a collection's IndexInfo, by label."""
    return {
        "collection": name,
        "documents": str(details["documents"]),
        "vectors": str(details["vectors"]),
        "model": f"{details['model']} (fingerprint {details['model_fingerprint']})",
        "pooling": details["pooling"],
        "dimension": str(details["dimension"]),
        "whitening": "none" if details["whitening"] is None else f"whitening-k {details['whitening']}",
        "index type": f"{details['index_type']} (FAISS, inner product)",
        "keyword index": "yes (keyword and hybrid search)" if details["keyword_index"] else "none",
        "size on disk": f"{details['size_bytes']:,} bytes",
        "built": details["created_at"],
        "updated": details["updated_at"],
    }
