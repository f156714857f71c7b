"""PromptBERT training on the tiny offline BERT: the two denoised template views, the loss against a hand-computed
value, a few steps lowering it, save -> load reproducing embeddings exactly, seeds, and the CLI end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from searchengine.training.loop import TrainingSettings, cycle, seed_everything, train
from searchengine.training.methods.promptbert import TEMPLATE_1, TEMPLATE_2, PromptBERT
from searchengine.training.objectives.contrastive import info_nce
from searchengine.training.prompt_model import PromptSentenceModel
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.encoding.encoder import Encoder
from searchengine.encoding.prompt_template import PROMPT_MODULE_FOLDER, PROMPT_MODULE_TYPE, PromptConfig
from searchengine.errors import SearchEngineError

runner = CliRunner()


@pytest.fixture
def data_files(tmp_path: Path, sentences: list[str]) -> tuple[Path, Path]:
    data = tmp_path / "sentences.txt"
    data.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    dev = tmp_path / "dev.tsv"
    pairs = zip(sentences, sentences[1:] + sentences[:1])
    dev.write_text(
        "score\tsentence1\tsentence2\n" + "".join(f"{i % 6}\t{a}\t{b}\n" for i, (a, b) in enumerate(pairs)),
        encoding="utf-8",
    )
    return data, dev


def test_info_nce_of_two_views_by_hand() -> None:
    first = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    second = torch.tensor([[3.0, 0.0], [1.0, 1.0]])
    # cosines: row 0 -> (1, 1/sqrt 2), row 1 -> (0, 1/sqrt 2); logits = cos / 0.05; targets on the diagonal
    c = 1 / math.sqrt(2)
    row0 = -math.log(math.exp(20) / (math.exp(20) + math.exp(20 * c)))
    row1 = -math.log(math.exp(20 * c) / (math.exp(0) + math.exp(20 * c)))
    assert float(info_nce(first, second, 0.05)) == pytest.approx((row0 + row1) / 2, rel=1e-5)


def test_views_are_the_denoised_mask_states_of_each_template(tiny_model: Path, sentences: list[str]) -> None:
    model = PromptSentenceModel(tiny_model, max_seq_length=48).eval()
    for template in (TEMPLATE_1, TEMPLATE_2):
        with torch.no_grad():
            views = model.embed_prompted(sentences, template, denoise=True)
        reference = Encoder(tiny_model, template=template, denoise=True, precision="fp32")
        reference.max_seq_length = 48
        np.testing.assert_allclose(
            torch.nn.functional.normalize(views, dim=1).numpy(), reference.encode(sentences), atol=1e-5
        )
    with torch.no_grad():
        first = model.embed_prompted(sentences, TEMPLATE_1, denoise=True)
        second = model.embed_prompted(sentences, TEMPLATE_2, denoise=True)
    assert not torch.allclose(first, second, atol=1e-3)  # two templates: two different views


def test_denoising_bias_is_trained_too(tiny_model: Path) -> None:
    model = PromptSentenceModel(tiny_model, max_seq_length=48).train()
    pooler = model.pooler(TEMPLATE_1)
    bias = pooler.template_bias(model.transformer, torch.tensor([3, 5, 3]))
    assert bias.requires_grad and bias.shape == (3, model.dimension) and torch.equal(bias[0], bias[2])
    assert pooler._bias == {}  # no cache while weights change


def test_dropout_is_on_in_training(tiny_model: Path, sentences: list[str]) -> None:
    model = PromptSentenceModel(tiny_model, max_seq_length=48).train()
    assert not torch.equal(
        model.embed_prompted(sentences, TEMPLATE_1, True), model.embed_prompted(sentences, TEMPLATE_1, True)
    )


def test_a_few_steps_lower_the_loss(tiny_model: Path, sentences: list[str]) -> None:
    seed_everything(0)
    model = PromptSentenceModel(tiny_model, max_seq_length=48)
    for module in model.modules():  # deterministic steps, so that before and after compare the same function
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0

    def loss(batch: list[str]) -> torch.Tensor:
        return info_nce(model.embed_prompted(batch, TEMPLATE_1, True), model.embed_prompted(batch, TEMPLATE_2, True))

    def eval_loss() -> float:
        model.eval()
        with torch.no_grad():
            return float(loss(sentences))

    before = eval_loss()
    settings = TrainingSettings(steps=4, learning_rate=3e-4, warmup=0.0, seed=0, progress=False)
    report = train("promptbert", model, loss, cycle(sentences, len(sentences), 0), settings, out=None)
    assert report.steps == 4
    assert eval_loss() < 0.5 * before


def test_save_then_load_reproduces_embeddings_exactly(tiny_model: Path, tmp_path: Path, sentences: list[str]) -> None:
    seed_everything(0)
    model = PromptSentenceModel(tiny_model, PromptConfig(TEMPLATE_1, denoise=True), max_seq_length=64)
    with torch.no_grad():  # move the weights off the base so a reload of the base would not pass
        for parameter in model.transformer.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.01)
    model.save(tmp_path / "saved")
    modules = json.loads((tmp_path / "saved" / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[-1] for m in modules] == ["Transformer", "PromptPooling", "Normalize"]
    assert modules[1] == {"idx": 1, "name": "1", "path": PROMPT_MODULE_FOLDER, "type": PROMPT_MODULE_TYPE}
    assert not (tmp_path / "saved" / "1_Pooling").exists()
    loaded = Encoder(tmp_path / "saved", precision="fp32")  # the training model runs fp32
    assert loaded.pooling == "prompt" and loaded.source.prompt == PromptConfig(TEMPLATE_1, True)
    for text in sentences:  # one text per batch: the same computation, bit for bit
        assert np.array_equal(loaded.encode([text]), model.encode([text]))
    # other batches: the kernels' rounding (3e-8 here) differs with the batch's shape, and denoising, which subtracts
    # two close states of the tiny model, magnifies it a few hundred times
    np.testing.assert_allclose(loaded.encode(sentences, batch_size=5), model.encode(sentences), atol=1e-4)


def test_train_promptbert_saves_a_prompt_model_and_is_reproducible(
    tiny_model: Path, tmp_path: Path, data_files: tuple[Path, Path], sentences: list[str]
) -> None:
    data, dev = data_files
    settings = TrainingSettings(steps=4, learning_rate=1e-4, eval_every=2, seed=3, progress=False)
    vectors = []
    for run in ("a", "b"):
        report = PromptBERT(
            base=tiny_model, data=data, out=tmp_path / run, batch_size=4, eval_file=dev, max_seq_length=48
        ).train(settings)
        assert report.steps == 4 and report.saved and [e.step for e in report.evaluations] == [2, 4]
        encoder = Encoder(tmp_path / run)
        assert encoder.source.prompt == PromptConfig(TEMPLATE_1, False)
        vectors.append(encoder.encode(sentences))
    assert np.array_equal(*vectors)
    log = json.loads((tmp_path / "a" / "training_log.json").read_text())
    assert log["method"] == "promptbert" and log["details"]["template2"] == TEMPLATE_2 and log["details"]["denoise"]
    other = PromptBERT(
        base=tiny_model, data=data, out=tmp_path / "c", batch_size=4, max_seq_length=48
    ).train(TrainingSettings(steps=4, learning_rate=1e-4, seed=4, progress=False))
    assert other.saved and not np.array_equal(Encoder(tmp_path / "c").encode(sentences), vectors[0])


def test_bad_templates_are_refused_before_training(tiny_model: Path, data_files: tuple[Path, Path]) -> None:
    with pytest.raises(SearchEngineError, match="exactly once"):
        PromptBERT(
            base=tiny_model, data=data_files[0], out=None, template2="[X] means nothing"
        ).train(TrainingSettings(steps=1))


def test_cli_end_to_end(tiny_model: Path, tmp_path: Path, data_files: tuple[Path, Path], sentences: list[str]) -> None:
    data, dev = data_files
    out = tmp_path / "model"
    result = runner.invoke(
        app,
        ["train", "promptbert", "--base", str(tiny_model), "--data", str(data), "--out", str(out), "--eval", str(dev),
         "--steps", "3", "--eval-every", "3", "--batch-size", "4", "--lr", "1e-4", "--seed", "1",
         "--max-seq-length", "48", "--inference-denoise", "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "promptbert: 3 steps" in result.output and f"Saved to {out}" in result.output
    assert Encoder(out).source.prompt == PromptConfig(TEMPLATE_1, True)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    index_dir = tmp_path / "index"
    result = runner.invoke(app, ["index", str(corpus), "--model", str(out), "--index-dir", str(index_dir), "-q"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["query", sentences[2], "--index-dir", str(index_dir), "-k", "1"])
    assert result.exit_code == 0 and sentences[2] in result.output, result.output
    result = runner.invoke(app, ["eval", "sts", str(dev), "--model", str(out)])
    assert result.exit_code == 0 and "Spearman" in result.output, result.output


def test_cli_bad_template(tiny_model: Path, tmp_path: Path, data_files: tuple[Path, Path]) -> None:
    result = runner.invoke(
        app,
        ["train", "promptbert", "--base", str(tiny_model), "--data", str(data_files[0]), "--out", str(tmp_path / "m"),
         "--template1", "no slots", "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 1 and result.output.startswith("Error: prompt template 'no slots'"), result.output
    assert not (tmp_path / "m").exists()
