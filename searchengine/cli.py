"""The searchengine command line: index a corpus, query it, inspect it."""

from __future__ import annotations

import json
import time
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
IdFieldOption = typer.Option(
    None, "--id-field", help="A .jsonl field holding each document's own id: adding that id again replaces it."
)
ModelOption = typer.Option(
    None, "--model", "-m", help="Model directory or Hugging Face id [default: bundled all-MiniLM-L6-v2]."
)
PrecisionOption = typer.Option(
    "auto",
    "--precision",
    help="Encoder precision: auto (bf16 on CPUs with native bf16, else fp32), fp32, bf16, fp16 (GPU) or int8 "
    "(faster on CPU, about 1 point of STS-B lower; docs/benchmarks.md).",
)
BackendOption = typer.Option(
    "auto",
    "--backend",
    help="Run the encoder in torch or onnx (ONNX Runtime, the 'onnx' extra; 4x faster per query on CPU, same "
    "vectors); auto: onnx where installed and able to run the model, else torch.",
)
ThreadsOption = typer.Option(
    None, "--threads", min=1, help="CPU threads while encoding [default: torch's or ONNX Runtime's own choice]."
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
        None, help="Override pooling: mean, cls, max, mean_sqrt_len, last2avg, first_last_avg, prompt."
    ),
    template: Optional[str] = typer.Option(
        None,
        "--template",
        help='Prompt pooling (PromptBERT) with this template: one [X] for the text, one [MASK] whose state is the '
        'vector, e.g. \'This sentence : "[X]" means [MASK] .\' [default: the model\'s own prompt].',
    ),
    denoise: Optional[bool] = typer.Option(
        None, "--denoise/--no-denoise", help="Prompt pooling: subtract the bare template's [MASK] state."
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
    id_field: Optional[str] = IdFieldOption,
    batch_size: int = typer.Option(64, min=1, help="Texts per forward pass."),
    precision: str = PrecisionOption,
    backend: str = BackendOption,
    threads: Optional[int] = ThreadsOption,
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
    from searchengine.encoder import Encoder, EncoderSpeed
    from searchengine.engine import SearchEngine, default_index_dir

    target = index_dir or default_index_dir()
    fmt = True if jsonl else None
    speed = EncoderSpeed(precision, backend, threads)
    with _user_errors(target):
        if append:
            if index_type or whiten_k or whiten_fit or pooling or template is not None or denoise is not None:
                raise SearchEngineError(
                    "--append adds to an index with the settings it was built with; drop --index, --pooling, "
                    "--template, --denoise, "
                    "--whiten-k and --whiten-fit"
                )
            engine = SearchEngine.open(target, model=model, speed=speed)
            report = engine.add(corpus, jsonl=fmt, id_field=id_field, progress=not quiet)
        else:
            if whiten_fit is not None and whiten_k is None:
                raise SearchEngineError("--whiten-fit says what to fit whitening on; add --whiten-k K to use it")
            engine = SearchEngine.build(
                corpus,
                target,
                encoder=Encoder(
                    model, pooling, batch_size=batch_size, template=template, denoise=denoise, **speed.options()
                ),
                index=index_type,
                whiten_k=whiten_k,
                whiten_fit=whiten_fit,
                jsonl=fmt,
                id_field=id_field,
                progress=not quiet,
            )
            report = engine.last_report
        if quiet:
            return
        rate = report.documents / report.seconds if report.seconds else 0.0
        replaced = f", {report.replaced} replaced by upsert" if report.replaced else ""
        typer.echo(
            f"Indexed {report.documents} texts from {corpus} ({report.added} new, {report.repeats} repeats"
            f"{replaced}) into {target} in {report.seconds:.1f} s ({rate:.0f} texts/s); the index holds "
            f"{len(engine)}."
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
    precision: str = PrecisionOption,
    backend: str = BackendOption,
    threads: Optional[int] = ThreadsOption,
) -> None:
    """Find the documents closest in meaning to a query.

    Prints rank, cosine score, document id and text. The index's own model encodes the query; --model and
    --whiten-k only assert what the index must have been built with. Filters run inside the vector search, so
    k results come back whenever k documents match; fields are metadata keys or id, source, line, text, count.
    With --rerank, a cross-encoder reads the query and each of the --rerank-top best candidates together and
    the k best by its score are shown: its score first, then the cosine that retrieved the hit. Slower per query
    (one transformer pass per candidate), usually more accurate.

    Examples:

      searchengine query "how do I reset my password" -k 5

      searchengine query "budget tips" --where lang=en --where "year>=2020"

      searchengine query --file questions.txt --json

      searchengine query "how do I reset my password" --rerank my-cross-encoder --rerank-top 50
    """
    from searchengine.encoder import EncoderSpeed
    from searchengine.engine import DEFAULT_RERANK_TOP, SearchEngine, default_index_dir

    target = index_dir or default_index_dir()
    with _user_errors(target):
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
                {"query": q, **reranked, "hits": [asdict(hit) for hit in hits]} for q, hits in zip(queries, results)
            ]
            typer.echo(json.dumps(payload if file else payload[0], ensure_ascii=False, indent=2))
            return
        if k > len(engine) and not where:
            typer.echo(f"(the index holds {len(engine)} texts, so at most {len(engine)} results)", err=True)
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
                typer.echo(f"{rank:>3}  {hit.score:.4f}  {cosine}#{hit.id:<6} {cluster}{hit.text}")


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
        clustering = _stored_clustering(directory, manifest)
        duplicates = _marked_duplicates(directory, manifest)
        details = {
            "path": str(target),
            "documents": manifest["count"]["documents"],
            "distinct texts (vectors)": manifest["count"]["vectors"],
            "model": f"{model['name']} (fingerprint {model['fingerprint']})",
            "pooling": model["pooling"]
            + (f" {model['prompt']['template']!r}" if model.get("prompt") else "")
            + (" (denoised)" if (model.get("prompt") or {}).get("denoise") else "")
            + "".join(f" + {transform}" for transform in model.get("transforms", []))
            + (" + normalize" if model["normalize"] else ""),
            "dimension": manifest["index"]["dimension"],
            "whitening": f"whitening-k {whitening['k']} (fitted on {whitening['fit_count']} texts)"
            if whitening
            else "none",
            "index type": f"{manifest['index']['type']} (FAISS, inner product)",
            "deleted, not compacted": _tombstone_summary(manifest),
            "clustering": _clustering_summary(clustering),
            "near-duplicates": _duplicates_summary(duplicates),
            "size on disk": _human_bytes(directory.size_on_disk(manifest)),
            "built": manifest["created_at"],
            "updated": manifest["updated_at"],
            "versions": ", ".join(f"{name} {v}" for name, v in manifest["versions"].items()),
        }
        if as_json:
            extra = {"clustering": asdict(clustering) if clustering else None, "duplicates": duplicates}
            typer.echo(json.dumps({**manifest, **extra}, indent=2))
            return
        width = max(len(key) for key in details)
        for key, value in details.items():
            typer.echo(f"{key + ':':<{width + 1}} {value}")


