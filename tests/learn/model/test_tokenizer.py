"""Signet's hash-trick tokenizer and slot hashes, checked against known FNV-1a values."""

from __future__ import annotations

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_scorer.tokenize import (
    fnv1a32_utf16,
    fnv1a64,
    hash_slot_32,
    project_slot,
    token_buckets,
    tokenize,
)

BUCKETS = DEFAULT_CONFIG.hash_buckets
SLOTS = DEFAULT_CONFIG.project_slots


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", 0xCBF29CE484222325),
        (b"a", 0xAF63DC4C8601EC8C),
        (b"foobar", 0x85944171F73967E8),
    ],
)
def test_fnv1a64_known_values(data, expected):
    assert fnv1a64(data) == expected


def test_fnv1a64_wraps_to_64_bits():
    h = fnv1a64(b"x" * 1000)
    assert 0 <= h < 2**64


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Fix db-migration_v2 in pg!", ["Fix", "db-migration_v2", "in", "pg"]),
        ("café", ["caf"]),  # non-ASCII letters split
        ("naïve_user", ["na", "ve_user"]),
        ("a.b,c;;d  e\te\n", ["a", "b", "c", "d", "e", "e"]),
        ("--__--", ["--__--"]),
        ("", []),
        ("!!! ...", []),
        ("日本語", []),
    ],
)
def test_tokenize_splitting_rules(text, tokens):
    assert tokenize(text) == tokens


def test_buckets_are_fnv1a64_mod_buckets_in_token_order():
    b = token_buckets("foobar a foobar", BUCKETS)
    assert b.dtype == np.int64
    assert b.tolist() == [0x85944171F73967E8 % 16384, 0xAF63DC4C8601EC8C % 16384] + [
        0x85944171F73967E8 % 16384
    ]
    assert token_buckets("a", buckets=7).tolist() == [0xAF63DC4C8601EC8C % 7]


def test_case_is_kept():
    rust, lower = token_buckets("Rust rust", BUCKETS).tolist()
    assert rust != lower


def test_empty_text_has_no_buckets():
    b = token_buckets("", BUCKETS)
    assert b.shape == (0,) and b.dtype == np.int64


def test_project_slot_is_training_rule():
    assert project_slot(None, SLOTS) == 0
    assert project_slot("", SLOTS) == 0
    assert project_slot("signet", SLOTS) == fnv1a64(b"signet") % 32
    assert project_slot("café", SLOTS) == fnv1a64("café".encode()) % 32
    assert project_slot("signet", slots=8) == fnv1a64(b"signet") % 8


def test_fnv1a32_known_values():
    assert fnv1a32_utf16("") == 0x811C9DC5
    assert fnv1a32_utf16("a") == 0xE40C292C
    assert fnv1a32_utf16("foobar") == 0xBF9CF968


# Golden values from the daemon's TypeScript hashSlot run under Node.
@pytest.mark.parametrize(
    ("s", "slot"),
    [
        ("", 197),
        ("a", 44),
        ("foobar", 104),
        ("ent_7f3a9c", 146),
        ("café", 124),
        ("😀 emoji", 182),  # a surrogate pair: two UTF-16 code units
        ("550e8400-e29b-41d4-a716-446655440000", 40),
    ],
)
def test_hash_slot_matches_typescript(s, slot):
    assert hash_slot_32(s) == slot
