"""What a build or add is given to index: a corpus file (or '-' for standard input), or texts and Documents from
Python, read into Documents and counted up front where it can be read twice."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from searchengine.errors import SearchEngineError
from searchengine.indexer.tables.documents import Document, refuse_unstorable
from searchengine.reading.corpus import STDIN, JsonFields, read_corpus

Corpus = str | Path | Iterable[str | Document]
"""A corpus file (.txt, .jsonl, gzipped or not, or '-' for stdin), or the texts (or Documents) themselves."""


def corpus_documents(corpus: Corpus, jsonl: bool | None, fields: JsonFields = JsonFields()) -> Iterator[Document]:
    """The documents of `corpus`: read from its file, or the texts and Documents given (blank texts left out)."""
    if isinstance(corpus, (str, Path)):
        return read_corpus(corpus, jsonl, fields)
    if not fields.plain:
        raise SearchEngineError(
            "id_field, text_field and title_field name fields of a .jsonl file; give Documents (with external_id) "
            "instead"
        )
    return given_documents(corpus)


def given_documents(corpus: Iterable[str | Document]) -> Iterator[Document]:
    """The texts and Documents given from Python as Documents, blank texts left out (a text that is not a str is
    refused in one line, as are bytes given as the corpus: read as a sequence, each byte was a text that is an int)."""
    if isinstance(corpus, (bytes, bytearray, memoryview)):
        raise SearchEngineError(
            f"the corpus is {type(corpus).__name__}, not texts: decode it (data.decode('utf-8')) and give a list of str, "
            "or give the path of a corpus file"
        )
    documents = (_text_document(text, number) for number, text in enumerate(corpus, start=1))
    return (document for document in documents if document.text.strip())  # a Document's text is kept as given


def checked_documents(corpus: Iterable[str | Document] | None) -> list[Document]:
    """The documents an add of `corpus` (texts or Documents given from Python) stores, refused before anything is
    written as one index refuses them, with the same error: a text that is not a str, no text at all (blank texts
    are left out, as one index leaves them out), or a document the store cannot hold (refuse_unstorable). A write
    that is routed before it is stored (a cluster's) checks the whole write here, so no part of it is sent."""
    from searchengine.engine.indexing import NO_TEXT

    documents = list(given_documents(corpus or []))
    if not documents:
        raise SearchEngineError(NO_TEXT)
    refuse_unstorable(documents)
    return documents


def _text_document(text: str | Document, number: int) -> Document:
    """A text or Document given from Python, refused in one line where its text is not a str (which reached the
    tokenizer as an AttributeError)."""
    given = text.text if isinstance(text, Document) else text
    if not isinstance(given, str):
        raise SearchEngineError(f"text number {number} is a {type(given).__name__}, not a str")
    if isinstance(text, Document):
        return text
    return Document(text.strip(), None, number)


def corpus_count(corpus: Corpus, jsonl: bool | None, fields: JsonFields = JsonFields()) -> int | None:
    """Documents in a corpus file or list, read once up front so bad input fails before any embedding.

    None for standard input, pipes and one-shot iterators, which can be read only once.
    """
    if isinstance(corpus, (str, Path)):
        path = Path(corpus)
        if str(corpus) == STDIN or (path.exists() and not path.is_file() and not path.is_dir()):  # a pipe
            return None
    elif not isinstance(corpus, Sequence):
        return None
    return sum(1 for _ in corpus_documents(corpus, jsonl, fields))
