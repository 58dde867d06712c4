"""Signet's recall query shape and BM25 search through a real store's FTS5 index."""

from __future__ import annotations

import pytest

from signet_bench.daemon.ranking.fts import (
    RECALL_STOPWORDS,
    fts_match_expression,
    fts_search,
    recall_terms,
)
from signet_bench.store.schema import connect_writer, create_store


def test_recall_terms_shape():
    terms = recall_terms("Can you fix the KA-6 pre-compaction bug in 2024 for the daemon?")
    assert terms[:2] == ["ka-6", "pre-compaction"]
    assert "the" not in terms and "you" not in terms and "2024" not in terms
    assert "fix" in terms and "bug" in terms and "daemon" in terms
    assert all(len(t) >= 3 for t in terms)
    assert len(terms) == len(set(terms))


def test_recall_terms_assistant_supplement_and_cap():
    user = "sqlite wal checkpoint"
    assistant = "We discussed sqlite, fsync, journaling, vacuum, pragma and busy timeouts."
    terms = recall_terms(user, assistant)
    assert terms[:3] == ["sqlite", "wal", "checkpoint"]
    assert terms[3:] == ["discussed", "fsync", "journaling"]  # max(2, 3) new terms
    assert recall_terms("one", "alpha beta gamma") == ["alpha", "beta"]  # max(2, 0)
    long = " ".join(f"term{c}x" for c in "abcdefghijklmnop")
    assert len(recall_terms(long, "other words here")) == 12


def test_recall_terms_strip_feedback_blocks_and_stopwords():
    assistant = '<memory-feedback>{"abc": 1}</memory-feedback> [signet:recall 3] rollout'
    assert recall_terms("the and but", assistant) == ["rollout"]
    assert {"the", "and", "with", "what"} <= RECALL_STOPWORDS


def test_fts_match_expression():
    assert fts_match_expression(["wal", 'a"b', "x:y", "(z)*", "^q"]) == (
        '"wal" OR "ab" OR "xy" OR "z" OR "q"'
    )
    assert fts_match_expression([]) is None
    assert fts_match_expression(["*", '""']) is None


@pytest.fixture()
def store(tmp_path):
    path = create_store(tmp_path / "memories.db")
    con = connect_writer(path)
    rows = [
        ("m1", "sqlite wal checkpoint tuning for the daemon", 0.8, 0),
        ("m2", "sqlite sqlite sqlite wal wal notes", 0.6, 0),
        ("m3", "deleted note about sqlite wal", 0.9, 1),
        ("m4", "unimportant sqlite remark", 0.1, 0),
        ("m5", "gardening tomatoes in spring", 0.9, 0),
    ]
    con.executemany(
        "INSERT INTO memories (id, content, importance, is_deleted, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, '2026-03-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z')",
        [(i, c, imp, d) for i, c, imp, d in rows],
    )
    con.execute("UPDATE memories SET is_deleted = 1 WHERE id = 'm3'")  # re-indexed, stays in FTS
    yield con
    con.close()


def test_fts_search_matches_filters_and_normalises(store):
    hits = fts_search(store, ["sqlite", "wal"])
    ids = [h[0] for h in hits]
    assert set(ids) == {"m1", "m2"}  # m3 deleted, m4 below importance 0.3, m5 no match
    assert max(s for _, s in hits) == pytest.approx(1.0)
    assert all(0 < s <= 1 for _, s in hits)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_fts_search_signet058_keeps_deleted_rows(store):
    ids = [h[0] for h in fts_search(store, ["sqlite", "wal"], include_deleted=True)]
    assert "m3" in ids
    assert fts_search(store, ["sqlite"], importance_min=0.0, limit=1)[0][1] == 1.0
    assert fts_search(store, []) == []
    assert fts_search(store, ["nomatchword"]) == []
