"""The one exception type the CLI turns into a one-line message instead of a traceback."""


class SearchEngineError(Exception):
    """A problem the user can fix; the message names the problem and the fix."""
