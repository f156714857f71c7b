"""`searchengine eval sts|retrieval` and `searchengine analyze`: measure a model on labelled data."""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from searchengine.cli.errors import user_errors
from searchengine.cli.options import (
    BatchSizeOption,
    DenoiseOption,
    ModelOption,
    PoolingOption,
    TemplateOption,
    json_option,
    mode_option,
    seed_option,
)
from searchengine.encoding.model_source import Pooling
from searchengine.engine.fusion import FusionMethod
from searchengine.engine.mode_registry import mode_named, mode_names
from searchengine.engine.modes import DEFAULT_FUSION, SearchMode
from searchengine.errors import SearchEngineError

if TYPE_CHECKING:
    from searchengine.engine.fusion import Fusion
    from searchengine.evaluation.retrieval import RetrievalScores

MaxScoreOption = typer.Option(5.0, "--max-score", help="The largest gold score of the STS files' scale.")

eval_app = typer.Typer(help="Measure a model: STS correlation or BEIR-style retrieval.", no_args_is_help=True)


@eval_app.command()
def sts(
    files: list[Path] = typer.Argument(..., help="STS files: score<TAB>sentence1<TAB>sentence2 with a header."),
    model: str | None = ModelOption,
    pooling: Pooling | None = PoolingOption,
    template: str | None = TemplateOption,
    denoise: bool | None = DenoiseOption,
    max_score: float = MaxScoreOption,
    batch_size: int | None = BatchSizeOption,
) -> None:
    """Spearman x 100 between cosine similarity and gold scores, one row per file plus their average.

    Example: searchengine eval sts data/stsb/dev.tsv data/stsb/test.tsv --model my-model
    """
    with user_errors(kept="nothing was written"):
        from searchengine.encoding.encoder import Encoder
        from searchengine.evaluation.sts import read_sts_pairs, sts_spearman

        datasets = [(path, read_sts_pairs(path, max_score)) for path in files]
        encoder = Encoder(model, pooling=pooling, batch_size=batch_size, template=template, denoise=denoise)
        scores = []
        for path, pairs in datasets:
            scores.append(sts_spearman(encoder.encode, pairs))
            typer.echo(f"{str(path):<50} {len(pairs):>6} pairs  Spearman {scores[-1]:6.2f}")
        if len(scores) > 1:
            typer.echo(f"{'average':<50} {'':>6}        Spearman {sum(scores) / len(scores):6.2f}")


