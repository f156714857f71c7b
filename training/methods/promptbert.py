"""Unsupervised PromptBERT (Jiang et al. 2022): each sentence goes through two different templates; the two [MASK]
vectors, each minus its own template's bias (template denoising), are the two views of InfoNCE with in-batch
negatives. Dropout stays on, as in SimCSE.

The defaults follow the authors' unsupervised BERT run (kongds/Prompt-BERT, run.sh `unsup-bert`): templates
`This sentence of "[X]" means [MASK] .` and `This sentence : "[X]" means [MASK] .`, denoising in training only,
the first template at inference, temperature 0.05, max_seq_length 32. The authors also train an MLP head on top
of the [MASK] vectors and drop it at inference (SimCSE's --mlp_only_train); it is left out here."""

from __future__ import annotations

from pathlib import Path

import torch
from searchengine.training.bi_encoder_run import run_bi_encoder_training
from searchengine.training.loop import TrainingReport, TrainingSettings, cycle, seed_everything
from searchengine.training.objectives.contrastive import info_nce
from searchengine.training.prompt_model import PromptSentenceModel
from searchengine.training.sentences import read_sentences

from searchengine.encoding.prompt_template import PromptConfig, check_template

TEMPLATE_1 = 'This sentence of "[X]" means [MASK] .'
TEMPLATE_2 = 'This sentence : "[X]" means [MASK] .'


def train_promptbert(
    *,
    base: str | Path,
    data: Path,
    out: Path | None,
    settings: TrainingSettings,
    batch_size: int = 64,
    eval_file: Path | None = None,
    template1: str = TEMPLATE_1,
    template2: str = TEMPLATE_2,
    max_seq_length: int = 32,
    temperature: float = 0.05,
    denoise: bool = True,
    inference_denoise: bool = False,
    limit: int | None = None,
) -> TrainingReport:
    """Train on the sentences of a corpus file (one per line, or .jsonl); the saved model (and the dev
    evaluation) pools with `template1`, denoised when `inference_denoise`."""
    check_template(template1)
    check_template(template2)
    sentences = read_sentences(data, limit)
    seed_everything(settings.seed)
    model = PromptSentenceModel(base, PromptConfig(template1, inference_denoise), max_seq_length)

    def loss(batch: list[str]) -> torch.Tensor:
        first = model.embed_prompted(batch, template1, denoise)
        second = model.embed_prompted(batch, template2, denoise)
        return info_nce(first, second, temperature)

    return run_bi_encoder_training(
        "promptbert",
        model,
        loss,
        cycle(sentences, batch_size, settings.seed),
        settings,
        out,
        eval_file,
        texts_per_batch=lambda batch: 2 * len(batch),
        details={
            "data": str(data),
            "sentences": len(sentences),
            "batch_size": batch_size,
            "temperature": temperature,
            "template1": template1,
            "template2": template2,
            "denoise": denoise,
            "inference_prompt": model.prompt.as_dict(),
        },
    )
