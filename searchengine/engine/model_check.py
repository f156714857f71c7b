"""An index's model: which one to load for it (from its manifest), and the check that a model is the one that made
its vectors (the same fingerprint, pooling and prompt template), refused otherwise."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from searchengine.encoding.encoder_choice import ModelCheck, ModelRequest
from searchengine.errors import SearchEngineError
from searchengine.indexer.commit.manifest import Manifest, ModelIdentity, PromptRecord, model_location

if TYPE_CHECKING:
    from searchengine.encoding.encoder import Encoder
    from searchengine.encoding.model_source import ModelSource, Pooling
    from searchengine.encoding.prompt_template import PromptConfig
    from searchengine.encoding.speed import EncoderSpeed


def _prompt_difference(built: PromptRecord | None, given: PromptConfig | None) -> str:
    """Names the prompt templates when they are what differs (prompt pooling, searchengine.encoding.prompt_pooling)."""

    def show(prompt: PromptRecord | PromptConfig | None) -> str:
        if prompt is None:
            return "none"
        return f"template {prompt.template!r}" + (" with denoising" if prompt.denoise else "")

    built_prompt, given_prompt = show(built), show(given)
    if built_prompt == given_prompt:
        return ""
    return f" (the index's prompt: {built_prompt}; the encoder's: {given_prompt})"


def check_same_model(path: Path, built_with: ModelIdentity, source: ModelSource, fingerprint: str) -> None:
    """Refuse a model other than the one the index was built with: its vectors live in another space."""
    if fingerprint != built_with.fingerprint or source.pooling != built_with.pooling:
        raise SearchEngineError(
            f"index {path} was built with model {built_with.name} "
            f"({built_with.pooling} pooling, fingerprint {built_with.fingerprint}), but the model "
            f"given is {source.name} ({source.pooling} pooling, fingerprint {fingerprint}); "
            "query with the index's own model or rebuild the index with this one"
            + _prompt_difference(built_with.prompt, source.prompt)
        )


def model_check(path: Path, built_with: ModelIdentity) -> ModelCheck:
    """check_same_model for the index in `path`, as the encoder choice takes it."""
    return lambda source, fingerprint: check_same_model(path, built_with, source, fingerprint)


def prompt_options(built_with: ModelIdentity) -> dict[str, str | bool]:
    """The prompt template and denoising of the index's prompt pooling, as Encoder and locate_model take them."""
    prompt = built_with.prompt
    return {} if prompt is None else {"template": prompt.template, "denoise": prompt.denoise}


def model_request(
    path: Path, built_with: ModelIdentity, model: str | Path | None, speed: EncoderSpeed | None
) -> ModelRequest:
    """The model of the index in `path`: `model` (the index's own when None) with the pooling and prompt template
    the index was built with."""
    spec = model if model is not None else model_location(built_with.spec, path)
    return ModelRequest(spec, built_with.pooling, prompt_options(built_with), speed)  # type: ignore[arg-type]


def check_expected(
    path: Path,
    manifest: Manifest,
    pooling: Pooling | None,
    whiten_k: int | None,
    encoder: Encoder | None,
    model: str | Path | None,
) -> None:
    """Refuse what an opener states it expects (SearchEngine.open) where the index in `path` differs: its whitening
    k, its pooling, or its model (a loaded `encoder`, or `model` checked from its files without loading it)."""
    built_with = manifest.model
    if whiten_k is not None and (manifest.whitening is None or manifest.whitening.k != whiten_k):
        built = manifest.whitening.k if manifest.whitening else "no"
        raise SearchEngineError(
            f"index {path} was built with {built} whitening, not whitening-k {whiten_k}; "
            "drop the option or rebuild the index with it"
        )
    if pooling is not None and pooling != built_with.pooling:
        raise SearchEngineError(
            f"index {path} was built with {built_with.pooling} pooling, not {pooling}; "
            "drop the option or rebuild the index with it"
        )
    if encoder is not None:
        check_same_model(path, built_with, encoder.source, encoder.fingerprint)
    elif model is not None:
        from searchengine.encoding.model_source import locate_model

        source = locate_model(model, built_with.pooling, **prompt_options(built_with))  # type: ignore[arg-type]
        check_same_model(path, built_with, source, source.fingerprint())
