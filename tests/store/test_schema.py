"""The created store matches Signet 0.58 (tables, FTS5 sync, WAL, migrations); readers never write."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from signet_bench.store.read import (
    open_readonly,
    read_comparisons,
    read_memories,
    read_session_memories,
    read_sessions,
    read_summary_jobs,
    read_training_log,
)
from signet_bench.store.schema import create_store

from .conftest import StoreBuilder

# docs/specification.md §2: every table the workbench reads.
READ_TABLES = {
    "memories",
    "memories_fts",
    "embeddings",
    "session_memories",
    "session_scores",
    "summary_jobs",
    "memory_history",
    "memories_cold",
    "predictor_comparisons",
    "predictor_training_log",
    "predictor_training_pairs",
    "session_checkpoints",
    "entities",
    "entity_aspects",
    "entity_attributes",
    "memory_entity_mentions",
    "relations",
    "schema_migrations",
}


def _fts_ids(con: sqlite3.Connection, word: str) -> list[str]:
    rows = con.execute(
        "SELECT m.id FROM memories_fts f JOIN memories m ON m.rowid = f.rowid"
        " WHERE memories_fts MATCH ? ORDER BY m.id",
        (word,),
    )
    return [r[0] for r in rows]


def test_every_design_table_exists(store_path: Path) -> None:
    con = sqlite3.connect(store_path)
    names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    con.close()
    assert READ_TABLES <= names
    assert "session_transcripts" not in names and "predictor_calibration" not in names


def test_fts_triggers_follow_insert_update_delete(builder: StoreBuilder) -> None:
    con = builder.con
    builder.memory("a", content="deploy with docker compose")
    builder.memory("b", content="prefer rust for the daemon")
    assert _fts_ids(con, "docker") == ["a"]
    con.execute("UPDATE memories SET content = 'deploy with podman' WHERE id = 'a'")
    assert _fts_ids(con, "docker") == [] and _fts_ids(con, "podman") == ["a"]
    con.execute("DELETE FROM memories WHERE id = 'b'")
    assert _fts_ids(con, "rust") == []
    # Signet's AFTER UPDATE trigger re-indexes on any update: soft-deleted rows stay searchable.
    con.execute("UPDATE memories SET is_deleted = 1 WHERE id = 'a'")
    assert _fts_ids(con, "podman") == ["a"]
    con.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")


def test_wal_mode_and_migrations_1_to_30(store_path: Path) -> None:
    con = sqlite3.connect(store_path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    versions = [r[0] for r in con.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    con.close()
    assert versions == list(range(1, 31))


def test_create_store_refuses_to_overwrite(store_path: Path) -> None:
    before = store_path.read_bytes()
    with pytest.raises(FileExistsError):
        create_store(store_path)
    assert store_path.read_bytes() == before


def _fingerprint(path: Path) -> tuple[int, int, str]:
    st = path.stat()
    return st.st_mtime_ns, st.st_size, hashlib.sha256(path.read_bytes()).hexdigest()


def test_readers_never_write(builder: StoreBuilder) -> None:
    builder.memory("a", content="one")
    builder.insert(
        "session_scores", id="s", session_key="k", score=0.5, created_at="2026-01-01 00:00:00"
    )
    builder.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    builder.close()
    path = builder.path
    before = _fingerprint(path)
    for read in (
        read_memories,
        read_sessions,
        read_session_memories,
        read_comparisons,
        read_summary_jobs,
        read_training_log,
    ):
        read(path)
    con = open_readonly(path)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            con.execute(
                "INSERT INTO memories (id, content, created_at, updated_at)"
                " VALUES ('x', 'x', 'x', 'x')"
            )
        with pytest.raises(sqlite3.OperationalError):
            con.execute("CREATE TABLE scratch (a)")
        with pytest.raises(sqlite3.OperationalError):
            con.execute("DELETE FROM memories")
    finally:
        con.close()
    assert _fingerprint(path) == before
    wal = path.with_name(path.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0
