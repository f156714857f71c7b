"""POST /v1/embeddings: OpenAI's embeddings API, answered with the served index's own encoder, or with a model named
at start (`serve --embedding-model NAME`); GET /v1/models lists them and GET /v1/models/{id} answers for one, for
clients that look a model up first.

The vectors are the ones the index stores and searches with: the encoder's output, whitened when the index was
built with whitening, L2-normalised (SearchEngine.encode). An OpenAI client (or any tool that speaks its API)
pointed at `searchengine serve` gets them with `base_url=http://HOST:PORT/v1`. Texts are held to the model's
token limit (longer ones are refused, as OpenAI does, not cut), and to the bounds and API key of /search."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from datetime import datetime
from functools import partial
from pathlib import PurePath
from typing import Annotated, Any, Literal

import numpy as np
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from searchengine.encoding.encoder import Encoder
from searchengine.engine.embedding import to_index_vectors
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError, UnknownModelError
from searchengine.indexer.tables.store import lone_surrogate
from searchengine.server.error_responses import error_response
from searchengine.server.limits import MAX_EMBEDDING_INPUTS
from searchengine.server.served_index import ServedIndex
from searchengine.server.state import MaybeIndex, answer, check_reads


class EmbeddingsRequest(BaseModel):
    """OpenAI's request body. `input` may hold token ids in OpenAI's API; this server embeds text only."""

    model_config = ConfigDict(extra="forbid")

    input: str | list[Any] = Field(
        description=f"A text, or a list of up to {MAX_EMBEDDING_INPUTS} texts, to embed (each within the model's "
        "token limit)."
    )
    model: str = Field(
        description="The index's model as GET /info names it (model), or its last part (all-MiniLM-L6-v2), or a "
        "model the server was started with (GET /v1/models lists them)."
    )
    encoding_format: Literal["float", "base64"] = Field(
        "float", description="float: lists of numbers; base64: little-endian float32 bytes, base64-encoded."
    )
    dimensions: int | None = Field(
        None, ge=1, strict=True, description="Must be the index's dimension when given: the vectors cannot be shortened."
    )
    user: str | None = Field(None, description="Accepted and ignored (OpenAI's end-user id).")


class EmbeddingOut(BaseModel):
    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | str


class UsageOut(BaseModel):
    prompt_tokens: int
    total_tokens: int


class EmbeddingsOut(BaseModel):
    object: Literal["list"] = "list"
    data: list[EmbeddingOut]
    model: str
    usage: UsageOut


class ModelOut(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int = Field(description="When the index was built (Unix time).")
    owned_by: str


class ModelsOut(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelOut]


class OpenAIErrorDetail(BaseModel):
    message: str = Field(description="One line: what is wrong and how to fix it.")
    type: str = Field(description="invalid_request_error (the request's fault) or server_error.")
    param: str | None = Field(description="The field at fault, when one is.")
    code: str | None = Field(description="OpenAI's code, when one fits: invalid_api_key, model_not_found.")


class OpenAIErrorOut(BaseModel):
    """An error of /v1/*, in OpenAI's shape (searchengine.server.error_responses), where its clients read it."""

    error: OpenAIErrorDetail


router = APIRouter(
    tags=["embeddings"],
    dependencies=[Depends(check_reads)],
    responses={status: {"model": OpenAIErrorOut} for status in (400, 401, 404, 413)},
)
"""/v1/embeddings and /v1/models, with the API key of searches."""


def embedding_index(http: Request, request: EmbeddingsRequest) -> Iterator[ServedIndex]:
    """The index that answers `request`: the server's one index, or the collection the path names, or, on a server
    of collections asked at /v1/embeddings, the first collection (by name) whose model the request's `model` names
    (UnknownModelError, naming the models offered, when none does)."""
    name = http.path_params.get("collection")
    if name is None and http.app.state.index is not None:
        yield http.app.state.index
        return
    with http.app.state.collections.opened(name or _collection_for(http, request.model)) as index:
        yield index


def _collection_for(http: Request, model: str) -> str:
    """The first collection (by name) whose model `model` names; UnknownModelError, naming the models offered,
    when none does."""
    manifests = http.app.state.collections.manifests()
    name = next((name for name, manifest in manifests.items() if _names(model, manifest.model.name)), None)
    if name is None:
        offered = ", ".join(repr(known) for known in dict.fromkeys(m.model.name for m in manifests.values()))
        raise UnknownModelError(
            f"this server embeds with {offered or 'no model (it holds no collection yet)'}, not {model!r}; "
            "send one of them as model"
        )
    return name


@router.post("/v1/embeddings", response_model=EmbeddingsOut)
async def create_embeddings(
    index: Annotated[ServedIndex, Depends(embedding_index)], request: EmbeddingsRequest
) -> dict[str, Any]:
    """Embed texts as the index does (OpenAI-compatible): `base_url` of an OpenAI client is http://HOST:PORT/v1 (on
    a server of collections, the collection whose model `model` names; http://HOST:PORT/collections/NAME/v1 for
    that collection's)."""
    texts = _texts(request.input)

    def embed(engine: SearchEngine) -> dict[str, Any]:
        name = engine.manifest.model.name  # as info() names it, without its store queries
        if _names(request.model, name):
            return _embeddings(request, texts, name, engine.encoder, engine.encode, engine.manifest.index.dimension)
        for given, encoder in index.embedders.items():
            if _names(request.model, given):
                encode = partial(_normalised, encoder)
                return _embeddings(request, texts, given, encoder, encode, encoder.dimension)
        offered = ", ".join(repr(model) for model in [name, *index.embedders])
        raise UnknownModelError(f"this server embeds with {offered}, not {request.model!r}; send one of them as model")

    return await answer(index.reader.run(embed))


def _names(asked: str, model: str) -> bool:
    """Whether a request's model names `model`: in full, or by its last part (all-MiniLM-L6-v2)."""
    return asked in (model, PurePath(model).name)


def _normalised(encoder: Encoder, texts: list[str]) -> np.ndarray:
    """A served model's vectors, L2-normalised as the index's are (and as OpenAI's are)."""
    return to_index_vectors(encoder.encode(texts), None)


def _embeddings(
    request: EmbeddingsRequest,
    texts: list[str],
    name: str,
    encoder: Encoder,
    encode: Callable[[list[str]], np.ndarray],
    dimension: int,
) -> dict[str, Any]:
    """The answer to `request`: `texts` embedded by `encode` (with `encoder`'s token limit) as model `name`."""
    if request.dimensions is not None and request.dimensions != dimension:
        raise SearchEngineError(
            f"{name}'s vectors have {dimension} dimensions and cannot be shortened to {request.dimensions}; leave "
            f"dimensions out or send {dimension}"
        )
    counts = encoder.token_counts(texts)
    limit = encoder.text_tokens
    for number, count in enumerate(counts):
        if count > limit:
            raise SearchEngineError(
                f"input {number} has {count} tokens, more than the model's {limit}; split it into shorter texts"
            )
    vectors = encode(texts)
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": number, "embedding": _encoded(vector, request.encoding_format)}
            for number, vector in enumerate(vectors)
        ],
        "model": name,
        "usage": {"prompt_tokens": sum(counts), "total_tokens": sum(counts)},
    }


@router.get("/v1/models", response_model=ModelsOut)
async def list_models(http: Request, index: MaybeIndex) -> dict[str, Any]:
    """The models /v1/embeddings answers with: the index's, then those named with --embedding-model; on a server of
    collections, each collection's (OpenAI-compatible)."""
    return {"object": "list", "data": await _models(http, index)}


async def _models(http: Request, index: ServedIndex | None) -> list[dict[str, Any]]:
    """The model records GET /v1/models lists."""
    if index is None:  # a server of collections: each model once, as built first
        created: dict[str, int] = {}
        for manifest in http.app.state.collections.manifests().values():
            stamp = _unix_time(manifest.created_at)
            created[manifest.model.name] = min(stamp, created.get(manifest.model.name, stamp))
        return [_model(name, stamp) for name, stamp in created.items()]

    def model(engine: SearchEngine) -> dict[str, Any]:
        return _model(engine.manifest.model.name, _unix_time(engine.manifest.created_at))

    own = await answer(index.reader.run(model))
    return [own, *(_model(name, own["created"]) for name in index.embedders)]


def _model(name: str, created: int) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": created, "owned_by": "searchengine"}


@router.get("/v1/models/{model:path}", response_model=ModelOut)
async def retrieve_model(http: Request, index: MaybeIndex, model: str) -> dict[str, Any] | JSONResponse:
    """One model /v1/embeddings answers with, by its id as GET /v1/models lists it or its last part
    (OpenAI-compatible); 404 with OpenAI's code model_not_found for any other."""
    models = await _models(http, index)
    found = next((entry for entry in models if _names(model, entry["id"])), None)
    if found is not None:
        return found
    offered = ", ".join(repr(entry["id"]) for entry in models) or "no model (it holds no collection yet)"
    message = f"this server embeds with {offered}, not {model!r}; GET /v1/models lists them"
    return error_response(404, message, path=http.url.path, param="model", code="model_not_found")


def _texts(given: str | list[Any]) -> list[str]:
    """The texts of a request, each checked: not empty, valid Unicode, and text rather than token ids."""
    texts = [given] if isinstance(given, str) else given
    if not texts:
        raise SearchEngineError("input is an empty list; send a text or a list of texts")
    if len(texts) > MAX_EMBEDDING_INPUTS:
        raise SearchEngineError(
            f"input holds {len(texts)} texts, more than {MAX_EMBEDDING_INPUTS} in one request; send them in parts"
        )
    if _token_ids(texts):
        raise SearchEngineError(
            "input holds token ids; this server tokenizes with the index's own model, so send the texts"
        )
    for number, text in enumerate(texts):
        if not isinstance(text, str):
            kind = type(text).__name__
            article = "an" if kind[0] in "aeiou" else "a"
            raise SearchEngineError(f"input {number} is {article} {kind}, not a text; send strings")
        if not text.strip():
            raise SearchEngineError(f"input {number} is empty; send text to embed")
        if lone_surrogate(text) is not None:
            raise SearchEngineError(f"input {number} holds a lone surrogate, half of a character; send valid Unicode")
    return texts


def _token_ids(given: list[Any]) -> bool:
    """Whether `given` is one of OpenAI's token-id inputs: a list of integers, or a list of lists of integers (a
    mixed list such as ["a", 1] is neither: it is a list of texts with a wrong one)."""

    def ids(items: object) -> bool:
        return isinstance(items, list) and bool(items) and all(type(item) is int for item in items)

    return ids(given) or all(ids(item) for item in given)


def _unix_time(stamp: str) -> int:
    """The manifest's "2026-11-25T16:38:32+0000" as Unix time; 0 for a stamp in another form."""
    try:
        return int(datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S%z").timestamp())
    except ValueError:
        return 0


def _encoded(vector: np.ndarray, encoding_format: str) -> list[float] | str:
    if encoding_format == "base64":
        return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
    return vector.tolist()
