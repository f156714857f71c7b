"""`searchengine query`: nearest documents for one query or a file of queries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from searchengine.cli.errors import user_errors
from searchengine.cli.options import (
    BackendChoiceOption,
    IndexDirOption,
    PrecisionOption,
    ThreadsOption,
    json_option,
    mode_option,
    model_option,
)
from searchengine.encoding.backend import Backend
from searchengine.encoding.precision import Precision
from searchengine.engine.mode_registry import RetrievalMode, mode_named
from searchengine.engine.modes import DEFAULT_MODE, MODE_DEFAULT_NOTE, MODE_HELP, SearchMode
from searchengine.engine.snippets import DEFAULT_SNIPPET_CHARS, one_line, snippet
from searchengine.engine.wording import counted
from searchengine.errors import SearchEngineError
from searchengine.indexer.vectors.rescore_depth import (
    DEFAULT_RESCORE,
    LARGE_PRODUCT_QUANTIZATION_RESCORE,
    PRODUCT_QUANTIZATION_RESCORE,
    VECTORS_PER_RESCORED,
)
from searchengine.reading.byte_order import as_utf8

if TYPE_CHECKING:
    from searchengine.engine.query_request import QueryRequest


def query(
    text: str | None = typer.Argument(None, help="What to search for."),
    k: int = typer.Option(10, "-k", "--top-k", help="Number of results per query (at least 1)."),
    file: Path | None = typer.Option(
        None,
        "--file",
        "-f",
        help="Read queries from this file (- for standard input), one per line, and run them as one batch.",
    ),
    as_json: bool = json_option(
        "Print results as JSON: each hit's whole text, its snippet, the span that matched, the highlighted "
        "sentences and query words (character offsets) and each side's score; the same objects as the server's /search.",
    ),
    mode: SearchMode | None = mode_option(MODE_HELP, MODE_DEFAULT_NOTE),
    max_chars: int = typer.Option(
        DEFAULT_SNIPPET_CHARS,
        "--max-chars",
        min=10,
        help="Characters of each hit's one-line snippet: the passage that matched, or the document's start.",
    ),
    index_dir: Path | None = IndexDirOption,
    model: str | None = model_option("Expect this model; it must be the one the index was built with.", False),
    whiten_k: int | None = typer.Option(None, "--whiten-k", help="Expect this whitening-k in the index."),
    where: list[str] = typer.Option(
        [],
        "--where",
        "-w",
        help="Metadata filter FIELD OP VALUE, OP one of = != > >= < <= ^= (prefix), in (a,b), contains (list "
        "fields), like (% and _); join alternatives with ' or ' inside one --where, repeat --where to combine "
        "(AND); `my field` quotes a field name with spaces; metadata.source names a metadata key called as a "
        "column (id, external_id, source, line, text).",
    ),
    rerank: str | None = typer.Option(
        None,
        "--rerank",
        help="Rescore the top candidates with this cross-encoder (a directory from `searchengine train "
        "cross-encoder`, or any sentence-transformers CrossEncoder directory or Hub id). Costs one transformer pass "
        "per candidate (slow on a CPU; measured in docs/reranking.md) and helps only with a cross-encoder better "
        "than the index's model at your task: docs/reranking.md.",
    ),
    rerank_top: int | None = typer.Option(
        None, "--rerank-top", min=1, help="Candidates the cross-encoder rescores (at least -k).", show_default="100"
    ),
    min_score: float | None = typer.Option(
        None,
        "--min-score",
        help="Leave out hits scored below this, so that a query with no good answer gets none. Scores keep one "
        "scale for every query: the cosine (dense), BM25 over the most the query's words allow (keyword, 0..1) "
        "and their bounded fusion (hybrid, 0..1). With --rerank it applies before the cross-encoder. "
        "docs/retrieval.md measures which values separate answerable queries from others.",
    ),
    rescore: int | None = typer.Option(
        None,
        "--rescore",
        min=0,
        help="On an index with compressed codes (--index IVF1024,PQ32, HNSW32,SQ8, LSH ...): take this many "
        "candidates per segment from the codes and rescore them exactly from the original vectors on disk before "
        "the k best are shown (0: the codes' own scores). Exact indexes (Flat, HNSW32) ignore it.",
        show_default=f"{DEFAULT_RESCORE}; for product quantization one per {VECTORS_PER_RESCORED:,} vectors of a "
        f"segment, at least {PRODUCT_QUANTIZATION_RESCORE} and at most {LARGE_PRODUCT_QUANTIZATION_RESCORE:,}",
    ),
    precision: Precision = PrecisionOption,
    backend: Backend = BackendChoiceOption,
    threads: int | None = ThreadsOption,
    server: str | None = typer.Option(
        None,
        "--server",
        envvar="SEARCHENGINE_SERVER",
        show_envvar=True,
        help="Ask a running `searchengine serve` at this address (e.g. http://127.0.0.1:8000) instead of opening "
        "the index here; its API key, if any, comes from $SEARCHENGINE_API_KEY.",
    ),
) -> None:
    """Find the documents that best match a query: by meaning, by its words, or both (--mode).

    Prints one line per hit: rank, score, document id (and your own id, given with --id-field, in parentheses) and
    a snippet: the passage that matched (for a document split into passages at indexing) or the document's start,
    on one line, cut to --max-chars at a word boundary with an ellipsis. The snippet starts at the sentence nearest
    to the query (by meaning in dense mode, by its words in keyword mode, both in hybrid), with the query's words in
    bold. Scores keep one scale for every query: the cosine in dense mode; in keyword mode BM25 over the most the
    query's words let a document reach (0..1), then the BM25 itself; in hybrid mode their fusion (0..1), then
    each side's. --min-score leaves out hits scored below it.
    The index's own model encodes the query; --model and --whiten-k only assert what the index must have been built
    with. Filters run inside the vector search and the keyword search, so k results come back whenever k documents
    match; fields are metadata keys or id, external_id, source, line, text.
    With --rerank, a cross-encoder reads the query and each of the --rerank-top best candidates together and the k
    best by its score are shown: its score first, then the score that retrieved the hit. Slower per query (one
    transformer pass per candidate), usually more accurate.

    Examples:

      searchengine query "how do I reset my password" -k 5

      searchengine query "error E1234 in module foo" --mode keyword

      searchengine query "budget tips" --where lang=en --where "year>=2020"

      searchengine query "budget tips" --where "lang in en,de" --where "tags contains news or title like Intro%"

      searchengine query "budget tips" --where "`my field`=x"

      cat questions.txt | searchengine query --file -

      searchengine query --file questions.txt --json

      searchengine query "how do I reset my password" --rerank my-cross-encoder --rerank-top 50

      searchengine query "budget tips" --server http://127.0.0.1:8000
    """
    from searchengine.engine.query_request import QueryRequest
    from searchengine.engine.query_words import query_stems

    with user_errors(index_dir):
        queries = _queries(text, file)
        if rerank_top is not None and rerank is None:
            raise SearchEngineError(
                "--rerank-top says how many candidates a cross-encoder rescores; add --rerank MODEL"
            )
        if server and (index_dir is not None or model is not None or whiten_k is not None):
            raise SearchEngineError(
                "--server answers from the server's own index and model; drop --index-dir, --model and --whiten-k"
            )
        request = QueryRequest(
            queries, k, where, mode, None, rerank, rerank_top, min_score, highlight=True, rescore=rescore
        )
        if server:
            from searchengine.server.client import search_remote

            payload = search_remote(
                server, queries, k, where, rerank, rerank_top, mode, min_score=min_score, highlight=True, rescore=rescore
            )
            for result in payload:
                for hit in result["hits"]:
                    shown = (hit.get("highlight") or {}).get("span") or hit.get("span")
                    hit["snippet"] = snippet(hit["text"], shown, max_chars)
            held = None
        else:
            payload, held = _search_here(request, index_dir, model, whiten_k, precision, backend, threads, max_chars)
        if as_json:
            typer.echo(json.dumps(payload if file else payload[0], ensure_ascii=False, indent=2))
            return
        if where and min_score is None and not any(result["hits"] for result in payload):
            typer.echo(f"No documents match {' and '.join(where)}.", err=True)
            return
        if held is not None and k > held and not where:
            typer.echo(f"(the index holds {counted(held, 'document')}, so at most {counted(held, 'result')})", err=True)
        searched = mode_named(payload[0]["mode"])
        sides = _SIDES if len(searched.side_scores) > 1 else ""
        if rerank:
            top = payload[0]["rerank"]["top"]
            typer.echo(
                f"(reranked by {rerank} from the top {top} by {searched.name} search: cross-encoder score, then "
                f"{searched.score_name}{sides})",
                err=True,
            )
        elif sides:
            typer.echo(f"({searched.name} search: {searched.score_name}{sides})", err=True)
        for position, result in enumerate(payload):
            if file:
                typer.echo(("\n" if position else "") + f"Query: {result['query']}")
            if not result["hits"]:
                typer.echo(_no_hits(result["query"], min_score, where), err=True)
            stems = query_stems(result["query"])
            for rank, hit in enumerate(result["hits"], start=1):
                cluster = f"[c{hit['cluster']}] " if hit["cluster"] is not None else ""
                names = [hit[key] for key in ("external_id", "location") if hit.get(key) is not None]
                external = f"({one_line(' › '.join(names))}) " if names else ""
                details = _details(hit, searched)
                typer.echo(
                    f"{rank:>3}  {hit['score']:.4f}  {details}#{hit['id']:<6} {external}{cluster}"
                    + _bold_words(hit["snippet"], stems)
                )


def _no_hits(query: str, min_score: float | None, where: list[str]) -> str:
    """The one line said for a query that got no hit, naming why."""
    shown = repr(one_line(query))
    if min_score is not None:
        return f"(no hit scores {min_score:g} or more for {shown}: nothing here answers it well; lower --min-score)"
    if where:
        return f"(no document matching {' and '.join(where)} answers {shown})"
    return f"(no document holds a word of {shown}; try --mode hybrid)"  # only keyword search finds nothing else


def _bold_words(line: str, stems: frozenset[str]) -> str:
    """`line` with each of the query's words in bold (styles are dropped where stdout is not a terminal)."""
    from searchengine.engine.query_words import word_spans

    parts, last = [], 0
    for start, end in word_spans(line, stems):
        parts += [line[last:start], typer.style(line[start:end], bold=True)]
        last = end
    return "".join(parts) + line[last:]


