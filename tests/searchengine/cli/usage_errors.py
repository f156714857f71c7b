"""typer's own refusal of an option value it can check itself (a choice, a range), as the CLI tests expect it."""

from __future__ import annotations


def assert_usage_error(result, option: str, *fragments: str) -> None:  # noqa: ANN001 (a typer Result)
    """Exit code 2, typer's usage message naming `option` and holding each fragment, and no traceback."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    text = " ".join(result.output.replace("│", " ").split())  # typer may draw the message in a wrapped box
    assert f"Invalid value for '{option}'" in text, text
    for fragment in fragments:
        assert fragment in text, text
