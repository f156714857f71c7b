"""`searchengine adapt`: fine-tune the index's model on the index's own documents, then re-index them with it."""

from __future__ import annotations

from pathlib import Path

import typer

from searchengine.cli.errors import user_errors
from searchengine.cli.options import IndexDirOption, quiet_option, seed_option
from searchengine.engine.wording import counted

METHOD_HELP = (
    "pseudo-queries: each document's title (--query-field) or first sentence is a query for the rest of it; "
    "simcse, consert, promptbert: the unsupervised sentence objectives of `searchengine train`."
)


def adapt(
    index_dir: Path | None = IndexDirOption,
    method: str = typer.Option("pseudo-queries", "--method", help=METHOD_HELP),
    query_field: str | None = typer.Option(
        None,
        "--query-field",
        help="pseudo-queries: the metadata field holding each document's title (e.g. title); without it, each "
        "document's first sentence is its query.",
    ),
    steps: int = typer.Option(100, "--steps", min=1, help="Optimizer steps (batches)."),
    learning_rate: float = typer.Option(2e-5, "--lr", min=0.0, help="Peak learning rate (warm-up, then decay)."),
    batch_size: int | None = typer.Option(
        None, "--batch-size", min=2, help="Texts per batch (in-batch negatives).", show_default="the method's"
    ),
    max_seq_length: int | None = typer.Option(
        None,
        "--max-seq-length",
        min=8,
        help="Truncate training texts to this many tokens.",
        show_default="the method's",
    ),
    seed: int = seed_option("Random seed: the same seed and index give the same model."),
    quiet: bool = quiet_option("No progress bars."),
) -> None:
    """Adapt the index's model to its documents (no labels needed), then re-index them with it.

    The documents come from the index itself. The adapted model is saved inside the index directory
    (adapted-METHOD.NUMBER/) and every document is embedded again with it, keeping ids, external ids and
    metadata, in one commit: until then the old index answers queries, and Ctrl-C or a kill leaves it as it was.
    On a CPU the default 100 steps take minutes to tens of minutes, and the re-embedding as long as `index` did.
    Whether it helps depends on the corpus: measure it on your own queries first (docs/retrieval-adaptation.md
    measures both on two BEIR sets).

    Examples:

      searchengine adapt --index-dir nf-index --query-field title

      searchengine adapt --method simcse --steps 300 --lr 3e-5
    """
    from searchengine.engine.search_engine import default_index_dir

    target = index_dir or default_index_dir()
    with user_errors(target):
        from searchengine.training.adapt import adapt_index

        options = {"steps": steps, "learning_rate": learning_rate, "seed": seed}
        if query_field is not None:
            options["query_field"] = query_field
        if batch_size is not None:
            options["batch_size"] = batch_size
        if max_seq_length is not None:
            options["max_seq_length"] = max_seq_length
        report = adapt_index(target, method, options, progress=not quiet)
        typer.echo(report.training.summary())
        if report.indexing is None:
            typer.echo("Interrupted: nothing was re-indexed; the index is as it was before.", err=True)
            raise typer.Exit(130)
        typer.echo(
            f"Re-indexed {counted(report.indexing.added, 'document')} with the adapted model {report.model} "
            f"in {report.indexing.seconds:.0f} s."
        )
