"""`searchengine serve` as a user runs it: a real process on a free 127.0.0.1 port that picks up a write made by
`searchengine add` in another process, answers `searchengine query --server`, and stops cleanly on Ctrl+C."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from searchengine.cli import app
from tests.searchengine.cli.usage_errors import assert_usage_error
from tests.serving import serve_process

CLI = [sys.executable, "-m", "searchengine"]


@pytest.fixture
def serving(index_path: Path, tmp_path: Path) -> Iterator[str]:
    with serve_process(["-d", str(index_path)], tmp_path / "serve.log") as address:
        yield address


def test_serve_picks_up_an_outside_add_without_failing_a_request(
    serving: str, index_path: Path, tmp_path: Path
) -> None:
    failures: list[str] = []
    answered = 0
    done = threading.Event()

    def search() -> None:
        nonlocal answered
        with httpx.Client(base_url=serving, timeout=60) as client:
            while not done.is_set():
                response = client.get("/search", params={"q": "the cat sat on the mat", "k": 5})
                if response.status_code != 200:
                    failures.append(response.text)
                    return
                answered += 1
                time.sleep(0.02)  # leave the two cores to the server and the writer

    readers = [threading.Thread(target=search) for _ in range(2)]
    for thread in readers:
        thread.start()
    corpus = tmp_path / "more.txt"
    corpus.write_text("a line added from another process\n", encoding="utf-8")
    added = subprocess.run([*CLI, "add", str(corpus), "-d", str(index_path), "-q"], capture_output=True, text=True)
    assert added.returncode == 0, added.stderr
    asked = subprocess.run(
        [*CLI, "query", "a line added from another process", "-k", "1", "--server", serving],
        capture_output=True,
        text=True,
    )
    done.set()
    for thread in readers:
        thread.join()
    assert asked.returncode == 0, asked.stderr
    assert "#12" in asked.stdout and "a line added from another process" in asked.stdout
    assert not failures, failures
    assert answered > 0


def test_serve_refuses_a_busy_port_in_one_line(index_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = str(busy.getsockname()[1])
        result = CliRunner().invoke(app, ["serve", "-d", str(index_path), "--port", port])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: cannot listen on 127.0.0.1:{port} (Address already in use); choose another --port or --host"
    ]


def test_serve_without_an_index_says_so_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["serve", "-d", str(tmp_path / "none"), "--port", "0"])
    assert result.exit_code == 1 and result.output.startswith("Error: no index at")
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("0", "greater than or equal to 1"),
        ("-2", "greater than or equal to 1"),
        ("65", "less than or equal to 64"),
        ("100000000000", "less than or equal to 64"),  # it used to build that many threads, then hang
        ("2.5", "valid integer"),
        ("two", "valid integer"),
    ],
)
def test_serve_refuses_a_reader_count_out_of_range_before_opening_anything(
    tmp_path: Path, value: str, fragment: str
) -> None:
    result = CliRunner().invoke(app, ["serve", "-d", str(tmp_path / "none"), "--port", "0", "--readers", value])
    assert_usage_error(result, "--readers", fragment)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--host", ""], "--host is empty, which would listen on every interface; give an address"),
        (["--host", " "], "--host is empty, which would listen on every interface; give an address"),
        (["--api-key-for", "all"], "--api-key-for all guards searches with the API key, but none is given"),
    ],
)
def test_serve_refuses_options_that_would_leave_it_more_open_than_asked(
    index_path: Path, options: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty --host listened on 0.0.0.0; --api-key-for all without a key served every search unguarded."""
    import uvicorn

    def served(*_args: object, **_kwargs: object) -> None:
        raise AssertionError(f"serve {options} started serving")

    monkeypatch.setattr(uvicorn.Server, "run", served)
    result = CliRunner(env={"SEARCHENGINE_API_KEY": None}).invoke(
        app, ["serve", "-d", str(index_path), "--port", "0", *options]
    )
    assert result.exit_code == 1 and result.output.startswith(f"Error: {message}"), result.output
    assert len(result.output.strip().splitlines()) == 1


def test_query_server_needs_a_reachable_server_and_no_local_options(tmp_path: Path) -> None:
    runner = CliRunner()
    unreachable = runner.invoke(app, ["query", "cat", "--server", "http://127.0.0.1:9"])
    assert unreachable.exit_code == 1
    assert "cannot reach a searchengine server at http://127.0.0.1:9" in unreachable.output
    mixed = runner.invoke(app, ["query", "cat", "--server", "http://127.0.0.1:9", "-d", str(tmp_path)])
    assert mixed.exit_code == 1 and "drop --index-dir" in mixed.output
    from_environment = runner.invoke(app, ["query", "cat"], env={"SEARCHENGINE_SERVER": "127.0.0.1:9"})
    assert from_environment.exit_code == 1 and "needs http://" in from_environment.output
