"""The documents of a corpus to build a cluster index from, each with the external id that picks its shard: a corpus
file (.txt, .jsonl or .csv, gzipped or not, or '-' for standard input) or a folder of corpus files (.txt and .jsonl
shards), read as `searchengine index` reads them (reading/corpus.py). A document without an id of its own (no
--id-field) is given `NAME#LINE`: its file's name inside the corpus folder (the file's own name for one file,
`stdin` for standard input) and its line, so building the same files again gives every document the same id, and
so the same shard."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

from searchengine.indexer.tables.documents import Document
from searchengine.reading.corpus import STDIN, JsonFields, corpus_files, read_corpus


def cluster_corpus(
    corpus: str | Path, jsonl: bool | None = None, fields: JsonFields = JsonFields()
) -> Iterator[Document]:
    """The documents of `corpus` in order, each with an external id: its `fields.id` field where one is named,
    else `NAME#LINE` (see the module). `jsonl` None: by each file's suffix."""
    if str(corpus) == STDIN:
        yield from _with_ids(read_corpus(STDIN, jsonl, fields), "stdin", fields)
        return
    folder = Path(corpus)
    for path in corpus_files(folder):
        name = path.relative_to(folder).as_posix() if folder.is_dir() else path.name
        yield from _with_ids(read_corpus(path, jsonl, fields), name, fields)


def _with_ids(documents: Iterator[Document], name: str, fields: JsonFields) -> Iterator[Document]:
    """`documents` of one file, each given `name#LINE` as its id unless `fields` name an id field (read_corpus
    then refuses a record without one)."""
    if fields.id is not None:
        yield from documents
        return
    for document in documents:
        yield dataclasses.replace(document, external_id=f"{name}#{document.line}")
