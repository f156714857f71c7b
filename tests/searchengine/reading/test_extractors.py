"""Each extractor on a small file of its format: text, title, sections and blocks, and the files it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchengine.reading import html, markdown, pdf, text
from searchengine.reading.extracted import Unreadable
from tests.searchengine.reading.made_files import HTML, MARKDOWN, encrypted_pdf, pdf_bytes, scanned_pdf


def test_markdown_keeps_headings_front_matter_and_code_but_not_markup() -> None:
    extracted = markdown.extract(MARKDOWN.encode(), "garden.md")
    assert extracted.title == "Garden notes"
    assert extracted.metadata == {"title": "Garden notes", "tags": ["plants", "soil"], "year": 2024}
    assert [label for _, label in extracted.sections] == ["Watering", "Watering › In winter", "Harvest"]
    body = extracted.text
    assert "Water the seed every morning" in body and "**" not in body
    assert "See the guide." in body and "example.org" not in body
    assert 'print("code is kept")' in body and "title: Garden notes" not in body
    for start, label in extracted.sections:
        assert body[start:].startswith(label.rsplit(" › ", 1)[-1])
    assert all(body[start - 2 : start] == "\n\n" for start in extracted.blocks[1:])


def test_markdown_without_front_matter_takes_its_title_from_the_first_heading() -> None:
    extracted = markdown.extract(b"Intro line.\n\n# The Title\n\nBody.\n", "x.md")
    assert extracted.title == "The Title" and extracted.metadata == {}


def test_front_matter_dates_become_text_and_nan_is_left_out() -> None:
    extracted = markdown.extract(b"---\ndate: 2024-05-01\nscore: .nan\n---\nText.\n", "x.md")
    assert extracted.metadata == {"date": "2024-05-01"}


def test_html_drops_scripts_navigation_and_footers_and_keeps_headings() -> None:
    extracted = html.extract(HTML.encode(), "bike.html")
    assert extracted.title == "Bike repair"
    assert [label for _, label in extracted.sections] == [
        "Fixing a flat tire",
        "Fixing a flat tire › Patching the tube",
    ]
    body = extracted.text
    assert "find the hole" in body and "press the patch on" in body
    for noise in ("tracking", "color: red", "Home | About", "Copyright", "DOCTYPE"):
        assert noise not in body


@pytest.mark.parametrize(
    ("page", "sections", "kept", "dropped"),
    [
        pytest.param(
            '<main><h1>Built-in Types<a class="headerlink" href="#types">¶</a></h1><p>Truth.</p>'
            '<h2><a class="toc-backref" href="#id1">Boolean <code>and</code>, <code>or</code></a>'
            '<a class="headerlink" href="#b">¶</a></h2><p>Operations.</p></main>',
            ["Built-in Types", "Built-in Types › Boolean and, or"],
            [],
            ["¶"],
            id="sphinx-pilcrow-neither-in-text-nor-in-section",
        ),
        pytest.param(
            '<main><h1>Setup <a class="hash-link" href="#setup">\u200b</a></h1><p>Install it.</p>'
            '<h2><a class="anchor" href="#use">#</a> Use</h2><p>Run it, as in <a href="#setup">Setup</a> §2.</p>'
            '<p><a href="#top">↑</a></p></main>',
            ["Setup", "Setup › Use"],
            ["Run it, as in Setup §2."],
            ["#", "↑", "\u200b"],
            id="symbol-links-to-the-page-dropped-worded-ones-kept",
        ),
    ],
)
def test_links_to_the_page_itself_that_are_only_symbols_are_dropped(
    page: str, sections: list[str], kept: list[str], dropped: list[str]
) -> None:
    extracted = html.extract(page.encode(), "page.html")
    assert [label for _, label in extracted.sections] == sections
    assert all(text in extracted.text for text in kept)
    assert not any(text in extracted.text for text in dropped)


def test_broken_html_is_still_read() -> None:
    extracted = html.extract(b"<html><body><p>Unclosed <b>bold <div>text</p></span>", "broken.html")
    assert "Unclosed bold" in extracted.text and "text" in extracted.text


def test_pdf_pages_are_sections(tmp_path: Path) -> None:
    extracted = pdf.extract(pdf_bytes(["First page text.", "Second page text."]), "two.pdf")
    assert [label for _, label in extracted.sections] == ["page 1", "page 2"]
    assert extracted.text[extracted.sections[1][0] :].startswith("Second page text.")
    assert extracted.title == "First page text."


def test_encrypted_and_scanned_pdfs_are_unreadable_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(Unreadable, match="encrypted"):
        pdf.extract(encrypted_pdf(tmp_path / "locked.pdf", ["Hidden."]).read_bytes(), "locked.pdf")
    with pytest.raises(Unreadable, match="OCR"):
        pdf.extract(scanned_pdf(tmp_path / "scan.pdf").read_bytes(), "scan.pdf")
    with pytest.raises(Unreadable, match="not a PDF"):
        pdf.extract(b"%PDF-1.4 then nothing", "cut.pdf")


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"", "is empty (0 bytes)"),
        (b"\n<!DOCTYPE html><html><body>Tea</body></html>", "it looks like HTML; rename it .html"),
        (b'<?xml version="1.0"?><svg/>', "it looks like XML, which is not read"),
        (b'<?xml version="1.0"?>\n<html xmlns="http://www.w3.org/1999/xhtml"/>', "it looks like HTML; rename"),
        ("Notes on tea, caf\u00e9.\n".encode(), "it looks like text; rename it .txt"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "it looks like another kind of file"),
    ],
)
def test_a_file_that_is_not_a_pdf_at_all_is_named_as_what_it_looks_like(data: bytes, said: str) -> None:
    """pypdf's own error ("Stream has ended unexpectedly") sent a user looking for a damaged PDF, where the file was
    a web page saved as .pdf (hostile tester's finding)."""
    with pytest.raises(Unreadable) as refused:
        pdf.extract(data, "fake.pdf")
    assert said in str(refused.value) and "pypdf" not in str(refused.value)


def test_text_is_utf8_or_unreadable() -> None:
    assert text.extract("Café au lait.\n\nSecond paragraph.".encode(), "x.txt").blocks == [0, 15]
    with pytest.raises(Unreadable, match="iconv"):
        text.extract("Café".encode("latin-1"), "latin.txt")
    with pytest.raises(Unreadable, match="binary"):
        markdown.extract(b"\x89PNG\r\n\x1a\n\x00\x00", "image.md")


@pytest.mark.parametrize("encoding", ["UTF-16LE", "UTF-16BE"])
def test_utf16_without_a_byte_order_mark_is_named_with_the_command_that_converts_it(encoding: str) -> None:
    """Windows tools write UTF-16 without the mark too; "binary data" would send the user looking for the wrong
    problem."""
    with pytest.raises(Unreadable, match=f"looks like {encoding} text without a byte order mark.*iconv -f {encoding}"):
        text.extract("Café notes, line one.\n".encode(encoding.lower()), "notes.txt")


@pytest.mark.parametrize(
    "data",
    [b"\x89PNG\r\n\x1a\n\x00\x00", b"\x00\x00\x00\x00\x01\x02", b"abc\x00", bytes(range(256)) * 4],
)
def test_binary_data_is_not_taken_for_utf16(data: bytes) -> None:
    with pytest.raises(Unreadable, match="binary data, not text"):
        text.extract(data, "data.txt")
