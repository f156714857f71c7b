"""`searchengine cluster-index`: a cluster index (searchengine.cluster) on a running Ray cluster: its status, and
serving it with Ray Serve under the HTTP API of `searchengine serve`. (`searchengine cluster` is k-means over one
index's vectors.)"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from searchengine.cli.errors import user_errors
from searchengine.cli.options import api_key_option, host_option, port_option

cluster_index_app = typer.Typer(
    help="A cluster index spread over a Ray cluster: its status, and serving it with Ray Serve.",
    no_args_is_help=True,
)
ManifestArgument = typer.Argument(..., help="The cluster index's manifest (the JSON file its build wrote).")
AddressOption = typer.Option(
    None,
    "--address",
    help="The Ray cluster: its head's HOST:PORT; default the one `ray start` runs on this machine, or $RAY_ADDRESS.",
)


@cluster_index_app.command()
def status(
    manifest: Path = ManifestArgument,
    address: str | None = AddressOption,
    as_json: bool = typer.Option(False, "--json", help="Print the status as one JSON object."),
) -> None:
    """Show the shards, their copies and nodes, the documents of each shard and each copy's lag (writes it lacks).

    Asks the running ingress when the index is served (it knows every acknowledged write), else the copies.

    Examples:

      searchengine cluster-index status cluster.json --address head-node:6379
    """
    with user_errors(manifest):
        from searchengine.server.cluster.serve_app import cluster_status, connect

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


@cluster_index_app.command()
def serve(
    manifest: Path = ManifestArgument,
    address: str | None = AddressOption,
    host: str = host_option("Address Serve's HTTP proxy listens on; 0.0.0.0 reaches beyond this machine."),
    port: int = port_option(8000, "Port Serve's HTTP proxy listens on."),
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

    The application keeps running on the Ray cluster after this command returns; `serve shutdown` stops it.
    `searchengine query --server URL` asks it as it asks `searchengine serve`.

    Examples:

      searchengine cluster-index serve cluster.json --address head-node:6379 --host 0.0.0.0
    """
    with user_errors(manifest):
        from searchengine.server.cluster.serve_app import connect, serve_cluster
        from searchengine.server.settings import ServerSettings

        settings = ServerSettings(api_key=api_key, api_key_for=api_key_for)  # type: ignore[arg-type]
        connect(address)
        url = serve_cluster(manifest, host=host, port=port, settings=settings, ingress_node=ingress_node)
    typer.echo(f"Serving {manifest} at {url}/ (Ray Serve; `serve shutdown` stops it)", err=True)
