"""Change an index as a whole: a writable copy of the current generation, committed with its manifest in one
swap, or discarded if anything fails. Builds, re-embedding with another model (`adapt`) and the one-time
conversion of a format-1 index end here; every other write changes the index in place (indexer/commit/live_write.py).
A generation is committed in format 2: its vectors as segments that its store names."""

from __future__ import annotations

import shutil
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from searchengine.indexer.commit.index_directory import Generation, IndexDirectory
from searchengine.indexer.commit.manifest import (
    Counts,
    Manifest,
    ModelIdentity,
    PassageSplitting,
    VectorIndexSpec,
    WhiteningFit,
)
from searchengine.indexer.commit.manifest_check import BUILT_AS, METRIC, built_as
from searchengine.indexer.commit.merge_policy import MERGE_LIMIT, build_merge_limit
from searchengine.indexer.errors import IndexerError, StorageFullError
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.upgrades.format_one import add_to_format_one, format_one_segments
from searchengine.indexer.vectors.build_parts import BuildParts
from searchengine.indexer.vectors.segments import (
    SegmentRecord,
    SegmentSet,
    load_segment_set,
    new_segment_name,
    write_segment,
)
from searchengine.indexer.vectors.template import (
    TemplateRecord,
    TrainedTemplate,
    template_name,
    template_of,
    training_error,
    write_template,
)
from searchengine.indexer.vectors.whitening import Whitening
from searchengine.indexer.vectors.written_segments import WrittenSegments


@dataclass
class IndexRewrite:
    """A writable copy of the current index, inside `rewriting()`: change it, and it is committed whole."""

    store: DocumentStore
    vectors: SegmentSet | BuildParts
    """The index's segments; new vectors (made by another model: `replace_model`) once replaced."""
    whitening: Whitening | None
    manifest: Manifest
    """The manifest of the index being rewritten."""
    generation: Generation
    """The generation being written (for scratch files such as a spool)."""
    upgraded: int = 0
    """Documents an older store had merged into another's row, made documents of their own by this rewrite."""
    model: ModelIdentity | None = None
    """The model of the rewritten index's vectors: the previous one unless `replace_model` was called."""
    new_whitening: bool = False
    """True when `whitening` was refitted (saved as a new file) rather than carried over."""

    def replace_model(self, model: ModelIdentity, vectors: BuildParts, whitening: Whitening | None) -> None:
        """Commit vectors made by another model (and the whitening fitted on them, or none) in place of the old."""
        self.model, self.vectors, self.whitening, self.new_whitening = model, vectors, whitening, True


@contextmanager
def rewriting(directory: IndexDirectory, versions: dict[str, str] | None = None) -> Iterator[IndexRewrite]:
    """Hold the writer lock over a copy of the current index; commit it as a new generation if the block
    finishes, discard it if the block raises (the current index is never modified in place). `versions`
    replace the recorded library versions (a rewrite that encodes nothing keeps the previous ones)."""
    with directory.writing(existing=True) as generation:
        previous = directory.read_manifest()
        store_path = generation.path("documents")
        copy_store(directory.file(previous, "documents"), store_path)
        whitening_path = directory.file(previous, "whitening")
        store = DocumentStore(store_path, writable=True)
        if previous.segmented:
            vectors = load_segment_set(
                directory.path, store.segments.records(), previous.index.type, previous.index.dimension
            )
        else:
            vectors = format_one_segments(directory, previous)
        rewrite = IndexRewrite(
            store=store,
            vectors=vectors,
            whitening=Whitening.load(whitening_path) if whitening_path else None,
            manifest=previous,
            generation=generation,
        )
        try:
            rewrite.upgraded = upgrade_store(rewrite.store, rewrite.vectors)
            yield rewrite
        except BaseException:
            rewrite.store.close()
            raise
        commit_generation(
            generation,
            directory,
            rewrite.store,
            rewrite.vectors,
            rewrite.whitening,
            rewrite.model or previous.model,
            {**previous.versions, **(versions or {})},
            previous,
            previous.passages,
            keep_whitening=not rewrite.new_whitening,
        )


