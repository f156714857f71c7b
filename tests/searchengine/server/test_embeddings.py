"""POST /v1/embeddings through the official `openai` client, pointed at a real uvicorn serving the tiny index."""

from __future__ import annotations

from pathlib import Path

import httpx
import numpy as np
import openai
import pytest

from searchengine.encoding.encoder import Encoder, EncoderSpeed
from searchengine.engine.search_engine import SearchEngine
from searchengine.server.app import ServerSettings, create_app
from searchengine.server.served_index import ServedIndex
from tests.conftest import SENTENCES
from tests.searchengine.server.conftest import running


def _client(url: str, key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0)


def test_the_openai_client_gets_the_vectors_the_index_stores(live_url: str, index_path: Path) -> None:
    model = Path(SearchEngine.open(index_path).info().model).name
    response = _client(live_url).embeddings.create(input=SENTENCES[:3], model=model)  # base64 on the wire
    got = np.array([item.embedding for item in response.data], dtype=np.float32)
    assert [item.index for item in response.data] == [0, 1, 2]
    with SearchEngine.open(index_path) as engine:
        stored = {int(i): vector for ids, vectors in engine.stored_vectors() for i, vector in zip(ids, vectors)}
        hits = [engine.search(text, k=1, mode="dense")[0] for text in SENTENCES[:3]]
    assert [hit.text for hit in hits] == SENTENCES[:3]  # each sentence finds itself: its id holds its stored vector
    ids = [hit.id for hit in hits]
    np.testing.assert_allclose(got, np.array([stored[i] for i in ids]), atol=1e-5)
    assert response.model.endswith(model) and response.usage.prompt_tokens > 0
    assert response.usage.total_tokens == response.usage.prompt_tokens


def test_a_string_input_and_float_format(live_url: str, index_path: Path) -> None:
    model = Path(SearchEngine.open(index_path).info().model).name
    one = _client(live_url).embeddings.create(input="the cat sat on the mat", model=model, encoding_format="float")
    assert len(one.data) == 1 and len(one.data[0].embedding) == 32
    assert abs(np.linalg.norm(one.data[0].embedding) - 1) < 1e-5


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"input": "x", "model": "text-embedding-3-small"}, "this server embeds with '"),
        ({"input": [], "model": None}, "empty list"),
        ({"input": ["fine", "  "], "model": None}, "input 1 is empty"),
        ({"input": [[1, 2, 3]], "model": None}, "send the texts"),
        ({"input": ["fine", {"text": "x"}], "model": None}, "input 1 is a dict, not a text"),
        ({"input": [1, 2, 3], "model": None}, "send the texts"),
        ({"input": ["a", 1], "model": None}, "input 1 is an int, not a text"),
        ({"input": [[1, 2], "b"], "model": None}, "input 0 is a list, not a text"),
        ({"input": "x", "model": None, "dimensions": 8}, "cannot be shortened"),
        ({"input": "x", "model": None, "dimensions": True}, "dimensions: Input should be a valid integer"),
        ({"input": "cat " * 100, "model": None}, "more than the model's 62"),
        ({"input": ["x"] * 257, "model": None}, "257 texts, more than 256"),
    ],
)
def test_bad_requests_get_a_one_line_400(live_url: str, index_path: Path, arguments: dict, message: str) -> None:
    """The reason is where OpenAI's client reads it: its exception's message says it, not only 'Error code: 400'."""
    arguments["model"] = arguments["model"] or Path(SearchEngine.open(index_path).info().model).name
    with pytest.raises(openai.BadRequestError) as caught:
        _client(live_url).embeddings.create(**arguments)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert caught.value.type == "invalid_request_error" and set(caught.value.body) == {
        "message",
        "type",
        "param",
        "code",
    }


def test_a_field_of_the_wrong_form_is_named_as_param(live_url: str, index_path: Path) -> None:
    model = Path(SearchEngine.open(index_path).info().model).name
    with pytest.raises(openai.BadRequestError) as caught:
        _client(live_url).embeddings.create(input="cat", model=model, encoding_format="int8")  # type: ignore[arg-type]
    assert caught.value.param == "encoding_format" and "encoding_format: Input should be" in caught.value.message


