"""The searchengine command line: index a corpus, query it, inspect it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Optional

import typer

from indexer.errors import IndexerError
from searchengine.errors import SearchEngineError

app = typer.Typer(
    help="Semantic search over your own text: index a corpus once, then query it by meaning.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

IndexDirOption = typer.Option(
    None,
    "--index-dir",
    "-d",
    help="Index directory [default: $SEARCHENGINE_INDEX or ./searchengine-index].",
    show_default=False,
)
ModelOption = typer.Option(
    None, "--model", "-m", help="Model directory or Hugging Face id [default: bundled all-MiniLM-L6-v2]."
)


@contextmanager
def _user_errors(index_dir: Path | None = None) -> Iterator[None]:
    """Turn problems the user can fix into one line on stderr and exit code 1, never a traceback."""
    try:
        yield
    except (SearchEngineError, IndexerError) as exc:
        typer.echo(f"Error: {exc}", err=True)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        where = f" at {index_dir}" if index_dir else ""
        typer.echo(f"\nInterrupted: nothing was changed; the index{where} is as it was before.", err=True)
        raise typer.Exit(130) from None


@app.command()
def index(
    corpus: str = typer.Argument(..., help="A .txt file (one document per line), a .jsonl file, or - for stdin."),
    index_dir: Optional[Path] = IndexDirOption,
    model: Optional[str] = ModelOption,
    pooling: Optional[str] = typer.Option(
        None, help="Override pooling: mean, cls, max, mean_sqrt_len, last2avg, first_last_avg."
    ),
    index_type: Optional[str] = typer.Option(
        None,
        "--index",
        help='FAISS factory string, e.g. "Flat", "HNSW32", "IVF1024,PQ32" [default: Flat up to 200,000 texts, '
        "else HNSW32].",
    ),
    whiten_k: Optional[int] = typer.Option(
        None, "--whiten-k", min=1, help="Fit BERT-whitening and keep this many dimensions (e.g. 128)."
    ),
    whiten_fit: Optional[Path] = typer.Option(
        None, "--whiten-fit", help="Fit whitening on this file instead of the corpus (needs --whiten-k)."
    ),
    append: bool = typer.Option(False, "--append", help="Add to the existing index instead of replacing it."),
    jsonl: bool = typer.Option(False, "--jsonl", help="Read JSON lines whatever the name (e.g. from stdin)."),
    batch_size: int = typer.Option(64, min=1, help="Texts per forward pass."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar or summary."),
) -> None:
    """Embed every document of CORPUS and save a searchable index.

    Each non-blank line of a .txt file is a document; a .jsonl file needs a "text" field per line and keeps the
    other fields as metadata. Identical texts are stored once and counted. The previous index stays intact
    until the new one is complete, so an interrupted run loses nothing.

    Examples:

      searchengine index notes.txt

      searchengine index docs.jsonl --index-dir ~/indexes/docs --index HNSW32 --whiten-k 256

      cat more.txt | searchengine index - --append
    """
    from searchengine.engine import SearchEngine, default_index_dir

    target = index_dir or default_index_dir()
    fmt = True if jsonl else None
    with _user_errors(target):
        if append:
            if index_type or whiten_k or whiten_fit or pooling:
                raise SearchEngineError(
                    "--append adds to an index with the settings it was built with; drop --index, --pooling, "
                    "--whiten-k and --whiten-fit"
                )
            engine = SearchEngine.open(target, model=model)
            report = engine.add(corpus, jsonl=fmt, progress=not quiet)
        else:
            if whiten_fit is not None and whiten_k is None:
                raise SearchEngineError("--whiten-fit says what to fit whitening on; add --whiten-k K to use it")
            engine = SearchEngine.build(
                corpus,
                target,
                model=model,
                pooling=pooling,
                index=index_type,
                whiten_k=whiten_k,
                whiten_fit=whiten_fit,
                batch_size=batch_size,
                jsonl=fmt,
                progress=not quiet,
            )
            report = engine.last_report
        if quiet:
            return
        rate = report.documents / report.seconds if report.seconds else 0.0
        typer.echo(
            f"Indexed {report.documents} texts from {corpus} ({report.added} new, {report.repeats} repeats) "
            f"into {target} in {report.seconds:.1f} s ({rate:.0f} texts/s); the index holds {len(engine)}."
        )
        if report.index_type_chosen:
            typer.echo(
                f"Index type {report.index_type}, chosen for this corpus size (exact search up to 200,000 texts); "
                "pass --index to choose another."
            )
        if report.truncated:
            typer.echo(
                f"{report.truncated} texts were longer than the model's {engine.encoder.max_seq_length} tokens "
                "and were embedded from their beginning."
            )


@app.command()
def query(
    text: Optional[str] = typer.Argument(None, help="What to search for."),
    k: int = typer.Option(10, "-k", "--top-k", min=1, help="Number of results per query."),
    file: Optional[Path] = typer.Option(
        None, "--file", "-f", help="Read queries from this file, one per line, and run them as one batch."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print results as JSON."),
    index_dir: Optional[Path] = IndexDirOption,
    model: Optional[str] = typer.Option(
        None, "--model", "-m", help="Expect this model; it must be the one the index was built with."
    ),
    whiten_k: Optional[int] = typer.Option(None, "--whiten-k", help="Expect this whitening-k in the index."),
) -> None:
    """Find the documents closest in meaning to a query.

    Prints rank, cosine score, document id and text. The index's own model encodes the query; --model and
    --whiten-k only assert what the index must have been built with.

    Examples:

      searchengine query "how do I reset my password" -k 5

      searchengine query --file questions.txt --json
    """
    from searchengine.engine import SearchEngine, default_index_dir

    target = index_dir or default_index_dir()
    with _user_errors(target):
        queries = _queries(text, file)
        engine = SearchEngine.open(target, model=model, whiten_k=whiten_k)
        results = engine.search_batch(queries, k)
        if as_json:
            payload = [{"query": q, "hits": [asdict(hit) for hit in hits]} for q, hits in zip(queries, results)]
            typer.echo(json.dumps(payload if file else payload[0], ensure_ascii=False, indent=2))
            return
        if k > len(engine):
            typer.echo(f"(the index holds {len(engine)} texts, so at most {len(engine)} results)", err=True)
        for position, (q, hits) in enumerate(zip(queries, results)):
            if file:
                typer.echo(("\n" if position else "") + f"Query: {q}")
            for rank, hit in enumerate(hits, start=1):
                typer.echo(f"{rank:>3}  {hit.score:.4f}  #{hit.id:<6} {hit.text}")


def _queries(text: str | None, file: Path | None) -> list[str]:
    if (text is None) == (file is None):
        raise SearchEngineError('give one query as an argument or a file of queries with --file, e.g. query "..."')
    if text is not None:
        if not text.strip():
            raise SearchEngineError("the query is empty; say what to search for")
        return [text]
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise SearchEngineError(f"query file {file} does not exist") from None
    except UnicodeDecodeError:
        raise SearchEngineError(f"query file {file} is not UTF-8 text") from None
    queries = [line.strip() for line in lines if line.strip()]
    if not queries:
        raise SearchEngineError(f"query file {file} holds no queries (one per line)")
    return queries


@app.command()
def info(
    index_dir: Optional[Path] = IndexDirOption,
    as_json: bool = typer.Option(False, "--json", help="Print as JSON."),
) -> None:
    """Show what an index holds: counts, model, pooling, dimension, whitening, index type, size, dates.

    Example:

      searchengine info --index-dir ~/indexes/docs
    """
    from searchengine.engine import default_index_dir
    from indexer.index_directory import IndexDirectory

    target = index_dir or default_index_dir()
    with _user_errors(target):
        directory = IndexDirectory(target)
        manifest = directory.read_manifest()
        model, whitening = manifest["model"], manifest["whitening"]
        details = {
            "path": str(target),
            "documents": manifest["count"]["documents"],
            "distinct texts (vectors)": manifest["count"]["vectors"],
            "model": f"{model['name']} (fingerprint {model['fingerprint']})",
            "pooling": model["pooling"] + (" + normalize" if model["normalize"] else ""),
            "dimension": manifest["index"]["dimension"],
            "whitening": f"whitening-k {whitening['k']} (fitted on {whitening['fit_count']} texts)"
            if whitening
            else "none",
            "index type": f"{manifest['index']['type']} (FAISS, inner product)",
            "size on disk": _human_bytes(directory.size_on_disk(manifest)),
            "built": manifest["created_at"],
            "updated": manifest["updated_at"],
            "versions": ", ".join(f"{name} {v}" for name, v in manifest["versions"].items()),
        }
        if as_json:
            typer.echo(json.dumps(manifest, indent=2))
            return
        width = max(len(key) for key in details)
        for key, value in details.items():
            typer.echo(f"{key + ':':<{width + 1}} {value}")


def _human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{size} B"
        value /= 1024
    raise AssertionError("unreachable")
