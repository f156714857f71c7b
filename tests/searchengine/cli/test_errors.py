"""The command line's error funnel (searchengine/cli/errors.py): one line, and what it says is left. A command that
writes no index (train, eval, analyze) said "the index is as it was before" too, of an index it never had."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
import typer

from searchengine.cli.errors import user_errors


def _refused(error: BaseException, capsys: pytest.CaptureFixture[str], **options: object) -> tuple[int, str]:
    with pytest.raises(typer.Exit) as ended:
        with user_errors(**options):
            raise error
    return ended.value.exit_code, capsys.readouterr().err.strip()


def test_a_command_over_an_index_says_the_index_is_as_it_was(capsys: pytest.CaptureFixture[str]) -> None:
    full = OSError(errno.ENOSPC, "No space left on device", "/data/idx/seg")
    assert _refused(full, capsys, index_dir=Path("/data/idx")) == (
        1,
        "Error: No space left on device at /data/idx/seg: free some space there (or use another disk) and run the "
        "command again; the index is as it was before",
    )
    assert _refused(KeyboardInterrupt(), capsys, index_dir=Path("/data/idx")) == (
        130,
        "Interrupted: nothing was changed; the index at /data/idx is as it was before.",
    )


def test_a_command_without_an_index_says_what_it_leaves(capsys: pytest.CaptureFixture[str]) -> None:
    kept = "the output directory holds the last whole model written there, if any"
    code, said = _refused(OSError(errno.EACCES, "Permission denied", "/models/m"), capsys, kept=kept)
    assert code == 1 and said.endswith(f"use another path; {kept}") and "index" not in said
    assert _refused(KeyboardInterrupt(), capsys, kept=kept) == (130, f"Interrupted: {kept}.")
    assert _refused(KeyboardInterrupt(), capsys, kept="nothing was written") == (130, "Interrupted: nothing was written.")