def _stored_clustering(directory, manifest: dict):  # noqa: ANN001, ANN202 (imports stay lazy for a fast --help)
    """The clustering record kept in the index's document store, or None."""
    from indexer.store import DocumentStore

    store = DocumentStore(directory.file(manifest, "documents"))
    try:
        return store.clustering()
    finally:
        store.close()


def _marked_duplicates(directory, manifest: dict) -> int:  # noqa: ANN001
    """How many documents `mine --dedupe` marked as near-duplicates."""
    from indexer.store import DocumentStore

    store = DocumentStore(directory.file(manifest, "documents"))
    try:
        return len(store.duplicates())
    finally:
        store.close()


def _duplicates_summary(count: int) -> str:
    if not count:
        return "none marked (mark them with `searchengine mine --threshold 0.95 --dedupe`)"
    return f"{count} texts marked as near-duplicates of earlier ones (`searchengine mine --dedupe`)"


def _clustering_summary(clustering) -> str:  # noqa: ANN001
    if clustering is None:
        return "none (make one with `searchengine cluster`)"
    parameters = ", ".join(f"{name}={value}" for name, value in clustering.parameters.items())
    return (
        f"{clustering.method} ({parameters}): {clustering.clusters} clusters of {clustering.documents} texts, "
        f"made {clustering.created_at}"
    )


