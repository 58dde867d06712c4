"""The simulated daemon's writers on a current store (Signet 0.145.7): memory rows as before,
session rows in the default agent's name, leaving another agent's rows alone; the large-store
generators of both lines."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import numpy as np
import pytest

from signet_bench.store.read import read_memories, read_session_memories, release_line
from signet_bench.store.scale import write_memories_scale, write_session_memories_scale
from signet_bench.store.schema import connect_writer, create_store
from signet_bench.store.write import (
    CandidateRow,
    insert_embeddings,
    insert_memories,
    record_agent_feedback,
    record_session_candidates,
    soft_delete,
    supersede_attribute,
    supersede_memory,
    track_fts_hits,
    write_relevance_scores,
)

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
AT = "2026-03-02T10:00:00.000Z"


@pytest.fixture
def con(tmp_path):
    c = connect_writer(create_store(tmp_path / "memories.db", now=T0, schema="current"))
    yield c
    c.close()


def _memories(con: sqlite3.Connection) -> None:
    rows = [{"id": f"m{i}", "content": f"memory {i} about redis", "created_at": T0} for i in (1, 2)]
    insert_memories(con, rows)
    insert_embeddings(con, ["m1", "m2"], np.eye(2, 4, dtype=np.float32), "topic")


def _other_agent(con: sqlite3.Connection) -> None:
    """The reviewer agent's candidate row for m1 in the same session."""
    con.execute(
        "INSERT INTO session_memories (id, session_key, agent_id, memory_id, source,"
        " final_score, rank, was_injected, created_at)"
        " VALUES ('other', 's1', 'reviewer', 'm1', 'effective', 0.4, 0, 1, ?)",
        (AT,),
    )


def _session_rows(con: sqlite3.Connection) -> list[tuple]:
    return con.execute(
        "SELECT agent_id, memory_id, source, fts_hit_count, relevance_score,"
        " agent_relevance_score, agent_feedback_count FROM session_memories"
        " ORDER BY agent_id, memory_id"
    ).fetchall()


def test_memory_writers_work_on_a_current_store(con) -> None:
    _memories(con)
    assert supersede_memory(con, "m1", "memory 1 about valkey", T0)
    assert soft_delete(con, "m2", T0)
    insert_memories(con, [{"id": "m3", "content": "memory 3", "created_at": T0}])
    supersede_attribute(con, "m1", "m3", T0, entity_name="signet", aspect_name="cache")
    table = read_memories(con, include_deleted=True)
    agent = con.execute("SELECT DISTINCT agent_id, visibility FROM memories").fetchall()
    archived = con.execute("SELECT memory_id, archived_reason FROM memories_cold").fetchall()
    assert release_line(con) == "current" and agent == [("default", "global")]
    assert table.frame.filter(table.frame["id"] == "m1")["superseded"].to_list() == [True]
    assert archived == [("m1", "superseded")] and int(table.frame["has_embedding"].sum()) == 2


def test_session_writers_keep_to_the_default_agent(con) -> None:
    _memories(con)
    _other_agent(con)
    added = record_session_candidates(
        con,
        "s1",
        [CandidateRow("m1", "effective", 0.9, None, 0.9, 0, True)],
        AT,
    )
    track_fts_hits(con, "s1", ["m1", "m2", "m2"], AT)
    record_agent_feedback(con, "s1", {"m1": 1.0})
    record_agent_feedback(con, "s1", {"m1": 0.0})
    write_relevance_scores(con, "s1", {"m1": 0.8, "m2": 1.7})
    assert added == 1
    assert _session_rows(con) == [
        ("default", "m1", "effective", 1, 0.8, 0.5, 2),
        ("default", "m2", "fts_only", 1, 1.0, None, 0),
        ("reviewer", "m1", "effective", 0, None, None, 0),
    ]
    assert read_session_memories(con)["memory_id"].to_list() == ["m1", "m2"]


@pytest.mark.parametrize("line", ["0.58", "current"])
def test_large_store_generators_write_either_line(tmp_path, line: str) -> None:
    small = write_memories_scale(tmp_path / "m.db", 50, dim=8, schema=line)
    big = write_session_memories_scale(tmp_path / "s.db", 400, n_memories=100, schema=line)
    assert release_line(small.path) == release_line(big.path) == line
    assert len(read_memories(small.path)) == 50
    assert read_session_memories(big.path).height == 400
