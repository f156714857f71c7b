"""Markdown (.md, .markdown): parsed with markdown-it-py (CommonMark). Headings give the sections, YAML front matter
becomes metadata (its `title` the title, else the first heading), code blocks are kept as text, and inline markup
(emphasis, links, images) leaves its text only."""

from __future__ import annotations

import datetime
import math
import re
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from searchengine.reading.extracted import Extracted, HeadingPath
from searchengine.reading.text import decoded

FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)
_BLOCK_OPENS = {"paragraph_open", "list_item_open", "blockquote_open", "table_open", "tr_open"}


def extract(data: bytes, name: str) -> Extracted:
    """The text, title, sections and blocks of one Markdown file's bytes."""
    source = decoded(data, name)
    extracted = Extracted()
    front = FRONT_MATTER.match(source)
    fields = front_matter(front.group(1)) if front else None
    if fields is not None:
        extracted.metadata = fields
        source = source[front.end() :]
        title = fields.get("title")
        extracted.title = title.strip() if isinstance(title, str) and title.strip() else None
    headings = HeadingPath()
    tokens = MarkdownIt("commonmark").enable("table").parse(source)
    section: str | None = None
    block: list[str] = []
    for position, token in enumerate(tokens):
        if token.type == "heading_open":
            _flush(extracted, block, section)
            block, section = [], None
            heading = inline_text(tokens[position + 1])
            section = headings.enter(int(token.tag[1]), heading)
            if extracted.title is None and heading.strip():
                extracted.title = heading.strip()
            block.append(heading)
            _flush(extracted, block, section)
            block, section = [], None
        elif token.type == "inline" and tokens[position - 1].type != "heading_open":
            block.append(inline_text(token))
        elif token.type in ("fence", "code_block", "html_block"):
            _flush(extracted, block, section)
            block, section = [], None
            extracted.add_block(token.content.rstrip("\n"))
        elif token.type in _BLOCK_OPENS:
            _flush(extracted, block, section)
            block, section = [], None
    _flush(extracted, block, section)
    return extracted


def _flush(extracted: Extracted, block: list[str], section: str | None) -> None:
    extracted.add_block("\n".join(part for part in block if part.strip()), section)


def inline_text(token: Token) -> str:
    """The text an inline token shows: its words, code spans and images' alt text, without the markup."""
    parts: list[str] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n" if child.type == "hardbreak" else " ")
        elif child.type == "image":
            parts.append(inline_text(child))
    return "".join(parts)


FRONT_MATTER_VALUES = 10_000
"""Front matter that would expand to more values than this (YAML aliases repeat what they name: a "billion
laughs" of a few hundred bytes expands to millions) is ignored, and the note read without it."""


def front_matter(yaml_text: str) -> dict[str, Any] | None:
    """The YAML front matter's fields as JSON-ready metadata: dates as ISO text, NaN and infinities left out
    (no filter could compare them). None where the block is not a mapping of fields (a `---` rule above text,
    not front matter); {} where it is front matter that cannot be read (invalid YAML, a bad date, a number too
    long, aliases that expand too far or into themselves): the note is read without it."""
    import yaml

    try:
        node = yaml.compose(yaml_text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):
        return {}
    if not isinstance(node, yaml.MappingNode):
        return None
    try:
        _count_values(node, set(), {})
        data = yaml.load(yaml_text, Loader=yaml.SafeLoader)  # noqa: S506 (SafeLoader)
        fields = {str(key): _json_value(value) for key, value in data.items()}
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return {}
    return {key: value for key, value in fields.items() if value is not _DROP}


def _count_values(node: Any, open_nodes: set[int], counted: dict[int, int]) -> int:  # noqa: ANN401 (a YAML node)
    """How many values `node` expands to, aliases repeated; ValueError past FRONT_MATTER_VALUES or where an
    alias holds itself."""
    if id(node) in counted:
        return counted[id(node)]
    if id(node) in open_nodes:
        raise ValueError("a YAML alias that holds itself")
    open_nodes.add(id(node))
    children = node.value if isinstance(node.value, list) else []
    flat = [part for child in children for part in (child if isinstance(child, tuple) else (child,))]
    total = 1 + sum(_count_values(child, open_nodes, counted) for child in flat)
    open_nodes.discard(id(node))
    if total > FRONT_MATTER_VALUES:
        raise ValueError("front matter too large")
    counted[id(node)] = total
    return total


_DROP = object()


def _json_value(value: Any) -> Any:  # noqa: ANN401 (any YAML value)
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return _DROP
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        items = [_json_value(item) for item in value]
        return [item for item in items if item is not _DROP]
    if isinstance(value, dict):
        items = {str(key): _json_value(item) for key, item in value.items()}
        return {key: item for key, item in items.items() if item is not _DROP}
    return str(value)
