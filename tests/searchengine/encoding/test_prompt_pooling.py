"""Prompt pooling (PromptBERT): the [MASK] position, truncation of the sentence only, template denoising with the
full input's position ids, the prompt module in a model directory, index identity, CLI options, bad templates."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.encoding.encoder import Encoder
from searchengine.encoding.model_source import locate_model
from searchengine.encoding.prompt_pooling import PromptPooling
from searchengine.encoding.prompt_template import (
    DEFAULT_TEMPLATE,
    PROMPT_MODULE_FOLDER,
    PROMPT_MODULE_TYPE,
    PromptConfig,
    write_prompt_module,
)
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError

OTHER_TEMPLATE = 'the text "[X]" is about [MASK] .'
runner = CliRunner()


@pytest.fixture(scope="module")
def prompt_encoder(tiny_model: Path) -> Encoder:
    return Encoder(tiny_model, pooling="prompt", precision="fp32")  # fp32: compared with the transformer's own


@pytest.fixture(scope="module")
def denoised_encoder(tiny_model: Path) -> Encoder:
    return Encoder(tiny_model, pooling="prompt", denoise=True, precision="fp32")


def prompt_model_dir(tiny_model: Path, target: Path, config: PromptConfig) -> Path:
    """The tiny model with its Pooling module replaced by a prompt module, as training saves it."""
    shutil.copytree(tiny_model, target)
    shutil.rmtree(target / "1_Pooling")
    modules = json.loads((target / "modules.json").read_text())
    modules[1].update(path=PROMPT_MODULE_FOLDER, type=PROMPT_MODULE_TYPE)
    (target / "modules.json").write_text(json.dumps(modules))
    write_prompt_module(target / PROMPT_MODULE_FOLDER, config)
    return target


def mask_state(encoder: Encoder, ids: list[int], position_ids: list[int] | None = None) -> torch.Tensor:
    """Last-layer state at [MASK] for one unpadded input, computed directly with the transformer."""
    input_ids = torch.tensor([ids])
    inputs = {
        "input_ids": input_ids,
        "attention_mask": torch.ones_like(input_ids),
        "token_type_ids": torch.zeros_like(input_ids),
    }
    if position_ids is not None:
        inputs["position_ids"] = torch.tensor([position_ids])
    with torch.no_grad():
        hidden = encoder.model(**{key: value.to(encoder.device) for key, value in inputs.items()}).last_hidden_state[0]
    return hidden[ids.index(encoder.tokenizer.mask_token_id)].cpu()


# --- templates ---


@pytest.mark.parametrize(
    "template",
    ["no slots at all", "[X] without a mask", "[MASK] without a sentence", "[X] [X] [MASK]", "[X] [MASK] [MASK]", ""],
)
def test_bad_templates_are_refused_with_a_clear_message(template: str) -> None:
    with pytest.raises(SearchEngineError, match=r"exactly once.*Example"):
        PromptConfig(template)


def test_bad_template_on_the_encoder(tiny_model: Path) -> None:
    with pytest.raises(SearchEngineError, match=r"\[X\]"):
        Encoder(tiny_model, template="means [MASK]")


def test_template_goes_with_prompt_pooling_only(tiny_model: Path) -> None:
    with pytest.raises(SearchEngineError, match="prompt pooling, not mean"):
        locate_model(tiny_model, "mean", template=DEFAULT_TEMPLATE)
    assert locate_model(tiny_model, template=OTHER_TEMPLATE).pooling == "prompt"
    assert locate_model(tiny_model, denoise=True).prompt == PromptConfig(DEFAULT_TEMPLATE, True)
    assert locate_model(tiny_model).prompt is None and locate_model(tiny_model, "prompt").prompt == PromptConfig()


def test_template_longer_than_the_limit(prompt_encoder: Encoder) -> None:
    with pytest.raises(SearchEngineError, match="leaving no room for the sentence"):
        prompt_encoder.prompt.tokenize(["cat"], prompt_encoder.prompt.template_length)


# --- inputs and the [MASK] position ---


def test_inputs_are_cls_prefix_sentence_suffix_sep(prompt_encoder: Encoder) -> None:
    (row,), cut = prompt_encoder.prompt.tokenize(["The cat sat"], 64)
    tokenizer = prompt_encoder.tokenizer
    assert row == tokenizer('This sentence : "The cat sat" means [MASK] .')["input_ids"]  # as if tokenized whole
    tokens = tokenizer.convert_ids_to_tokens(row)
    assert tokens[:2] == ["[CLS]", "this"] and tokens[-3:] == ["[MASK]", ".", "[SEP]"]
    assert tokens[tokens.index('"') + 1 : tokens.index('"') + 4] == ["the", "cat", "sat"]
    assert cut == 0


def test_mask_position_for_varied_lengths_in_one_padded_batch(prompt_encoder: Encoder, sentences: list[str]) -> None:
    prompt = prompt_encoder.prompt
    texts = ["", "cat", *sentences]
    rows, _ = prompt.tokenize(texts, 64)
    assert len({len(row) for row in rows}) > 5
    input_ids, attention_mask = prompt.pad(rows, 0)
    positions = prompt.mask_positions(attention_mask)
    mask_id = prompt_encoder.tokenizer.mask_token_id
    assert (input_ids[torch.arange(len(rows)), positions] == mask_id).all()
    assert [row.index(mask_id) for row in rows] == positions.tolist()
    assert prompt.sentence_lengths(attention_mask).tolist() == [len(row) - prompt.template_length for row in rows]
    assert prompt.sentence_lengths(attention_mask)[0] == 0


def test_mask_in_the_prefix(tiny_model: Path) -> None:
    encoder = Encoder(tiny_model, template="[MASK] : [X]", precision="fp32")
    rows, _ = encoder.prompt.tokenize(["the cat", "a dog ran in the garden"], 64)
    _, attention_mask = encoder.prompt.pad(rows, 0)
    assert encoder.prompt.mask_positions(attention_mask).tolist() == [1, 1]
    vectors = encoder.encode(["the cat"])
    expected = mask_state(encoder, rows[0])
    np.testing.assert_allclose(vectors[0], (expected / expected.norm()).numpy(), atol=1e-6)


def test_truncation_cuts_the_sentence_never_the_template(prompt_encoder: Encoder) -> None:
    prompt = prompt_encoder.prompt
    long_text = " ".join(["the cat sat on the mat"] * 30)
    (row, short), cut = prompt.tokenize([long_text, "cat"], prompt.template_length + 5)
    assert cut == 1 and len(row) == prompt.template_length + 5 and len(short) == prompt.template_length + 1
    assert row[: len(prompt.head)] == prompt.head and row[-len(prompt.tail) :] == prompt.tail
    assert prompt_encoder.tokenizer.mask_token_id in row
    before = prompt_encoder.truncated
    vectors = prompt_encoder.encode([long_text, "cat"])
    assert prompt_encoder.truncated == before + 1 and np.isfinite(vectors).all()
    (full_row,), _ = prompt.tokenize([long_text], prompt_encoder.max_seq_length)
    assert len(full_row) == prompt_encoder.max_seq_length == 64


# --- pooling and template denoising against a manual computation ---


def test_vectors_are_the_mask_states(prompt_encoder: Encoder, sentences: list[str]) -> None:
    vectors = prompt_encoder.encode(sentences, batch_size=4)  # several padded batches, out of input order
    rows, _ = prompt_encoder.prompt.tokenize(sentences, 64)
    for vector, row in zip(vectors, rows):
        expected = mask_state(prompt_encoder, row)
        np.testing.assert_allclose(vector, (expected / expected.norm()).numpy(), atol=1e-5)


def test_denoising_uses_the_full_inputs_position_ids(denoised_encoder: Encoder, sentences: list[str]) -> None:
    prompt = denoised_encoder.prompt
    head, tail = prompt.head, prompt.tail
    bare = head + tail
    vectors = denoised_encoder.encode(sentences, batch_size=5)
    rows, _ = prompt.tokenize(sentences, 64)
    for vector, row in zip(vectors, rows):
        n = len(row) - len(bare)
        positions = list(range(len(head))) + list(range(len(head) + n, len(head) + n + len(tail)))
        assert positions[-1] == len(row) - 1  # [SEP] keeps its place in the full input
        bias = mask_state(denoised_encoder, bare, positions)
        expected = mask_state(denoised_encoder, row) - bias
        np.testing.assert_allclose(vector, (expected / expected.norm()).numpy(), atol=1e-4)
        naive = mask_state(denoised_encoder, row) - mask_state(denoised_encoder, bare)  # positions 0..len-1
        assert np.abs(vector - (naive / naive.norm()).numpy()).max() > 1e-2
    assert set(prompt._bias) == {len(row) - len(bare) for row in rows}  # cached once per sentence length


def test_bare_template_position_ids(prompt_encoder: Encoder) -> None:
    prompt = prompt_encoder.prompt
    h, t = len(prompt.head), len(prompt.tail)
    ids = prompt.bare_template_position_ids([0, 3])
    assert ids[0].tolist() == list(range(h + t))
    assert ids[1].tolist() == list(range(h)) + list(range(h + 3, h + 3 + t))


def test_denoising_changes_the_vectors(
    prompt_encoder: Encoder, denoised_encoder: Encoder, sentences: list[str]
) -> None:
    assert not np.allclose(prompt_encoder.encode(sentences), denoised_encoder.encode(sentences), atol=1e-3)


def test_training_pooler_keeps_no_cache(tiny_model: Path, prompt_encoder: Encoder) -> None:
    pooler = PromptPooling(prompt_encoder.tokenizer, PromptConfig(denoise=True), cache=False)
    rows, _ = pooler.tokenize(["the cat", "the dog ran"], 64)
    input_ids, attention_mask = (tensor.to(prompt_encoder.device) for tensor in pooler.pad(rows, 0))
    with torch.no_grad():
        hidden = prompt_encoder.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        pooler.pool(prompt_encoder.model, hidden, attention_mask)
    assert pooler._bias == {}


# --- the prompt module in a model directory, fingerprints, indexes ---


def test_prompt_module_is_read_back(tiny_model: Path, tmp_path: Path, sentences: list[str]) -> None:
    config = PromptConfig(OTHER_TEMPLATE, denoise=True)
    model = prompt_model_dir(tiny_model, tmp_path / "prompt-model", config)
    source = locate_model(model)
    assert (source.pooling, source.prompt, source.normalize) == ("prompt", config, True)
    loaded = Encoder(model)
    direct = Encoder(tiny_model, template=OTHER_TEMPLATE, denoise=True)
    assert np.array_equal(loaded.encode(sentences), direct.encode(sentences))
    assert loaded.fingerprint != Encoder(model, template=DEFAULT_TEMPLATE, denoise=True).fingerprint
    assert locate_model(model, "mean").prompt is None  # an explicit token pooling drops the prompt
    assert Encoder(model, denoise=False).source.prompt == PromptConfig(OTHER_TEMPLATE, False)


def test_fingerprint_includes_the_prompt(tiny_model: Path, prompt_encoder: Encoder, denoised_encoder: Encoder) -> None:
    plain = locate_model(tiny_model)
    assert Encoder(tiny_model).fingerprint == plain.fingerprint()
    fingerprints = {
        plain.fingerprint(),
        prompt_encoder.fingerprint,
        denoised_encoder.fingerprint,
        locate_model(tiny_model, template=OTHER_TEMPLATE).fingerprint(),
    }
    assert len(fingerprints) == 4
    assert locate_model(tiny_model, "prompt").fingerprint() == prompt_encoder.fingerprint


def test_index_keeps_its_template(tiny_model: Path, tmp_path: Path, sentences: list[str]) -> None:
    encoder = Encoder(tiny_model, template=OTHER_TEMPLATE)
    SearchEngine.build(sentences, tmp_path / "index", encoder=encoder)
    reopened = SearchEngine.open(tmp_path / "index")  # the encoder comes from the manifest
    assert reopened.encoder.source.prompt == PromptConfig(OTHER_TEMPLATE)
    assert reopened.search(sentences[3], k=1)[0].text == sentences[3]
    with pytest.raises(SearchEngineError, match="the index's prompt: template 'the text"):
        SearchEngine.open(tmp_path / "index", encoder=Encoder(tiny_model, pooling="prompt"))
    with pytest.raises(SearchEngineError, match="fingerprint"):
        SearchEngine.open(tmp_path / "index", encoder=Encoder(tiny_model, template=OTHER_TEMPLATE, denoise=True))


# --- CLI ---


def test_cli_index_search_and_info_with_a_template(tiny_model: Path, tmp_path: Path, sentences: list[str]) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    index_dir = tmp_path / "index"
    result = runner.invoke(
        app,
        [
            "index",
            str(corpus),
            "--index-dir",
            str(index_dir),
            "--model",
            str(tiny_model),
            "--template",
            OTHER_TEMPLATE,
            "--denoise",
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    manifest_model = SearchEngine.open(index_dir).encoder.source.prompt
    assert manifest_model == PromptConfig(OTHER_TEMPLATE, True)
    result = runner.invoke(app, ["query", sentences[5], "--index-dir", str(index_dir), "-k", "1"])
    assert result.exit_code == 0 and sentences[5] in result.output, result.output
    result = runner.invoke(app, ["info", "--index-dir", str(index_dir)])
    assert "prompt 'the text" in result.output and "(denoised)" in result.output, result.output
    result = runner.invoke(
        app, ["index", str(corpus), "--index-dir", str(index_dir), "--append", "--template", OTHER_TEMPLATE]
    )
    assert result.exit_code == 1 and "--template" in result.output


def test_cli_bad_template_is_one_line(tiny_model: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat\n", encoding="utf-8")
    result = runner.invoke(
        app,
        [
            "index",
            str(corpus),
            "--index-dir",
            str(tmp_path / "i"),
            "--model",
            str(tiny_model),
            "--template",
            "[X] means",
        ],
    )
    assert result.exit_code == 1, result.output
    assert (
        result.output.startswith("Error: prompt template '[X] means' must contain") and "Traceback" not in result.output
    )


def test_cli_eval_sts_with_prompt_pooling(tiny_model: Path, tmp_path: Path, sentences: list[str]) -> None:
    sts = tmp_path / "sts.tsv"
    rows = [f"{i % 6}\t{a}\t{b}" for i, (a, b) in enumerate(zip(sentences, sentences[1:] + sentences[:1]))]
    sts.write_text("score\tsentence1\tsentence2\n" + "\n".join(rows) + "\n", encoding="utf-8")
    for extra in (["--pooling", "prompt"], ["--template", OTHER_TEMPLATE, "--denoise"]):
        result = runner.invoke(app, ["eval", "sts", str(sts), "--model", str(tiny_model), *extra])
        assert result.exit_code == 0 and "Spearman" in result.output, result.output
    result = runner.invoke(app, ["eval", "sts", str(sts), "--model", str(tiny_model), "--template", "[MASK] only"])
    assert result.exit_code == 1 and result.output.startswith("Error: prompt template"), result.output
