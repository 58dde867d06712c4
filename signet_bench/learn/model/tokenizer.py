"""Signet's hash-trick tokenizer and its slot hashes (docs/specification.md §4.2).

The one definition lives in `signet_scorer.tokenize`, which the server imports without this package;
this module binds the model's bucket and project-slot counts from the config.
"""

from __future__ import annotations

import numpy as np

from signet_bench.config import DEFAULT_CONFIG
from signet_scorer import tokenize as _hash

__all__ = ["project_slot", "token_buckets"]


def token_buckets(text: str, buckets: int = DEFAULT_CONFIG.hash_buckets) -> np.ndarray:
    """Hash-embedding row of each token of `text`, in order (see `signet_scorer.tokenize`)."""
    return _hash.token_buckets(text, buckets)


def project_slot(project: str | None, slots: int = DEFAULT_CONFIG.project_slots) -> int:
    """Signet's training rule: fnv1a64(project UTF-8) % slots, and 0 with no project."""
    return _hash.project_slot(project, slots)
