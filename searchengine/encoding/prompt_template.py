"""PromptBERT templates (Jiang et al. 2022): what a template is, how it is checked, and how a model directory
records one (the prompt module's config.json). The pooling itself is in searchengine.encoding.prompt_pooling; this module
stays free of torch so that finding a model stays cheap."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from searchengine.errors import SearchEngineError

PROMPT_POOLING = "prompt"
"""The pooling name: the last-layer hidden state at the template's [MASK] is the sentence vector."""
SENTENCE_SLOT = "[X]"
MASK_SLOT = "[MASK]"
DEFAULT_TEMPLATE = 'This sentence : "[X]" means [MASK] .'
"""The paper's best manual template for BERT (its Table 3); [X] is the sentence."""
PROMPT_MODULE_TYPE = "searchengine.encoding.prompt_pooling.PromptPooling"
PROMPT_MODULE_FOLDER = "1_PromptPooling"


def check_template(template: str) -> str:
    """Return `template` if it has exactly one [X] (where the sentence goes) and one [MASK] outside it."""
    slots, masks = template.count(SENTENCE_SLOT), template.count(MASK_SLOT)
    if slots != 1 or masks != 1:
        raise SearchEngineError(
            f"prompt template {template!r} must contain {SENTENCE_SLOT} (the sentence) exactly once and {MASK_SLOT} "
            f"(whose hidden state is the sentence vector) exactly once; it has {slots} {SENTENCE_SLOT} and {masks} "
            f"{MASK_SLOT}. Example: '{DEFAULT_TEMPLATE}'"
        )
    return template


@dataclass(frozen=True)
class PromptConfig:
    """How a prompt-pooled model turns a sentence into a vector.

    template: text with one [X] (the sentence) and one [MASK] (the token whose last-layer state is the vector).
    denoise: subtract the [MASK] state of the bare template (the sentence removed), run with the position ids the
    template's tokens have in the full input, so the bias the template alone puts on the vector is removed."""

    template: str = DEFAULT_TEMPLATE
    denoise: bool = False

    def __post_init__(self) -> None:
        check_template(self.template)

    @property
    def prefix(self) -> str:
        """The template's text before [X]."""
        return self.template.split(SENTENCE_SLOT)[0]

    @property
    def suffix(self) -> str:
        """The template's text after [X]."""
        return self.template.split(SENTENCE_SLOT)[1]

    def as_dict(self) -> dict:
        return {"template": self.template, "denoise": self.denoise}

    def identity(self) -> str:
        """A stable string for fingerprints: two configs embed alike iff their identities are equal."""
        return json.dumps(self.as_dict(), sort_keys=True)

    def describe(self) -> str:
        return f"prompt {self.template!r}" + (" with template denoising" if self.denoise else "")


def read_prompt_module(folder: Path) -> PromptConfig:
    """The PromptConfig stored in a prompt module folder's config.json."""
    path = folder / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SearchEngineError(f"cannot read the prompt module's {path}: {exc}") from None
    if not isinstance(config, dict) or not isinstance(config.get("template"), str):
        raise SearchEngineError(f'{path} has no "template" string')
    return PromptConfig(config["template"], bool(config.get("denoise", False)))


def write_prompt_module(folder: Path, config: PromptConfig) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config.as_dict(), indent=2) + "\n", encoding="utf-8")


def resolve_prompt(
    pooling: str, stored: PromptConfig | None, template: str | None, denoise: bool | None
) -> PromptConfig | None:
    """The prompt a model runs with: None unless `pooling` is prompt; else the model's stored prompt (or the
    default one) with `template` / `denoise` overriding its fields when given."""
    if pooling != PROMPT_POOLING:
        return None
    base = stored or PromptConfig()
    return PromptConfig(
        template if template is not None else base.template, base.denoise if denoise is None else bool(denoise)
    )
