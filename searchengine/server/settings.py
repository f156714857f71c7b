"""What `searchengine serve` is started with besides the index: the API key, what it guards, the body limit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from searchengine.errors import SearchEngineError
from searchengine.server.collection_keys import CollectionKeys
from searchengine.server.limits import MAX_BODY_BYTES

API_KEY_SCOPES = ("writes", "all")


@dataclass(frozen=True)
class ServerSettings:
    api_key: str | None = None
    """Required as `Authorization: Bearer KEY` on what `api_key_for` names; None: no key anywhere."""
    api_key_for: Literal["writes", "all"] = "writes"
    """"writes": POST /documents and DELETE; "all": every endpoint but /health and the static page and docs."""
    max_body_bytes: int = MAX_BODY_BYTES
    collection_keys: CollectionKeys = field(default_factory=dict)
    """Keys of single collections, read-only or read-write (searchengine.server.collection_keys)."""

    def __post_init__(self) -> None:
        if self.api_key_for not in API_KEY_SCOPES:
            raise SearchEngineError(f"the API key guards 'writes' or 'all', not {self.api_key_for!r}")
        if self.api_key is not None and not self.api_key.strip():
            raise SearchEngineError("the API key is empty; give a non-empty key or none")

    @property
    def read_key(self) -> str | None:
        """The key searches, /info and the embeddings need: the API key when it guards all, else none."""
        return self.api_key if self.api_key_for == "all" else None