_SIDES = ", then each side's: cosine and BM25"
_SIDE_SCORES = {
    "dense": lambda hit: f"cos {hit['dense_score']:.4f}",
    "keyword": lambda hit: f"bm25 {hit['keyword_score']:6.2f}",
}


def _details(hit: dict, mode: RetrievalMode) -> str:
    """What a printed hit shows between its score and its id: the retrieval score of a reranked hit, and the
    scores of the sides the mode shows (none in dense mode, whose score is the cosine)."""
    parts = []
    if hit["retrieval_score"] is not None:
        parts.append(f"{mode.short_score_name} {hit['retrieval_score']:.4f}")
    if mode.side_scores:
        parts.append(", ".join(_SIDE_SCORES[side](hit) for side in mode.side_scores))
    return f"({'; '.join(parts)})  " if parts else ""


def _search_here(
    request: QueryRequest,
    index_dir: Path | None,
    model: str | None,
    whiten_k: int | None,
    precision: str,
    backend: str,
    threads: int | None,
    max_chars: int,
) -> tuple[list[dict], int]:
    """Open the index in this process and answer `request` there: the results as --json prints them, and the
    index's size."""
    from searchengine.encoding.speed import EncoderSpeed
    from searchengine.engine.hit_records import result_record
    from searchengine.engine.search_engine import SearchEngine, default_index_dir

    speed = EncoderSpeed(precision, backend, threads)
    engine = SearchEngine.open(index_dir or default_index_dir(), model=model, whiten_k=whiten_k, speed=speed)
    if request.mode is None and not engine.has_keyword_index:
        typer.echo(
            f"(dense search: this index has no keyword index yet; `searchengine compact -d {engine.path}` adds it, "
            f"and queries then use {DEFAULT_MODE} search)",
            err=True,
        )
    results = engine.answer(request)
    searched = request.mode or engine.default_mode
    reranked = {"model": request.rerank, "top": request.depth} if request.rerank else None
    queries = request.queries
    payload = [result_record(q, searched, hits, reranked, max_chars) for q, hits in zip(queries, results)]
    return payload, len(engine)


