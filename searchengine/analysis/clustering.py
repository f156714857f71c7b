"""Clustering the vectors already in an index (k-means, community detection, agglomerative); never re-encodes.

The labelling functions take an (n, d) float32 array of L2-normalised vectors and return one label per row
(-1: in no cluster). `cluster_index` runs one on an index's stored vectors and stores the result with the
index as a new generation, so `query` and `info` can show it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import faiss
import numpy as np

from searchengine.analysis.cluster_settings import ClusterSettings
from searchengine.errors import SearchEngineError
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.vectors.vector_index import VectorIndex

AGGLOMERATIVE_LIMIT = 20_000
"""Agglomerative clustering holds all n(n-1)/2 distances as float64: 1.6 GB at this size."""
EXACT_COMMUNITY_LIMIT = 200_000
"""Community detection compares every pair exactly up to this many vectors, and through an IVF index above."""
PAIR_BUDGET = 8_000_000
"""Similar pairs held at once by community detection (12 bytes each): memory stays near n, never n²."""
MAX_CHUNK_ROWS = 4096
KMEANS_ITERATIONS = 20
SEEDING_SAMPLE = 40
"""k-means++ seeding looks at up to this many rows per cluster."""


@dataclass(frozen=True)
class Cluster:
    """One cluster: its most central documents (closest to the centroid) first, then every member's id."""

    id: int
    size: int
    central_ids: list[int]
    central_texts: list[str]
    member_ids: list[int] = field(repr=False)
    """All members, most central first."""


@dataclass(frozen=True)
class Clustering:
    """A clustering as stored with an index; clusters are numbered by size, largest first."""

    method: str
    parameters: dict[str, Any]
    clusters: list[Cluster]
    unclustered: int
    """Texts of the index in no cluster (community outliers, and texts added after clustering)."""
    created_at: str


def cluster_labels(vectors: np.ndarray, settings: ClusterSettings) -> np.ndarray:
    """One label per row of `vectors` (-1 for none), with the method and parameters of `settings`."""
    settings.check_count(len(vectors))
    parameters = settings.parameters()
    if settings.method == "kmeans":
        return kmeans_labels(vectors, parameters["k"], parameters["seed"])
    if settings.method == "community":
        return community_labels(vectors, parameters["threshold"], parameters["min_size"])
    return agglomerative_labels(vectors, parameters.get("k"), parameters.get("threshold"))


