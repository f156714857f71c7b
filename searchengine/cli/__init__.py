"""The searchengine command line: one typer app, one module per command group, one error funnel
(`searchengine.cli.errors`). Commands import the library inside their bodies, so `--help` loads no model."""

from __future__ import annotations

import inspect

import typer

from searchengine.cli import (
    adapt,
    analysis,
    cluster_index,
    collections,
    evaluation,
    files,
    index,
    maintenance,
    mcp_server,
    query,
    serve,
    train,
)

app = typer.Typer(
    help="Semantic search over your own files and text: index a folder or a corpus once, then query it by meaning.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:  # the installed distribution's version, as searchengine.__version__ reads it
        from importlib.metadata import version

        typer.echo(f"searchengine {version('searchengine')}")
        raise typer.Exit()


@app.callback()
def _before_any_command(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """The options before a command: --version here, and typer's --install-completion and --show-completion."""


for command in (
    index.index,
    query.query,
    maintenance.info,
    analysis.cluster,
    index.add,
    files.sync,
    maintenance.delete,
    maintenance.compact,
    maintenance.filter_index,
    maintenance.verify,
    analysis.mine,
    evaluation.analyze,
    adapt.adapt,
    serve.serve,
    mcp_server.mcp,
):
    app.command()(command)
app.add_typer(train.train_app, name="train")
app.add_typer(evaluation.eval_app, name="eval")
app.add_typer(cluster_index.cluster_index_app, name="cluster-index")
app.add_typer(collections.collections_app, name="collections")


def flowing(text: str) -> str:
    """`text` with each paragraph's wrapped lines joined into one, so a terminal wraps it at its own width; a
    paragraph with indented lines (examples) stays as written. typer's rich help joins the first paragraph's lines
    only and prints the rest with the source's breaks, ragged at every width but the source's."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        paragraph if any(line[:1].isspace() for line in paragraph.splitlines()) else " ".join(paragraph.splitlines())
        for paragraph in paragraphs
    )


def _flow_help(commands: typer.Typer) -> None:
    """Every command's help, from its docstring, as `flowing` text."""
    for info in commands.registered_commands:
        info.help = flowing(info.help or inspect.getdoc(info.callback) or "")
    for group in commands.registered_groups:
        _flow_help(group.typer_instance)


_flow_help(app)
