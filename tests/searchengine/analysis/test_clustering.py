"""Clustering: the three methods on vectors whose right clustering is known, the index round trip (stored,
reopened, shown on hits and in info), the CLI, and every bad input leaving the index untouched."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.rewrite import rewriting
from searchengine.indexer.vectors.build_parts import BuildParts
from searchengine.indexer.vectors.vector_index import VectorIndex
from typer.testing import CliRunner

from searchengine import SearchEngine, SearchEngineError
from searchengine.analysis.cluster_settings import ClusterSettings
from searchengine.analysis.clustering import (
    agglomerative_labels,
    by_size,
    centrality,
    cluster_labels,
    community_labels,
    kmeans_labels,
)
from searchengine.cli import app
from searchengine.encoding.encoder import Encoder
from tests.searchengine.cli.usage_errors import assert_usage_error

runner = CliRunner()
DIMENSION = 32  # the tiny model's


def grouped_vectors(
    groups: int, per_group: int, noise: float = 0.05, outliers: int = 0, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors in tight groups around random centres (label g), plus scattered outliers (label -1)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(groups, DIMENSION))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    vectors = np.repeat(centres, per_group, axis=0) + noise * rng.normal(size=(groups * per_group, DIMENSION))
    vectors = np.concatenate([vectors, rng.normal(size=(outliers, DIMENSION))])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    labels = np.concatenate([np.repeat(np.arange(groups), per_group), np.full(outliers, -1)])
    return vectors.astype(np.float32), labels


def same_partition(found: np.ndarray, expected: np.ndarray) -> bool:
    """True when both labelings group the rows alike and leave out (-1) the same rows."""
    if not np.array_equal(found < 0, expected < 0):
        return False
    pairs = set(zip(found[found >= 0].tolist(), expected[expected >= 0].tolist()))
    return len(pairs) == len(set(found[found >= 0].tolist())) == len(set(expected[expected >= 0].tolist()))


def reference_communities(vectors: np.ndarray, threshold: float, min_size: int) -> np.ndarray:
    """sentence-transformers' community_detection written out with the full n x n matrix."""
    scores = vectors @ vectors.T
    neighbourhoods = [np.flatnonzero(row >= threshold) for row in scores]
    candidates = sorted((n for n in neighbourhoods if len(n) >= min_size), key=len, reverse=True)
    labels = np.full(len(vectors), -1)
    for community in candidates:
        fresh = community[labels[community] < 0]
        if len(fresh) >= min_size:
            labels[fresh] = labels.max() + 1
    return labels


def index_of_vectors(path: Path, encoder: Encoder, vectors: np.ndarray) -> SearchEngine:
    """An index whose document i ('text number i') has the hand-made vector vectors[i]."""
    SearchEngine.build([f"text number {i}" for i in range(len(vectors))], path, encoder=encoder)
    with rewriting(IndexDirectory(path)) as rewrite:
        part = VectorIndex.create("Flat", vectors.shape[1])
        part.add(vectors, np.arange(len(vectors)))
        rewrite.vectors = BuildParts([part])
    return SearchEngine.open(path, encoder=encoder)


@pytest.fixture
def groups() -> tuple[np.ndarray, np.ndarray]:
    return grouped_vectors(groups=4, per_group=8, outliers=6)


@pytest.fixture
def grouped_engine(tmp_path: Path, tiny_encoder: Encoder, groups: tuple[np.ndarray, np.ndarray]) -> SearchEngine:
    return index_of_vectors(tmp_path / "index", tiny_encoder, groups[0])


# --- the methods on arrays ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kmeans_finds_well_separated_groups(seed: int) -> None:
    vectors, truth = grouped_vectors(groups=6, per_group=10, seed=seed)
    assert same_partition(kmeans_labels(vectors, 6, seed=seed), truth)


def test_kmeans_is_reproducible_with_its_seed() -> None:
    vectors, _ = grouped_vectors(groups=5, per_group=10, noise=0.6)
    assert np.array_equal(kmeans_labels(vectors, 7, seed=3), kmeans_labels(vectors, 7, seed=3))


def test_community_detection_finds_groups_and_leaves_outliers_out(groups: tuple[np.ndarray, np.ndarray]) -> None:
    vectors, truth = groups
    assert same_partition(community_labels(vectors, threshold=0.8, min_size=5), truth)
    assert (community_labels(vectors, threshold=0.8, min_size=9) == -1).all()  # every group has 8 members


