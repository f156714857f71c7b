"""A build with the corpus embedded on a Ray cluster (`searchengine index --ray`, BuildSettings.ray): the corpus is
planned into parts here, the workers (ray_embedding) embed them and write the vector segments, and the index is
committed as any build is."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from searchengine.engine.build_settings import BuildSettings
from searchengine.engine.corpus_input import Corpus
from searchengine.engine.count_argument import count_argument
from searchengine.engine.indexing import NO_TEXT, IndexSettings, build_index, fit_whitening
from searchengine.engine.indexing_report import IndexingReport
from searchengine.engine.ray_embedding import (
    RaySettings,
    plan_parts,
    ray_embedder,
    segment_parts,
    segment_target,
    training_sample,
    trains_first,
)
from searchengine.errors import SearchEngineError
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.vectors.index_choice import training_sample_size
from searchengine.indexer.vectors.segments import reserve_segment_numbers
from searchengine.indexer.vectors.vector_index import check_trainable, default_factory
from searchengine.reading.corpus import STDIN, JsonFields, corpus_files

if TYPE_CHECKING:
    from searchengine.encoding.encoder import Encoder


def build_with_ray(
    target: Path, corpus: Corpus, encoder: Encoder, settings: BuildSettings, ray: RaySettings
) -> IndexingReport:
    """SearchEngine.build with the corpus embedded on a Ray cluster; the corpus is read (and checked) here first,
    so bad input fails before the cluster starts any work. Documents are embedded whole (no passages). The workers
    write the vector segments themselves (ray_embedding), whitened with a transform fitted first on `whiten_fit`,
    or on a sample of the corpus, and (IVF, PQ) copied from the index type trained first on that sample. `ray`:
    settings.ray, the cluster's settings."""
    whiten_fit, whiten_k, jsonl = settings.whiten_fit, settings.whiten_k, settings.jsonl
    fields, progress = settings.fields, settings.progress
    for source in (corpus, whiten_fit):
        if source is not None and (not isinstance(source, (str, Path)) or str(source) == STDIN):
            raise SearchEngineError(
                "Ray workers read the corpus from files: give a file or a directory of corpus files every node can "
                "read at the same path, not standard input or a list of texts"
            )
    if settings.shards is not None:
        raise SearchEngineError(
            "--shards does not apply with --ray: each part of the corpus a worker embeds is written as its own "
            "segment, and the segments are searched in parallel as shards are; drop --shards"
        )
    if ray.part_size is not None:
        count_argument("part_size", ray.part_size)
    parts = plan_parts(corpus_files(corpus), jsonl, fields, ray.batch_size)
    fit_fields = JsonFields(fields.text, fields.title)
    fit_parts = None if whiten_fit is None else plan_parts(corpus_files(whiten_fit), jsonl, fit_fields, ray.batch_size)
    count = sum(part.documents for part in parts)
    if count == 0:
        raise SearchEngineError(NO_TEXT)
    if settings.index is not None and whiten_fit is None:
        check_trainable(settings.index, count)
    index_type = settings.index or default_factory(count, whiten_k or encoder.dimension, settings.memory_budget)
    with ray_embedder(ray, encoder) as embedder:
        whitening, sample = None, []
        if whiten_k is not None and fit_parts is not None:
            whitening = fit_whitening(embedder.chunks(fit_parts, jsonl, fit_fields), encoder, whiten_k, progress)
        written = segment_parts(parts, embedder.workers, index_type, ray.batch_size, ray.part_size)
        dimension = whiten_k or encoder.dimension
        if trains_first(written, index_type, dimension) or (whiten_k is not None and whitening is None):
            sample = list(embedder.embedded_documents(training_sample(parts, jsonl, fields, sample_size=training_sample_size(index_type))))
            if whiten_k is not None and whitening is None:
                whitening = fit_whitening(sample, encoder, whiten_k, progress)
        first = reserve_segment_numbers(count)
        segments = segment_target(target, first, index_type, dimension, written, whitening, sample)
        index_settings = IndexSettings(
            index_type=index_type,
            memory_budget=settings.memory_budget,
            whiten_k=whiten_k,
            passages=False,
            whitening=whitening,
            segments_written=True,
        )
        chunks = embedder.chunks(written, jsonl, fields, segments)
        return build_index(IndexDirectory(target), chunks, encoder, index_settings, count, progress)
