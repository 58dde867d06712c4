"""A current-line store (Signet 0.145.7, migrations to 080): its tables in their final shape,
no predictor tables, the keys the daemon's writes rely on; the 0.58 default is unchanged."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from signet_bench.errors import UserError
from signet_bench.store.schema import create_store, indexes_ddl, new_store

# The tables the workbench reads and writes in a current store.
CURRENT_TABLES = {
    "memories",
    "memories_fts",
    "embeddings",
    "session_memories",
    "session_scores",
    "summary_jobs",
    "memory_history",
    "memories_cold",
    "session_checkpoints",
    "entities",
    "entity_aspects",
    "entity_attributes",
    "entity_dependencies",
    "memory_entity_mentions",
    "relations",
    "path_feedback_events",
    "session_recall_events",
    "schema_migrations",
}


@pytest.fixture
def current(tmp_path: Path) -> Path:
    return create_store(tmp_path / "memories.db", schema="current")


def _columns(con: sqlite3.Connection, table: str) -> dict[str, tuple]:
    """name -> (type, notnull, default) of each column."""
    return {r[1]: (r[2], r[3], r[4]) for r in con.execute(f"PRAGMA table_info({table})")}


def test_current_store_has_the_tables_and_no_predictor_tables(current: Path) -> None:
    con = sqlite3.connect(current)
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    versions = [r[0] for r in con.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    con.close()
    assert CURRENT_TABLES <= names
    assert not {n for n in names if n.startswith("predictor_")}
    assert versions == list(range(1, 81))


def test_current_columns_follow_the_migrations(current: Path) -> None:
    """Check the columns 033/043 (memories), 065 (embeddings), 042 (session_memories) and 045
    (session_scores, summary_jobs) added, with their defaults."""
    con = sqlite3.connect(current)
    try:
        memories = _columns(con, "memories")
        session = _columns(con, "session_memories")
        embeddings = _columns(con, "embeddings")
        scores = _columns(con, "session_scores")
        jobs = _columns(con, "summary_jobs")
    finally:
        con.close()
    assert memories["scope"] == ("TEXT", 0, "NULL")
    assert memories["agent_id"] == ("TEXT", 0, "'default'")
    assert memories["visibility"] == ("TEXT", 0, "'global'")
    assert session["agent_id"] == ("TEXT", 1, "'default'")
    assert list(session)[:4] == ["id", "session_key", "agent_id", "memory_id"]
    for name in ("path_json", "relevance_score", "agent_relevance_score", "structural_density"):
        assert name in session
    assert session["agent_feedback_count"] == ("INTEGER", 0, "0")
    assert embeddings["agent_id"] == ("TEXT", 0, None)
    assert scores["agent_id"] == ("TEXT", 1, "'default'")
    assert {"agent_id", "session_id", "trigger", "captured_at", "started_at", "ended_at"} <= set(
        jobs
    )


def test_session_memories_are_unique_per_agent(current: Path) -> None:
    """Check 042's key: one row per (session, agent, memory); another agent may hold its own."""
    con = sqlite3.connect(current)
    row = "INSERT INTO session_memories (id, session_key, agent_id, memory_id, source,"
    row += " final_score, rank, was_injected, created_at) VALUES (?, 's1', ?, 'm1', 'effective',"
    row += " 0.5, 0, 1, '2026-01-01T00:00:00.000Z')"
    try:
        con.execute(row, ("a", "default"))
        con.execute(row, ("b", "reviewer"))
        with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
            con.execute(row, ("c", "default"))
        con.execute(
            "INSERT INTO session_memories (id, session_key, memory_id, source, final_score,"
            " rank, was_injected, created_at) VALUES ('d', 's2', 'm1', 'fts_only', 0, 0, 0, 'x')"
        )
        agent = con.execute("SELECT agent_id FROM session_memories WHERE id = 'd'").fetchone()
    finally:
        con.close()
    assert agent == ("default",)


def test_current_fts_uses_unicode61_and_follows_content(current: Path) -> None:
    con = sqlite3.connect(current)
    try:
        sql = con.execute("SELECT sql FROM sqlite_master WHERE name = 'memories_fts'").fetchone()
        con.execute(
            "INSERT INTO memories (id, content, created_at, updated_at)"
            " VALUES ('m1', 'Café déploiement', 'now', 'now')"
        )
        hits = con.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'cafe'")
        found = hits.fetchall()
        con.execute("UPDATE memories SET content = 'plain words' WHERE id = 'm1'")
        gone = con.execute("SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH 'cafe'")
        after = gone.fetchone()[0]
    finally:
        con.close()
    assert "tokenize='unicode61'" in sql[0]
    assert len(found) == 1 and after == 0  # unicode61 folds the accent; the update re-indexes


def test_related_to_dependencies_need_a_reason(current: Path) -> None:
    """Check 050's rule on entity_dependencies and its history row."""
    con = sqlite3.connect(current)
    edge = "INSERT INTO entity_dependencies (id, source_entity_id, target_entity_id,"
    edge += " dependency_type, reason) VALUES (?, 'e1', 'e2', ?, ?)"
    try:
        with pytest.raises(sqlite3.IntegrityError, match="non-empty reason"):
            con.execute(edge, ("d1", "related_to", " "))
        con.execute(edge, ("d2", "uses", None))
        history = con.execute("SELECT event, reason FROM entity_dependency_history").fetchall()
    finally:
        con.close()
    assert history == [("created", "created without reason")]


def test_the_default_line_is_still_058(tmp_path: Path) -> None:
    path = create_store(tmp_path / "old.db")
    con = sqlite3.connect(path)
    try:
        top = con.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
        cols = _columns(con, "session_memories")
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        con.close()
    assert top == 30 and "agent_id" not in cols and "predictor_comparisons" in names
    assert indexes_ddl() != indexes_ddl("current")


def test_an_unknown_line_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"'0\.99' is not one of 0\.58, current"):
        create_store(tmp_path / "x.db", schema="0.99")
    assert not (tmp_path / "x.db").exists()


def test_new_store_of_the_current_line(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    with new_store(path, schema="current") as con:
        con.execute(
            "INSERT INTO memories (id, content, created_at, updated_at)"
            " VALUES ('m1', 'x', 'now', 'now')"
        )
    con = sqlite3.connect(path)
    try:
        assert con.execute("SELECT agent_id, visibility FROM memories").fetchone() == (
            "default",
            "global",
        )
    finally:
        con.close()
    with pytest.raises(UserError, match="already exists"), new_store(path, schema="current"):
        pass
