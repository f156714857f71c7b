"""What to cluster with: the methods, their parameters and defaults, checked before any vector is read. Free of
numpy and FAISS, so the command line can list the methods cheaply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from searchengine.errors import SearchEngineError

ClusterMethod = Literal["kmeans", "community", "agglomerative"]
"""kmeans: k clusters of every text; community: groups of texts similar to a centre text, the rest in none;
agglomerative: average-linkage tree cut into k clusters or at a similarity threshold."""
METHODS: tuple[str, ...] = get_args(ClusterMethod)
DEFAULT_THRESHOLD = 0.75
DEFAULT_MIN_SIZE = 10


@dataclass(frozen=True)
class ClusterSettings:
    """What to cluster with. Unset values take each method's default; options a method does not use are refused."""

    method: ClusterMethod = "kmeans"
    k: int | None = None
    """Number of clusters: required for kmeans; for agglomerative, cut the tree into k clusters."""
    threshold: float | None = None
    """Cosine similarity in (0, 1]: community members' least similarity to its centre (default 0.75); for
    agglomerative, two groups merge only while their average pairwise similarity is at least this."""
    min_size: int | None = None
    """Smallest community kept (community detection only, default 10)."""
    seed: int = 0
    """Random seed of k-means."""

    def parameters(self) -> dict[str, Any]:
        """The parameters that define the clustering, defaults filled in; raises SearchEngineError on bad ones."""
        if self.method not in METHODS:
            raise SearchEngineError(f"unknown clustering method {self.method!r}: choose one of {', '.join(METHODS)}")
        if self.k is not None and self.k < 1:
            raise SearchEngineError(f"k must be at least 1, not {self.k}")
        if self.threshold is not None and not 0 < self.threshold <= 1:
            raise SearchEngineError(f"threshold is a cosine similarity in (0, 1], not {self.threshold}")
        if self.min_size is not None and self.min_size < 1:
            raise SearchEngineError(f"min_size must be at least 1, not {self.min_size}")
        if self.method == "kmeans":
            self._refuse("threshold", "min_size")
            if self.k is None:
                raise SearchEngineError("kmeans needs the number of clusters k (e.g. 20)")
            return {"k": self.k, "seed": self.seed}
        if self.method == "community":
            self._refuse("k")
            threshold = DEFAULT_THRESHOLD if self.threshold is None else self.threshold
            return {"threshold": threshold, "min_size": self.min_size or DEFAULT_MIN_SIZE}
        self._refuse("min_size")
        if (self.k is None) == (self.threshold is None):
            raise SearchEngineError("agglomerative clustering cuts its tree by k or by threshold: give one of them")
        return {"k": self.k} if self.k is not None else {"threshold": self.threshold}

    def _refuse(self, *options: str) -> None:
        for option in options:
            if getattr(self, option) is not None:
                raise SearchEngineError(f"{self.method} does not use {option}; leave it unset")

    def check_count(self, count: int) -> None:
        """Refuse to cluster `count` vectors with these settings when it cannot work."""
        parameters = self.parameters()
        if count == 0:
            raise SearchEngineError("the index is empty: there is nothing to cluster; add documents first")
        if parameters.get("k") is not None and parameters["k"] > count:
            raise SearchEngineError(
                f"cannot make {parameters['k']} clusters of {count} texts: k must be {count} or less"
            )
        if parameters.get("min_size", 0) > count:
            raise SearchEngineError(
                f"min_size {parameters['min_size']} is more than the {count} texts in the index; give a smaller one"
            )
