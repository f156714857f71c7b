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


def external_ids_given(external_ids: object, named: str = "external ids") -> list[str]:
    """The external ids a delete (or a get) names, as a list of str; SearchEngineError, calling them `named`, for a
    lone string (list() reads it as its letters: delete(external_ids="ab") deleted the documents "a" and "b", not
    "ab") and for an id that is not a str (a TypeError from the store), before anything is deleted."""
    if external_ids is None:
        return []
    if isinstance(external_ids, (str, bytes)):
        raise SearchEngineError(f"give a list of {named}, not the string {external_ids!r}; write [{external_ids!r}]")
    try:
        given = list(external_ids)  # type: ignore[call-overload]
    except TypeError:
        raise SearchEngineError(f"give a list of {named}, not {external_ids!r}") from None
    for number, value in enumerate(given, start=1):
        if not isinstance(value, str):
            raise SearchEngineError(f"external id {number} is {value!r}, not a str: ids are text, e.g. {str(value)!r}")
    return given