@app.command()
def cluster(
    method: str = typer.Option("kmeans", "--method", help="kmeans, community or agglomerative."),
    k: Optional[int] = typer.Option(
        None, "--k", "-k", help="Number of clusters (kmeans); agglomerative: cut the tree into k clusters."
    ),
    threshold: Optional[float] = typer.Option(
        None,
        "--threshold",
        help="Cosine similarity in (0, 1]. community: least similarity to a community's centre (default 0.75); "
        "agglomerative: merge groups only while their average pairwise similarity is at least this.",
    ),
    min_size: Optional[int] = typer.Option(
        None, "--min-size", help="community: smallest community kept (default 10)."
    ),
    seed: int = typer.Option(0, "--seed", help="Random seed of kmeans."),
    top: int = typer.Option(3, "--top", help="Most central texts shown per cluster."),
    as_json: bool = typer.Option(False, "--json", help="Print every cluster, with all member ids, as JSON."),
    index_dir: Optional[Path] = IndexDirOption,
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
    from indexer.index_directory import IndexDirectory
    from searchengine.clustering import ClusterSettings, cluster_index
    from searchengine.engine import default_index_dir

    target = index_dir or default_index_dir()
    with _user_errors(target):
        started = time.perf_counter()
        settings = ClusterSettings(method, k, threshold, min_size, seed)
        clustering = cluster_index(IndexDirectory(target), settings, top)
        seconds = time.perf_counter() - started
        if as_json:
            typer.echo(json.dumps(asdict(clustering), ensure_ascii=False, indent=2))
            return
        for group in clustering.clusters:
            typer.echo(f"Cluster {group.id} ({group.size} texts)")
            for doc_id, text in zip(group.central_ids, group.central_texts):
                typer.echo(f"    #{doc_id:<6} {text}")
        clustered = sum(group.size for group in clustering.clusters)
        parameters = ", ".join(f"{name}={value}" for name, value in clustering.parameters.items())
        typer.echo(
            f"\nClustered {clustered} texts into {len(clustering.clusters)} clusters with {clustering.method} "
            f"({parameters}) in {seconds:.1f} s; {clustering.unclustered} texts are in no cluster. Stored with the "
            f"index in {target}: `query` shows each hit's cluster as [cN]."
        )


def _tombstone_summary(manifest: dict) -> str:
    pending = manifest["count"].get("tombstones", 0)
    if not pending:
        return "none"
    return f"{pending} vectors kept as tombstones ({manifest['index']['type']} cannot delete in place); " \
        "run `searchengine compact`"


@app.command()
def add(
    corpus: str = typer.Argument(..., help="A .txt or .jsonl file (gzipped or not), or - for stdin."),
    index_dir: Optional[Path] = IndexDirOption,
    jsonl: bool = typer.Option(False, "--jsonl", help="Read JSON lines whatever the name (e.g. from stdin)."),
    id_field: Optional[str] = IdFieldOption,
    precision: str = PrecisionOption,
    backend: str = BackendOption,
    threads: Optional[int] = ThreadsOption,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar or summary."),
) -> None:
    """Add documents to an existing index, with the model and whitening it was built with.

    With --id-field, a document whose id is already in the index replaces the stored one (upsert). Readers
    see the old index until the new one is complete.

    Examples:

      searchengine add more-notes.txt

      searchengine add changed.jsonl --id-field id
    """
    index(
        corpus=corpus, index_dir=index_dir, model=None, pooling=None, template=None, denoise=None, index_type=None,
        whiten_k=None,
        whiten_fit=None, append=True, jsonl=jsonl, id_field=id_field, batch_size=64, precision=precision,
        backend=backend, threads=threads, quiet=quiet,
    )


@app.command()
def delete(
    ids: list[str] = typer.Argument(..., help="Document ids (as `query` prints them, with or without #)."),
    external: bool = typer.Option(False, "--external", help="The ids are external ids given with --id-field."),
    index_dir: Optional[Path] = IndexDirOption,
) -> None:
    """Delete documents from the index: all of them, or none if any id is unknown.

    Examples:

      searchengine delete 17 42

      searchengine delete --external doc-2024-001
    """
    from searchengine.engine import SearchEngine, default_index_dir

    target = index_dir or default_index_dir()
    with _user_errors(target):
        engine = SearchEngine.open(target)
        if external:
            deleted = engine.delete(external_ids=ids)
        else:
            deleted = engine.delete(ids=[_document_id(value) for value in ids])
        typer.echo(f"Deleted {len(deleted)} documents; the index holds {len(engine)}.")
        if len(engine.tombstones):
            typer.echo(
                f"{len(engine.tombstones)} vectors stay as tombstones ({engine.info().index_type} cannot delete in "
                "place); they are never returned. Run `searchengine compact` to reclaim the space."
            )


def _document_id(value: str) -> int:
    try:
        return int(value.removeprefix("#"))
    except ValueError:
        raise SearchEngineError(f"{value!r} is not a document id (a number); use --external for your own ids") from None


@app.command()
def compact(index_dir: Optional[Path] = IndexDirOption) -> None:
    """Rebuild the vector index without the vectors of deleted documents (needed for HNSW and PQ types).

    Example:

      searchengine compact --index-dir ~/indexes/docs
    """
    from searchengine.engine import SearchEngine, default_index_dir

    target = index_dir or default_index_dir()
    with _user_errors(target):
        dropped = SearchEngine.open(target).compact()
        typer.echo(f"Dropped {dropped} deleted vectors." if dropped else "Nothing to compact: no deleted vectors.")


@app.command()
def mine(
    top: Optional[int] = typer.Option(
        None, "--top", "-n", help="Show the N most similar pairs (20 when no --threshold is given)."
    ),
    threshold: Optional[float] = typer.Option(
        None, "--threshold", "-t", help="Every pair with cosine similarity at least this, in (0, 1]."
    ),
    dedupe: bool = typer.Option(
        False,
        "--dedupe",
        help="Mark the later document of every pair above --threshold as a near-duplicate of the earlier one, "
        "stored with the index (replaces earlier marks; `info` counts them).",
    ),
    method: str = typer.Option(
        "auto",
        "--method",
        help="exact (every pair scored, in chunks), ann (each text's nearest neighbours from the FAISS index) or "
        "auto (exact up to 50,000 texts).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the pairs as JSON."),
    index_dir: Optional[Path] = IndexDirOption,
) -> None:
    """Find the most similar pairs of indexed texts: paraphrases and near-duplicates.

    Uses the vectors already in the index (nothing is re-encoded). Prints rank, cosine score, and both texts
    with their ids, best first; each pair once, the smaller id first.

    Examples:

      searchengine mine --top 10

      searchengine mine --threshold 0.9 --json > pairs.json

      searchengine mine --threshold 0.95 --dedupe
    """
    from searchengine.engine import SearchEngine, default_index_dir
    from searchengine.paraphrase_mining import check_request, choose_method

    target = index_dir or default_index_dir()
    with _user_errors(target):
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
            f"exact: all {len(engine) * (len(engine) - 1) // 2:,} pairs of {len(engine):,} texts scored"
            if chosen == "exact"
            else f"ann: nearest neighbours of each of {len(engine):,} texts from the {engine.info().index_type} index"
        )
        typer.echo(f"{len(pairs)} pairs ({how}) in {seconds:.1f} s.")
        for rank, pair in enumerate(pairs, start=1):
            typer.echo(f"{rank:>3}  {pair.score:.4f}  #{pair.first_id:<6} {pair.first_text}")
            typer.echo(f"{'':>13}#{pair.second_id:<6} {pair.second_text}")
        if dedupe:
            typer.echo(
                f"Marked {len(pairs)} texts as near-duplicates (cosine >= {threshold}) of earlier ones in {target}; "
                "`searchengine info` counts them."
            )


