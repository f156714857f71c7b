"""Document ids as a user writes them (`searchengine delete 17`, DELETE /documents/17): plain ASCII digits, with an
optional leading # as the page and the CLI show them."""

from __future__ import annotations

from searchengine.errors import SearchEngineError


def document_id(written: str, fix: str) -> int:
    """The id `written` names (17 or #17); else SearchEngineError ending in `fix`. Stricter than int(), which reads
    1_0 as 10 and Unicode digits such as Arabic-Indic ٣ as 3: a mistyped id must not delete another document."""
    digits = written.strip().removeprefix("#")
    if not (digits.isascii() and digits.isdigit()):
        raise SearchEngineError(f"{written!r} is not a document id (a number); {fix}")
    return int(digits)
