"""`searchengine index` and `searchengine add`: embed a corpus into an index."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from searchengine.cli.errors import user_errors
from searchengine.cli.files import files_summary
from searchengine.cli.options import (
    BackendChoiceOption,
    BatchSizeOption,
    DenoiseOption,
    IdFieldOption,
    IndexDirOption,
    JsonlOption,
    ModelOption,
    PoolingOption,
    PrecisionOption,
    QuietOption,
    TemplateOption,
    TextFieldOption,
    ThreadsOption,
    TitleFieldOption,
)
from searchengine.encoding.backend import Backend
from searchengine.encoding.model_source import Pooling
from searchengine.encoding.passages import PASSAGE_HEADINGS_BY_DEFAULT, PASSAGES_BY_DEFAULT
from searchengine.encoding.precision import Precision
from searchengine.engine.wording import counted
from searchengine.indexer.vectors.index_choice import EXACT_SEARCH_LIMIT, MID_SIZE_DEFAULT
from searchengine.reading.file_rules import DEFAULT_MAX_MB

if TYPE_CHECKING:
    from searchengine.engine.index_request import IndexOutcome
    from searchengine.engine.indexing_report import IndexingReport


INPUTS_HELP = (
    "Folders and files to index. A folder is read recursively, and each Markdown, HTML, PDF or .txt file in it is "
    "one document, split along its headings or pages into passages. A .txt file named alone is one document per "
    "line (--whole: one document), a .jsonl file one per line's text field, and - reads standard input."
)


IncludeOption = typer.Option(
    [],
    "--include",
    metavar="GLOB",
    help="Read only files whose path inside the folder, name or folder name matches, e.g. '*.md' or "
    "'**/*.md' (repeatable).",
)
ExcludeOption = typer.Option(
    [], "--exclude", metavar="GLOB", help="Leave out files whose path, name or folder name matches, e.g. 'drafts'."
)
MaxFileSizeOption = typer.Option(
    DEFAULT_MAX_MB, "--max-file-size", min=0.001, metavar="MB", help="Skip files larger than this."
)
WholeOption = typer.Option(
    None,
    "--whole/--lines",
    help="A .txt file named alone: one document (--whole), or one document per line (--lines).",
    show_default="--lines",
)
StrictOption = typer.Option(
    False, "--strict", help="Fail, writing nothing, when a file cannot be read, instead of skipping it."
)


def index(
    inputs: list[str] = typer.Argument(..., help=INPUTS_HELP, metavar="PATH"),
    index_dir: Path | None = IndexDirOption,
    model: str | None = ModelOption,
    pooling: Pooling | None = PoolingOption,
    template: str | None = TemplateOption,
    denoise: bool | None = DenoiseOption,
    index_type: str | None = typer.Option(
        None,
        "--index",
        help='FAISS factory string, e.g. "Flat", "HNSW32", "IVF1024,PQ32", or auto: chosen by the corpus size and '
        "--memory-budget.",
        show_default=f"auto: Flat up to {EXACT_SEARCH_LIMIT:,} texts, else {MID_SIZE_DEFAULT}",
    ),
    memory_budget: str | None = typer.Option(
        None,
        "--memory-budget",
        metavar="SIZE",
        help="Memory the index's vectors may take in a query process, e.g. 8GB or 300MB: auto picks the best type "
        "that fits (float32 Flat or HNSW32, else HNSW32,SQ8, else IVF-PQ, whose full vectors stay on disk) and "
        "later merges keep within it. `searchengine info` shows what each part takes.",
        show_default="no limit",
    ),
    whiten_k: int | None = typer.Option(
        None, "--whiten-k", min=1, help="Fit BERT-whitening and keep this many dimensions (e.g. 128)."
    ),
    whiten_fit: Path | None = typer.Option(
        None, "--whiten-fit", help="Fit whitening on this file instead of the corpus (needs --whiten-k)."
    ),
    passages: bool | None = typer.Option(
        None,
        "--passages/--no-passages",
        help="Split a document longer than the model's limit into passages, each its own vector, and return the "
        "document scored by its best passage; --no-passages embeds such a document from its beginning. Later "
        "additions keep the setting.",
        show_default="--passages" if PASSAGES_BY_DEFAULT else "--no-passages",
    ),
    passage_headings: bool | None = typer.Option(
        None,
        "--passage-headings/--no-passage-headings",
        help="With passages: embed each passage after its heading (a file's section headings, a PDF page's or a "
        "record's --title-field title) on a line of its own; the stored text and snippets stay the document's own. "
        "--no-passage-headings embeds each passage alone. Later additions keep the setting.",
        show_default="--passage-headings" if PASSAGE_HEADINGS_BY_DEFAULT else "--no-passage-headings",
    ),
    append: bool = typer.Option(
        False, "--append", help="Add to the existing index (made if there is none) instead of replacing it."
    ),
    replace: bool = typer.Option(
        False, "--replace", help="Replace an existing index built from other input (else refused, to keep it)."
    ),
    include: list[str] = IncludeOption,
    exclude: list[str] = ExcludeOption,
    max_file_size: float = MaxFileSizeOption,
    whole: bool | None = WholeOption,
    strict: bool = StrictOption,
    jsonl: bool = JsonlOption,
    id_field: str | None = IdFieldOption,
    text_field: str = TextFieldOption,
    title_field: str | None = TitleFieldOption,
    batch_size: int | None = BatchSizeOption,
    precision: Precision = PrecisionOption,
    backend: Backend = BackendChoiceOption,
    threads: int | None = ThreadsOption,
    quiet: bool = QuietOption,
    shards: int | None = typer.Option(
        None,
        "--shards",
        min=1,
        help="Split the vectors over this many FAISS indexes, searched together. Not with --ray, whose workers "
        "write a segment per part of the corpus.",
        show_default="1",
    ),
    originals: str | None = typer.Option(
        None,
        "--originals",
        help="With an index type whose codes are approximate (PQ, SQ8, LSH): keep each segment's original vectors "
        "on disk as float16 or float32, memory-mapped, for exact rescoring (`query --rescore`).",
        show_default="float16",
    ),
    ray: str | None = typer.Option(
        None,
        "--ray",
        metavar="ADDRESS",
        help="Embed on a Ray cluster: HOST:PORT of its head (run this on one of its nodes), auto (the cluster "
        "`ray start` runs here, or $RAY_ADDRESS) or local (a Ray of its own on this machine). CORPUS (a file or a "
        "directory of corpus files) and the index directory (the workers write its vector segments) must be at the "
        "same path on every node. Needs pip install 'searchengine\\[ray]'.",
    ),
    ray_workers: int | None = typer.Option(
        None,
        "--ray-workers",
        min=1,
        help="With --ray: encoder workers, one model each.",
        show_default="one per --threads CPUs of the cluster",
    ),
    ray_part_size: int | None = typer.Option(
        None,
        "--ray-part-size",
        min=1,
        help="With --ray: documents per part a worker embeds and writes as one segment (at most this many, in whole "
        "batches of 512, at least one batch). "
        "Segments above 50,000 documents take the index's type (HNSW, IVF), smaller ones are exact.",
        show_default="about 4 parts per worker, made just over 50,000 documents where the corpus has that many per "
        "worker and the index is not Flat",
    ),
) -> None:
    """Embed every document of PATH... and save a searchable index.

    Folders: every Markdown, HTML, PDF and .txt file in them (hidden ones and .git left out) is a document whose id
    is its path, split into passages along its headings or pages; a hit names the file and the heading or page.
    Each record of a .jsonl or .csv file in them is a document whose id is path#LINE (path#ID with --id-field).
    A file that cannot be read (encrypted, no text layer, not UTF-8, too large) is skipped with one line and
    counted. `searchengine sync` later re-reads only what changed.

    Corpus files: each non-blank line of a .txt file is a document; a .jsonl file needs a "text" field per line
    and keeps the other fields as metadata. Every line is its own document, also when its text repeats an earlier
    one (the summary counts those; identical texts are encoded once).

    The previous index stays intact until the new one is complete, so an interrupted run loses nothing; an index
    built from other input is replaced only with --replace.

    Examples:

      searchengine index notes/

      searchengine index docs/ README.md --include '*.md' --exclude 'drafts/*'

      searchengine index notes.txt

      searchengine index docs.jsonl --index-dir ~/indexes/docs --index HNSW32 --whiten-k 256

      searchengine index corpus.jsonl --id-field _id --title-field title   (a BEIR corpus)

      searchengine index long-reports.jsonl --passages   (search all of each long document)

      cat more.txt | searchengine index - --append

      searchengine index corpus-shards/ --ray head-node:6379
    """
    from searchengine.encoding.speed import EncoderSpeed
    from searchengine.engine.index_request import IndexRequest
    from searchengine.engine.search_engine import default_index_dir
    from searchengine.reading.corpus import JsonFields
    from searchengine.reading.file_rules import FileRules

    target = index_dir or default_index_dir()
    with user_errors(target):
        request = IndexRequest(
            inputs,
            target,
            append=append,
            replace=replace,
            model=model,
            pooling=pooling,
            template=template,
            denoise=denoise,
            index_type=index_type,
            memory_budget=memory_budget,
            whiten_k=whiten_k,
            whiten_fit=whiten_fit,
            passages=passages,
            passage_headings=passage_headings,
            shards=shards,
            originals=originals,
            rules=FileRules(tuple(include), tuple(exclude), max_file_size),
            whole=whole,
            strict=strict,
            jsonl=jsonl,
            fields=JsonFields(text_field, title_field, id_field),
            batch_size=batch_size,
            speed=EncoderSpeed(precision, backend, threads),
            progress=not quiet,
            ray=ray,
            ray_workers=ray_workers,
            ray_part_size=ray_part_size,
        )
        outcome = request.run()
        if not quiet:
            _print_outcome(outcome, request.corpus, target)

def add(
    inputs: list[str] = typer.Argument(..., help=INPUTS_HELP, metavar="PATH"),
    index_dir: Path | None = IndexDirOption,
    jsonl: bool = JsonlOption,
    id_field: str | None = IdFieldOption,
    text_field: str = TextFieldOption,
    title_field: str | None = TitleFieldOption,
    include: list[str] = IncludeOption,
    exclude: list[str] = ExcludeOption,
    max_file_size: float = MaxFileSizeOption,
    whole: bool | None = WholeOption,
    strict: bool = StrictOption,
    precision: Precision = PrecisionOption,
    backend: Backend = BackendChoiceOption,
    threads: int | None = ThreadsOption,
    quiet: bool = QuietOption,
) -> None:
    """Add documents to an existing index, with the model and whitening it was built with.

    With --id-field, a document whose id is already in the index replaces the stored one (upsert); a file read
    by its format replaces the document of the same path. A .jsonl corpus is read with the fields the index was
    built with unless told otherwise. Readers see the old index until the new one is complete.

    Examples:

      searchengine add more-notes.txt

      searchengine add changed.jsonl --id-field id

      searchengine add new-notes/
    """
    index(
        inputs=inputs,
        index_dir=index_dir,
        model=None,
        pooling=None,
        template=None,
        denoise=None,
        index_type=None,
        memory_budget=None,
        whiten_k=None,
        whiten_fit=None,
        passages=None,
        passage_headings=None,
        append=True,
        jsonl=jsonl,
        id_field=id_field,
        text_field=text_field,
        title_field=title_field,
        batch_size=None,
        precision=precision,
        backend=backend,
        threads=threads,
        quiet=quiet,
        shards=None,
        originals=None,
        ray=None,
        ray_workers=None,
        ray_part_size=None,
        replace=False,
        include=include,
        exclude=exclude,
        max_file_size=max_file_size,
        whole=whole,
        strict=strict,
    )


def _print_outcome(outcome: IndexOutcome, corpus: str, target: Path) -> None:
    """What an index or add run did: the files read, the documents indexed, where the time went, and notes on the
    index type chosen and the documents split or cut."""
    engine, report = outcome.engine, outcome.report
    if outcome.files is not None:
        typer.echo(files_summary(outcome.files))
    typer.echo(indexing_summary(report, corpus, target, len(engine)))
    typer.echo(stage_summary(report))
    if report.index_type_chosen:
        typer.echo(f"Index type {report.index_type}, {report.index_type_reason}; pass --index to choose another.")
    if report.split:
        typer.echo(
            f"{counted(report.split, 'document')} longer than the model's {engine.manifest.passages.tokens} "
            f"tokens {'was' if report.split == 1 else 'were'} split into passages: "
            f"{counted(report.vectors, 'vector')} for {counted(report.added, 'document')} added."
        )
    if report.truncated:
        how = "embedded from the beginning" + (
            "" if engine.manifest.passages else "; index with --passages to search all of each"
        )
        typer.echo(
            f"{counted(report.truncated, 'text')} {'was' if report.truncated == 1 else 'were'} longer than the "
            f"model's {engine.manifest.model.max_seq_length} tokens and {how}."
        )

def stage_summary(report: IndexingReport) -> str:
    """Where an index or add run's time went, stage by stage (IndexingReport.stages)."""
    other = report.seconds - sum(report.stages.values())
    parts = [f"{stage} {seconds:.1f} s" for stage, seconds in report.stages.items()] + [f"other {max(other, 0):.1f} s"]
    return f"Time by stage: {', '.join(parts)}."