@pytest.mark.parametrize("pair_budget", [8_000_000, 40, 1])
def test_community_detection_matches_sentence_transformers_algorithm_in_any_chunking(pair_budget: int) -> None:
    vectors, _ = grouped_vectors(groups=12, per_group=25, noise=0.1, outliers=40, seed=4)
    expected = reference_communities(vectors, threshold=0.8, min_size=6)
    assert expected.max() + 1 > 12 and (expected == -1).sum() > 100  # groups split into overlapping communities
    found = community_labels(vectors, threshold=0.8, min_size=6, pair_budget=pair_budget)
    assert np.array_equal(by_size(found), by_size(expected))


def test_community_detection_through_an_ivf_index_above_the_exact_limit() -> None:
    vectors, truth = grouped_vectors(groups=100, per_group=20, noise=0.03, seed=5)
    exact = community_labels(vectors, threshold=0.9, min_size=10)
    approximate = community_labels(vectors, threshold=0.9, min_size=10, exact_limit=1000)
    assert same_partition(exact, truth) and same_partition(approximate, truth)


def test_agglomerative_cut_by_k_and_by_threshold() -> None:
    vectors, truth = grouped_vectors(groups=5, per_group=7)
    assert same_partition(agglomerative_labels(vectors, k=5), truth)
    assert same_partition(agglomerative_labels(vectors, threshold=0.8), truth)
    assert len(set(agglomerative_labels(vectors, threshold=1.0).tolist())) == len(vectors)  # only equal ones join


def test_agglomerative_refuses_large_collections() -> None:
    with pytest.raises(SearchEngineError, match="limited to 20,000 texts.*kmeans or community"):
        agglomerative_labels(np.ones((20_001, 2), dtype=np.float32), k=2)


def test_by_size_numbers_largest_first_and_keeps_outliers() -> None:
    assert by_size(np.array([7, 3, 3, -1, 7, 3, 5])).tolist() == [1, 0, 0, -1, 1, 0, 2]


def test_centrality_is_cosine_to_the_normalised_mean() -> None:
    vectors = np.array([[1, 0], [0, 1], [1, 0], [0.6, 0.8]], dtype=np.float32)
    labels = np.array([0, 0, 1, -1])
    scores = centrality(vectors, labels)
    assert scores[:3] == pytest.approx([np.sqrt(0.5), np.sqrt(0.5), 1.0], abs=1e-6)
    assert np.isnan(scores[3])


# --- settings ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (ClusterSettings("spectral", k=2), "unknown clustering method 'spectral'"),
        (ClusterSettings("kmeans"), "kmeans needs the number of clusters"),
        (ClusterSettings("kmeans", k=0), "k must be at least 1"),
        (ClusterSettings("kmeans", k=2, threshold=0.5), "kmeans does not use threshold"),
        (ClusterSettings("community", threshold=0.0), r"threshold is a cosine similarity in \(0, 1\]"),
        (ClusterSettings("community", threshold=1.5), r"threshold is a cosine similarity in \(0, 1\]"),
        (ClusterSettings("community", k=3), "community does not use k"),
        (ClusterSettings("community", min_size=0), "min_size must be at least 1"),
        (ClusterSettings("agglomerative"), "by k or by threshold"),
        (ClusterSettings("agglomerative", k=2, threshold=0.5), "by k or by threshold"),
        (ClusterSettings("agglomerative", k=2, min_size=3), "agglomerative does not use min_size"),
    ],
)
def test_bad_settings_are_refused(settings: ClusterSettings, message: str) -> None:
    with pytest.raises(SearchEngineError, match=message):
        settings.parameters()


def test_defaults_are_filled_in() -> None:
    assert ClusterSettings("community").parameters() == {"threshold": 0.75, "min_size": 10}
    assert ClusterSettings("kmeans", k=4, seed=9).parameters() == {"k": 4, "seed": 9}
    assert ClusterSettings("agglomerative", threshold=1.0).parameters() == {"threshold": 1.0}


def test_too_few_vectors_are_refused() -> None:
    vectors, _ = grouped_vectors(groups=2, per_group=3)
    with pytest.raises(SearchEngineError, match="cannot make 7 clusters of 6 texts: k must be 6 or less"):
        cluster_labels(vectors, ClusterSettings("kmeans", k=7))
    with pytest.raises(SearchEngineError, match="min_size 10 is more than the 6 texts"):
        cluster_labels(vectors, ClusterSettings("community"))


# --- the index -------------------------------------------------------------------------------------------------


