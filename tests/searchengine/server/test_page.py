"""The search page in a real headless Chromium (Debian's, driven by Playwright): type a query, see the expected
result; add a filter, see only matching results. Skips, saying why, where Chromium or Playwright is missing
(.ci/run installs both); the `page` fixture is in conftest.py."""

from __future__ import annotations

from searchengine.server.served_index import ServedIndex


def test_typing_a_query_shows_the_expected_result_first(page) -> None:  # noqa: ANN001 (a Playwright Page)
    assert "12 documents" in page.inner_text("#summary")
    page.fill("#q", "the cat sat on the mat")
    page.press("#q", "Enter")
    page.wait_for_selector("li.hit")
    hits = page.locator("li.hit")
    assert hits.count() == 10
    first = hits.nth(0)
    assert first.locator(".text").inner_text() == "the cat sat on the mat"
    meta = first.locator(".meta").inner_text()
    assert "cosine 1.0000" in meta and "found by dense + keyword" in meta  # hybrid, the default mode
    assert "lang: en" in first.locator(".chips").inner_text()
    assert "results in" in page.inner_text("#status")
    assert "q=the+cat+sat+on+the+mat" in page.url  # the search can be linked to


def test_a_filter_and_k_narrow_the_results(page) -> None:  # noqa: ANN001
    page.fill("#q", "how do i reset my password")
    page.fill("#k", "3")
    page.click("#add-filter")
    page.fill("#filters input", "lang=de")
    page.click("#go")
    page.wait_for_selector("li.hit")
    chips = page.locator("li.hit .chips").all_inner_texts()
    assert len(chips) == 3 and all("lang: de" in chip for chip in chips)
    assert page.locator("li.hit .text").first.inner_text() == "how do i reset my password"


def test_a_bad_filter_shows_the_servers_message(page) -> None:  # noqa: ANN001
    page.fill("#q", "cat")
    page.click("#add-filter")
    page.fill("#filters input", "colour=red")
    page.press("#q", "Enter")
    page.wait_for_selector("#status.error")
    assert "no document has a field 'colour'" in page.inner_text("#status")
    assert page.locator("li.hit").count() == 0


def test_the_mode_menu_offers_each_mode_and_keyword_finds_only_the_word(page) -> None:  # noqa: ANN001
    assert page.locator("#mode option").all_inner_texts() == [
        "dense (cosine)",
        "keyword (BM25)",
        "hybrid (dense + keyword)",
        "mmr (diverse cosine)",
    ]
    assert page.input_value("#mode") == "hybrid"
    page.select_option("#mode", "keyword")
    page.fill("#q", "piano")
    page.press("#q", "Enter")
    page.wait_for_selector("li.hit")
    assert page.locator("li.hit .text").all_inner_texts() == ["she played a song on the piano"]
    assert "mode=keyword" in page.url and ", keyword" in page.inner_text("#status")


def _first_marked_hit(page, served: ServedIndex, text: str, query: str):  # noqa: ANN001, ANN202 (Playwright)
    """Add `text`, search `query` by keyword on the page, and give the first hit once its words are marked."""
    served.writer.submit(lambda engine: engine.add([text])).result()
    page.select_option("#mode", "keyword")
    page.fill("#q", query)
    page.press("#q", "Enter")
    page.wait_for_selector("li.hit mark")
    return page.locator("li.hit").first


def test_the_query_words_are_marked_and_document_text_is_never_html(page, served: ServedIndex) -> None:  # noqa: ANN001
    text = "Intro line about nothing. The <b>piano</b> tuner fixed the piano keys today, <img src=x onerror=alert(1)>."
    first = _first_marked_hit(page, served, text, "piano tuner")
    assert first.locator(".text mark").all_inner_texts() == ["piano", "tuner", "piano"]
    assert first.locator(".text").inner_text().startswith("…The <b>piano</b> tuner")  # shown as text, from its sentence
    assert first.locator(".text b").count() == 0 and first.locator("img").count() == 0
    assert "Intro line" not in first.locator(".whole").inner_text()  # folded
    first.locator(".whole summary").click()
    assert "Intro line" in first.locator(".whole").inner_text()  # the whole text is one click away


def test_a_file_hit_shows_its_title_and_page_and_no_file_facts(page, served: ServedIndex) -> None:  # noqa: ANN001
    from searchengine.indexer.tables.store import Document

    page_document = Document(
        "The oven must be hot before the bread goes in.",
        metadata={"path": "manual.pdf", "title": "Baking manual", "page": 3, "sections": [[0, "page 3"]],
                  "sha256": "0" * 64, "size": 10, "mtime_ns": 1, "file": "/x/manual.pdf", "format": "pdf"},
        external_id="manual.pdf#3",
    )  # fmt: skip
    served.writer.submit(lambda engine: engine.add([page_document])).result()
    page.select_option("#mode", "keyword")
    page.fill("#q", "oven bread")
    page.press("#q", "Enter")
    page.wait_for_selector("li.hit .title")
    first = page.locator("li.hit", has=page.locator(".title")).first
    assert first.locator(".title").inner_text() == "Baking manual"
    assert "manual.pdf#3" in first.locator(".meta").inner_text() and "page 3" in first.locator(".meta").inner_text()
    assert "sha256" not in first.inner_text() and "sections" not in first.inner_text()


def test_a_chip_filters_on_its_field_and_value_whatever_they_hold(page, served: ServedIndex) -> None:  # noqa: ANN001
    from searchengine.indexer.tables.store import Document

    odd = {"zip": "2004", "my field": "x", "note": "cats or dogs", "said": 'a "quote"', "empty": ""}
    served.writer.submit(lambda engine: engine.add([Document("the violin case is open", metadata=odd)])).result()
    for field in odd:
        page.goto(page.url.split("?")[0] + "?q=violin&mode=keyword")
        page.wait_for_selector("li.hit .chip")
        page.locator("li.hit .chip", has_text=f"{field}: ").first.click()
        page.wait_for_function(
            "location.search.includes('where=') && !document.getElementById('status').textContent.startsWith('Search')"
        )
        assert page.inner_text("#status").startswith("1 results in"), (field, page.inner_text("#status"))
        assert page.locator("li.hit .text").all_inner_texts() == ["the violin case is open"]


def test_marks_fall_on_the_query_words_after_characters_outside_the_bmp(page, served: ServedIndex) -> None:  # noqa: ANN001
    """The server's offsets count characters (code points), JavaScript's strings UTF-16 units: each emoji before a
    word moved its mark one unit to the left."""
    text = "🎻🎻🎻 The 𝄞 violin tuner fixed the violin today."
    first = _first_marked_hit(page, served, text, "violin tuner")
    assert first.locator(".text mark").all_inner_texts() == ["violin", "tuner", "violin"]
    assert first.locator(".text").inner_text() == text
    assert first.locator(".whole").count() == 0  # the highlight spans the whole text: nothing folded
