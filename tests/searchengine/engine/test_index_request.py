"""IndexRequest: `searchengine index` and `add` as one request, refused when made (before any file is read) for
options that cannot go together, and run in the engine: the CLI's rules hold for a Python caller too."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchengine.encoding.speed import EncoderSpeed
from searchengine.engine.index_request import APPEND_KEEPS_SHARDS, IndexRequest
from searchengine.errors import SearchEngineError
from tests.conftest import SENTENCES


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"ray_workers": 2}, "--ray-workers says how many Ray workers embed; add --ray ADDRESS"),
        ({"ray_part_size": 10}, "--ray-part-size says how Ray workers cut the corpus; add --ray ADDRESS"),
        ({"append": True, "whiten_k": 8}, "--append adds to an index with the settings it was built with"),
        ({"append": True, "passages": False}, "--append adds to an index with the settings it was built with"),
        ({"append": True, "shards": 2}, APPEND_KEEPS_SHARDS),
        ({"append": True, "ray": "local"}, APPEND_KEEPS_SHARDS),
        ({"whiten_fit": Path("fit.txt")}, "--whiten-fit says what to fit whitening on; add --whiten-k K"),
        ({"whole": False, "inputs": ["a/", "b.md"]}, "--lines reads one .txt corpus file"),
    ],
)
def test_options_that_cannot_go_together_are_refused_before_reading(
    tmp_path: Path, options: dict, message: str
) -> None:
    fields = {"inputs": [str(tmp_path / "never-read.txt")], "target": tmp_path / "index", **options}
    with pytest.raises(SearchEngineError, match=message):
        IndexRequest(**fields)
    assert not (tmp_path / "index").exists()


def test_two_corpus_files_and_an_empty_path_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SearchEngineError, match="an empty path was given"):
        IndexRequest(["", "notes.txt"], tmp_path / "index")
    with pytest.raises(SearchEngineError, match="index one corpus file at a time"):
        IndexRequest([str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")], tmp_path / "index", ray="local")


def test_a_request_builds_then_appends(tmp_path: Path, tiny_model: Path) -> None:
    corpus, more = tmp_path / "corpus.txt", tmp_path / "more.txt"
    corpus.write_text("\n".join(SENTENCES[:6]) + "\n")
    more.write_text("\n".join(SENTENCES[6:9]) + "\n")
    speed = EncoderSpeed("fp32")
    built = IndexRequest([str(corpus)], tmp_path / "index", model=str(tiny_model), speed=speed, progress=False).run()
    assert built.files is None and built.report.added == 6 and len(built.engine) == 6
    built.engine.close()
    added = IndexRequest([str(more)], tmp_path / "index", append=True, speed=speed, progress=False).run()
    assert added.report.added == 3 and len(added.engine) == 9
    assert added.engine.search(SENTENCES[7], k=1, mode="dense")[0].text == SENTENCES[7]
    added.engine.close()