def test_engine_clusters_stores_and_reopens(
    grouped_engine: SearchEngine, groups: tuple[np.ndarray, np.ndarray], tiny_encoder: Encoder
) -> None:
    vectors, truth = groups
    clusters = grouped_engine.cluster("community", threshold=0.8, min_size=5, top=2)
    assert [cluster.id for cluster in clusters] == [0, 1, 2, 3] and {c.size for c in clusters} == {8}
    found = np.full(len(vectors), -1)
    for cluster in clusters:
        found[cluster.member_ids] = cluster.id
        assert cluster.central_ids == cluster.member_ids[:2]
        assert cluster.central_texts == [f"text number {i}" for i in cluster.central_ids]
    assert same_partition(found, truth)
    reopened = SearchEngine.open(grouped_engine.path, encoder=tiny_encoder)
    stored = reopened.clustering(top=2)
    assert stored is not None and stored.clusters == clusters
    assert (stored.method, stored.parameters, stored.unclustered) == ("community", {"threshold": 0.8, "min_size": 5}, 6)
    record = reopened.info().clustering
    assert (record.method, record.clusters, record.documents) == ("community", 4, 32)


def test_members_are_ordered_by_closeness_to_the_centroid(tmp_path: Path, tiny_encoder: Encoder) -> None:
    rng = np.random.default_rng(7)
    centre = rng.normal(size=DIMENSION)
    offsets = rng.normal(size=(3, DIMENSION))
    # The centre itself, then pairs of mirrored points ever farther out: the centroid stays on the centre.
    vectors = np.stack(
        [centre] + [centre + scale * sign * offsets[i] for i, scale in enumerate((0.1, 0.2, 0.3)) for sign in (1, -1)]
    )
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    engine = index_of_vectors(tmp_path / "index", tiny_encoder, vectors)
    [cluster] = engine.cluster("kmeans", k=1, top=1)
    assert cluster.central_ids == [0] and cluster.member_ids[0] == 0
    assert set(cluster.member_ids[1:3]) == {1, 2} and set(cluster.member_ids[5:]) == {5, 6}


def test_hits_carry_their_cluster_and_search_is_otherwise_unchanged(
    tmp_path: Path, tiny_encoder: Encoder, sentences: list[str]
) -> None:
    engine = SearchEngine.build(sentences, tmp_path / "index", encoder=tiny_encoder)
    before = engine.search_batch(sentences, k=5)
    assert all(hit.cluster is None for hits in before for hit in hits)
    clusters = engine.cluster("kmeans", k=3)
    cluster_of = {i: cluster.id for cluster in clusters for i in cluster.member_ids}
    assert sorted(cluster_of) == list(range(len(sentences)))
    after = engine.search_batch(sentences, k=5)
    assert [[(h.id, h.score, h.text) for h in hits] for hits in after] == [
        [(h.id, h.score, h.text) for h in hits] for hits in before
    ]
    assert all(hit.cluster == cluster_of[hit.id] for hits in after for hit in hits)


def test_texts_added_later_are_in_no_cluster(grouped_engine: SearchEngine) -> None:
    grouped_engine.cluster("kmeans", k=5)
    grouped_engine.add(["a brand new text about the sun"])
    hit = grouped_engine.search("a brand new text about the sun", k=1)[0]
    assert hit.text == "a brand new text about the sun" and hit.cluster is None
    assert grouped_engine.clustering().unclustered == 1


def test_a_new_clustering_replaces_the_old(grouped_engine: SearchEngine) -> None:
    grouped_engine.cluster("kmeans", k=5)
    grouped_engine.cluster("agglomerative", k=2)
    stored = grouped_engine.clustering()
    assert stored.method == "agglomerative" and len(stored.clusters) == 2
    assert sum(cluster.size for cluster in stored.clusters) == len(grouped_engine)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "kmeans", "k": 39}, "cannot make 39 clusters of 38 texts"),
        ({"method": "louvain", "k": 2}, "unknown clustering method"),
        ({"method": "community", "threshold": 1.01}, "threshold is a cosine similarity"),
    ],
)
def test_bad_input_leaves_the_index_untouched(grouped_engine: SearchEngine, kwargs: dict, message: str) -> None:
    grouped_engine.cluster("kmeans", k=3)
    manifest = (grouped_engine.path / "manifest.json").read_bytes()
    files = sorted(p.name for p in grouped_engine.path.iterdir())
    with pytest.raises(SearchEngineError, match=message):
        grouped_engine.cluster(**kwargs)
    assert (grouped_engine.path / "manifest.json").read_bytes() == manifest
    assert sorted(p.name for p in grouped_engine.path.iterdir()) == files
    assert grouped_engine.clustering().parameters == {"k": 3, "seed": 0}


