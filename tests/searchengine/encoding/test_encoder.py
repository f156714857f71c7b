"""The encoder on the tiny model: order, batching, pooling, truncation, normalisation."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from searchengine import SearchEngineError
from searchengine.encoding.encoder import Encoder, default_batch_size, default_device
from tests.conftest import write_tiny_model


def test_shape_dtype_and_unit_norm(tiny_encoder: Encoder, sentences: list[str]) -> None:
    vectors = tiny_encoder.encode(sentences)
    assert vectors.shape == (len(sentences), 32) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_smart_batching_keeps_input_order(tiny_encoder: Encoder, sentences: list[str]) -> None:
    one_by_one = np.stack([tiny_encoder.encode([s])[0] for s in sentences])
    for batch_size in (1, 3, 64):
        np.testing.assert_allclose(tiny_encoder.encode(sentences, batch_size=batch_size), one_by_one, atol=1e-5)


def test_padding_does_not_change_a_vector(tiny_encoder: Encoder) -> None:
    short = "the cat sat"
    alone = tiny_encoder.encode([short])[0]
    beside_long = tiny_encoder.encode([short, "the " * 50], batch_size=2)[0]
    np.testing.assert_allclose(alone, beside_long, atol=1e-5)


def test_empty_input(tiny_encoder: Encoder) -> None:
    assert tiny_encoder.encode([]).shape == (0, 32)


@pytest.mark.parametrize(
    ("texts", "refused"),
    [
        ("the cat", r"list of str, such as \['a text'\], not a str"),  # gave seven vectors, one per character
        (b"the cat", "not a bytes"),
        (None, "not a NoneType"),
        (["the cat", None], "text number 2 to encode is a NoneType, not a str"),
        ([b"the cat"], "text number 1 to encode is a bytes, not a str"),
    ],
)
def test_texts_that_are_not_a_list_of_str_are_refused_in_one_line(
    tiny_encoder: Encoder, texts: object, refused: str
) -> None:
    with pytest.raises(SearchEngineError, match=refused):
        tiny_encoder.encode(texts)  # type: ignore[arg-type]


def test_any_iterable_of_texts_is_encoded(tiny_encoder: Encoder, sentences: list[str]) -> None:
    np.testing.assert_allclose(tiny_encoder.encode(iter(sentences)), tiny_encoder.encode(sentences), atol=1e-6)


def test_truncation_is_counted(tiny_model: Path) -> None:
    encoder = Encoder(tiny_model)
    encoder.encode(["short", "word " * 100, "also short", "cat " * 63])
    assert encoder.truncated == 2  # 100 and 63 words + [CLS] + [SEP] exceed 64 tokens
    assert encoder.max_seq_length == 64


@pytest.mark.parametrize("pooling", ["cls", "max", "last2avg", "first_last_avg"])
def test_each_pooling_gives_its_own_vectors(
    tiny_model: Path, tiny_encoder: Encoder, sentences: list[str], pooling: str
) -> None:
    other = Encoder(tiny_model, pooling=pooling)
    assert other.pooling == pooling
    vectors = other.encode(sentences)
    assert vectors.shape == (len(sentences), 32)
    assert not np.allclose(vectors, tiny_encoder.encode(sentences), atol=1e-3)


def test_mean_sqrt_len_scales_the_mean_by_sqrt_of_length(tmp_path: Path) -> None:
    model = write_tiny_model(tmp_path / "raw", normalize=False)
    texts = ["the cat sat", "the storm and cold wind and snow"]  # every word is in the vocabulary
    mean = Encoder(model, precision="fp32").encode(texts)
    scaled = Encoder(model, pooling="mean_sqrt_len", precision="fp32").encode(texts)
    lengths = np.array([5.0, 9.0])  # words + [CLS] + [SEP]
    np.testing.assert_allclose(scaled, mean * np.sqrt(lengths)[:, None], rtol=1e-4)


def test_pooling_comes_from_the_model_config(tmp_path: Path) -> None:
    assert Encoder(write_tiny_model(tmp_path / "cls", pooling="cls")).pooling == "cls"


def test_no_normalize_module_means_raw_vectors(tmp_path: Path, sentences: list[str]) -> None:
    encoder = Encoder(write_tiny_model(tmp_path / "raw", normalize=False))
    norms = np.linalg.norm(encoder.encode(sentences), axis=1)
    assert not np.allclose(norms, 1.0, atol=1e-3)


def test_plain_hugging_face_directory_uses_mean_pooling(
    tmp_path: Path, tiny_encoder: Encoder, sentences: list[str]
) -> None:
    model = write_tiny_model(tmp_path / "hf")
    (model / "modules.json").unlink()
    encoder = Encoder(model, precision="fp32")
    assert (encoder.pooling, encoder.source.normalize) == ("mean", False)
    raw = encoder.encode(sentences)
    np.testing.assert_allclose(
        raw / np.linalg.norm(raw, axis=1, keepdims=True), tiny_encoder.encode(sentences), atol=1e-5
    )


def test_fingerprint_tells_models_apart(tiny_encoder: Encoder, tiny_model: Path, other_tiny_model: Path) -> None:
    assert Encoder(tiny_model).fingerprint == tiny_encoder.fingerprint
    assert Encoder(other_tiny_model).fingerprint != tiny_encoder.fingerprint


def test_without_smart_batching_vectors_are_the_same(
    tiny_model: Path, tiny_encoder: Encoder, sentences: list[str]
) -> None:
    plain = Encoder(tiny_model, precision="fp32", smart_batching=False)
    np.testing.assert_allclose(
        plain.encode(sentences, batch_size=3), tiny_encoder.encode(sentences, batch_size=3), atol=1e-5
    )


def test_threads_apply_while_encoding_only(tiny_model: Path, sentences: list[str]) -> None:
    import torch

    before = torch.get_num_threads()
    seen: list[int] = []
    encoder = Encoder(tiny_model, threads=1, backend="torch")  # ONNX Runtime sets its threads in its session
    original = encoder._encode_batch  # noqa: SLF001

    def spy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    encoder._encode_batch = spy  # noqa: SLF001
    encoder.encode(sentences)
    assert seen and set(seen) == {1}
    assert torch.get_num_threads() == before


def test_threads_sharing_an_encoder_get_the_vectors_it_gives_alone(tiny_encoder: Encoder, sentences: list[str]) -> None:
    import threading

    expected = tiny_encoder.encode(sentences)
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def encode(number: int) -> None:
        try:
            for _ in range(5):
                results[number] = tiny_encoder.encode(sentences[number:] + sentences[:number])
        except BaseException as exc:  # noqa: BLE001 (any error fails the test)
            errors.append(exc)

    threads = [threading.Thread(target=encode, args=(number,)) for number in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for number, vectors in results.items():
        np.testing.assert_allclose(vectors, np.roll(expected, -number, axis=0), atol=1e-5)


def test_a_long_call_tokenizes_in_slices_so_other_threads_get_the_lock_in_between(
    tiny_encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server's writer and its query readers share the encoder's lock; a write of many long documents held it
    for all of its tokenizing at once (15 s for 1,000 long documents, benchmarks/serving/encoder_lock.py)."""
    from searchengine.encoding.passages import passage_spans

    holds: list[int] = []

    class CountingLock:
        def __enter__(self) -> None:
            holds.append(1)

        def __exit__(self, *exc: object) -> None:
            pass

    texts = [f"text {n} " + "the cat sat on the mat " * 100 for n in range(200)]  # 2.3 KB each, 460 KB in all
    slices = 20  # 28 of 16 KB; one before
    monkeypatch.setattr(tiny_encoder, "_lock", CountingLock())
    spans = tiny_encoder.passage_spans(texts, 32, 8)
    assert spans == passage_spans(tiny_encoder.tokenizer, texts, 32, 8)  # slicing changes no span
    assert len(holds) >= slices
    holds.clear()
    vectors = tiny_encoder.encode(texts[:3] + texts)
    assert len(holds) >= slices
    np.testing.assert_allclose(vectors[:3], vectors[3:6], atol=1e-6)


