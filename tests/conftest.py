"""Shared fixtures: a tiny BERT built offline (2 layers, hidden 32, its own vocabulary) in the
sentence-transformers layout, so unit tests run in seconds without the bundled model."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from searchengine.training.threads import use_passive_openmp_waits

# Before torch and faiss load their OpenMP runtimes, in this process and in the subprocesses the tests start: with
# OpenMP's default spinning waits, a loaded machine (two xdist workers and their subprocesses on 2 cores) runs
# OpenMP code many times slower (faiss training OPQ8 on 500 vectors of 32 dimensions: 53 s spinning, 1.1 s passive).
use_passive_openmp_waits()

import torch  # noqa: E402
from xdist.remote import Producer  # noqa: E402

from tests.xdist_schedule import LongestFirstScheduling  # noqa: E402

WORDS = (
    "the a an and or of to in on at for with from by is are was were be been it this that these those i you he "
    "she we they my your his her our their not no yes do does did how what why when where who which can could "
    "will would should reset password account login email cat dog mat sat ran garden plant seed water soil sun "
    "moon star planet space rocket bank money stock price market fell rose rate music guitar piano song play "
    "cook recipe bread oven salt sugar soup travel train plane ticket hotel city road car bike wheel tire "
    "history war king queen empire code python bug test file data server network weather rain snow wind cold "
    "hot storm game team ball goal score win lose health sleep run walk heart doctor"
).split()


def write_tiny_model(directory: Path, seed: int = 0, pooling: str = "mean", normalize: bool = True) -> Path:
    """Write a random 2-layer BERT with a word-piece vocabulary that covers any ASCII text."""
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertModel, BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    pieces = list(string.ascii_lowercase + string.digits + string.punctuation)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *pieces, *("##" + p for p in pieces), *WORDS]
    vocab_file = directory / "vocab.txt"
    vocab_file.write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(
        tokenizer_object=BertWordPieceTokenizer(str(vocab_file), lowercase=True)._tokenizer,
        model_max_length=64,
        **{f"{name}_token": f"[{name.upper()}]" for name in ("unk", "sep", "pad", "cls", "mask")},
    )
    tokenizer.save_pretrained(directory)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    model = BertModel(config)
    with torch.no_grad():  # BERT's 0.02 init makes mean-pooled vectors depend on length alone; spread words out
        model.embeddings.word_embeddings.weight.normal_(0.0, 1.0)
    model.save_pretrained(directory, safe_serialization=True)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
    (directory / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    (directory / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": 64, "do_lower_case": False}), encoding="utf-8"
    )
    (directory / "1_Pooling").mkdir(exist_ok=True)
    flags = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens", "max": "pooling_mode_max_tokens"}
    (directory / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 32, **{flag: mode == pooling for mode, flag in flags.items()}}),
        encoding="utf-8",
    )
    return directory


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> LongestFirstScheduling | None:
    """`--dist loadfile` (pyproject.toml's addopts) hands out the longest test files first: tests/xdist_schedule.py."""
    return LongestFirstScheduling(config, log) if config.getvalue("dist") == "loadfile" else None


@pytest.fixture(scope="session", autouse=True)
def no_server_from_the_environment() -> None:
    """`searchengine query` asks $SEARCHENGINE_SERVER when it is set: the tests query their own indexes."""
    import os

    os.environ.pop("SEARCHENGINE_SERVER", None)
    os.environ.pop("SEARCHENGINE_API_KEY", None)


@pytest.fixture(scope="session", autouse=True)
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ONNX exports (the encoder's default backend where onnxruntime is installed) go to a temporary folder, not
    the user's cache; set in the environment so the CLI and benchmark subprocesses use it too."""
    import os

    path = tmp_path_factory.mktemp("searchengine-cache")
    os.environ["SEARCHENGINE_CACHE"] = str(path)
    return path


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def other_tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Same architecture and vocabulary, different weights: must not be mistaken for `tiny_model`."""
    return write_tiny_model(tmp_path_factory.mktemp("other-tiny-model"), seed=1)


@pytest.fixture(scope="session")
def tiny_encoder(tiny_model: Path):
    from searchengine.encoding.encoder import Encoder

    return Encoder(tiny_model, precision="fp32")  # exact vectors on every CPU (auto may pick bf16)


SENTENCES = [
    "how do i reset my password",
    "the cat sat on the mat",
    "stock prices fell as the market rate rose",
    "plant the seed in warm soil and water it",
    "the rocket flew past the moon toward a distant planet",
    "bake the bread in a hot oven with salt",
    "the team scored a late goal to win the game",
    "a storm brought cold wind and snow to the city",
    "fix the bug in the python code before the test",
    "she played a song on the piano",
    "buy a train ticket and book a hotel",
    "the king and queen ruled the empire",
]


@pytest.fixture
def sentences() -> list[str]:
    return list(SENTENCES)
