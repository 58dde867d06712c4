"""A synthetic store of either release line holds the same user: the same memories, history,
embeddings and planted truth, in that line's tables."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from signet_bench.store.read import store_shape
from signet_bench.world.synth.build import build_persona_store

SAME = {
    "memories": "SELECT id, type, content, importance, project, created_at, is_deleted,"
    " content_hash FROM memories ORDER BY id",
    "embeddings": "SELECT source_id, vector FROM embeddings ORDER BY source_id",
    "memories_cold": "SELECT memory_id, content, archived_reason FROM memories_cold ORDER BY 1",
    "entity_attributes": "SELECT memory_id, status FROM entity_attributes ORDER BY 1",
    "synth_memory_truth": "SELECT * FROM synth_memory_truth ORDER BY rowid",
}


def _read(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_both_lines_hold_the_same_user(tmp_path: Path) -> None:
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    text_old = build_persona_store("drifting", old, seed=4, n_memories=150)
    text_new = build_persona_store("drifting", new, seed=4, n_memories=150, schema="current")
    assert (store_shape(old).line, store_shape(new).line) == ("0.58", "current")
    assert text_new == text_old.replace(str(old), str(new))
    for table, sql in SAME.items():
        rows = _read(old, sql)
        assert rows and _read(new, sql) == rows, table


def test_an_unknown_line_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    out = tmp_path / "x.db"
    with pytest.raises(ValueError, match="'0.6' is not one of 0.58, current"):
        build_persona_store("light", out, n_memories=50, schema="0.6")
    assert not out.exists()