def test_an_empty_index_is_refused(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = SearchEngine.create(tmp_path / "empty", encoder=tiny_encoder)
    with pytest.raises(SearchEngineError, match="the index is empty: there is nothing to cluster"):
        engine.cluster("kmeans", k=1)
    assert engine.clustering() is None


# --- the command line ----------------------------------------------------------------------------------------


def run(*args: object):  # noqa: ANN201
    return runner.invoke(app, [str(a) for a in args])


def test_cli_cluster_prints_blocks_and_stores_them(grouped_engine: SearchEngine) -> None:
    result = run(
        "cluster",
        "--method",
        "community",
        "--threshold",
        "0.8",
        "--min-size",
        "5",
        "--top",
        "2",
        "-d",
        grouped_engine.path,
    )
    assert result.exit_code == 0, result.output
    blocks = result.output.split("\n\n")
    assert len(blocks) == 2
    lines = blocks[0].splitlines()
    assert lines[0] == "Cluster 0 (8 documents)" and lines[3] == "Cluster 1 (8 documents)" and len(lines) == 12
    assert lines[1].split()[1:] == ["text", "number", lines[1].split()[0][1:]]
    assert blocks[1].startswith("Clustered 32 documents into 4 clusters with community (threshold=0.8, min_size=5)")
    assert "6 documents are in no cluster" in blocks[1]
    info = run("info", "-d", grouped_engine.path)
    assert "clustering:             community (threshold=0.8, min_size=5): 4 clusters of 32 documents" in info.output
    query = run("query", "text number 3", "-k", "38", "-d", grouped_engine.path)
    assert sum("[c" in line for line in query.output.splitlines()) == 32


def test_cli_cluster_json(grouped_engine: SearchEngine, groups: tuple[np.ndarray, np.ndarray]) -> None:
    result = run("cluster", "--method", "kmeans", "--k", "4", "--json", "-d", grouped_engine.path)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert (payload["method"], payload["parameters"], payload["unclustered"]) == ("kmeans", {"k": 4, "seed": 0}, 0)
    members = sorted(i for cluster in payload["clusters"] for i in cluster["member_ids"])
    assert members == list(range(len(groups[0])))
    assert all(len(cluster["central_texts"]) == 3 for cluster in payload["clusters"])
    assert json.loads(run("info", "--json", "-d", grouped_engine.path).output)["clustering"]["method"] == "kmeans"


def test_cli_query_without_clustering_shows_no_cluster(grouped_engine: SearchEngine) -> None:
    result = run("query", "text number 3", "-k", "3", "-d", grouped_engine.path)
    assert result.exit_code == 0 and "[c" not in result.output
    assert "clustering:             none" in run("info", "-d", grouped_engine.path).output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--k", "100"), "cannot make 100 clusters of 38 texts"),
        (("--method", "community", "--threshold", "0"), "threshold is a cosine similarity in (0, 1]"),
        (("--method", "kmeans"), "kmeans needs the number of clusters"),
    ],
)
def test_cli_bad_input_is_one_line(grouped_engine: SearchEngine, args: tuple[str, ...], message: str) -> None:
    manifest = (grouped_engine.path / "manifest.json").read_bytes()
    result = run("cluster", *args, "-d", grouped_engine.path)
    assert result.exit_code == 1, result.output
    output = result.output.strip()
    assert output.startswith("Error: ") and "\n" not in output and message in output, output
    assert (grouped_engine.path / "manifest.json").read_bytes() == manifest


@pytest.mark.parametrize(
    ("args", "option", "message"),
    [
        (("--method", "dbscan"), "--method", "'dbscan' is not one of 'kmeans', 'community', 'agglomerative'"),
        (("--k", "0"), "--k", "greater than or equal to 1"),
        (("--method", "community", "--min-size", "0"), "--min-size", "greater than or equal to 1"),
        (("--k", "2", "--top", "-1"), "--top", "greater than or equal to 0"),
    ],
)
def test_cli_refuses_bad_option_values_before_reading_the_index(
    grouped_engine: SearchEngine, args: tuple[str, ...], option: str, message: str
) -> None:
    manifest = (grouped_engine.path / "manifest.json").read_bytes()
    assert_usage_error(run("cluster", *args, "-d", grouped_engine.path), option, message)
    assert (grouped_engine.path / "manifest.json").read_bytes() == manifest


def test_cli_cluster_help_has_an_example() -> None:
    result = run("cluster", "--help")
    assert result.exit_code == 0 and "searchengine cluster --method kmeans --k 20" in result.output
