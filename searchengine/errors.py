"""The root of every error searchengine raises on purpose: catch `SearchEngineError` to catch them all.

Messages name the problem and the fix in the library's words; the command line adds its flag names."""


class SearchEngineError(Exception):
    """A problem the user can fix; the message names the problem and the fix."""


class UnknownCollectionError(SearchEngineError):
    """A server of collections holds none of that name (HTTP 404)."""


class UnavailableError(SearchEngineError):
    """Part of what a request needs cannot answer now, and the request asked for a whole answer (a shard of a
    cluster index with no live copy, searched with all_shards): retry once it is back (HTTP 503)."""


class UnknownModelError(SearchEngineError):
    """A server embeds with no model of that name (/v1/embeddings' `model`: HTTP 400 with OpenAI's code
    model_not_found)."""


class ServerUnreachableError(SearchEngineError):
    """No searchengine server answers at the address a Client was given: nothing listens there, no such host, or no
    answer in time (`reason` says which)."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


class ApiKeyError(SearchEngineError):
    """A server refused the request's API key (HTTP 401): none was sent, it is wrong, or it may not do this (a
    read-only key writing, a collection's key creating or deleting collections)."""
