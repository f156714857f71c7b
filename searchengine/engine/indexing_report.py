"""What an indexing run (a build, an add, a re-embedding) did: its counts and the time of each stage."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class IndexingReport:
    """What an indexing run did."""

    documents: int = 0
    """Documents read (non-blank lines)."""
    added: int = 0
    """Documents stored, each with its own vector."""
    repeats: int = 0
    """Of those added, documents whose text an earlier document (in the index or the input) already has: stored
    all the same, each its own document, and encoded once."""
    replaced: int = 0
    """Stored documents an upsert gave a new text (removed, and the new one added)."""
    updated: int = 0
    """Upserts that kept the stored text: origin and metadata replaced, the vector kept."""
    superseded: int = 0
    """Documents replaced by a later one with the same id in the same input, so never stored (ids are text)."""
    upgraded: int = 0
    """Documents an index written by an older version had merged into one row, given rows of their own."""
    truncated: int = 0
    """Texts longer than the model's limit, embedded from their first tokens (none when documents are split into
    passages)."""
    split: int = 0
    """Documents longer than the model's limit split into passages, each passage its own vector."""
    vectors: int = 0
    """Vectors added: one per added document, plus one per further passage of a split one."""
    index_type: str = ""
    index_type_chosen: bool = False
    """True when searchengine picked the FAISS type from the corpus size (and memory budget)."""
    index_type_reason: str = ""
    """Why it picked that type, where it did (indexer/vectors/index_choice.choice_reason)."""
    seconds: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)
    """Seconds of `seconds` spent in each stage, in the order first entered: "reading" the corpus (with Ray:
    "reading and embedding on Ray workers", waiting for the workers' rows), "storing" the documents (their rows
    and keyword index, one transaction per chunk), "encoding" (tokenising and passage splitting included),
    "whitening" (fitting it), "training" the FAISS index (a build of a type that needs it), "vector index" (adding
    and removing vectors: an IVF assigns each to its list, a quantizer encodes it), "commit"
    (writing the generation's files and the manifest). They run one after another; the rest of `seconds` is
    opening the index and, for an addition, copying and committing it (searchengine.indexer.commit.rewrite)."""
    stages_cpu: dict[str, float] = field(default_factory=dict)
    """CPU seconds of this process (every thread, user and system: time.process_time) in each stage `timing` timed:
    what a stage cost even when other work on the machine stretched its `stages` seconds."""

    @contextmanager
    def timing(self, stage: str) -> Iterator[None]:
        """Add the time the block takes to `stage`."""
        started, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.stages[stage] = self.stages.get(stage, 0.0) + time.perf_counter() - started
            self.stages_cpu[stage] = self.stages_cpu.get(stage, 0.0) + time.process_time() - cpu
