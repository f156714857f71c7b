"""The settings of a build (`SearchEngine.build`, `searchengine index`): which model, index type, whitening and
passages, and how the corpus is read, in one value checked where it is made."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchengine.encoding.passages import PASSAGE_HEADINGS_BY_DEFAULT, PASSAGES_BY_DEFAULT
from searchengine.engine.corpus_input import Corpus
from searchengine.errors import SearchEngineError
from searchengine.indexer.vectors.index_choice import parse_memory_size
from searchengine.indexer.vectors.originals import ORIGINAL_TYPES
from searchengine.reading.corpus import JsonFields

if TYPE_CHECKING:
    from searchengine.encoding.model_source import Pooling
    from searchengine.encoding.speed import EncoderSpeed
    from searchengine.engine.ray_embedding import RaySettings


def setting_named(name: str, value: str = "", *, flags: bool = False) -> str:
    """A setting as a message names it: its parameter in the Python API (`whiten_k=K`), its flag on the command
    line (`--whiten-k K`)."""
    if flags:
        return f"--{name.replace('_', '-')}" + (f" {value}" if value else "")
    return name + (f"={value}" if value else "")


def check_together(
    index: str | None,
    memory_budget: int | str | None,
    whiten_k: int | None,
    whiten_fit: object,
    *,
    flags: bool = False,
) -> None:
    """Refuse the index type with a memory budget (which chooses one), and whitening's fitting corpus without its k
    (which would silently be ignored); the message names the settings as the API does, or as flags with `flags`
    (IndexRequest, the command line's request)."""
    if memory_budget is not None and index is not None and index.strip().lower() != "auto":
        raise SearchEngineError(
            f"{setting_named('memory_budget', flags=flags)} chooses the index type, and "
            f"{setting_named('index', repr(index), flags=flags)} names one: drop one of them"
        )
    if whiten_fit is not None and whiten_k is None:
        raise SearchEngineError(
            f"{setting_named('whiten_fit', flags=flags)} says what to fit whitening on; "
            f"add {setting_named('whiten_k', 'K', flags=flags)} to use it"
        )


@dataclass(frozen=True)
class BuildSettings:
    """How `SearchEngine.build` makes an index.

    model: None for the bundled all-MiniLM-L6-v2, a model directory or a Hugging Face id.
    pooling: override the model's pooling (mean, cls, max, mean_sqrt_len, last2avg, first_last_avg).
    batch_size, speed: batch size, precision, backend and threads of the Encoder loaded for the build (see
    Encoder); model, pooling, batch_size and speed are ignored when the build is given a loaded encoder.
    index: a FAISS factory string ("Flat", "HNSW32", "IVF1024,PQ32"); None (or "auto") picks one from the corpus
    size and the memory budget.
    memory_budget: the memory the index's vectors may take in a query process, in bytes or as a size ("8GB",
    "300MB"); `auto` then picks the best index type that fits (indexer/vectors/index_choice.py), and the budget is
    recorded in the index so later merges pick again for the size it has grown to. Only with the automatic choice.
    whiten_k: fit BERT-whitening and keep k dimensions; fitted on `whiten_fit` when given (which needs whiten_k),
    else the corpus.
    jsonl: read a corpus file as JSON lines (True) or plain lines (False); None decides by the .jsonl suffix.
    id_field: a .jsonl field holding each document's own id, for later upserts and deletes by that id.
    text_field, title_field: the .jsonl fields holding the text, and a title embedded before it (BEIR's
    `title + " " + text`); every other field is kept as metadata.
    passages: split a document longer than the model's limit into passages, each its own vector, sharing up
    to `passage_overlap` tokens with the next (default 32, at most a quarter of the model's limit); a search
    returns the document, scored by its best passage. False embeds such a document from its beginning. Later
    additions follow the index's setting. Not with `ray`, whose workers embed whole documents.
    passage_headings: with passages, embed each passage after its heading (a file's section heading path, a
    PDF page's or a titled record's title) on a line of its own, in a window shortened by the heading's tokens;
    the stored text, spans and snippets stay the document's own. Recorded in the index, so `add` and `sync`
    embed the same way. False embeds the passage alone (as indexes built before this setting do).
    progress: show progress bars.
    shards: split the vectors over this many segments, searched together (searchengine.indexer.vectors.build_parts);
    default 1. Not with `ray`, whose workers write the segments (one per part of the corpus, searched
    together as shards are).
    ray: embed on a Ray cluster (searchengine.engine.ray_embedding); the corpus (and `whiten_fit`) must then be
    a file or a directory of corpus files that every node reads at the same path, and the index a directory every
    node writes at the same path (the workers write the vector segments there).
    reading: how the input was read, recorded in the index for `add` and `sync` (searchengine.engine.files);
    by default the JSON fields.
    originals: how an index type whose codes are approximate (PQ, SQ8, LSH) keeps each segment's original vectors
    on disk for exact rescoring: "float16" (None, the default) or "float32" (searchengine.indexer.vectors.originals).
    """

    model: str | Path | None = None
    pooling: Pooling | None = None
    batch_size: int | None = None
    speed: EncoderSpeed | None = None
    index: str | None = None
    memory_budget: int | str | None = None
    whiten_k: int | None = None
    whiten_fit: Corpus | None = None
    jsonl: bool | None = None
    id_field: str | None = None
    text_field: str = "text"
    title_field: str | None = None
    passages: bool = PASSAGES_BY_DEFAULT
    passage_overlap: int | None = None
    passage_headings: bool = PASSAGE_HEADINGS_BY_DEFAULT
    progress: bool = False
    shards: int | None = None
    ray: RaySettings | None = None
    reading: dict[str, Any] | None = None
    originals: str | None = None

    def __post_init__(self) -> None:
        """Refuse settings that cannot go together, before any model is loaded or text read; read the memory
        budget's size once, here."""
        if self.index is not None and not self.index.strip():  # "" was taken for auto without a word
            raise SearchEngineError(
                "the index type is empty: give a FAISS factory string such as Flat or HNSW32, or auto (or leave "
                "--index out) to have one chosen by the corpus size"
            )
        if self.index is not None and self.index.strip().lower() == "auto":
            object.__setattr__(self, "index", None)
        if self.memory_budget is not None:
            object.__setattr__(self, "memory_budget", parse_memory_size(self.memory_budget))
        if self.originals is not None and self.originals not in ORIGINAL_TYPES:
            raise SearchEngineError(
                f"originals must be {' or '.join(ORIGINAL_TYPES)} (how the original vectors are kept on disk), "
                f"not {self.originals!r}"
            )
        check_together(self.index, self.memory_budget, self.whiten_k, self.whiten_fit)
        if self.shards is not None and self.shards < 1:
            raise SearchEngineError(f"shards must be at least 1, not {self.shards}")
        if self.ray is not None and self.passages:
            raise SearchEngineError(
                "passages are not split with Ray, whose workers embed whole documents: build without --ray to split "
                "long documents, or drop --passages"
            )

    @property
    def fields(self) -> JsonFields:
        """The JSON fields of the corpus: text, title and id."""
        return JsonFields(self.text_field, self.title_field, self.id_field)

    def check_whitening(self, dimension: int) -> None:
        """Refuse a whitening k the model's `dimension` cannot give."""
        if self.whiten_k is not None and not 1 <= self.whiten_k <= dimension:
            raise SearchEngineError(
                f"whitening k must be between 1 and the embedding dimension {dimension}, not {self.whiten_k}"
            )
