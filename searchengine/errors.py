"""The root of every error searchengine raises on purpose: catch `SearchEngineError` to catch them all.

Messages name the problem and the fix in the library's words; the command line adds its flag names."""


class SearchEngineError(Exception):
    """A problem the user can fix; the message names the problem and the fix."""


class UnknownCollectionError(SearchEngineError):
    """A server of collections holds none of that name (HTTP 404)."""
