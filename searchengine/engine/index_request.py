"""IndexRequest: `searchengine index PATH...` and `searchengine add PATH...` as one request, checked when it is made
(before any file is read or model loaded) and run here: a build that replaces the index once the new one is complete,
or an append that keeps the settings the index was built with. The CLI makes one and prints what it did; so can any
other caller."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from searchengine.encoding.passages import PASSAGE_HEADINGS_BY_DEFAULT, PASSAGES_BY_DEFAULT
from searchengine.encoding.speed import EncoderSpeed
from searchengine.engine.build_settings import BuildSettings, check_together
from searchengine.errors import SearchEngineError
from searchengine.reading.corpus import JsonFields
from searchengine.reading.file_rules import FileRules

if TYPE_CHECKING:
    from searchengine.encoding.model_source import Pooling
    from searchengine.engine.indexing_report import IndexingReport
    from searchengine.engine.search_engine import SearchEngine
    from searchengine.reading.file_documents import FileReport

APPEND_KEEPS_SHARDS = (
    "--append embeds here, into the shards the index has; --ray and --shards are for building an index: drop them"
)


@dataclass(frozen=True)
class IndexOutcome:
    """What running an IndexRequest did: the engine on the index, its report, and what reading files found."""

    engine: SearchEngine
    report: IndexingReport
    files: FileReport | None
    """What reading files by their format found; None when a corpus file was read."""


@dataclass(frozen=True)
class IndexRequest:
    """Index `inputs` (folders and files read by their format, or one corpus file: .txt, .jsonl, .csv, - for
    standard input) into `target`. Without `append`, build a new index as the settings say (an index of other
    input is replaced only with `replace`); with it, add to the index there (made if there is none) with the
    settings it was built with, so the options that would change them are refused. `passages` and
    `passage_headings` None: the defaults (files read by format are always split into passages). `ray`: embed on
    a Ray cluster at that address (RaySettings), with `ray_workers` and `ray_part_size`."""

    inputs: Sequence[str]
    target: Path
    append: bool = False
    replace: bool = False
    model: str | None = None
    pooling: Pooling | None = None
    template: str | None = None
    denoise: bool | None = None
    index_type: str | None = None
    memory_budget: str | None = None
    whiten_k: int | None = None
    whiten_fit: Path | None = None
    passages: bool | None = None
    passage_headings: bool | None = None
    shards: int | None = None
    originals: str | None = None
    rules: FileRules = FileRules()
    whole: bool | None = None
    strict: bool = False
    jsonl: bool = False
    fields: JsonFields = JsonFields()
    batch_size: int | None = None
    speed: EncoderSpeed = EncoderSpeed()
    progress: bool = True
    ray: str | None = None
    ray_workers: int | None = None
    ray_part_size: int | None = None
    by_format: bool = field(init=False)
    """Whether the inputs are read by their format (folders, Markdown, HTML, PDF) rather than as a corpus file."""
    settings: BuildSettings | None = field(init=False)
    """The build's settings as far as they are known before reading (None for an append)."""

    def __post_init__(self) -> None:
        """Refuse options that cannot go together, before any file is read or model loaded."""
        from searchengine.engine.files import is_file_input

        if self.ray_workers is not None and self.ray is None:
            raise SearchEngineError("--ray-workers says how many Ray workers embed; add --ray ADDRESS to use Ray")
        if self.ray_part_size is not None and self.ray is None:
            raise SearchEngineError("--ray-part-size says how Ray workers cut the corpus; add --ray ADDRESS to use Ray")
        if any(not name for name in self.inputs):
            raise SearchEngineError("an empty path was given; name a folder or a file to index")
        by_format = self.ray is None and is_file_input(self.inputs, self.whole is True)
        if by_format:
            if self.jsonl:
                raise SearchEngineError(
                    "--jsonl reads one corpus file as JSON lines; files in folders are read by their suffix (.jsonl "
                    "records included): drop it"
                )
            if self.whole is False:
                raise SearchEngineError("--lines reads one .txt corpus file one document per line; name it alone")
        elif len(self.inputs) > 1:
            raise SearchEngineError("index one corpus file at a time (or folders and files read by their format)")
        object.__setattr__(self, "by_format", by_format)
        settings = None
        if self.append:
            refuse_rebuild_options(
                self.index_type,
                self.whiten_k,
                self.whiten_fit,
                self.pooling,
                self.template,
                self.denoise,
                self.passages,
                self.passage_headings,
                self.shards,
                self.memory_budget,
            )
            if self.ray is not None:
                raise SearchEngineError(APPEND_KEEPS_SHARDS)
            if self.originals is not None:
                raise SearchEngineError("--originals is chosen when an index is built; drop it with --append")
        else:
            check_together(self.index_type, self.memory_budget, self.whiten_k, self.whiten_fit, flags=True)
            settings = BuildSettings(
                index=self.index_type,
                memory_budget=self.memory_budget,
                whiten_k=self.whiten_k,
                whiten_fit=self.whiten_fit,
                progress=self.progress,
                shards=self.shards,
                originals=self.originals,
            )
        object.__setattr__(self, "settings", settings)

    @property
    def corpus(self) -> str:
        """The inputs named in one string, as the report says where the documents came from."""
        return " ".join(self.inputs) if self.by_format else self.inputs[0]

    def run(self) -> IndexOutcome:
        """Build or append as the request says; returns the engine open on the index and what was done."""
        return self._append() if self.settings is None else self._build(self.settings)

    def _append(self) -> IndexOutcome:
        from searchengine.engine.file_adding import add_files
        from searchengine.engine.files import inside_folders_read, recorded_fields
        from searchengine.engine.index_writer import ensure_index
        from searchengine.engine.search_engine import SearchEngine

        roots = [Path(name) for name in self.inputs]
        by_format, fields = self.by_format, self.fields
        encoder = ensure_index(self.target, model=self.model, speed=self.speed, passages=by_format)
        engine = SearchEngine.open(self.target, model=self.model, speed=self.speed, encoder=encoder)
        if not by_format and not self.jsonl and self.whole is None and inside_folders_read(engine.reading(), roots):
            by_format = True  # a .jsonl or .csv in the index's folders is added as `sync` reads it, ids and all
        if by_format:
            files = add_files(engine, roots, self.rules, self.strict, self.progress, fields)
            return IndexOutcome(engine, engine.last_report, files)
        corpus = self.corpus
        if fields.plain and (self.jsonl or corpus.removesuffix(".gz").endswith((".jsonl", ".csv"))):
            fields = recorded_fields(engine.reading()) or fields
        engine.add(
            corpus,
            jsonl=True if self.jsonl else None,
            id_field=fields.id,
            progress=self.progress,
            text_field=fields.text,
            title_field=fields.title,
        )
        return IndexOutcome(engine, engine.last_report, None)

    def _build(self, settings: BuildSettings) -> IndexOutcome:
        from searchengine.encoding.encoder import Encoder
        from searchengine.engine.file_adding import check_files_read
        from searchengine.engine.files import check_replacing, files_record, read_paths
        from searchengine.engine.ray_embedding import RaySettings
        from searchengine.engine.search_engine import SearchEngine
        from searchengine.reading.walk import common_base

        roots = [Path(name) for name in self.inputs]
        check_replacing(self.target, roots, self.replace)
        passage_headings = PASSAGE_HEADINGS_BY_DEFAULT if self.passage_headings is None else self.passage_headings
        files = None
        if self.by_format:
            documents, files = read_paths(roots, self.rules, progress=self.progress, fields=self.fields)
            check_files_read(files, documents, roots, self.strict)
            source, options = (
                documents,
                {
                    "passages": True if self.passages is None else self.passages,
                    "passage_headings": passage_headings,
                    "reading": files_record(roots, common_base(roots), self.rules, self.fields),
                },
            )
        else:
            threads, ray = self.speed.threads or 1, self.ray
            on_ray = None if ray is None else RaySettings(ray, self.ray_workers, threads, part_size=self.ray_part_size)
            source, options = (
                self.corpus,
                {
                    "jsonl": True if self.jsonl else None,
                    "id_field": self.fields.id,
                    "text_field": self.fields.text,
                    "title_field": self.fields.title,
                    "passages": PASSAGES_BY_DEFAULT if self.passages is None else self.passages,
                    "passage_headings": passage_headings,
                    "ray": on_ray,
                },
            )
        encoder = Encoder(
            self.model,
            self.pooling,
            batch_size=self.batch_size,
            template=self.template,
            denoise=self.denoise,
            **self.speed.options(),
        )
        engine = SearchEngine.build(source, self.target, dataclasses.replace(settings, **options), encoder=encoder)
        return IndexOutcome(engine, engine.last_report, files)


def refuse_rebuild_options(
    index_type: str | None,
    whiten_k: int | None,
    whiten_fit: Path | None,
    pooling: Pooling | None,
    template: str | None,
    denoise: bool | None,
    passages: bool | None,
    passage_headings: bool | None,
    shards: int | None,
    memory_budget: str | None = None,
) -> None:
    """--append keeps the settings the index was built with: refuse the options that would change them."""
    changes = [index_type, whiten_k, whiten_fit, pooling, template, denoise, passages, passage_headings, memory_budget]
    if any(change is not None for change in changes):
        raise SearchEngineError(
            "--append adds to an index with the settings it was built with; drop --index, --memory-budget, --pooling, "
            "--template, --denoise, --whiten-k, --whiten-fit, --passages/--no-passages and "
            "--passage-headings/--no-passage-headings"
        )
    if shards is not None:
        raise SearchEngineError(APPEND_KEEPS_SHARDS)