def test_a_gpu_machine_runs_cpu_only_runtimes_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where torch sees a GPU the default device is the GPU, but asking for ONNX Runtime, OpenVINO or int8 (which run
    on the CPU only) picks the CPU instead of refusing (seen on an H200 machine: `--backend onnx` had no way to run)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert default_device() == default_device("torch", "fp16") == "cuda"
    assert default_device("onnx") == default_device("openvino") == default_device("auto", "int8") == "cpu"
    assert (default_batch_size("cuda"), default_batch_size("cuda:1"), default_batch_size("cpu")) == (1024, 1024, 64)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert default_device() == "cpu"


def test_a_batch_the_gpu_has_no_memory_for_is_split(
    tiny_model: Path, sentences: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The large GPU default batch, halved until it fits, gives the vectors one pass would; one text that does not
    fit alone is a clear error."""
    encoder = Encoder(tiny_model, batch_size=16, device="cpu")
    expected = encoder.encode(sentences)
    whole = encoder._encode_batch
    passes: list[int] = []

    def fits_four(ids: list[list[int]], *args: object) -> np.ndarray:
        passes.append(len(ids))
        if len(ids) > 4:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        return whole(ids, *args)

    monkeypatch.setattr(encoder, "_encode_batch", fits_four)
    np.testing.assert_allclose(encoder.encode(sentences), expected, atol=1e-4)  # other shapes round otherwise
    assert max(passes) > 4 and sum(size for size in passes if size <= 4) == len(sentences)
    monkeypatch.setattr(encoder, "_encode_batch", lambda ids, *args: fits_four([*ids, *ids, *ids, *ids, *ids]))
    with pytest.raises(SearchEngineError, match="too little free memory for one text"):
        encoder.encode(sentences[:1])


def test_a_batch_size_below_one_is_refused(tiny_model: Path) -> None:
    for size in (0, -1):
        with pytest.raises(SearchEngineError, match=f"batch_size must be at least 1, not {size}"):
            Encoder(tiny_model, batch_size=size, device="cpu")


def test_a_call_with_a_batch_size_below_one_is_refused(tiny_encoder: Encoder) -> None:
    """A negative batch_size made no forward pass and returned np.empty's garbage as vectors; 0 read as default."""
    for size in (0, -1):
        with pytest.raises(SearchEngineError, match=f"batch_size must be at least 1, not {size}"):
            tiny_encoder.encode(["the cat sat"], size)
        with pytest.raises(SearchEngineError, match=f"batch_size must be at least 1, not {size}"):
            tiny_encoder.encode_queries(["the cat sat"], size)


THREADS_LOADING = """
import sys, threading
from searchengine.encoding.encoder import Encoder
start, failed = threading.Barrier(4), []
def load():
    start.wait()
    try:
        Encoder(sys.argv[1], precision="fp32")
    except Exception as exc:
        failed.append(f"{type(exc).__name__}: {exc}")
threads = [threading.Thread(target=load) for _ in range(4)]
[thread.start() for thread in threads]
[thread.join() for thread in threads]
print(failed)
"""


def test_threads_loading_one_model_at_once_in_a_fresh_process_all_load(tiny_model: Path, tmp_path: Path) -> None:
    """A server's first requests to collections each load their model: transformers imports its classes lazily
    ("module 'transformers' has no attribute 'AutoTokenizer'" in three threads of four) and torch.onnx.export
    keeps global state ("GLOBALS.in_onnx_export must be False"). A fresh process, since this one imported
    transformers long ago, and an empty ONNX cache, so that the export is made."""
    environment = {**os.environ, "SEARCHENGINE_CACHE": str(tmp_path / "cache")}
    completed = subprocess.run(
        [sys.executable, "-c", THREADS_LOADING, str(tiny_model)],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stdout.strip().splitlines()[-1] == "[]", completed.stdout
