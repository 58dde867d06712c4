"""BM25 search of Signet's recall query shape through a real store's FTS5 index."""

from __future__ import annotations

import pytest

from signet_bench.daemon.ranking.fts import fts_search
from signet_bench.store.schema import connect_writer, create_store


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
