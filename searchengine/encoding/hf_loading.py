"""Loading from Hugging Face, done one way everywhere: a model directory or Hub id becomes a local directory
(a Hub id is downloaded once: configs, tokenizer files and safetensors weights only), and a tokenizer and model
come from it with transformers' logging and progress bars off. Every failure is one SearchEngineError that
names the model and the first line of the cause."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

from searchengine.errors import SearchEngineError

PARALLELISM = "TOKENIZERS_PARALLELISM"
"""The tokenizers library's switch for tokenizing a batch on every core (its Rust thread pool)."""
USER_SET_PARALLELISM = PARALLELISM in os.environ
"""Whether the user chose PARALLELISM themselves (read at import, before searchengine sets a default)."""

LOADING = threading.Lock()
"""Held while a tokenizer and model load: transformers imports its classes lazily on first use, and threads doing
that at once got "module 'transformers' has no attribute 'AutoTokenizer'" (the first requests of a server to
collections of its own models, in parallel)."""

HUB_FILES = ("*.json", "*.txt", "*.safetensors", "*.model")
"""What a Hub download fetches: configs, tokenizer files and safetensors weights, never pickled weights."""


def model_directory(model: str, offline: tuple[str, ...] = ()) -> Path:
    """The local directory of `model`: an existing directory as it is, else a Hub id fetched from the Hugging Face
    Hub (or from its cache, which is all that HF_HUB_OFFLINE=1 allows). When it cannot be found, the error lists
    the names that work offline: `offline` (the caller's own, e.g. the bundled model's) and the cached Hub ids."""
    path = Path(model).expanduser()
    if path.is_dir():
        return path.resolve()
    if path.exists() or model.startswith((".", "/", "~")) or model.count("/") > 1:
        raise SearchEngineError(f"model directory {model} does not exist; pass an existing directory or a Hub id")
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, allow_patterns=list(HUB_FILES)))
    except Exception as exc:  # noqa: BLE001 (the hub client raises many types: offline, unknown repo, no permission)
        names = ", ".join([*offline, *cached_model_ids()]) or "none"
        raise SearchEngineError(
            f"cannot find model {model!r}: it is not a local directory and it could not be fetched from the "
            f"Hugging Face Hub ({type(exc).__name__}). Names that work offline: {names}. Check the name, go online "
            "once, or pass a model directory"
        ) from None


def cached_model_ids() -> list[str]:
    """The Hub ids of the models in the local Hugging Face cache (what a Hub id can load offline), by name."""
    from huggingface_hub import scan_cache_dir

    try:
        return sorted(repo.repo_id for repo in scan_cache_dir().repos if repo.repo_type == "model")
    except Exception:  # noqa: BLE001 (no cache folder, or one it cannot read: then nothing is cached)
        return []


def _quiet_transformers() -> ModuleType:
    """The transformers module, imported with its logging and progress bars off and tokenizers' fork warning
    silenced (searchengine reports progress and problems itself)."""
    os.environ.setdefault(PARALLELISM, "false")
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    return transformers


def tokenize_on_every_core() -> None:
    """Let the tokenizers library tokenize a batch on every core, unless the user chose PARALLELISM themselves.
    For an encoder on a GPU: its batches wait on the host's tokenizing, and on one core that halved what an index
    build embedded (an H200 with 16 cores, 200,000 Wikipedia sentences: the encoding stage 23.1 s on one core, 12.4 s
    on all; docs/benchmarks.md#gpu). Elsewhere it stays on one core: the CPU's cores run the model, and a process
    that forks after parallel tokenizing gets the library's warning."""
    if not USER_SET_PARALLELISM:
        os.environ[PARALLELISM] = "true"


def load_pretrained(path: Path, what: str, auto_class: str = "AutoModel", **options: Any) -> tuple[Any, Any]:
    """(tokenizer, model) from the Hugging Face directory `path`, safetensors weights only.

    auto_class: the transformers class that builds the model ("AutoModel", "AutoModelForSequenceClassification");
    options: passed on to its from_pretrained. what: how the error names the model ("the cross-encoder")."""
    from safetensors import SafetensorError  # what a damaged weights file raises; imported with the model's loading

    try:
        with LOADING:
            transformers = _quiet_transformers()
            tokenizer = transformers.AutoTokenizer.from_pretrained(path)
            model = getattr(transformers, auto_class).from_pretrained(path, use_safetensors=True, **options)
    except (OSError, ValueError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SearchEngineError(
            f"cannot load {what} in {path}: {first_line} (searchengine loads safetensors weights only)"
        ) from None
    except SafetensorError as exc:  # a weights file cut short (a copy or save that was interrupted) or damaged
        raise SearchEngineError(
            f"cannot load {what} in {path}: its safetensors weights are damaged or cut short ({exc}); copy or save "
            "the model again"
        ) from None
    return tokenizer, model