@app.command()
def analyze(
    data: Path = typer.Option(..., "--data", help="Sentences, one a line (.txt or .txt.gz), e.g. Wikipedia sentences."),
    model: Optional[str] = ModelOption,
    sts: Optional[Path] = typer.Option(
        None, "--sts", help="Also report STS Spearman x100: a score<TAB>sentence1<TAB>sentence2 file with a header."
    ),
    limit: Optional[int] = typer.Option(None, "--limit", min=2, help="Use only the first N sentences of --data."),
    pairs: int = typer.Option(
        100_000, "--pairs", min=0, help="Random sentence pairs for anisotropy (0: the exact mean over all pairs)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the random pairs."),
    top_frequent: int = typer.Option(
        36, "--top-frequent", min=0, help="The N most frequent tokens of --data count as biased (PromptBERT: 36)."
    ),
    max_score: float = typer.Option(5.0, "--max-score", help="The largest gold score of the --sts file's scale."),
    batch_size: int = typer.Option(64, min=1, help="Texts per forward pass."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
) -> None:
    """PromptBERT's analysis: anisotropy (mean cosine of random sentence pairs) and STS Spearman of the static
    token embedding average (with and without biased tokens), the embedding layer, first-last and last-layer
    averages and [CLS].

    Biased tokens: the --top-frequent most frequent tokens of --data, special tokens, '##' subword pieces,
    punctuation/symbol-only tokens and uppercase-initial tokens.

    Example: searchengine analyze --data wiki_sentences.txt.gz --limit 10000 --sts ../shared/data/stsb/test.tsv
    """
    with _user_errors():
        from searchengine.encoder import Encoder
        from searchengine.evaluation.anisotropy import REPRESENTATIONS, analyze as run_analysis, read_sentences
        from searchengine.labelled_data import read_scored_pairs

        sentences = read_sentences(data, limit)
        sts_pairs = read_scored_pairs(sts, max_score) if sts else None
        encoder = Encoder(model, batch_size=batch_size, backend="torch")  # the analysis reads every layer
        started = time.perf_counter()
        report = run_analysis(encoder, sentences, sts_pairs, pairs, seed, top_frequent)
        seconds = time.perf_counter() - started
        if as_json:
            payload = {"model": encoder.name, "model_pooling": encoder.pooling, "data": str(data)}
            payload.update({"sts": str(sts) if sts else None, **report.as_dict(), "seconds": seconds})
            typer.echo(json.dumps(payload, ensure_ascii=False, indent=2))
            return
        how = f"{pairs:,} random pairs, seed {seed}" if pairs else "all pairs"
        typer.echo(f"{encoder.name} (pools {encoder.pooling}): {len(sentences):,} sentences, {how}, {seconds:.1f} s")
        typer.echo(f"{'representation':<22} {'anisotropy':>10}" + (f" {'STS Spearman':>13}" if sts_pairs else ""))
        for name in REPRESENTATIONS:
            line = f"{name:<22} {report.anisotropy[name]:>10.4f}"
            if report.sts_spearman:
                line += f" {report.sts_spearman[name]:>13.2f}"
            typer.echo(line)
        biased = report.biased
        typer.echo(
            f"Biased tokens: {len(biased.ids):,} vocabulary ids, {biased.data_share:.1%} of the data's tokens; "
            f"top {len(biased.frequent)}: {' '.join(biased.frequent)}"
        )


def _human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{size} B"
        value /= 1024
    raise AssertionError("unreachable")


def _register_subcommand_groups() -> None:
    from searchengine.cli_eval import eval_app
    from searchengine.cli_train import train_app

    app.add_typer(train_app, name="train")
    app.add_typer(eval_app, name="eval")


_register_subcommand_groups()
