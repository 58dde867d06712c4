"""Signet's content normalisation and content hash (daemon content-normalization.ts)."""

from __future__ import annotations

import hashlib
import re

__all__ = ["content_hash", "normalized_content", "storage_content"]

_WS = re.compile(r"\s+")
_TRAILING_PUNCT = re.compile(r"[.,!?;:]+$")


def storage_content(text: str) -> str:
    """Trim and collapse whitespace: the text stored in `memories.content`."""
    return _WS.sub(" ", text).strip()


def normalized_content(text: str) -> str:
    """Lower-cased storage content without trailing `.,!?;:`: `memories.normalized_content`."""
    return _TRAILING_PUNCT.sub("", storage_content(text).lower())


def content_hash(text: str) -> str:
    """sha256 hex of the normalized content (or the lowered storage content if that is empty)."""
    basis = normalized_content(text) or storage_content(text).lower()
    return hashlib.sha256(basis.encode("utf-8")).hexdigest()
