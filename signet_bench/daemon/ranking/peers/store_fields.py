"""Per-memory fields some peers use that `SessionInputs` does not carry: tags and the time of
the last access. Read them from a store (or derive project tags from a `Corpus`) once and give
them to the ranker at construction; `last_access_at` aligns them with a session's candidates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np

from signet_bench.daemon.candidates import SessionInputs
from signet_bench.store.corpus import Corpus
from signet_bench.store.read import StoreLike, read_memories

__all__ = ["last_access_at", "parse_tags", "project_tags", "read_last_accessed", "read_tags"]


def parse_tags(text: str | None) -> frozenset[str]:
    """A `memories.tags` value as a set: a JSON list or comma-separated names, trimmed; NULL,
    empty and malformed JSON read as no tags."""
    if not text or not text.strip():
        return frozenset()
    raw = text.strip()
    if raw.startswith("["):
        try:
            items = json.loads(raw)
        except json.JSONDecodeError:
            return frozenset()
        names = [str(t) for t in items] if isinstance(items, list) else []
    else:
        names = raw.split(",")
    return frozenset(n.strip() for n in names if n.strip())


def read_tags(store: StoreLike) -> dict[str, frozenset[str]]:
    """Memory id -> its tags (`memories.tags`), for every memory that has any."""
    frame = read_memories(store, include_deleted=True).frame
    out: dict[str, frozenset[str]] = {}
    for mid, text in zip(frame["id"].to_list(), frame["tags"].to_list(), strict=True):
        tags = parse_tags(text)
        if tags:
            out[str(mid)] = tags
    return out


def read_last_accessed(store: StoreLike) -> dict[str, float]:
    """Memory id -> `memories.last_accessed` in epoch seconds, for memories that have one."""
    frame = read_memories(store, include_deleted=True).frame
    pairs = zip(frame["id"].to_list(), frame["last_accessed"].to_list(), strict=True)
    return {str(mid): at.timestamp() for mid, at in pairs if at is not None}


def project_tags(corpus: Corpus) -> dict[str, frozenset[str]]:
    """Memory id -> {"project:<name>"} for memories of a project (the cascade
    design's project tag, `#project:jcode`; docs/specification.md §11.3)."""
    return {
        str(mid): frozenset({f"project:{p}"})
        for mid, p in zip(corpus.ids, corpus.project, strict=True)
        if p
    }


def last_access_at(inputs: SessionInputs, last_accessed: Mapping[str, float] | None) -> np.ndarray:
    """Each candidate's last access (epoch seconds) from `last_accessed`; NaN when unknown or
    later than the session start (a ranker must not see the future)."""
    n = len(inputs)
    if not last_accessed or n == 0:
        return np.full(n, np.nan)
    at = np.fromiter(
        (last_accessed.get(str(m), np.nan) for m in inputs.memory_ids), dtype=np.float64, count=n
    )
    return np.where(at <= inputs.start.timestamp(), at, np.nan)