def copy_store(source: Path, target: Path) -> None:
    """A consistent copy of the store at `source` (through SQLite's backup: a WAL store's latest commits may still
    be in its log), with the same permissions. One that cannot be written (the index's folder read-only, the disk
    full) is an IndexerError of one line: it was SQLite's traceback, from the first write to a format-1 index."""
    reader = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    try:
        writer = sqlite3.connect(str(target))
        try:
            reader.backup(writer)
        finally:
            writer.close()
    except sqlite3.Error as exc:
        kind = StorageFullError if "full" in str(exc) else IndexerError
        raise kind(
            f"cannot write a copy of the store as {target} ({exc}); a conversion or compaction writes the whole store "
            "anew beside the old one: make the index's folder writable (and free as much space as the store takes)"
        ) from None
    finally:
        reader.close()
    shutil.copymode(source, target)


def upgrade_store(store: DocumentStore, vectors: SegmentSet) -> int:
    """Rewrite a store older versions wrote (identical texts merged into one row) into one row per document,
    adding each new row's vector (a copy of the row it was merged into). Returns how many rows were added. Only
    format 1 had such stores: its vector files take the copies (indexer/upgrades/format_one.py)."""
    copies = store.upgrade()
    if copies:
        new_ids, shared = (np.array(column, dtype=np.int64) for column in zip(*copies))
        add_to_format_one(vectors, vectors.reconstruct(shared), new_ids)
    return len(copies)


def commit_generation(
    generation: Generation,
    directory: IndexDirectory,
    store: DocumentStore,
    vectors: BuildParts | SegmentSet | WrittenSegments,
    whitening: Whitening | None,
    model: ModelIdentity,
    versions: dict[str, str],
    previous: Manifest | None,
    passages: PassageSplitting | None,
    keep_whitening: bool = True,
) -> None:
    """Save the vectors (and a new whitening) into `generation` and commit it with its manifest, which records
    how documents are split into `passages` (None: not split). A rewrite (`previous` given) keeps the previous
    whitening file unless `keep_whitening` is False."""
    records = save_segments(vectors, generation)
    template = save_template(vectors, generation, store)
    if previous is not None and keep_whitening:
        whitening_path = directory.file(previous, "whitening")
    elif whitening is not None:
        whitening_path = generation.path("whitening")
        whitening.save(whitening_path)
    else:
        whitening_path = None
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    manifest = Manifest(
        model=model,
        whitening=None if whitening is None else WhiteningFit(k=whitening.k, fit_count=whitening.fit_count),
        index=VectorIndexSpec(type=vectors.factory, metric=METRIC, dimension=vectors.dimension),
        count=Counts(0, 0),
        created_at=previous.created_at if previous else now,
        updated_at=now,
        versions=versions,
        passages=passages,
    )
    with store.db.atomic():
        store.finish_build()  # a build's hash index, made in the commit that names the store
        store.segments.clear()
        store.segments.add(records)
        if not isinstance(vectors, SegmentSet):  # a rewrite of the same segments keeps their template
            store.segments.set_template(template)
        store.segments.stamp(versions, store.next_id())
        store.settings.set(MERGE_LIMIT, build_merge_limit(records))
        store.settings.set(BUILT_AS, built_as(manifest))  # what verify compares the manifest with
    store.close()
    generation.commit(manifest, {"documents": store.path, "whitening": whitening_path})


def save_template(
    vectors: BuildParts | SegmentSet | WrittenSegments, generation: Generation, store: DocumentStore
) -> TemplateRecord | None:
    """Write the trained template of vectors a build trained (indexer/vectors/template.py) as a file of
    `generation`; None for vectors of a type that was not trained here (exact and graph types, segments kept as
    they are, segments Ray workers wrote: their first training merge, or `compact --retrain`, makes theirs)."""
    if isinstance(vectors, SegmentSet | WrittenSegments):
        return None
    first = vectors.first
    if first.training_probe is None:
        return None
    template = template_of(first)
    trained = TrainedTemplate(template, first.trained_vectors, training_error(template, first.training_probe))
    name = template_name(time.time_ns())
    generation.created_file(name)
    return write_template(generation.directory.path, trained, name, store.next_id(), mode_of=store.path)


def save_segments(vectors: BuildParts | SegmentSet | WrittenSegments, generation: Generation) -> list[SegmentRecord]:
    """Write each part of `vectors` (a build's part, or a segment) as a segment file of `generation`; segments
    already written (by Ray workers) are named as they are."""
    if isinstance(vectors, WrittenSegments):
        return list(vectors.records)
    if isinstance(vectors, SegmentSet):
        parts = [segment.index for segment in vectors.segments]
    else:
        parts = vectors.parts
    records = []
    for part in parts:
        if part.count:
            name = new_segment_name()
            generation.created_file(name)
            records.append(write_segment(generation.directory.path, part, name))
    return records
