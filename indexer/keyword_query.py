"""A user's query text as an SQLite FTS5 match expression: its words, each quoted as an FTS5 string and OR-ed.

Quoting makes every word a plain term, so nothing the user types is FTS5 syntax: quotes, `*`, `^`, `:`, `-`,
parentheses and the words AND, OR, NOT and NEAR are searched for (or dropped, for punctuation), never obeyed.
OR-ing the terms lets BM25 rank documents by how many of them they hold, as a keyword search engine does."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+")
"""A run of letters, digits and underscores (any script); the FTS5 tokenizer splits it further where it differs."""


def keyword_terms(text: str) -> list[str]:
    """The distinct words of `text`, lower-cased, in the order they first appear."""
    return list(dict.fromkeys(word.lower() for word in _WORD.findall(text)))


def match_expression(text: str) -> str | None:
    """The FTS5 MATCH expression that finds documents holding any word of `text`; None when it has no words."""
    terms = keyword_terms(text)
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)  # a word (\w+) holds no quote to escape
