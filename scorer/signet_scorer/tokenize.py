"""Signet's hash-trick tokenizer and its slot hashes, bit for bit (docs/specification.md §4.2) — the
one definition: the workbench (its corpus and candidates) and the server both import it.

Tokens: split on every character that is not an ASCII letter, digit, `_` or `-`; empty pieces are
dropped; case is kept. A token's bucket is its 64-bit FNV-1a hash (over its UTF-8 bytes) modulo
the model's hash-bucket count. The same 64-bit hash gives the training-side project slot, and the
32-bit FNV-1a over UTF-16 code units is the daemon's `hashSlot` for entity and aspect ids.
"""

from __future__ import annotations

import functools
import re

import numpy as np

__all__ = [
    "FNV32_OFFSET",
    "FNV32_PRIME",
    "FNV64_OFFSET",
    "FNV64_PRIME",
    "HASH_SLOT_COUNT",
    "fnv1a32_utf16",
    "fnv1a64",
    "hash_slot_32",
    "project_slot",
    "token_buckets",
    "tokenize",
]

FNV64_OFFSET = 0xCBF29CE484222325
FNV64_PRIME = 0x100000001B3
FNV32_OFFSET = 2166136261
FNV32_PRIME = 16777619
HASH_SLOT_COUNT = 256  # the daemon's hashSlot range: entity/aspect slot = hashSlot(id) / 255

_MASK64 = (1 << 64) - 1
_MASK32 = (1 << 32) - 1
_TOKEN = re.compile(r"[A-Za-z0-9_\-]+")


def tokenize(text: str) -> list[str]:
    """Signet's tokens of `text`: maximal runs of ASCII letters, digits, `_` and `-`."""
    return _TOKEN.findall(text) if text else []


def fnv1a64(data: bytes) -> int:
    """64-bit FNV-1a of `data`, wrapping modulo 2**64 like Rust's `wrapping_mul`."""
    h = FNV64_OFFSET
    for byte in data:
        h = ((h ^ byte) * FNV64_PRIME) & _MASK64
    return h


@functools.lru_cache(maxsize=1 << 18)
def _token_hash(token: str) -> int:
    return fnv1a64(token.encode("utf-8"))


def token_buckets(text: str, buckets: int) -> np.ndarray:
    """Hash-embedding row of each token of `text`, in order (int64; empty for no tokens)."""
    tokens = tokenize(text)
    return np.fromiter(
        (_token_hash(t) % buckets for t in tokens), dtype=np.int64, count=len(tokens)
    )


def project_slot(project: str | None, slots: int) -> int:
    """Signet's training rule: fnv1a64(project UTF-8) % slots, and 0 with no project."""
    if not project:
        return 0
    return _token_hash(project) % slots


@functools.lru_cache(maxsize=1 << 16)
def fnv1a32_utf16(s: str) -> int:
    """32-bit FNV-1a over the UTF-16 code units of `s` (JavaScript `charCodeAt` order)."""
    raw = s.encode("utf-16-le", "surrogatepass")
    h = FNV32_OFFSET
    for i in range(0, len(raw), 2):
        h = ((h ^ (raw[i] | (raw[i + 1] << 8))) * FNV32_PRIME) & _MASK32
    return h


def hash_slot_32(s: str, slots: int = HASH_SLOT_COUNT) -> int:
    """The daemon's `hashSlot(id)`: 32-bit FNV-1a over UTF-16 code units, modulo 256."""
    return fnv1a32_utf16(s) % slots
