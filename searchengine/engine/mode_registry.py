"""The retrieval modes a search may name, each one class registered once: the engine ranks with it, and the CLI, the
server, the MCP tools and the search page list and check mode names here, so that a new mode lands in one file plus
one `register_mode` call (the built-in ones are in searchengine.engine.modes)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from searchengine.errors import SearchEngineError

if TYPE_CHECKING:  # the CLI lists the modes without importing numpy, FAISS or the store
    import numpy as np

    from searchengine.engine.fusion import Fusion
    from searchengine.engine.search import Scored
    from searchengine.indexer.tables.store import DocumentStore
    from searchengine.indexer.vectors.vector_index import VectorIndex

Side = Literal["dense", "keyword"]
"""A way of finding candidates: the vector index (the encoded query's cosine) or the keyword index (BM25)."""


@dataclass(frozen=True)
class RankRequest:
    """What a mode ranks: the queries, how many documents each, and the index's parts with the filters applied."""

    texts: Sequence[str]
    k: int
    """At most this many documents per query (never more than the index holds)."""
    store: DocumentStore
    vectors: VectorIndex
    query_vectors: np.ndarray | None
    """The encoded queries as the index stores vectors; None for a mode whose sides do not include dense."""
    searchable: int
    """How many documents the filters let through (the dense side returns no more)."""
    allowed: np.ndarray | None
    """Vector ids (documents' and their passages') the filters let through; None: all."""
    matching: np.ndarray | None
    """Document ids the filters let through; None: all."""
    excluded: np.ndarray | None
    """Vector ids of deleted documents still in the vector index (tombstones); None: none."""
    fusion: Fusion
    """How a mode with two sides fuses them."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """The mode's own options (QueryRequest.mode_options), checked by its `check_options`."""


class RetrievalMode(ABC):
    """One way to rank documents for a query. The class attributes say how the CLI, the server and the search page
    name it and what they show of its hits; `rank` does the ranking."""

    name: ClassVar[str]
    """What --mode, `mode=` and the API call it."""
    description: ClassVar[str]
    """What it ranks by, for help texts: "by meaning (cosine of the encoded query)"."""
    label: ClassVar[str]
    """How the search page offers it: "dense (cosine)"."""
    score_name: ClassVar[str]
    """What its score is called: "cosine", "fused score"."""
    short_score_name: ClassVar[str]
    """Its score's name in a printed hit line: "cos", "fused"."""
    sides: ClassVar[tuple[Side, ...]]
    """The sides it searches: with dense the query is encoded, with keyword it needs the index's keyword index."""
    side_scores: ClassVar[tuple[Side, ...]]
    """The sides whose own scores a hit shows beside the mode's score (none where the score is that side's)."""

    @property
    def fuses(self) -> bool:
        """Whether it fuses two sides' rankings (RankRequest.fusion says how), so a fusion applies to it."""
        return len(self.sides) > 1

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Refuse options this mode does not take (SearchEngineError); a mode with options of its own overrides it."""
        if options:
            raise SearchEngineError(f"mode {self.name} takes no options, not {', '.join(sorted(options))}")

    @abstractmethod
    def rank(self, request: RankRequest) -> list[list[Scored]]:
        """The `request.k` best documents per query, best first."""


MODES: dict[str, RetrievalMode] = {}
"""The registered modes by name, in the order they were registered (the order they are offered in)."""


def register_mode(mode: RetrievalMode) -> RetrievalMode:
    """Make `mode` one that searches may name; refused when its name is taken."""
    if mode.name in MODES:
        raise SearchEngineError(f"a retrieval mode named {mode.name!r} is already registered")
    MODES[mode.name] = mode
    return mode


def mode_names() -> tuple[str, ...]:
    """The names of the registered modes, in the order they are offered."""
    return tuple(MODES)


def mode_named(name: str) -> RetrievalMode:
    """The registered mode called `name`; SearchEngineError naming the modes there are when none is."""
    if name not in MODES:
        raise SearchEngineError(f"unknown search mode {name!r}; use one of {', '.join(MODES)}")
    return MODES[name]