@eval_app.command()
def retrieval(
    queries: Path = typer.Option(..., "--queries", help='BEIR queries.jsonl: {"_id", "text"} a line.'),
    qrels: Path = typer.Option(..., "--qrels", help="BEIR qrels .tsv with the header query-id, corpus-id, score."),
    corpus: Path | None = typer.Option(
        None, "--corpus", help='BEIR corpus.jsonl: {"_id", "title", "text"} a line (or give --index-dir).'
    ),
    index_dir: Path | None = typer.Option(
        None,
        "--index-dir",
        "-d",
        help="Evaluate this index as `searchengine query` searches it, instead of exact search over --corpus; its "
        "documents' ids (--id-field when indexing) are the qrels' corpus-ids.",
    ),
    old_index_dir: Path | None = typer.Option(None, "--index", hidden=True, help="The old name of --index-dir."),
    mode: SearchMode | None = mode_option(
        "With --index-dir: search in this mode, as `query --mode`.", show_default="the index's default mode"
    ),
    fusion_method: FusionMethod | None = typer.Option(
        None,
        "--fusion",
        help="With --mode hybrid: bounded, rrf or minmax (docs/retrieval.md).",
        show_default=str(DEFAULT_FUSION.method),
    ),
    rrf_k: int | None = typer.Option(
        None,
        "--rrf-k",
        min=0,
        help="RRF's rank offset, with --fusion rrf.",
        show_default=str(DEFAULT_FUSION.rrf_k),
    ),
    dense_weight: float | None = typer.Option(
        None,
        "--dense-weight",
        min=0.0,
        max=1.0,
        help="The dense side's share of the fused score, 0..1.",
        show_default=f"{DEFAULT_FUSION.dense_weight:g}",
    ),
    depth: int | None = typer.Option(
        None,
        "--depth",
        min=1,
        help="Candidates fused from each side (at least the 101 hits read).",
        show_default=str(DEFAULT_FUSION.depth),
    ),
    model: str | None = ModelOption,
    pooling: Pooling | None = PoolingOption,
    batch_size: int | None = BatchSizeOption,
    keep_identical_ids: bool = typer.Option(
        False, "--keep-identical-ids", help="Let a query retrieve the document with its own id (BEIR drops it)."
    ),
    as_json: bool = json_option("Print the scores as JSON."),
) -> None:
    """nDCG@10, Recall@100 and MRR@10 (0..1) over a BEIR-format dataset. Only queries with a judgement of
    score > 0 count.

    With --corpus: exact cosine search of the model's embeddings; documents are embedded as title + " " + text.
    With --index-dir: the index's own search (its model, whitening and index type, and --mode with its fusion
    settings), over an index built from the corpus with its ids.

    Examples (a BEIR set's files, from `python benchmarks/datasets/get_data.py data` in data/retrieval/nfcorpus):

      searchengine eval retrieval --corpus corpus.jsonl --queries queries.jsonl --qrels qrels_test.tsv

      searchengine index corpus.jsonl --id-field _id --title-field title -d nfcorpus-index

      searchengine eval retrieval -d nfcorpus-index --queries queries.jsonl --qrels qrels_test.tsv

      searchengine eval retrieval -d nfcorpus-index --queries queries.jsonl --qrels qrels_test.tsv \\
        --mode hybrid --fusion minmax --dense-weight 0.5
    """
    with user_errors(kept="nothing was written"):
        import json
        import time

        if old_index_dir is not None:
            typer.echo("(--index DIR is now --index-dir DIR, or -d DIR; the old name will go)", err=True)
            index_dir = index_dir or old_index_dir
        if (corpus is None) == (index_dir is None):
            raise SearchEngineError("give the documents either as --corpus FILE or as an --index-dir DIR built from it")
        if index_dir is not None and (model is not None or pooling is not None):
            raise SearchEngineError(
                "--index-dir searches with the model the index was built with; drop --model/--pooling"
            )
        if index_dir is None and mode is not None:
            raise SearchEngineError(
                "--mode says how an index is searched; give --index-dir DIR (--corpus is exact search)"
            )
        fusion = _fusion(mode, fusion_method, rrf_k, dense_weight, depth)
        started = time.perf_counter()
        if index_dir is not None:
            name, scores, mode = _evaluate_index(index_dir, queries, qrels, not keep_identical_ids, mode, fusion)
        else:
            name, scores = _evaluate_model(corpus, queries, qrels, model, pooling, batch_size, not keep_identical_ids)
        seconds = time.perf_counter() - started
        fused = index_dir is not None and mode_named(mode).fuses
        fusion = fusion or DEFAULT_FUSION
        searched = None if index_dir is None else mode + (f" ({fusion.describe()})" if fused else "")
        if as_json:
            payload = {"model": name, **scores.as_dict(), "seconds": seconds}
            if index_dir is not None:
                payload.update({"mode": mode, "fusion": asdict(fusion) if fused else None})
            documents = {"index": str(index_dir)} if index_dir is not None else {"corpus_file": str(corpus)}
            payload.update({**documents, "queries_file": str(queries), "qrels_file": str(qrels)})
            typer.echo(json.dumps(payload, indent=2))
            return
        how = f"index {index_dir}, {searched} search," if index_dir is not None else "exact search"
        typer.echo(f"{scores.queries} queries, {scores.documents} documents, {how} in {seconds:.1f} s ({name})")
        typer.echo(f"nDCG@10     {scores.ndcg_at_10:.4f}")
        typer.echo(f"Recall@100  {scores.recall_at_100:.4f}")
        typer.echo(f"MRR@10      {scores.mrr_at_10:.4f}")


def _evaluate_model(
    corpus: Path,
    queries: Path,
    qrels: Path,
    model: str | None,
    pooling: Pooling | None,
    batch_size: int | None,
    ignore_identical_ids: bool,
) -> tuple[str, RetrievalScores]:
    from searchengine.encoding.encoder import Encoder
    from searchengine.evaluation.retrieval import evaluate_retrieval, read_retrieval_set

    dataset = read_retrieval_set(corpus, queries, qrels)
    encoder = Encoder(model, pooling=pooling, batch_size=batch_size)
    return encoder.name, evaluate_retrieval(encoder.encode, dataset, ignore_identical_ids=ignore_identical_ids)


