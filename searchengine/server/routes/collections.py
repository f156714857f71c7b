"""GET and POST /collections, DELETE /collections/NAME: the collections of a server of many
(`searchengine serve --collections FOLDER`). Each collection's own routes (/collections/NAME/search, /documents,
/info) are the one-index routes under its name (searchengine.server.app); creating and deleting need the
server-wide write key, never a collection's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field

from searchengine.errors import SearchEngineError
from searchengine.server.collections import Collections
from searchengine.server.state import Settings, check_reads, require_key

router = APIRouter()


class CollectionRequest(BaseModel):
    """POST /collections: an empty collection to add documents to."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The collection's name (its folder's): letters, digits, '_', '.', '-'.")
    model: str | None = Field(None, description="Its model (a Hub id or a directory); the bundled default if none.")


async def check_admin(settings: Settings, request: Request) -> None:
    """Creating and deleting collections: the server-wide write key (when there is one), never a collection's."""
    await require_key(settings.api_key, "writes", request.headers.get("authorization"))


def _collections(request: Request) -> Collections:
    collections = request.app.state.collections
    if collections is None:
        raise SearchEngineError("this server serves one index, not collections: start it with --collections FOLDER")
    return collections


@router.get("/collections", dependencies=[Depends(check_reads)])
def list_collections(request: Request) -> dict[str, Any]:
    """The collections: each one's name and documents."""
    return {"collections": _collections(request).listing()}


@router.post("/collections", dependencies=[Depends(check_admin)], status_code=201)
def create_collection(request: Request, body: CollectionRequest) -> dict[str, Any]:
    """Make an empty collection (its model loaded here unless an open collection has it loaded)."""
    from searchengine.engine.search_engine import SearchEngine

    def make(path: Path, encoder: Any) -> None:  # noqa: ANN401 (a loaded Encoder or None)
        SearchEngine.create(path, model=body.model, encoder=encoder).close()

    _collections(request).create(body.name, make, body.model)
    return {"name": body.name, "documents": 0}


@router.delete("/collections/{name}", dependencies=[Depends(check_admin)])
def delete_collection(request: Request, name: str) -> dict[str, Any]:
    """Close the collection and remove its folder, documents and all."""
    _collections(request).delete(name)
    return {"deleted": name}
