"""`searchengine eval sts|retrieval`: measure a model on labelled data."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

eval_app = typer.Typer(help="Measure a model: STS correlation or BEIR-style retrieval.", no_args_is_help=True)


@eval_app.command()
def sts(
    files: list[Path] = typer.Argument(..., help="STS files: score<TAB>sentence1<TAB>sentence2 with a header."),
    model: str = typer.Option("default", "--model", "-m", help="Model directory or Hugging Face id."),
    pooling: Optional[str] = typer.Option(None, help="Override the model's pooling."),
    template: Optional[str] = typer.Option(
        None, "--template", help='Prompt pooling with this template (one [X], one [MASK]), e.g. \'This sentence : "[X]" means [MASK] .\''
    ),
    denoise: Optional[bool] = typer.Option(
        None, "--denoise/--no-denoise", help="Prompt pooling: subtract the bare template's [MASK] state."
    ),
    max_score: float = typer.Option(5.0, "--max-score", help="The largest gold score of the files' scale."),
    batch_size: int = typer.Option(64, min=1, help="Texts per forward pass."),
) -> None:
    """Spearman x 100 between cosine similarity and gold scores, one row per file plus their average.

    Example: searchengine eval sts ../shared/data/stsb/dev.tsv ../shared/data/stsb/test.tsv --model my-model
    """
    from searchengine.cli import _user_errors

    with _user_errors():
        from searchengine.encoder import Encoder
        from searchengine.evaluation.sts import sts_spearman
        from searchengine.labelled_data import read_scored_pairs

        datasets = [(path, read_scored_pairs(path, max_score)) for path in files]
        encoder = Encoder(model, pooling=pooling, batch_size=batch_size, template=template, denoise=denoise)
        scores = []
        for path, pairs in datasets:
            scores.append(sts_spearman(encoder.encode, pairs))
            typer.echo(f"{str(path):<50} {len(pairs):>6} pairs  Spearman {scores[-1]:6.2f}")
        if len(scores) > 1:
            typer.echo(f"{'average':<50} {'':>6}        Spearman {sum(scores) / len(scores):6.2f}")


@eval_app.command()
def retrieval(
    corpus: Path = typer.Option(..., "--corpus", help='BEIR corpus.jsonl: {"_id", "title", "text"} a line.'),
    queries: Path = typer.Option(..., "--queries", help='BEIR queries.jsonl: {"_id", "text"} a line.'),
    qrels: Path = typer.Option(..., "--qrels", help="BEIR qrels .tsv with the header query-id, corpus-id, score."),
    model: str = typer.Option("default", "--model", "-m", help="Model directory or Hugging Face id."),
    pooling: Optional[str] = typer.Option(None, help="Override the model's pooling."),
    batch_size: int = typer.Option(64, min=1, help="Texts per forward pass."),
    keep_identical_ids: bool = typer.Option(
        False, "--keep-identical-ids", help="Let a query retrieve the document with its own id (BEIR drops it)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the scores as JSON."),
) -> None:
    """nDCG@10, Recall@100 and MRR@10 (0..1) of exact cosine search over a BEIR-format dataset.

    Documents are embedded as title + " " + text. Only queries with a judgement of score > 0 count.

    Example: searchengine eval retrieval --corpus corpus.jsonl --queries queries.jsonl --qrels qrels/test.tsv
    """
    from searchengine.cli import _user_errors

    with _user_errors():
        import json
        import time

        from searchengine.encoder import Encoder
        from searchengine.evaluation.retrieval import evaluate_retrieval, read_retrieval_set

        dataset = read_retrieval_set(corpus, queries, qrels)
        encoder = Encoder(model, pooling=pooling, batch_size=batch_size)
        started = time.perf_counter()
        scores = evaluate_retrieval(encoder.encode, dataset, ignore_identical_ids=not keep_identical_ids)
        seconds = time.perf_counter() - started
        if as_json:
            payload = {"model": encoder.name, "pooling": encoder.pooling, **scores.as_dict(), "seconds": seconds}
            payload.update({"corpus_file": str(corpus), "queries_file": str(queries), "qrels_file": str(qrels)})
            typer.echo(json.dumps(payload, indent=2))
            return
        typer.echo(
            f"{scores.queries} queries, {scores.documents} documents, exact search in {seconds:.1f} s ({encoder.name})"
        )
        typer.echo(f"nDCG@10     {scores.ndcg_at_10:.4f}")
        typer.echo(f"Recall@100  {scores.recall_at_100:.4f}")
        typer.echo(f"MRR@10      {scores.mrr_at_10:.4f}")
