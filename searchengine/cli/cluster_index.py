"""`searchengine cluster-index`: a cluster index (searchengine.cluster) on a running Ray cluster: building it from a
corpus, its status, serving it with Ray Serve under the HTTP API of `searchengine serve`, and stopping that.
(`searchengine cluster` is k-means over one index's vectors.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from searchengine.cli.errors import user_errors
from searchengine.cli.options import (
    IdFieldOption,
    JsonlOption,
    PrecisionOption,
    TextFieldOption,
    TitleFieldOption,
    api_key_option,
    host_option,
    json_option,
    model_option,
    port_option,
)
from searchengine.encoding.precision import Precision
from searchengine.server.cluster.direct_ingress import FIRST_PORT as INGRESS_FIRST_PORT
from searchengine.server.cluster.direct_ingress import PORTS as INGRESS_PORTS

if TYPE_CHECKING:
    from searchengine.cluster import ClusterBuildReport, ClusterBuildSettings
    from searchengine.indexer.tables.documents import Document

cluster_index_app = typer.Typer(
    help="A cluster index spread over a Ray cluster: building it, its status, and serving it with Ray Serve (and "
    "stopping that).",
    no_args_is_help=True,
)
ManifestArgument = typer.Argument(..., help="The cluster index's manifest (the JSON file its build wrote).")
AddressOption = typer.Option(
    None,
    "--address",
    help="The Ray cluster: its head's HOST:PORT; default the one `ray start` runs on this machine, or $RAY_ADDRESS.",
)


@cluster_index_app.command()
def build(
    corpus: str = typer.Argument(
        ...,
        metavar="CORPUS",
        help="A corpus file (.txt: a document a line; .jsonl: a text field a line; .csv: a text column; gzipped or "
        "not), a folder of .txt and .jsonl corpus files, or - for standard input.",
    ),
    manifest: Path = typer.Argument(
        ..., metavar="MANIFEST", help="The manifest to write (JSON): the build's commit, on this machine."
    ),
    shards: int = typer.Option(..., "--shards", help="Shards, fixed at the build: each a folder on one node."),
    copies: int = typer.Option(1, "--copies", help="Copies of each shard, on different nodes where there are enough."),
    local_root: str = typer.Option(
        ..., "--local-root", metavar="DIR", help="The folder each node keeps its copies under, on its own disk."
    ),
    address: str | None = AddressOption,
    model: str | None = model_option(show_default="bundled all-MiniLM-L6-v2; the same path or Hub id on every node"),
    precision: Precision = PrecisionOption,
    index_type: str = typer.Option("Flat", "--index", help='FAISS factory string of each shard, e.g. "HNSW32".'),
    workers: int = typer.Option(1, "--workers", help="Embedding workers (Ray actors, one CPU and one model each)."),
    name: str | None = typer.Option(
        None, "--name", help="The cluster index's name (in its folders and its status).", show_default="MANIFEST's stem"
    ),
    jsonl: bool = JsonlOption,
    id_field: str | None = IdFieldOption,
    text_field: str = TextFieldOption,
    title_field: str | None = TitleFieldOption,
    as_json: bool = json_option("Print the report as one JSON object."),
) -> None:
    """Build a cluster index of CORPUS on a running Ray cluster and commit it by writing MANIFEST.

    The corpus is read here, as `searchengine index` reads a corpus file, and each document goes to the shard its
    id hashes to: its --id-field, or else NAME#LINE, its file's name (inside a corpus folder; stdin for standard
    input) and its line, the same at every build of the same files. Embedding workers embed, each shard's copy
    writes its own rows and segments on its own node (this machine writes no row and receives no vector), and the
    manifest is written last: a build that fails leaves the previous index, or none, as it was. A MANIFEST whose
    index is being served is refused (the build would remove its copies' folders under them). Name each node with
    a searchengine_node_NAME resource so its copies stay in its own folder (README: On many machines).

    Examples:

      searchengine cluster-index build corpus.jsonl cluster.json --shards 4 --copies 2 \\
        --local-root /var/lib/searchengine --id-field _id

      searchengine cluster-index build corpus-shards/ cluster.json --shards 8 --local-root /srv/se \\
        --address head-node:6379 --workers 4
    """
    with user_errors(manifest):
        from searchengine.cluster import ClusterBuildSettings, ClusterError
        from searchengine.cluster.corpus_reading import cluster_corpus
        from searchengine.cluster.manifest import refuse_unwritable_manifest
        from searchengine.reading.corpus import STDIN, JsonFields

        settings = ClusterBuildSettings(
            shards=shards,
            copies=copies,
            model=_model_everywhere(model),
            local_root=str(Path(local_root).expanduser().absolute()),  # the same folder on every node
            name=name or manifest.stem,
            encoder_options={"precision": precision},
            index_type=index_type,
            workers=workers,
        )
        refuse_unwritable_manifest(manifest)  # before Ray is asked anything, as the corpus is checked
        fields = JsonFields(text_field, title_field, id_field)
        read = lambda: cluster_corpus(corpus, True if jsonl else None, fields)  # noqa: E731
        if corpus != STDIN and sum(1 for _ in read()) == 0:  # every line checked before Ray is asked anything
            raise ClusterError(f"{corpus} holds no documents; give a corpus with at least one non-blank line")
        report = _build(manifest, read(), settings, address)
    found = {
        "manifest": str(manifest),
        "shards": settings.shards,
        "copies": settings.copies,
        "documents": report.documents,
        "shard_documents": report.shard_documents,
        "seconds": round(report.seconds, 2),
        "driver_rows_written": report.driver_rows_written,
        "warnings": report.warnings,
    }
    for warning in report.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if as_json:
        typer.echo(json.dumps(found))
        return
    typer.echo(
        f"Built {manifest}: {report.documents} documents in {settings.shards} shards x {settings.copies} copies "
        f"in {report.seconds:.1f} s; documents per shard: {', '.join(map(str, report.shard_documents))}; rows "
        f"written by this machine: {report.driver_rows_written}."
    )
    typer.echo(f"Serve it with `searchengine cluster-index serve {manifest}`.")


def _model_everywhere(model: str | None) -> str:
    """The model as every node names it: the bundled one by default, a folder here by its absolute path."""
    from searchengine.encoding.model_source import DEFAULT_MODEL

    if model is None:
        return DEFAULT_MODEL
    path = Path(model).expanduser()
    return str(path.resolve()) if path.exists() else model


def _build(
    manifest: Path, documents: Iterator[Document], settings: ClusterBuildSettings, address: str | None
) -> ClusterBuildReport:
    """Connect to the Ray cluster, build, and stop the copies the build started (`serve` starts its own)."""
    import ray

    from searchengine.cluster import build_cluster
    from searchengine.server.cluster.serve_app import connect

    connect(address)
    index, report = build_cluster(manifest, documents, settings)
    for states in index.copies:
        for state in states:
            if state.handle is not None:
                ray.kill(state.handle)
    return report


@cluster_index_app.command()
def status(
    manifest: Path = ManifestArgument,
    address: str | None = AddressOption,
    as_json: bool = typer.Option(False, "--json", help="Print the status as one JSON object."),
) -> None:
    """Show the shards, their copies and nodes, the documents of each shard and each copy's lag (writes it lacks).

    Asks the running ingress when it serves this manifest (it knows every acknowledged write), else the copies.

    Examples:

      searchengine cluster-index status cluster.json --address head-node:6379
    """
    with user_errors(manifest):
        from searchengine.cluster.manifest import read_manifest
        from searchengine.server.cluster.serve_app import cluster_status, connect

        read_manifest(manifest)  # none, or a damaged one: one line before Ray is asked anything
        connect(address)
        found = cluster_status(manifest)
    if as_json:
        typer.echo(json.dumps(found))
        return
    typer.echo(f"{found['name']}: {found['documents']} documents in {len(found['shards'])} shards")
    for shard in found["shards"]:
        typer.echo(f"shard {shard['shard']}: {shard['documents']} documents, write {shard['sequence']}")
        for copy in shard["copies"]:
            state = "serving" if copy["serving"] else ("live, not serving" if copy["live"] else "lost")
            typer.echo(f"  copy on {copy['node']}: {state}, lag {copy['lag']}")
    typer.echo("nodes: " + ", ".join(f"{node['node']} ({node['copies']} copies)" for node in found["nodes"]))
    if found.get("ingress_url"):
        typer.echo(f"ingress listening at {found['ingress_url']}/")


@cluster_index_app.command()
def serve(
    manifest: Path = ManifestArgument,
    address: str | None = AddressOption,
    host: str = host_option("Address Serve's HTTP proxy and the ingress listen on; 0.0.0.0 reaches beyond this machine."),
    port: int = port_option(8000, "Port Serve's HTTP proxy listens on: the address that stays."),
    ingress_port: int = typer.Option(
        INGRESS_FIRST_PORT,
        "--ingress-port",
        min=1,
        max=65535 - INGRESS_PORTS,
        help=f"First of the {INGRESS_PORTS} ports the ingress may listen on itself (Ray Serve's direct ingress: the "
        "faster address, without the proxy's hop; it moves when the ingress is started again after a crash).",
    ),
    api_key: str | None = api_key_option("Require 'Authorization: Bearer KEY' on what --api-key-for names."),
    api_key_for: str = typer.Option("writes", "--api-key-for", help="What the API key guards: writes or all."),
    ingress_node: str | None = typer.Option(
        None,
        "--ingress-node",
        help="The node (its searchengine_node_NAME resource) that runs the ingress and reads the manifest; default "
        "this machine's.",
    ),
) -> None:
    """Serve a cluster index with Ray Serve: a deployment per shard copy on its node, and an ingress with the HTTP
    API of `searchengine serve` (/search, /documents, /info, /health, the page, /v1/embeddings, /metrics).

    The application keeps running on the Ray cluster after this command returns; `searchengine cluster-index stop
    MANIFEST` stops it. `searchengine query --server URL` asks it as it asks `searchengine serve`.

    Examples:

      searchengine cluster-index serve cluster.json --address head-node:6379 --host 0.0.0.0
    """
    with user_errors(manifest):
        from searchengine.cluster.manifest import read_manifest
        from searchengine.server.cluster.serve_app import connect, serve_cluster
        from searchengine.server.settings import ServerSettings

        settings = ServerSettings(api_key=api_key, api_key_for=api_key_for)  # type: ignore[arg-type]
        read_manifest(manifest)  # none, or a damaged one: one line before Ray is asked anything
        connect(address)
        served = serve_cluster(
            manifest, host=host, port=port, ingress_port=ingress_port, settings=settings, ingress_node=ingress_node
        )
    faster = f"; the ingress itself, faster, at {served.ingress_url}/" if served.ingress_url else ""
    typer.echo(
        f"Serving {manifest} at {served.proxy_url}/ (Ray Serve{faster}; `searchengine cluster-index stop {manifest}` "
        "stops it)",
        err=True,
    )


@cluster_index_app.command()
def stop(manifest: Path = ManifestArgument, address: str | None = AddressOption) -> None:
    """Stop serving a cluster index: delete its ingress's and its copies' Ray Serve applications, and wait until
    they are gone.

    Other Serve applications on the Ray cluster go on, another cluster index's copies among them (`serve shutdown`
    stops all of Serve). The manifest and the copies' folders stay: `cluster-index serve` serves it again, and a
    build at MANIFEST is no longer refused. A MANIFEST that is not being served is said in one line, with exit code
    0, as `docker stop` of a stopped container; no cluster index at MANIFEST is an error (exit code 1).

    Examples:

      searchengine cluster-index stop cluster.json --address head-node:6379
    """
    with user_errors(manifest):
        from searchengine.server.cluster.serve_app import INGRESS_APP, connect, stop_cluster

        connect(address)
        stopped = stop_cluster(manifest)
    if not stopped:
        typer.echo(f"{manifest} is not being served on this Ray cluster: nothing to stop.")
        return
    copies = [app for app in stopped if app != INGRESS_APP]
    ingress = "its ingress and " if INGRESS_APP in stopped else ""
    counted = f"{len(copies)} copy" if len(copies) == 1 else f"{len(copies)} copies"
    typer.echo(f"Stopped serving {manifest}: {ingress}{counted} (Serve applications {', '.join(stopped)}).")
