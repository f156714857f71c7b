"""Unsupervised PromptBERT (Jiang et al. 2022): each sentence goes through two different templates; the two [MASK]
vectors, each minus its own template's bias (template denoising), are the two views of InfoNCE with in-batch
negatives. Dropout stays on, as in SimCSE.

The defaults follow the authors' unsupervised BERT run (kongds/Prompt-BERT, run.sh `unsup-bert`): templates
`This sentence of "[X]" means [MASK] .` and `This sentence : "[X]" means [MASK] .`, denoising in training only,
the first template at inference, temperature 0.05, max_seq_length 32. The authors also train an MLP head on top
of the [MASK] vectors and drop it at inference (SimCSE's --mlp_only_train); it is left out here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchengine.training.method import SentenceEncoderMethod
from searchengine.training.options import IN_BATCH_HELP, SENTENCES_HELP, option

from searchengine.encoding.prompt_template import PromptConfig

if TYPE_CHECKING:
    import torch
    from searchengine.training.loop import LossFunction
    from searchengine.training.prompt_model import PromptSentenceModel

TEMPLATE_1 = 'This sentence of "[X]" means [MASK] .'
TEMPLATE_2 = 'This sentence : "[X]" means [MASK] .'


@dataclass(kw_only=True)
class PromptBERT(SentenceEncoderMethod):
    """PromptBERT: each sentence through two templates, the [MASK] states (minus each template's bias) are the
    two views of InfoNCE with in-batch negatives. The model is saved with prompt pooling and --template1, which
    `searchengine index --model OUT` applies by itself.

    Example: searchengine train promptbert --data data/unsup/wiki_sentences.txt.gz --eval data/stsb/dev.tsv --out promptbert-model
    """

    data: Path = option(help=SENTENCES_HELP)
    batch_size: int = option(64, min=2, help=IN_BATCH_HELP)
    template1: str = option(TEMPLATE_1, help="First view's template; also the saved model's.")
    template2: str = option(TEMPLATE_2, help="Second view's template.")
    max_seq_length: int = option(
        32, min=8, help="Truncate each prompted input (template included) to this many tokens."
    )
    temperature: float = option(0.05, min=1e-4)
    denoise: bool = option(True, help="Template denoising of both training views.")
    inference_denoise: bool = option(False, help="Save the model with template denoising at encode time too.")
    limit: int | None = option(None, min=2, help="Use only the first N sentences.")

    report_name = "promptbert"

    def read(self) -> list[str]:
        """The sentences of a corpus file (one per line, or .jsonl), once both templates are checked."""
        from searchengine.training.sentences import read_sentences

        from searchengine.encoding.prompt_template import check_template

        check_template(self.template1)
        check_template(self.template2)
        return read_sentences(self.data, self.limit)

    def load_model(self) -> PromptSentenceModel:
        """The base with prompt pooling: the saved model (and the dev evaluation) pools with `template1`,
        denoised when `inference_denoise`."""
        from searchengine.training.prompt_model import PromptSentenceModel

        return PromptSentenceModel(self.base, self.inference_prompt(), self.max_seq_length)

    def inference_prompt(self) -> PromptConfig:
        return PromptConfig(self.template1, self.inference_denoise)

    def loss(self, model: PromptSentenceModel) -> LossFunction:
        from searchengine.training.objectives.contrastive import info_nce

        def loss(batch: list[str]) -> torch.Tensor:
            first = model.embed_prompted(batch, self.template1, self.denoise)
            second = model.embed_prompted(batch, self.template2, self.denoise)
            return info_nce(first, second, self.temperature)

        return loss

    def details(self, examples: list) -> dict[str, Any]:
        return {
            "data": str(self.data),
            "sentences": len(examples),
            "batch_size": self.batch_size,
            "temperature": self.temperature,
            "template1": self.template1,
            "template2": self.template2,
            "denoise": self.denoise,
            "inference_prompt": self.inference_prompt().as_dict(),
        }
