"""Memory-side writers against a real Signet-schema SQLite store (FTS5 triggers included)."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from signet_bench.store.content import content_hash, normalized_content
from signet_bench.store.schema import connect_writer, create_store
from signet_bench.store.write import (
    NO_FOCAL_ENTITIES,
    FocalEntityRecord,
    insert_comparison,
    insert_embeddings,
    insert_memories,
    insert_session_checkpoint,
    soft_delete,
    supersede_attribute,
    supersede_memory,
    transaction,
)

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


@pytest.fixture
def con(tmp_path):
    path = create_store(tmp_path / "memories.db", now=T0)
    c = connect_writer(path)
    yield c
    c.close()


def _mem(i: int, content: str | None = None, **kw) -> dict:
    return {
        "id": f"m{i}",
        "content": content or f"  Decided to use redis   for cache {i}.  ",
        "created_at": T0 + timedelta(hours=i),
        **kw,
    }


def _fts(con, query: str) -> list[str]:
    return [
        r[0]
        for r in con.execute(
            "SELECT m.id FROM memories_fts f JOIN memories m ON m.rowid = f.rowid"
            " WHERE memories_fts MATCH ? AND m.is_deleted = 0 ORDER BY m.id",
            (query,),
        )
    ]


def test_insert_memories_derives_hash_and_is_idempotent(con):
    assert insert_memories(con, [_mem(1), _mem(2, type="preference", pinned=True)]) == 2
    content, norm, chash, created, updated, version, pinned = con.execute(
        "SELECT content, normalized_content, content_hash, created_at, updated_at, version,"
        " pinned FROM memories WHERE id = 'm1'"
    ).fetchone()
    assert content == "Decided to use redis for cache 1."
    assert norm == normalized_content(content) == "decided to use redis for cache 1"
    assert chash == content_hash(content)
    assert created == updated == "2026-03-01T10:30:00.000Z"
    assert (version, pinned) == (1, 0)
    assert con.execute("SELECT pinned, type FROM memories WHERE id = 'm2'").fetchone() == (
        1,
        "preference",
    )
    assert insert_memories(con, [_mem(1), _mem(2)]) == 0
    assert con.execute("SELECT COUNT(*) FROM memories").fetchone() == (2,)
    events = con.execute(
        "SELECT memory_id, event FROM memory_history ORDER BY memory_id"
    ).fetchall()
    assert events == [("m1", "created"), ("m2", "created")]
    assert _fts(con, "redis") == ["m1", "m2"]


def test_duplicate_live_content_is_rejected_and_nothing_is_written(con):
    insert_memories(con, [_mem(1, "Prefers tabs.")])
    with pytest.raises(sqlite3.IntegrityError):
        insert_memories(con, [_mem(2, "Other text."), _mem(3, "prefers   TABS")])
    assert con.execute("SELECT id FROM memories").fetchall() == [("m1",)]
    assert not con.in_transaction


def test_bad_rows_are_named(con):
    with pytest.raises(ValueError, match="superseded_by"):
        insert_memories(con, [_mem(1, superseded_by="x")])
    with pytest.raises(ValueError, match="derived"):
        insert_memories(con, [_mem(1, content_hash="x")])
    with pytest.raises(ValueError, match="created_at"):
        insert_memories(con, [{"id": "m9", "content": "x"}])


def test_insert_embeddings_signet_layout(con):
    insert_memories(con, [_mem(1), _mem(2)])
    vecs = np.array([[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]], dtype=np.float64)
    assert insert_embeddings(con, ["m1", "m2"], vecs, "synth-topic") == 2
    rows = con.execute(
        "SELECT e.source_id, e.vector, e.dimensions, e.source_type, e.content_hash,"
        " m.content_hash, e.chunk_text, m.content, m.embedding_model, e.created_at, m.updated_at"
        " FROM embeddings e JOIN memories m ON m.id = e.source_id ORDER BY e.source_id"
    ).fetchall()
    assert len(rows) == 2
    for (_, blob, dim, stype, eh, mh, chunk, content, model, ec, mu), v in zip(
        rows, vecs, strict=True
    ):
        assert len(blob) == 12 and dim == 3 and stype == "memory"
        assert np.array_equal(np.frombuffer(blob, dtype="<f4"), v.astype(np.float32))
        assert eh == mh and chunk == content and model == "synth-topic" and ec == mu
    # idempotent: the same call leaves one row per memory
    insert_embeddings(con, ["m1", "m2"], vecs, "synth-topic")
    assert con.execute("SELECT COUNT(*) FROM embeddings").fetchone() == (2,)


def test_insert_embeddings_checks_inputs(con):
    insert_memories(con, [_mem(1)])
    with pytest.raises(ValueError, match="shape"):
        insert_embeddings(con, ["m1"], np.zeros((2, 3)), "x")
    with pytest.raises(ValueError, match="no memories"):
        insert_embeddings(con, ["nope"], np.zeros((1, 3)), "x")
    with pytest.raises(ValueError, match="finite"):
        insert_embeddings(con, ["m1"], np.full((1, 3), np.nan), "x")


def test_supersede_memory_follows_signets_update_path(con):
    insert_memories(con, [_mem(1, "Decided to use redis for the cache.", importance=0.7)])
    insert_embeddings(con, ["m1"], np.ones((1, 4)), "synth-topic")
    at = T0 + timedelta(days=3)
    assert supersede_memory(con, "m1", "Switched the cache from redis to valkey.", at)
    content, chash, version, updates, updated = con.execute(
        "SELECT content, content_hash, version, update_count, updated_at FROM memories"
    ).fetchone()
    assert content == "Switched the cache from redis to valkey."
    assert chash == content_hash(content)
    assert (version, updates) == (2, 1)
    assert updated == "2026-03-04T09:30:00.000Z"
    cold = con.execute(
        "SELECT memory_id, content, archived_reason, importance, original_created_at,"
        " archived_at, original_row_json FROM memories_cold"
    ).fetchall()
    assert len(cold) == 1
    mid, old, reason, imp, created, archived, raw = cold[0]
    assert (mid, old, reason, imp) == (
        "m1",
        "Decided to use redis for the cache.",
        "superseded",
        0.7,
    )
    assert created == "2026-03-01T10:30:00.000Z" and archived == updated
    assert json.loads(raw)["version"] == 1
    hist = con.execute(
        "SELECT old_content, new_content FROM memory_history WHERE event = 'updated'"
    ).fetchall()
    assert hist == [(old, content)]
    # FTS follows the new text; the old embedding is stale until re-embedded, then replaced
    assert _fts(con, "valkey") == ["m1"] and _fts(con, "decided") == []
    insert_embeddings(con, ["m1"], np.ones((1, 4)), "synth-topic")
    assert con.execute("SELECT content_hash FROM embeddings").fetchall() == [(chash,)]
    # repeating the same update changes nothing
    assert not supersede_memory(con, "m1", content, at)
    assert con.execute("SELECT COUNT(*) FROM memories_cold").fetchone() == (1,)


def _only_row(con, table: str) -> dict:
    cur = con.execute(f"SELECT * FROM {table}")
    (row,) = cur.fetchall()
    return dict(zip([d[0] for d in cur.description], row, strict=True))


def test_superseded_snapshot_keeps_every_field_it_shares_with_the_row(con):
    fields = {
        "type": "decision",
        "category": "infra",
        "confidence": 0.8,
        "importance": 0.7,
        "source_id": "s1",
        "source_type": "session_end",
        "tags": "cache,redis",
        "who": "pipeline-v2",
        "why": "extracted-fact",
        "project": "portfolio",
        "extraction_status": "completed",
        "extraction_model": "synth",
    }
    insert_memories(con, [_mem(1, "Decided to use redis for the cache.", **fields)])
    insert_embeddings(con, ["m1"], np.ones((1, 4)), "synth-topic")
    before = _only_row(con, "memories")
    assert supersede_memory(con, "m1", "Switched the cache to valkey.", T0 + timedelta(days=1))
    cold = _only_row(con, "memories_cold")
    shared = set(cold) & set(before)
    assert shared >= {*fields, "content", "content_hash", "normalized_content", "update_count"}
    assert {c: cold[c] for c in shared} == {c: before[c] for c in shared}
    assert before["embedding_model"] == "synth-topic"
    assert (cold["memory_id"], cold["original_created_at"]) == ("m1", before["created_at"])
    assert json.loads(cold["original_row_json"]) == before


def test_soft_delete(con):
    insert_memories(con, [_mem(1), _mem(2, pinned=True)])
    at = T0 + timedelta(days=1)
    assert soft_delete(con, "m1", at, reason="obsolete")
    row = con.execute("SELECT is_deleted, deleted_at, version FROM memories WHERE id = 'm1'")
    assert row.fetchone() == (1, "2026-03-02T09:30:00.000Z", 2)
    hist = con.execute(
        "SELECT event, reason, changed_by FROM memory_history WHERE memory_id = 'm1'"
        " AND event = 'deleted'"
    ).fetchall()
    assert hist == [("deleted", "obsolete", "user")]
    assert not soft_delete(con, "m1", at)
    assert _fts(con, "redis") == ["m2"]  # still indexed, filtered by is_deleted
    with pytest.raises(ValueError, match="pinned"):
        soft_delete(con, "m2", at)
    assert soft_delete(con, "m2", at, force=True)
    with pytest.raises(ValueError, match="deleted"):
        supersede_memory(con, "m1", "new text", at)
    # the same content may come back once the old row is deleted (partial unique index)
    insert_memories(con, [_mem(3, "Decided to use redis for cache 1.")])


def test_supersede_attribute_marks_the_old_memory_in_the_graph(con):
    insert_memories(con, [_mem(1, "Prefers jest."), _mem(2, "Now prefers vitest over jest.")])
    new_attr = supersede_attribute(
        con, "m1", "m2", T0 + timedelta(days=2), entity_name="shop", aspect_name="unit_tests runner"
    )
    rows = dict(con.execute("SELECT memory_id, status FROM entity_attributes").fetchall())
    assert rows == {"m1": "superseded", "m2": "active"}
    (by,) = con.execute(
        "SELECT superseded_by FROM entity_attributes WHERE memory_id = 'm1'"
    ).fetchone()
    assert by == new_attr
    assert con.execute("SELECT name, mentions FROM entities").fetchall() == [("shop", 2)]
    assert con.execute("SELECT is_deleted FROM memories WHERE id = 'm1'").fetchone() == (0,)
    supersede_attribute(
        con, "m1", "m2", T0 + timedelta(days=2), entity_name="shop", aspect_name="unit_tests runner"
    )
    assert con.execute("SELECT COUNT(*) FROM entity_attributes").fetchone() == (2,)


def test_writers_join_the_callers_transaction(con):
    with pytest.raises(RuntimeError), transaction(con):
        insert_memories(con, [_mem(1)])
        soft_delete(con, "m1", T0)
        raise RuntimeError("abort the whole batch")
    assert con.execute("SELECT COUNT(*) FROM memories").fetchone() == (0,)
    with transaction(con):
        insert_memories(con, [_mem(1)])
        with pytest.raises(sqlite3.IntegrityError):
            insert_memories(con, [_mem(2, "Decided to use redis for cache 1.")])
        # the failed inner write was rolled back to its savepoint; the outer one survives
    assert con.execute("SELECT id FROM memories").fetchall() == [("m1",)]


def test_focal_entities_on_the_checkpoint_and_the_comparison(con):
    """The checkpoint lists every focal entity (JSON, primary first), the comparison names the
    primary one; a session naming none leaves the columns NULL; ids and names pair up."""
    focal = FocalEntityRecord(("e1", "e2"), ("storefront", "Tomas"))
    insert_session_checkpoint(
        con, "s1", "session_end", created_at="2026-03-01", **focal.checkpoint_columns()
    )
    insert_session_checkpoint(
        con, "s2", "session_end", created_at="2026-03-01", **NO_FOCAL_ENTITIES.checkpoint_columns()
    )
    row = {"predictor_ndcg": 0.5, "baseline_ndcg": 0.4, "predictor_won": 1, "margin": 0.1}
    row |= {"alpha": 1.0, "candidate_count": 3, "created_at": "2026-03-01"}
    insert_comparison(con, "s1", row | focal.comparison_columns())
    got = con.execute(
        "SELECT session_key, focal_entity_ids, focal_entity_names FROM session_checkpoints"
        " ORDER BY session_key"
    ).fetchall()
    assert got == [("s1", '["e1", "e2"]', '["storefront", "Tomas"]'), ("s2", None, None)]
    named = con.execute("SELECT focal_entity_id, focal_entity_name FROM predictor_comparisons")
    assert named.fetchall() == [("e1", "storefront")]
    with pytest.raises(ValueError, match="2 ids but 1 names"):
        FocalEntityRecord(("e1", "e2"), ("storefront",))
