"""Every error the server answers is `{"error": "one line"}` (under /v1/, OpenAI's shape: `{"error": {"message":
"one line", "type", "param", "code"}}`, where OpenAI's clients read the reason): 400 for a bad request, 401 without
the API key, 404 for an unknown id or path, 409 while another process writes the index (or, for a cluster index, wrote
one of its shards behind the ingress: write again), 413 for an oversize body,
503 when a request that asked for a whole answer (all_shards), or a write, finds a shard of a cluster index with no
live copy, 507 when the index's disk is full, 500 otherwise (a file of the index this server may not write among
them)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from searchengine.cluster.errors import WriteConflictError
from searchengine.errors import SearchEngineError, UnavailableError, UnknownCollectionError, UnknownModelError
from searchengine.indexer.errors import (
    IndexLockedError,
    StorageFullError,
    StoragePermissionError,
    UnknownDocumentError,
)

STATUS_OF_ERROR = {
    UnknownDocumentError: 404,
    UnknownCollectionError: 404,
    IndexLockedError: 409,
    WriteConflictError: 409,
    StorageFullError: 507,
    StoragePermissionError: 500,
    UnavailableError: 503,
}
"""The status of a SearchEngineError of these kinds (any other: 400, the request's fault). A full disk or a file
the server may not write is the server's to fix, not the client's; so is a shard that cannot answer."""


OPENAI_PATH = re.compile(r"(/collections/[^/]+)?/v1/")
"""The paths of the OpenAI-compatible API (searchengine.server.routes.embeddings), the server's or a collection's,
whose errors take OpenAI's shape."""


ERROR_CLASS_HEADER = "X-SearchEngine-Error"
"""The header naming the class of a SearchEngineError the server answered with (IndexLockedError, ...)."""


def error_response(
    status: int,
    message: str,
    headers: dict[str, str] | None = None,
    path: str = "",
    param: str | None = None,
    code: str | None = None,
) -> JSONResponse:
    """`{"error": message}` on one line, with `status`; for a request to `path` under /v1/, OpenAI's error object,
    with the field at fault (`param`) and OpenAI's `code` when known."""
    line = " ".join(str(message).split())
    body: dict[str, Any] = {"error": line}
    if OPENAI_PATH.match(path):
        body = {
            "error": {"message": line, "type": openai_type(status), "param": param, "code": code or CODES.get(status)}
        }
    return JSONResponse(body, status_code=status, headers=headers)


def openai_type(status: int) -> str:
    """OpenAI's error type for a status: the server's fault or the request's."""
    return "server_error" if status >= 500 else "invalid_request_error"


CODES = {401: "invalid_api_key"}
"""OpenAI's error code for a status that has one whatever the cause (OpenAI's own for a wrong key)."""


def refusal(exc: StarletteHTTPException, path: str = "") -> JSONResponse:
    """An HTTPException (a missing or wrong API key) to a request for `path` as an error response."""
    return error_response(exc.status_code, str(exc.detail), exc.headers, path)


def add_error_handlers(app: FastAPI) -> None:
    """Answer every error of `app` in one line."""

    @app.exception_handler(SearchEngineError)
    async def user_error(request: Request, exc: SearchEngineError) -> JSONResponse:
        status = next((code for kind, code in STATUS_OF_ERROR.items() if isinstance(exc, kind)), 400)
        param, code = ("model", "model_not_found") if isinstance(exc, UnknownModelError) else (None, None)
        response = error_response(status, str(exc), path=request.url.path, param=param, code=code)
        response.headers[ERROR_CLASS_HEADER] = type(exc).__name__  # searchengine.Client raises the same class
        return response

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        path = request.url.path
        if "json" not in request.headers.get("content-type", "") and any(
            tuple(error.get("loc", ())) == ("body",) for error in exc.errors()
        ):
            return error_response(
                400, "the request body must be JSON sent with the header 'Content-Type: application/json'", path=path
            )
        return error_response(400, _validation_message(exc), path=path, param=_field(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = str(exc.detail)
        if exc.status_code == 400 and message == FASTAPI_BODY_ERROR:
            message = body_problem(getattr(request.state, "body", b""))
        elif exc.status_code == 404 and message == "Not Found":
            message = f"no such endpoint: {request.method} {request.url.path}; the API is described at /docs"
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}; the API is described at /docs"
        return error_response(exc.status_code, message, getattr(exc, "headers", None), request.url.path)

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        message = f"internal error ({type(exc).__name__}: {exc}); see the server's log"
        return error_response(500, message, path=request.url.path)


FASTAPI_BODY_ERROR = "There was an error parsing the body"
"""FastAPI's detail when reading a JSON body fails other than as invalid JSON (json.JSONDecodeError)."""


def body_problem(body: bytes) -> str:
    """What keeps `body` from being read as JSON, in one line with the fix, for the failures FastAPI reports only
    as FASTAPI_BODY_ERROR: bytes that are not UTF-8, an integer longer than Python reads, JSON nested too deep."""
    try:
        json.loads(body)
    except UnicodeDecodeError as exc:
        byte = body[exc.start : exc.start + 1]
        return f"the request body is not UTF-8 ({byte!r} at byte offset {exc.start}); send JSON in UTF-8"
    except RecursionError:
        return "the request body is nested too deeply to read; flatten its JSON"
    except ValueError as exc:
        if "digits" in str(exc):
            return (
                f"the request body holds an integer of more than {sys.get_int_max_str_digits():,} digits, too long to "
                "read; send it as a string"
            )
        return f"the request body is not valid JSON ({exc})"
    return f"the request body could not be read ({FASTAPI_BODY_ERROR.lower()})"


def _validation_message(exc: RequestValidationError) -> str:
    """The first problem in one line, e.g. 'k: Input should be less than or equal to 1000'."""
    errors = exc.errors()
    first = errors[0]
    if first.get("type") == "json_invalid":
        return f"the request body is not valid JSON ({first.get('ctx', {}).get('error', first['msg'])})"
    return validation_message(errors, REQUEST_PARTS)


def _field(exc: RequestValidationError) -> str | None:
    """The field of the first problem (`input`, `encoding_format`), OpenAI's `param`; None for the body as a whole."""
    location = [part for part in exc.errors()[0].get("loc", ()) if part not in REQUEST_PARTS]
    return str(location[0]) if location else None


REQUEST_PARTS = ("body", "query", "path", "header")
"""Where FastAPI found a value: the first part of its errors' locations, not a field's name."""


def validation_message(errors: Sequence[Mapping[str, Any]], request_parts: Sequence[str] = ()) -> str:
    """Pydantic's errors (`ValidationError.errors()`) as one line: the first problem, where it is, and how many
    more there are, e.g. 'k: Input should be less than or equal to 1000 (and 1 more problems)'. A location that
    starts with one of `request_parts` is given without it."""
    first = errors[0]
    location = tuple(first.get("loc", ()))
    if location and location[0] in request_parts:
        location = location[1:]
    place = ".".join(str(part) for part in location)
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{place or 'request'}: {first['msg']}{more}"
