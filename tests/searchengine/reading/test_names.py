"""File names shown on one line of output (searchengine/reading/names.py)."""

from __future__ import annotations

import os

import pytest

from searchengine.reading.names import is_utf8, printable


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("notes/plain.md", "notes/plain.md"),
        ("café.md", "café.md"),
        (os.fsdecode(b"bad\xffname.txt"), r"bad\xffname.txt"),  # the undecodable byte, escaped once
        ("name\nwith newline.txt", r"name\nwith newline.txt"),
        ("été\tdraft.md", r"été\tdraft.md"),  # an accented letter beside a control character stays readable
        (os.fsdecode(b"caf\xe9\n.md"), r"caf\xe9\n.md"),
    ],
)
def test_a_name_is_shown_on_one_line_with_each_escape_written_once(name: str, shown: str) -> None:
    assert printable(name) == shown


def test_a_name_with_undecodable_bytes_is_not_utf8() -> None:
    assert is_utf8("café.md")
    assert not is_utf8(os.fsdecode(b"caf\xe9.md"))