def _fusion(
    mode: SearchMode | None,
    method: FusionMethod | None,
    rrf_k: int | None,
    dense_weight: float | None,
    depth: int | None,
) -> Fusion | None:
    """The default fusion with the settings given replaced, None when none is given (a search of a mode that fuses
    nothing takes no fusion); refused when given for a mode that fuses nothing."""
    given = {"method": method, "rrf_k": rrf_k, "dense_weight": dense_weight, "depth": depth}
    given = {name: value for name, value in given.items() if value is not None}
    if not given:
        return None
    if mode is None or not mode_named(mode).fuses:
        fusing = " or ".join(name for name in mode_names() if mode_named(name).fuses)
        raise SearchEngineError(
            f"--fusion, --rrf-k, --dense-weight and --depth set {fusing} search; add --mode {fusing}"
        )
    fusion = replace(DEFAULT_FUSION, **given)
    if rrf_k is not None and fusion.method != "rrf":
        raise SearchEngineError(f"--rrf-k sets reciprocal rank fusion, not {fusion.method}; add --fusion rrf")
    return fusion


def _evaluate_index(
    index_dir: Path,
    queries: Path,
    qrels: Path,
    ignore_identical_ids: bool,
    mode: SearchMode | None,
    fusion: Fusion | None,
) -> tuple[str, RetrievalScores, SearchMode]:
    from searchengine.engine.search_engine import SearchEngine
    from searchengine.evaluation.retrieval import evaluate_search, read_qrels, read_queries

    query_ids, query_texts = read_queries(queries)
    engine = SearchEngine.open(index_dir)
    judged = read_qrels(
        qrels, query_ids, engine.external_ids(), f"index {index_dir} (index the corpus with --id-field _id)"
    )

    def search(texts: list[str], depth: int) -> list[list[str]]:
        found = engine.search_batch(texts, depth, mode=mode, fusion=fusion)
        return [[hit.external_id or "" for hit in hits] for hits in found]

    scores = evaluate_search(search, query_ids, query_texts, judged, len(engine), ignore_identical_ids)
    return engine.manifest.model.name, scores, mode or engine.default_mode


def analyze(
    data: Path = typer.Option(..., "--data", help="Sentences, one a line (.txt or .txt.gz), e.g. Wikipedia sentences."),
    model: str | None = ModelOption,
    sts: Path | None = typer.Option(
        None, "--sts", help="Also report STS Spearman x100: a score<TAB>sentence1<TAB>sentence2 file with a header."
    ),
    limit: int | None = typer.Option(None, "--limit", min=2, help="Use only the first N sentences of --data."),
    pairs: int = typer.Option(
        100_000, "--pairs", min=0, help="Random sentence pairs for anisotropy (0: the exact mean over all pairs)."
    ),
    seed: int = seed_option("Seed of the random pairs."),
    top_frequent: int = typer.Option(
        36, "--top-frequent", min=0, help="The N most frequent tokens of --data count as biased (PromptBERT: 36)."
    ),
    max_score: float = MaxScoreOption,
    batch_size: int | None = BatchSizeOption,
    as_json: bool = json_option("Print the results as JSON."),
) -> None:
    """PromptBERT's analysis: anisotropy (mean cosine of random sentence pairs) and STS Spearman of the static
    token embedding average (with and without biased tokens), the embedding layer, first-last and last-layer
    averages and [CLS].

    Biased tokens: the --top-frequent most frequent tokens of --data, special tokens, '##' subword pieces,
    punctuation/symbol-only tokens and uppercase-initial tokens.

    Example: searchengine analyze --data wiki_sentences.txt.gz --limit 10000 --sts data/stsb/test.tsv
    """
    with user_errors(kept="nothing was written"):
        import json
        import time

        from searchengine.encoding.encoder import Encoder
        from searchengine.evaluation.anisotropy import REPRESENTATIONS, read_sentences
        from searchengine.evaluation.anisotropy import analyze as run_analysis
        from searchengine.evaluation.sts import read_sts_pairs

        sentences = read_sentences(data, limit)
        sts_pairs = read_sts_pairs(sts, max_score) if sts else None
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