def _queries(text: str | None, file: Path | None) -> list[str]:
    if (text is None) == (file is None):
        raise SearchEngineError('give one query as an argument or a file of queries with --file, e.g. query "..."')
    if text is not None:
        return [text]
    lines = _query_lines(file).splitlines()
    queries = [line.strip() for line in lines if line.strip()]
    if not queries:
        raise SearchEngineError(f"query file {file} holds no queries (one per line)")
    return queries


def _query_lines(file: Path) -> str:
    """The text of a query file, or of standard input for '-': UTF-8, or UTF-16 or UTF-32 where a byte order mark
    says so (as Windows tools write them)."""
    if str(file) == "-":
        data = typer.get_binary_stream("stdin").read()
    elif file.is_dir():
        raise SearchEngineError(f"query file {file} is a directory; pass a text file with one query per line")
    else:
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            raise SearchEngineError(f"query file {file} does not exist") from None
    try:
        data = as_utf8(data)  # UTF-16 or UTF-32 behind a byte order mark, as corpus files are read
    except SearchEngineError as error:
        raise SearchEngineError(f"query file {file} {error}") from None
    if b"\x00" in data:
        raise SearchEngineError(f"query file {file} contains NUL bytes: it looks binary; pass UTF-8 text")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise SearchEngineError(f"query file {file} is not UTF-8 text") from None
