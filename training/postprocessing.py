"""What the post-processing fitters share: read the corpus, embed it with the frozen base encoder (the vectors the
new module will receive: pooled, through any transforms the base already has, before its Normalize), and write
the output model = a copy of the base with the new module inserted just before Normalize in modules.json."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from searchengine.training.model_directory import copy_model_files, writing_model_directory

from searchengine.errors import SearchEngineError

FIT_INFO_FILE = "searchengine_fit.json"
"""Written next to each fitted module: the method, corpus and settings, for people (not read back)."""

EMBED_CHUNK = 2048


@dataclass
class FitReport:
    """What a fit did; `details` holds method-specific numbers (e.g. the flow's log-likelihood per epoch)."""

    method: str
    out: Path
    base: str
    corpus: str
    texts: int
    input_dimension: int
    output_dimension: int
    module_path: str
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        """One line: what was written where, and for a flow its log-likelihood before and after training."""
        line = (
            f"Wrote {self.out}: {self.method} ({self.input_dimension} -> {self.output_dimension} dimensions) "
            f"fitted on {self.texts:,} texts in {self.seconds:.1f} s, saved as module {self.module_path}"
        )
        curve = self.details.get("log_likelihood")
        if curve:
            line += f"; log-likelihood per dimension {curve[0]:.3f} -> {curve[-1]:.3f} nats"
        return line


def load_base(base: str | Path | None, device: str | None = None, batch_size: int = 64):  # noqa: ANN201
    """The frozen base encoder; it must be a sentence-transformers directory so a module can be added to it."""
    from searchengine.encoding.encoder import Encoder

    # fp32 whatever "auto" picks on this CPU: bf16's rounding would show up as variance in directions the
    # embeddings do not span, and the fitted statistics should not depend on the machine
    encoder = Encoder(base, device=device, batch_size=batch_size, precision="fp32")
    if not (encoder.source.path / "modules.json").is_file():
        raise SearchEngineError(
            f"{encoder.source.path} is a plain Hugging Face model (no modules.json); post-processing modules are "
            "added to a sentence-transformers model directory, so start from one"
        )
    return encoder


def read_texts(corpus: str | Path) -> list[str]:
    """The corpus's distinct texts in file order (duplicates would weigh the fitted statistics)."""
    from searchengine.reading.corpus import read_corpus

    texts = list(dict.fromkeys(document.text for document in read_corpus(corpus)))
    if not texts:
        raise SearchEngineError(f"{corpus} has no texts to fit on; pass a file with one text per line (or .jsonl)")
    return texts


def embedding_chunks(encoder, texts: list[str], progress: bool, what: str) -> Iterator[np.ndarray]:  # noqa: ANN001
    """Yield the pre-Normalize vectors of `texts` chunk by chunk, with a progress bar."""
    from tqdm import tqdm

    with tqdm(total=len(texts), desc=f"Embedding for {what}", unit="text", disable=not progress) as bar:
        for start in range(0, len(texts), EMBED_CHUNK):
            chunk = texts[start : start + EMBED_CHUNK]
            yield encoder.encode(chunk, pre_normalize=True)
            bar.update(len(chunk))


def corpus_vectors(
    encoder,  # noqa: ANN001
    texts: list[str],
    progress: bool,
    what: str,
    vectors: np.ndarray | None = None,
) -> Iterator[np.ndarray]:
    """The pre-Normalize vectors of `texts` in chunks: embedded now, or `vectors` when the caller already has them
    (one embedding pass shared by several fits); those must be `texts`' rows, as embed_all() returns them."""
    if vectors is None:
        yield from embedding_chunks(encoder, texts, progress, what)
        return
    if vectors.shape != (len(texts), encoder.dimension):
        raise SearchEngineError(
            f"the precomputed vectors have shape {vectors.shape}, but the corpus has {len(texts)} distinct texts "
            f"and the model {encoder.dimension} dimensions"
        )
    yield np.asarray(vectors, dtype=np.float32)


def embed_all(encoder, texts: list[str], progress: bool, what: str) -> np.ndarray:  # noqa: ANN001
    """All pre-Normalize vectors of `texts` as one (n, d) float32 array."""
    return np.concatenate(list(embedding_chunks(encoder, texts, progress, what)), axis=0)


def write_model_with_module(
    encoder,  # noqa: ANN001
    out: str | Path,
    module_type: str,
    class_name: str,
    write_module: Callable[[Path], None],
    fit_info: dict[str, Any],
) -> str:
    """Copy the base model to `out` (atomically) with a new module inserted before Normalize; returns its folder."""
    base_path = encoder.source.path
    with writing_model_directory(Path(out)) as staging:
        copy_model_files(base_path, staging)
        modules = json.loads((staging / "modules.json").read_text(encoding="utf-8"))
        position = next(
            (i for i, module in enumerate(modules) if module.get("type", "").rsplit(".", 1)[-1] == "Normalize"),
            len(modules),
        )
        folder = f"{position}_{class_name}"
        taken = {module.get("path") for module in modules} | {p.name for p in staging.iterdir()}
        suffix = 1
        while folder in taken:
            suffix += 1
            folder = f"{position}_{class_name}_{suffix}"
        renumber_names = all(str(module.get("name")) == str(module.get("idx")) for module in modules)
        modules.insert(position, {"idx": position, "name": folder, "path": folder, "type": module_type})
        for idx, module in enumerate(modules):
            module["idx"] = idx
            if renumber_names:
                module["name"] = str(idx)
        write_module(staging / folder)
        (staging / folder / FIT_INFO_FILE).write_text(
            json.dumps({**fit_info, "fitted_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=2) + "\n",
            encoding="utf-8",
        )
        (staging / "modules.json").write_text(json.dumps(modules, indent=2) + "\n", encoding="utf-8")
    return folder
