"""Errors raised by the on-disk pieces; each message names the file, the problem and the fix."""

import errno

from searchengine.errors import SearchEngineError


class IndexerError(SearchEngineError):
    """A problem with an index directory, its files or its inputs that the user can fix."""


class InterruptedAfterCommit(KeyboardInterrupt):
    """Ctrl+C that arrived once a write had committed (while SQLite's log was being emptied): the index holds the
    write, so nobody may be told that nothing changed."""


class StorageFullError(IndexerError):
    """The disk that holds the index is full; the write changed nothing."""


class StoragePermissionError(IndexerError):
    """This user may not open or write a file of the index (or its directory)."""


def storage_error_kind(exc: BaseException) -> type[IndexerError]:
    """The error for a failed file operation on the index: StorageFullError or StoragePermissionError by the OSError's
    errno (or, for FAISS, which raises RuntimeError with the system's message, by that message), else IndexerError."""
    code, text = getattr(exc, "errno", None), str(exc)
    if code == errno.ENOSPC or "No space left" in text:
        return StorageFullError
    if code in (errno.EACCES, errno.EPERM, errno.EROFS) or "Permission denied" in text:
        return StoragePermissionError
    return IndexerError


class IndexLockedError(IndexerError):
    """Another process is writing this index right now."""


class UnknownDocumentError(IndexerError):
    """An id (internal or external) names no stored document."""


class MissingKeywordIndexError(IndexerError):
    """The index was written before keyword search: its next write (or `searchengine compact`) adds it."""


class UnknownFieldError(IndexerError):
    """A filter names a metadata field no stored document has."""


class FieldKindError(IndexerError):
    """A filter compares a field with a value of a kind no stored value of that field is (a number with a field
    holding only text, `contains` on a field holding no list): it could never match."""
