"""Whether an index's trained template still fits its data: what `info` and `compact` say about
`compact --retrain` (indexer/vectors/template.py keeps the figures, benchmarks/storage/drift.py measured the rule)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from searchengine.indexer.vectors.factory_codes import stores_approximate_vectors
from searchengine.indexer.vectors.template import RETRAIN_ERROR_RATIO, TemplateRecord, retrain_rule_applies


@dataclass(frozen=True)
class TemplateState:
    """The template of an index and how the vectors added since it was trained fit it."""

    factory: str
    trained_vectors: int
    added: int
    """Vectors written since training (each write counts those it adds; merges move, never add)."""
    vectors: int
    """Searchable vectors the index holds now."""
    error_ratio: float | None
    """The mean quantization error of the added vectors over the training vectors' (None: none added, or a type
    without a decoder such as LSH)."""
    budget_type: str | None = None
    """The type the index's memory budget calls for at its size now, where that is not the template's: writes and
    merges keep the template's type, `compact --retrain` moves to this one."""

    @property
    def added_share(self) -> float:
        return self.added / self.vectors if self.vectors else 0.0

    @property
    def advisable(self) -> bool:
        """Whether the rule was measured for this type (product quantization)."""
        return retrain_rule_applies(self.factory)

    @property
    def retrain_advised(self) -> bool:
        return self.advisable and self.error_ratio is not None and self.error_ratio >= RETRAIN_ERROR_RATIO

    def summary(self) -> str:
        """One line for `info` and `compact`."""
        share = f"{self.added:,} vectors ({self.added_share:.0%}) added since"
        if self.error_ratio is None:
            fit = ""
        else:
            fit = f"; they decode with {self.error_ratio:.2f}× the training vectors' quantization error"
        if self.error_ratio is None:
            advice = ""
        elif not self.advisable:
            advice = " (when a retrain pays was measured for PQ types only)"
        elif self.retrain_advised:
            advice = f": `searchengine compact --retrain` is worth it (it pays from {RETRAIN_ERROR_RATIO}×)"
        else:
            advice = f" (a retrain pays from {RETRAIN_ERROR_RATIO}×)"
        moved = (
            f"; the memory budget calls for {self.budget_type} at this size: `compact --retrain` moves to it"
            if self.budget_type
            else ""
        )
        return f"{self.factory} trained on {self.trained_vectors:,} vectors, {share}{fit}{advice}{moved}"

    def as_json(self) -> dict[str, Any]:
        return {
            "factory": self.factory,
            "trained_vectors": self.trained_vectors,
            "added_since_training": self.added,
            "added_share": round(self.added_share, 4),
            "error_ratio": None if self.error_ratio is None else round(self.error_ratio, 4),
            "retrain_advised": self.retrain_advised,
            "retrain_error_ratio": RETRAIN_ERROR_RATIO,
            "budget_type": self.budget_type,
        }


def template_state(record: TemplateRecord | None, vectors: int, budget_type: str | None = None) -> TemplateState | None:
    """The state of the template `record` in an index of `vectors` searchable vectors (None: no template), where
    its memory budget calls for `budget_type` at that size (indexer/vectors/index_choice.type_for_growth). A budget
    type of exact vectors (the budget's Flat or HNSW32, which keep no quantizer) is not named: `compact --retrain`
    has nothing to train for it and refuses, so naming it sent the user to a command that fails."""
    if record is None:
        return None
    moved = budget_type if budget_type is not None and budget_type != record.factory else None
    if moved is not None and not stores_approximate_vectors(moved):  # Flat, HNSW32: `compact --retrain` refuses them
        moved = None
    return TemplateState(record.factory, record.trained_vectors, record.added, vectors, record.added_error_ratio, moved)
