"""benchmarks/datasets/get_data.py's layout step on small files shaped like the real downloads (nothing is downloaded): the
folder it writes is read by the same readers the benchmarks and `searchengine train`/`eval` use."""

from __future__ import annotations

import csv
import gzip
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

from searchengine.evaluation.labelled_data import read_labelled_pairs, read_scored_pairs, read_triplets
from searchengine.evaluation.retrieval import read_retrieval_set

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "datasets" / "get_data.py"


def write_gzip(path: Path, text: str) -> None:
    path.write_bytes(gzip.compress(text.encode("utf-8")))


def write_downloads(folder: Path) -> None:
    """One small file per download, in the columns and quirks of the real one."""
    folder.mkdir()
    sts = ["split\tgenre\tdataset\tyear\tsid\tscore\tsentence1\tsentence2"]
    for split, count in (("train", 3), ("dev", 2), ("test", 2)):
        sts += [
            f'{split}\tmain-captions\tMSRvid\t2012test\t{i}\t{i}.5\t"A man" plays {i}. \tA  man plays.'
            for i in range(count)
        ]
    write_gzip(folder / "stsbenchmark.tsv.gz", "\n".join(sts) + "\n")
    write_gzip(
        folder / "AllNLI.tsv.gz",
        "split\tdataset\tsentence1\tsentence2\tlabel\n"
        "train\tSNLI\tA dog runs.\tAn animal moves.\tentailment\n"
        "train\tMultiNLI\tA dog runs.\tA cat sleeps.\tcontradiction\n"
        "dev\tSNLI\tA man sings.\tSomeone sings.\tentailment\n",
    )
    with (folder / "nli_for_simcse.csv").open("w", encoding="utf-8", newline="") as sink:
        writer = csv.writer(sink)
        writer.writerow(["sent0", "sent1", "hard_neg"])
        writer.writerow(["A dog runs, fast.", "An animal moves.", "A dog sleeps."])
    (folder / "wiki1m_for_simcse.txt").write_text(
        "First sentence.\nSecond sentence.\n\nFirst sentence.\n", encoding="utf-8"
    )
    for name in ("nfcorpus", "arguana"):
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            corpus = [{"_id": f"d{i}", "title": f"Title {i}", "text": f"Text {i}.", "metadata": {}} for i in range(3)]
            archive.writestr(f"{name}/corpus.jsonl", "".join(json.dumps(row) + "\n" for row in corpus))
            queries = [{"_id": f"q{i}", "text": f"Query {i}?", "metadata": {}} for i in range(3)]
            archive.writestr(f"{name}/queries.jsonl", "".join(json.dumps(row) + "\n" for row in queries))
            archive.writestr(f"{name}/qrels/test.tsv", "query-id\tcorpus-id\tscore\r\nq0\td0\t1\r\nq2\td1\t2\r\n")
        (folder / f"{name}.zip").write_bytes(buffer.getvalue())


def test_downloaded_files_are_laid_out_as_the_benchmarks_read_them(tmp_path: Path) -> None:
    write_downloads(tmp_path / "downloads")
    out = tmp_path / "data"
    subprocess.run(
        [sys.executable, str(SCRIPT), str(out), "--downloads", str(tmp_path / "downloads")], check=True, timeout=120
    )
    assert [len(read_scored_pairs(out / "stsb" / f"{split}.tsv")) for split in ("train", "dev", "test")] == [3, 2, 2]
    pair = read_scored_pairs(out / "stsb" / "train.tsv")[1]
    assert (pair.first, pair.second) == ('"A man" plays 1.', "A  man plays.")  # stripped, otherwise as released
    assert len(read_labelled_pairs(out / "nli" / "train.tsv.gz")) == 2  # the train split only
    assert read_triplets(out / "nli" / "triplets.tsv.gz")[0].anchor == "A dog runs, fast."
    sentences = gzip.decompress((out / "unsup" / "wiki_sentences.txt.gz").read_bytes()).decode("utf-8").splitlines()
    assert sorted(sentences) == ["First sentence.", "Second sentence."]
    for name in ("nfcorpus", "arguana"):
        folder = out / "retrieval" / name
        data = read_retrieval_set(folder / "corpus.jsonl", folder / "queries.jsonl", folder / "qrels_test.tsv")
        assert data.query_ids == ["q0", "q2"]  # only the queries with test judgements
        assert data.qrels == {"q0": {"d0": 1}, "q2": {"d1": 2}}


def test_an_unknown_part_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "data"), "--only", "stsb,wikipedia"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "unknown part wikipedia" in result.stderr
