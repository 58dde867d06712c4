"""A store's release line is told by what it holds (not its version number), in one place, and
both lines read: the stdlib reader and the DuckDB views, one agent's sessions at a time."""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path

import pytest

from signet_bench.store.duck import attached_tables, connect_duckdb, session_memory_summary
from signet_bench.store.errors import SchemaVersionWarning
from signet_bench.store.read import (
    read_comparisons,
    read_memories,
    read_session_memories,
    read_sessions,
    read_summary_jobs,
    read_training_log,
    release_line,
    store_shape,
)
from signet_bench.store.schema import create_store, release_line_of

from .conftest import StoreBuilder, add_vec0_table

CREATED = "2026-01-10T09:00:00.000Z"


def _candidate(b: StoreBuilder, session: str, memory: str, rank: int, **cols: object) -> None:
    b.insert(
        "session_memories",
        id=f"{session}-{memory}-{cols.get('agent_id', 'default')}",
        session_key=session,
        memory_id=memory,
        source="effective",
        effective_score=0.9 - rank / 10,
        final_score=0.9 - rank / 10,
        rank=rank,
        was_injected=1,
        relevance_score=0.5,
        created_at=CREATED,
        **cols,
    )


def fill_current(path: Path) -> Path:
    """Two memories, one session of the default agent and one of another agent that shares the
    session key and a memory (current Signet's key is per agent)."""
    b = StoreBuilder(path)
    try:
        b.memory("m1", created_at="2026-01-01T00:00:00.000Z", scope="proj", visibility="global")
        b.memory("m2", created_at="2026-01-02T00:00:00.000Z", agent_id="reviewer")
        b.embedding("m1", [1.0, 0.0, 0.0, 0.0])
        for agent, score in (("default", 0.8), ("reviewer", 0.3)):
            b.insert(
                "session_scores",
                id=f"score-{agent}",
                session_key="s1",
                agent_id=agent,
                score=score,
                created_at="2026-01-10T10:00:00.000Z",
            )
            b.insert(
                "summary_jobs",
                id=f"job-{agent}",
                session_key="s1",
                agent_id=agent,
                harness="claude-code",
                transcript=f"transcript of {agent}",
                created_at=CREATED,
            )
        _candidate(b, "s1", "m1", 0)
        _candidate(b, "s1", "m2", 1, path_json='{"entity": "e1"}')
        _candidate(b, "s1", "m1", 0, agent_id="reviewer")
    finally:
        b.close()
    return path


@pytest.fixture
def current(tmp_path: Path) -> Path:
    return fill_current(create_store(tmp_path / "current.db", schema="current"))


def test_release_line_of_reads_session_memories_agent_id() -> None:
    """Check the rule alone: agent_id in session_memories makes a store current, predictor
    tables or their absence do not."""
    assert release_line_of({"session_memories": ("id", "agent_id")}) == "current"
    assert release_line_of({"session_memories": ("id",), "predictor_comparisons": ()}) == "0.58"
    assert release_line_of({"session_memories": ("id",)}) == "0.58"
    assert release_line_of({}) == "0.58"


def test_both_lines_are_told_apart_by_content(store_path: Path, current: Path) -> None:
    assert release_line(store_path) == "0.58"
    assert release_line(current) == "current"
    old, new = store_shape(store_path), store_shape(current)
    assert (old.line, old.version, new.line, new.version) == ("0.58", 30, "current", 80)
    assert old.predictor_tables == (
        "predictor_comparisons",
        "predictor_training_log",
        "predictor_training_pairs",
    )
    assert new.predictor_tables == ()
    assert {s.reason for s in new.skipped} == {  # FTS5 keeps its data in shadow tables
        "shadow table of virtual table memories_fts (USING fts5)",
        "shadow table of virtual table entities_fts (USING fts5)",
    }
    assert "release line current (schema version 80); predictor tables: none" in new.summary()


def test_a_store_upgraded_from_058_is_current_and_keeps_its_predictor_tables(
    store_path: Path,
) -> None:
    """Check a 0.58 store whose session_memories 042 rebuilt (and whose version stayed 30):
    the content decides, not the number."""
    con = sqlite3.connect(store_path)
    con.execute("ALTER TABLE session_memories ADD COLUMN agent_id TEXT NOT NULL DEFAULT 'default'")
    con.commit()
    con.close()
    shape = store_shape(store_path)
    assert (shape.line, shape.version) == ("current", 30)
    assert "predictor_comparisons" in shape.predictor_tables


def test_unreadable_tables_are_named_not_raised(current: Path) -> None:
    add_vec0_table(current)
    shape = store_shape(current)
    assert shape.line == "current"
    assert "vec_embeddings" in {s.name for s in shape.skipped}
    assert "vec_embeddings (virtual table USING vec0" in shape.summary()


def test_current_store_reads_without_a_warning_and_per_agent(current: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        memories = read_memories(current)
        sessions = read_sessions(current)
        cands = read_session_memories(current)
        other = read_session_memories(current, agent_id="reviewer")
        jobs = read_summary_jobs(current)
    assert memories.frame["id"].to_list() == ["m1", "m2"] and memories.dim == 4
    assert sessions["score"].to_list() == [0.8]
    assert cands["memory_id"].to_list() == ["m1", "m2"]
    assert other["memory_id"].to_list() == ["m1"]
    assert jobs["transcript"].to_list() == ["transcript of default"]
    assert read_sessions(current, agent_id="reviewer")["score"].to_list() == [0.3]


def test_current_store_has_no_comparisons_to_read(current: Path, store_path: Path) -> None:
    """Check the predictor tables current Signet lacks read as empty frames of 0.58's shape."""
    assert read_comparisons(current).height == 0
    assert read_comparisons(current).schema == read_comparisons(store_path).schema
    assert read_training_log(current).schema == read_training_log(store_path).schema


def test_a_newer_current_store_warns_with_its_own_line(current: Path) -> None:
    con = sqlite3.connect(current)
    con.execute("INSERT INTO schema_migrations VALUES (85, '2026-07-01', 'x')")
    con.commit()
    con.close()
    with pytest.warns(SchemaVersionWarning) as caught:
        read_sessions(current)
    assert "knows (1..80, Signet 0.145.7; migrations 081..085 are unknown)" in str(
        caught[0].message
    )


def test_duckdb_views_over_a_current_store(current: Path) -> None:
    add_vec0_table(current)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        con = connect_duckdb(current)
    try:
        listing = attached_tables(con)
        summary = session_memory_summary(con)
        stamp = con.sql("SELECT created_at FROM main.path_feedback_events").types
        agents = con.sql(
            "SELECT DISTINCT agent_id FROM main.session_memories ORDER BY 1"
        ).fetchall()
    finally:
        con.close()
    assert release_line_of(listing.columns) == "current"
    assert "vec_embeddings" in {s.name for s in listing.skipped}
    assert summary["candidates"].to_list() == [3]  # the view holds every agent's rows
    assert str(stamp[0]) == "TIMESTAMP"
    assert agents == [("default",), ("reviewer",)]