def kmeans_labels(vectors: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """Spherical k-means (FAISS, seeded by k-means++): centroids are re-normalised, points join the centroid
    of highest cosine."""
    kmeans = faiss.Kmeans(
        vectors.shape[1], k, niter=KMEANS_ITERATIONS, seed=seed, spherical=True, min_points_per_centroid=1
    )
    kmeans.train(vectors, init_centroids=kmeans_plus_plus(vectors, k, seed))
    _, nearest = kmeans.index.search(vectors, 1)
    return nearest[:, 0].astype(np.int64)


def kmeans_plus_plus(vectors: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """k initial centroids by greedy k-means++ (each step samples 2 + ln k rows with probability proportional
    to their squared distance from the centroids so far and keeps the best) on at most SEEDING_SAMPLE * k rows.

    Random initialisation often merges two well-separated groups and splits a third; this rarely does.
    """
    rng = np.random.default_rng(seed)
    sample = vectors
    if len(vectors) > SEEDING_SAMPLE * k:
        sample = vectors[np.sort(rng.choice(len(vectors), SEEDING_SAMPLE * k, replace=False))]
    trials = 2 + int(np.log(k))
    centroids = np.empty((k, vectors.shape[1]), dtype=np.float32)
    centroids[0] = sample[rng.integers(len(sample))]
    distance = np.maximum(1 - sample @ centroids[0], 0)  # half the squared distance between unit vectors
    for i in range(1, k):
        cumulative = np.cumsum(distance)
        picks = np.minimum(np.searchsorted(cumulative, rng.random(trials) * cumulative[-1]), len(sample) - 1)
        candidates = np.minimum(distance, np.maximum(1 - sample[picks] @ sample.T, 0))
        best = int(np.argmin(candidates.sum(axis=1)))
        centroids[i], distance = sample[picks[best]], candidates[best]
    return centroids


def community_labels(
    vectors: np.ndarray,
    threshold: float,
    min_size: int,
    exact_limit: int = EXACT_COMMUNITY_LIMIT,
    pair_budget: int = PAIR_BUDGET,
) -> np.ndarray:
    """Community detection as in sentence-transformers' `community_detection`, in bounded memory.

    A row whose neighbourhood (rows at cosine >= threshold, itself included) has at least `min_size` rows is a
    candidate centre. Candidates are taken largest neighbourhood first; each keeps the rows of its
    neighbourhood not taken yet, if they are still `min_size` or more. Neighbourhoods are found by range search
    in chunks, twice (first to count them, then for candidates only), holding about `pair_budget` pairs at a
    time, never an n x n matrix. Above `exact_limit` vectors the search goes through an IVF index (approximate).
    """
    index = _similarity_index(vectors, exact_limit)
    radius = float(np.nextafter(np.float32(threshold), np.float32(-1)))  # range search keeps scores > radius
    counts = np.zeros(len(vectors), dtype=np.int64)
    start, rows = 0, MAX_CHUNK_ROWS
    while start < len(vectors):
        limits, _, _ = index.range_search(vectors[start : start + rows], radius)
        found = np.diff(limits)
        counts[start : start + len(found)] = found
        start += len(found)
        rows = int(np.clip(pair_budget // max(found.mean(), 1), 1, MAX_CHUNK_ROWS))
    candidates = np.flatnonzero(counts >= min_size)
    order = candidates[np.argsort(-counts[candidates], kind="stable")]
    labels = np.full(len(vectors), -1, dtype=np.int64)
    communities = 0
    for batch in _batches_within_budget(order, counts, pair_budget):
        limits, _, neighbours = index.range_search(vectors[batch], radius)
        for row in range(len(batch)):
            members = neighbours[limits[row] : limits[row + 1]]
            fresh = members[labels[members] < 0]
            if len(fresh) >= min_size:
                labels[fresh] = communities
                communities += 1
    return labels


def _similarity_index(vectors: np.ndarray, exact_limit: int) -> faiss.Index:
    """Exact inner product up to `exact_limit` vectors; an IVF index (nlist ~ 4 sqrt n, 16 probes) above."""
    dimension = vectors.shape[1]
    if len(vectors) <= exact_limit:
        index = faiss.IndexFlatIP(dimension)
    else:
        lists = int(4 * np.sqrt(len(vectors)))
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dimension), dimension, lists, faiss.METRIC_INNER_PRODUCT)
        sample = np.random.default_rng(0).choice(len(vectors), size=min(len(vectors), 64 * lists), replace=False)
        index.train(vectors[np.sort(sample)])
        index.nprobe = 16
    index.add(vectors)
    return index


def _batches_within_budget(rows: np.ndarray, counts: np.ndarray, budget: int) -> list[np.ndarray]:
    """Split `rows` into consecutive batches whose neighbourhoods hold at most `budget` pairs (or one row)."""
    batches, start = [], 0
    cumulative = np.cumsum(counts[rows])
    while start < len(rows):
        base = cumulative[start - 1] if start else 0
        stop = int(np.searchsorted(cumulative, base + budget, side="right"))
        stop = min(max(stop, start + 1), start + MAX_CHUNK_ROWS)
        batches.append(rows[start:stop])
        start = stop
    return batches


def agglomerative_labels(vectors: np.ndarray, k: int | None = None, threshold: float | None = None) -> np.ndarray:
    """Average-linkage clustering on cosine distance (scipy), cut into `k` clusters or where merging two groups
    would take their average pairwise similarity below `threshold`."""
    if len(vectors) > AGGLOMERATIVE_LIMIT:
        raise SearchEngineError(
            f"agglomerative clustering keeps every pairwise distance in memory and is limited to "
            f"{AGGLOMERATIVE_LIMIT:,} texts, not {len(vectors):,}: use the kmeans or community method"
        )
    if len(vectors) == 1:
        return np.zeros(1, dtype=np.int64)
    from scipy.cluster.hierarchy import fcluster, linkage  # scipy loads only when clustering: opening stays fast
    from scipy.spatial.distance import pdist

    distances = np.clip(pdist(vectors.astype(np.float64), "cosine"), 0.0, 2.0)
    tree = linkage(distances, method="average")
    if k is not None:
        labels = fcluster(tree, k, criterion="maxclust")
    else:
        labels = fcluster(tree, 1.0 - threshold, criterion="distance")
    return labels.astype(np.int64) - 1


def by_size(labels: np.ndarray) -> np.ndarray:
    """Renumber labels 0, 1, ... from the largest cluster down (ties: first appearance); -1 stays -1."""
    clustered = labels >= 0
    found, first, sizes = np.unique(labels[clustered], return_index=True, return_counts=True)
    order = np.lexsort((first, -sizes))
    renumbered = np.full(labels.max(initial=-1) + 1, -1, dtype=np.int64)
    renumbered[found[order]] = np.arange(len(found))
    result = np.full(len(labels), -1, dtype=np.int64)
    result[clustered] = renumbered[labels[clustered]]
    return result


def centrality(vectors: np.ndarray, labels: np.ndarray, chunk: int = 65_536) -> np.ndarray:
    """Each row's cosine to its cluster's (normalised mean) centroid; NaN for rows in no cluster."""
    from scipy import sparse  # scipy loads only when clustering: opening an index stays fast

    rows = np.flatnonzero(labels >= 0)
    clusters = int(labels.max(initial=-1)) + 1
    membership = sparse.csr_matrix(
        (np.ones(len(rows), dtype=np.float32), (labels[rows], rows)), shape=(clusters, len(vectors))
    )
    centroids = np.ascontiguousarray(membership @ vectors, dtype=np.float32)
    faiss.normalize_L2(centroids)
    scores = np.full(len(vectors), np.nan, dtype=np.float32)
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        scores[part] = np.einsum("ij,ij->i", vectors[part], centroids[labels[part]])
    return scores


def stored_matrix(vectors: VectorIndex) -> tuple[np.ndarray, np.ndarray]:
    """(ids, vectors) of every vector in the index, re-normalised (PQ codes come back approximate)."""
    ids, matrix = vectors.stored_matrix()
    faiss.normalize_L2(matrix)
    return ids, matrix


def cluster_index(directory: IndexDirectory, settings: ClusterSettings, top: int = 3) -> Clustering:
    """Cluster the documents of the index in `directory` by their vectors (a split document's first passage) and
    store the clustering with it (a new generation, replacing any earlier clustering). On any error the index is
    left as it was."""
    parameters = settings.parameters()
    if top < 0:
        raise SearchEngineError(f"top must be 0 or more, not {top}")
    with writing_in_place(directory) as rewrite:
        ids, matrix = stored_matrix(rewrite.segments())
        live = ~np.isin(ids, rewrite.store.other_vector_ids())
        if not live.all():
            ids, matrix = ids[live], matrix[live]
        labels = by_size(cluster_labels(matrix, settings))
        scores = centrality(matrix, labels)
        clustered = labels >= 0
        rewrite.store.clustering.save(
            settings.method,
            parameters,
            ids[clustered],
            labels[clustered],
            scores[clustered],
            time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        )
        return read_clustering(rewrite.store, top)


def read_clustering(store: DocumentStore, top: int = 3) -> Clustering | None:
    """The clustering stored in `store` with each cluster's `top` most central texts, or None if there is none."""
    record = store.clustering.record()
    if record is None:
        return None
    members = store.clustering.members()
    central = store.get([i for ids in members.values() for i in ids[:top]])
    clusters = [
        Cluster(
            id=cluster,
            size=len(ids),
            central_ids=ids[:top],
            central_texts=[central[i].text for i in ids[:top]],
            member_ids=ids,
        )
        for cluster, ids in members.items()
    ]
    return Clustering(
        method=record.method,
        parameters=record.parameters,
        clusters=clusters,
        unclustered=store.count() - sum(len(ids) for ids in members.values()),
        created_at=record.created_at,
    )