def test_errors_outside_the_openai_api_keep_their_one_line(live_url: str) -> None:
    assert httpx.get(f"{live_url}/v1/chat/completions").json()["error"]["message"].startswith("no such endpoint")
    assert isinstance(httpx.get(f"{live_url}/nowhere").json()["error"], str)


def test_the_api_key_of_searches_guards_it(index_path: Path, tiny_encoder: Encoder) -> None:
    served = ServedIndex(index_path, encoder=tiny_encoder)
    try:
        with running(create_app(served, ServerSettings(api_key="sesame", api_key_for="all"))) as url:
            model = Path(served.reader.run(lambda engine: engine.info().model).result()).name
            with pytest.raises(openai.AuthenticationError) as caught:
                _client(url, "wrong").embeddings.create(input="cat", model=model)
            assert "the API key is wrong" in caught.value.message and caught.value.code == "invalid_api_key"
            assert len(_client(url, "sesame").embeddings.create(input="cat", model=model).data) == 1
        with running(create_app(served, ServerSettings(api_key="sesame", api_key_for="writes"))) as url:
            assert len(_client(url, "anything").embeddings.create(input="cat", model=model).data) == 1
    finally:
        served.close()


def test_the_body_limit_holds(index_path: Path, tiny_encoder: Encoder) -> None:
    served = ServedIndex(index_path, encoder=tiny_encoder)
    try:
        with running(create_app(served, ServerSettings(max_body_bytes=1000))) as url:
            response = httpx.post(f"{url}/v1/embeddings", json={"input": ["cat"] * 300, "model": "m"})
        assert response.status_code == 413 and "larger than" in response.json()["error"]["message"]
    finally:
        served.close()


def test_the_models_list_names_the_one_model(live_url: str, index_path: Path) -> None:
    with SearchEngine.open(index_path) as engine:
        name = engine.info().model
    models = _client(live_url).models.list()
    assert [model.id for model in models.data] == [name] and models.data[0].created > 1_700_000_000


def test_one_model_is_looked_up_by_its_id(live_url: str, index_path: Path) -> None:
    """GET /v1/models/{id}, as OpenAI's client asks it: by the id the list gives, or its last part; an unknown id
    gets 404 with OpenAI's code model_not_found."""
    with SearchEngine.open(index_path) as engine:
        name = engine.info().model
    client = _client(live_url)
    listed = client.models.list().data[0]
    assert client.models.retrieve(name) == listed
    assert client.models.retrieve(Path(name).name).id == name
    with pytest.raises(openai.NotFoundError) as caught:
        client.models.retrieve("text-embedding-3-small")
    assert caught.value.code == "model_not_found" and caught.value.param == "model"
    assert "'text-embedding-3-small'" in caught.value.message and name in caught.value.message


def test_a_model_named_at_start_answers_beside_the_index_s(
    index_path: Path, tiny_encoder: Encoder, other_tiny_model: Path
) -> None:
    fp32 = EncoderSpeed(precision="fp32")  # exact vectors on every CPU (auto may pick bf16)
    served = ServedIndex(index_path, encoder=tiny_encoder, speed=fp32, embedding_models=[str(other_tiny_model)])
    try:
        with running(create_app(served, ServerSettings())) as url:
            client = _client(url)
            assert [model.id for model in client.models.list().data][1:] == [str(other_tiny_model)]
            other = client.embeddings.create(input=SENTENCES[:2], model=other_tiny_model.name, encoding_format="float")
            own = client.embeddings.create(input=SENTENCES[:2], model=Path(served.encoder.name).name)
            with pytest.raises(openai.BadRequestError) as caught:
                client.embeddings.create(input="x", model="nomic-embed-text")
        assert other.model == str(other_tiny_model) and other.usage.prompt_tokens == own.usage.prompt_tokens
        expected = Encoder(other_tiny_model, precision="fp32").encode(SENTENCES[:2])
        expected /= np.linalg.norm(expected, axis=1, keepdims=True)
        got = np.array([item.embedding for item in other.data], dtype=np.float32)
        np.testing.assert_allclose(got, expected, atol=1e-5)
        assert not np.allclose(got, np.array([item.embedding for item in own.data], dtype=np.float32), atol=1e-3)
        assert str(other_tiny_model) in caught.value.message and "nomic-embed-text" in caught.value.message
    finally:
        served.close()
