"""`searchengine cluster` and `searchengine mine`: group and pair the texts of an index from its stored vectors."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import typer

from searchengine.analysis.cluster_settings import ClusterMethod
from searchengine.analysis.mining_request import MiningMethod
from searchengine.cli.errors import user_errors
from searchengine.cli.options import IndexDirOption, json_option, seed_option
from searchengine.engine.wording import counted
from searchengine.errors import SearchEngineError


def cluster(
    method: ClusterMethod = typer.Option("kmeans", "--method", help="Clustering method, described below."),
    k: int | None = typer.Option(
        None, "--k", "-k", min=1, help="Number of clusters (kmeans); agglomerative: cut the tree into k clusters."
    ),
    threshold: float | None = typer.Option(
        None,
        "--threshold",
        help="Cosine similarity in (0, 1]. community: least similarity to a community's centre (default 0.75); "
        "agglomerative: merge groups only while their average pairwise similarity is at least this.",
    ),
    min_size: int | None = typer.Option(
        None, "--min-size", min=1, help="community: smallest community kept (default 10)."
    ),
    seed: int = seed_option("Random seed of kmeans."),
    top: int = typer.Option(3, "--top", min=0, help="Most central texts shown per cluster."),
    as_json: bool = json_option("Print every cluster, with all member ids, as JSON."),
    index_dir: Path | None = IndexDirOption,
) -> None:
    """Group the indexed texts by meaning and store the clusters with the index.

    Clusters the vectors already in the index (nothing is re-encoded). kmeans splits all texts into --k
    clusters. community finds groups whose texts are at least --threshold similar to a centre text, with
    at least --min-size members, and leaves the rest in no cluster. agglomerative (average linkage, up to
    20,000 texts) cuts its tree into --k clusters or at --threshold. Clusters are numbered by size, largest
    first, and shown with their most central texts. The clustering replaces any earlier one; afterwards
    `query` shows each hit's cluster (c0, c1, ...) and `info` shows how it was made.

    Examples:

      searchengine cluster --method kmeans --k 20

      searchengine cluster --method community --threshold 0.8 --min-size 5 --json > clusters.json
    """
    from searchengine.analysis.cluster_settings import ClusterSettings
    from searchengine.analysis.clustering import cluster_index
    from searchengine.engine.search_engine import default_index_dir
    from searchengine.indexer.commit.index_directory import IndexDirectory

    target = index_dir or default_index_dir()
    with user_errors(target):
        started = time.perf_counter()
        settings = ClusterSettings(method, k, threshold, min_size, seed)
        clustering = cluster_index(IndexDirectory(target), settings, top)
        seconds = time.perf_counter() - started
        if as_json:
            typer.echo(json.dumps(asdict(clustering), ensure_ascii=False, indent=2))
            return
        for group in clustering.clusters:
            typer.echo(f"Cluster {group.id} ({counted(group.size, 'document')})")
            for doc_id, text in zip(group.central_ids, group.central_texts):
                typer.echo(f"    #{doc_id:<6} {text}")
        clustered = sum(group.size for group in clustering.clusters)
        parameters = ", ".join(f"{name}={value}" for name, value in clustering.parameters.items())
        typer.echo(
            f"\nClustered {counted(clustered, 'document')} into {counted(len(clustering.clusters), 'cluster')} with "
            f"{clustering.method} ({parameters}) in {seconds:.1f} s; {counted(clustering.unclustered, 'document')} "
            f"{'is' if clustering.unclustered == 1 else 'are'} in no cluster. Stored with the "
            f"index in {target}: `query` shows each hit's cluster as [cN]."
        )


def mine(
    top: int | None = typer.Option(
        None, "--top", "-n", min=1, help="Show the N most similar pairs (20 when no --threshold is given)."
    ),
    threshold: float | None = typer.Option(
        None,
        "--threshold",
        "-t",
        help="Every pair with cosine similarity at least this, in (0, 1]; 1 finds exact duplicates.",
    ),
    dedupe: bool = typer.Option(
        False,
        "--dedupe",
        help="Mark the later document of every pair above --threshold as a near-duplicate of the earlier one, "
        "stored with the index (replaces earlier marks; `info` counts them).",
    ),
    method: MiningMethod = typer.Option(
        "auto",
        "--method",
        help="exact (every pair scored, in chunks), ann (each text's nearest neighbours from the FAISS index) or "
        "auto (exact up to 50,000 texts).",
    ),
    as_json: bool = json_option("Print the pairs as JSON."),
    index_dir: Path | None = IndexDirOption,
) -> None:
    """Find the most similar pairs of indexed texts: paraphrases and near-duplicates.

    Uses the vectors already in the index (nothing is re-encoded). Prints rank, cosine score, and both texts
    with their ids, best first; each pair once, the smaller id first.

    Examples:

      searchengine mine --top 10

      searchengine mine --threshold 0.9 --json > pairs.json

      searchengine mine --threshold 0.95 --dedupe
    """
    from searchengine.analysis.mining_request import check_request, choose_method
    from searchengine.engine.search_engine import SearchEngine, default_index_dir

    target = index_dir or default_index_dir()
    with user_errors(target):
        if dedupe and (threshold is None or top is not None):
            raise SearchEngineError(
                "--dedupe marks every pair above --threshold: give --threshold (e.g. 0.95), not --top"
            )
        check_request(top, threshold)
        engine = SearchEngine.open(target)
        chosen = choose_method(len(engine), method)
        started = time.perf_counter()
        pairs = engine.dedupe(threshold, chosen) if dedupe else engine.mine(top, threshold, chosen)
        seconds = time.perf_counter() - started
        if as_json:
            payload = {"method": chosen, "texts": len(engine), "seconds": seconds, "dedupe": dedupe}
            payload["pairs"] = [asdict(pair) for pair in pairs]
            typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
            return
        how = (
            f"exact: all {counted(len(engine) * (len(engine) - 1) // 2, 'pair')} of "
            f"{counted(len(engine), 'document')} scored"
            if chosen == "exact"
            else f"ann: nearest neighbours of each of {counted(len(engine), 'document')} from the "
            f"{engine.info().index_type} index"
        )
        typer.echo(f"{counted(len(pairs), 'pair')} ({how}) in {seconds:.1f} s.")
        for rank, pair in enumerate(pairs, start=1):
            typer.echo(f"{rank:>3}  {pair.score:.4f}  #{pair.first_id:<6} {pair.first_text}")
            typer.echo(f"{'':>13}#{pair.second_id:<6} {pair.second_text}")
        if dedupe:
            typer.echo(
                f"Marked {counted(len(pairs), 'document')} as near-duplicates (cosine >= {threshold}) of earlier "
                f"ones in {target}; "
                "`searchengine info` counts them."
            )