def indexing_summary(report: IndexingReport, corpus: str, target: Path, held: int) -> str:
    """One sentence on what an index or add run did: documents read, how many repeat an earlier text, upserts."""
    rate = report.documents / report.seconds if report.seconds else 0.0
    parts = (
        [f"{report.repeats:,} {'repeats' if report.repeats == 1 else 'repeat'} an earlier text"]
        if report.repeats
        else []
    )
    if report.replaced:
        parts.append(f"{report.replaced:,} replaced by upsert with a new text")
    if report.updated:
        parts.append(f"{report.updated:,} updated by upsert (same text, new metadata)")
    if report.superseded:
        parts.append(
            f"{report.superseded:,} replaced by a later document with the same id in this input (ids are text: 1 "
            'and "1" are one id)'
        )
    which = f", of which {'; '.join(parts)}," if parts else ""
    upgraded = ""
    if report.upgraded:
        upgraded = (
            f" The index was written by an older version that stored repeated texts once; "
            f"{counted(report.upgraded, 'repeat')} of those {'is' if report.upgraded == 1 else 'are'} now "
            f"{'a document' if report.upgraded == 1 else 'documents'} of {'its' if report.upgraded == 1 else 'their'} own."
        )
    return (
        f"Indexed {counted(report.documents, 'document')} from {corpus}{which} into {target} "
        f"in {report.seconds:.1f} s ({rate:.{1 if rate < 10 else 0}f} documents/s); the index holds {counted(held, 'document')}.{upgraded}"
    )
