"""Adapt an index's model to the index's own documents, then re-index them with it (`searchengine adapt`).

1. The documents are read from the index's store (never from the corpus file), written to a scratch .jsonl
   (text, and metadata such as a title) in a hidden folder of the index directory under the adapt's claim (never
   the system's temporary folder: a kill there left the index's texts for good), and given to an unsupervised
   method of the training registry (training/registry.py: pseudo-queries, simcse, consert, promptbert), starting
   from the index's model.
2. The method saves the adapted model as a sentence-transformers directory inside the index directory,
   `adapted-<method>.<number>/`, the manifest names it (relative to the index: `./adapted-...`, so the index can be moved), and it loads like any model.
3. Every stored document is embedded again with it (engine.reembedding.reembed_index): same ids, external ids,
   metadata and index type, whitening-k refitted where the index has it, committed in one manifest swap.

A kill at any point leaves the old index usable: until the commit the manifest names the old model and vectors.
What a killed run can leave is an `adapted-*` directory no manifest names, and the scratch folder with the
documents' copy; the next write (add, delete, compact, adapt) removes both. While an adapt runs it claims its
directory (indexer/commit/model_folders.py), so a write meanwhile leaves it alone.
No labels are used: training sees only the documents."""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from searchengine.indexer.commit.crash_points import crash_point
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.manifest import Manifest, model_location
from searchengine.indexer.commit.model_folders import PREFIX, claim_model_folder, scratch_folder
from searchengine.indexer.tables.store import DocumentStore
from searchengine.training.loop import TrainingReport
from searchengine.training.registry import METHODS

from searchengine.engine.indexing_report import IndexingReport
from searchengine.engine.reembedding import reembed_index, refuse_passages
from searchengine.errors import SearchEngineError

ADAPT_METHODS = ("pseudo-queries", "simcse", "consert", "promptbert")
"""The registry's methods that need no labels: what adaptation may run."""
_TRAINABLE_POOLING = ("mean", "cls", "max", "mean_sqrt_len")


@dataclass(frozen=True)
class AdaptationReport:
    method: str
    model: Path
    """The adapted model's directory (inside the index directory)."""
    training: TrainingReport
    indexing: IndexingReport | None
    """None when training was interrupted (then nothing was re-indexed)."""


def adapt_index(
    index_dir: Path,
    method: str = "pseudo-queries",
    options: dict[str, Any] | None = None,
    progress: bool = True,
) -> AdaptationReport:
    """Train the index's model on the index's documents with `method`, save it in the index directory, and
    re-index every document with it in one commit.

    options: the method's own options by field name (steps, learning_rate, batch_size, max_seq_length, seed,
    query_field, ...: see `searchengine train METHOD --help`); base, data and out are set here. Ctrl-C during
    training stops it and leaves the index as it was (report.indexing is None)."""
    if method not in ADAPT_METHODS:
        raise SearchEngineError(f"adapt cannot run {method!r}; choose one of {', '.join(ADAPT_METHODS)}")
    directory = IndexDirectory(index_dir)
    manifest = directory.read_manifest()
    refuse_passages(directory, manifest)
    method_class = METHODS[method]
    given = dict(options or {})
    known = {item.name for item in fields(method_class)} - {"base", "data", "out", "quiet"}
    unknown = sorted(set(given) - known)
    if unknown:
        raise SearchEngineError(f"{method} has no option {', '.join(unknown)}; its options: {', '.join(sorted(known))}")
    if "pooling" in known and "pooling" not in given and manifest.model.pooling in _TRAINABLE_POOLING:
        given["pooling"] = manifest.model.pooling  # train through the pooling the index uses
    model_dir = directory.path / f"{PREFIX}{method}.{time.time_ns()}"
    claim = claim_model_folder(model_dir)  # until the commit names it, a write's clean-up leaves it alone
    scratch = scratch_folder(model_dir)  # the documents' copy: inside the index, under the claim
    try:
        try:
            scratch.mkdir()
            data = _write_documents(directory, manifest, scratch / "documents.jsonl")
            crash_point("adapt-documents-written")
            base = model_location(manifest.model.spec, directory.path)
            try:
                training = method_class(base=base, data=data, out=model_dir, quiet=not progress, **given).run()
            except SearchEngineError as exc:  # about the documents' copy, deleted by now: named after the index
                raise SearchEngineError(
                    str(exc).replace(str(data), f"the documents of index {directory.path}")
                ) from None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if training.interrupted or not training.saved:
            shutil.rmtree(model_dir, ignore_errors=True)
            return AdaptationReport(method, model_dir, training, None)
        crash_point("adapt-saved")
        from searchengine.encoding.encoder import Encoder  # torch is loaded by training already

        try:
            indexing = reembed_index(directory, Encoder(model_dir), progress)
        except BaseException:
            shutil.rmtree(model_dir, ignore_errors=True)
            raise
    finally:
        claim.release()
        claim.path.unlink(missing_ok=True)
    return AdaptationReport(method, model_dir, training, indexing)


def _write_documents(directory: IndexDirectory, manifest: Manifest, path: Path) -> Path:
    """The index's documents as a .jsonl file (text, then metadata fields), the form the training methods read."""
    store = DocumentStore(directory.file(manifest, "documents"))
    try:
        ids = store.documents.ids()
        with path.open("w", encoding="utf-8") as handle:
            for start in range(0, len(ids), 2048):
                documents = store.get(ids[start : start + 2048])
                for document_id in ids[start : start + 2048]:
                    document = documents[int(document_id)]
                    record = {**document.metadata, "text": document.text}
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    finally:
        store.close()
    if len(ids) < 2:
        raise SearchEngineError(
            f"index {directory.path} holds {len(ids)} document(s); adapting a model needs at least 2"
        )
    return path
