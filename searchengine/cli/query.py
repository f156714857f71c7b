"""`searchengine query`: nearest documents for one query or a file of queries."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from searchengine.cli.errors import user_errors
from searchengine.cli.wording import counted
from searchengine.cli.options import BackendOption, IndexDirOption, PrecisionOption, ThreadsOption
from searchengine.encoding.backend import Backend
from searchengine.encoding.precision import Precision
from searchengine.errors import SearchEngineError

if TYPE_CHECKING:
    from searchengine.engine.search import Hit


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
    where: list[str] = typer.Option(
        [], "--where", "-w", help="Metadata filter FIELD OP VALUE (OP: = != > >= < <=); repeat to combine (AND)."
    ),
    rerank: Optional[str] = typer.Option(
        None,
        "--rerank",
        help="Rescore the top candidates with this cross-encoder (a directory from `searchengine train "
        "cross-encoder`, or any sentence-transformers CrossEncoder directory or Hub id).",
    ),
    rerank_top: Optional[int] = typer.Option(
        None, "--rerank-top", min=1, help="Candidates the cross-encoder rescores (at least -k) [default: 100]."
    ),
    precision: Precision = PrecisionOption,
    backend: Backend = BackendOption,
    threads: Optional[int] = ThreadsOption,
) -> None:
    """Find the documents closest in meaning to a query.

    Prints rank, cosine score, document id (and your own id, given with --id-field, in parentheses) and text. The index's own model encodes the query; --model and
    --whiten-k only assert what the index must have been built with. Filters run inside the vector search, so
    k results come back whenever k documents match; fields are metadata keys or id, external_id, source, line, text.
    With --rerank, a cross-encoder reads the query and each of the --rerank-top best candidates together and
    the k best by its score are shown: its score first, then the cosine that retrieved the hit. Slower per query
    (one transformer pass per candidate), usually more accurate.

    Examples:

      searchengine query "how do I reset my password" -k 5

      searchengine query "budget tips" --where lang=en --where "year>=2020"

      searchengine query --file questions.txt --json

      searchengine query "how do I reset my password" --rerank my-cross-encoder --rerank-top 50
    """
    from searchengine.encoding.encoder import EncoderSpeed
    from searchengine.engine.search_engine import DEFAULT_RERANK_TOP, SearchEngine, default_index_dir

    target = index_dir or default_index_dir()
    with user_errors(target):
        queries = _queries(text, file)
        if rerank_top is not None and rerank is None:
            raise SearchEngineError(
                "--rerank-top says how many candidates a cross-encoder rescores; add --rerank MODEL"
            )
        speed = EncoderSpeed(precision, backend, threads)
        engine = SearchEngine.open(target, model=model, whiten_k=whiten_k, speed=speed)
        top = max(k, rerank_top or DEFAULT_RERANK_TOP)
        results = engine.search_batch(queries, k, where, rerank=rerank, rerank_top=top)
        if where and not any(results):
            typer.echo(f"No documents match {' and '.join(where)}.", err=True)
            return
        if as_json:
            reranked = {"rerank": {"model": rerank, "top": top}} if rerank else {}
            payload = [
                {"query": q, **reranked, "hits": [_hit_json(hit) for hit in hits]} for q, hits in zip(queries, results)
            ]
            typer.echo(json.dumps(payload if file else payload[0], ensure_ascii=False, indent=2))
            return
        if k > len(engine) and not where:
            held = counted(len(engine), "document")
            typer.echo(f"(the index holds {held}, so at most {counted(len(engine), 'result')})", err=True)
        if rerank:
            typer.echo(
                f"(reranked by {rerank} from the top {top} by cosine: cross-encoder score, then cosine)", err=True
            )
        for position, (q, hits) in enumerate(zip(queries, results)):
            if file:
                typer.echo(("\n" if position else "") + f"Query: {q}")
            for rank, hit in enumerate(hits, start=1):
                cluster = f"[c{hit.cluster}] " if hit.cluster is not None else ""
                cosine = f"(cos {hit.retrieval_score:.4f})  " if hit.retrieval_score is not None else ""
                external = f"({hit.external_id}) " if hit.external_id is not None else ""
                typer.echo(f"{rank:>3}  {hit.score:.4f}  {cosine}#{hit.id:<6} {external}{cluster}{hit.text}")


def _hit_json(hit: Hit) -> dict:
    """A hit as JSON, the user's own id (external_id) right after the index's id."""
    fields = asdict(hit)
    return {"id": fields.pop("id"), "external_id": fields.pop("external_id"), **fields}


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
