"""The simulated daemon on both release lines: the same sessions give the same rows, written in
each store's own shape (a current store: every session row the default agent's, no predictor
tables, complete checkpoints); a run resumes; the loop refuses a store of another line than
asked, before writing anything."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from signet_bench.errors import UserError
from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.store.read import PREDICTOR_TABLES, store_shape
from tests.lines import LINE_SESSIONS, simulated_store

# The session_memories columns both lines share.
SHARED = (
    "id, session_key, memory_id, source, effective_score, predictor_score, final_score, rank,"
    " was_injected, relevance_score, fts_hit_count, created_at, is_constraint, predictor_rank,"
    " agent_relevance_score, agent_feedback_count"
)


def _rows(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_both_lines_hold_the_same_sessions(line_stores: dict[str, Path]) -> None:
    old, new = line_stores["0.58"], line_stores["current"]
    query = f"SELECT {SHARED} FROM session_memories ORDER BY id"
    assert _rows(old, query) == _rows(new, query) and len(_rows(new, query)) > LINE_SESSIONS
    for table in ("session_scores", "sim_sessions", "summary_jobs"):
        mine = _rows(old, f"SELECT * FROM {table} ORDER BY 1")
        theirs = _rows(new, f"SELECT * FROM {table} ORDER BY 1")
        assert [r[: len(mine[0])] for r in theirs] == mine, table
    assert _rows(old, "SELECT COUNT(*) FROM predictor_comparisons") == [(LINE_SESSIONS,)]


def test_a_current_store_gets_current_rows_and_no_predictor_tables(
    line_stores: dict[str, Path],
) -> None:
    db = line_stores["current"]
    shape = store_shape(db)
    names = {r[0] for r in _rows(db, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    agents = _rows(db, "SELECT DISTINCT agent_id FROM session_memories")
    scored = _rows(db, "SELECT DISTINCT agent_id FROM session_scores")
    checkpoints = _rows(
        db, "SELECT harness, prompt_count > 0, digest <> '' FROM session_checkpoints LIMIT 1"
    )
    assert shape.line == "current" and shape.predictor_tables == ()
    assert not names & set(PREDICTOR_TABLES)
    assert agents == scored == [("default",)]
    assert checkpoints == [("simulated", 1, 1)]


def test_a_current_run_resumes_and_is_idempotent(tmp_path: Path) -> None:
    db = simulated_store(tmp_path / "current.db", "current", sessions=0)
    first = simulate(db, 8, SimOptions(seed=2, schema="current"))
    rows = _rows(db, f"SELECT {SHARED} FROM session_memories ORDER BY id")
    again = simulate(db, 8, SimOptions(seed=2))
    assert (first.sessions_run, first.comparisons) == (8, 8)
    assert (again.sessions_run, again.sessions_skipped) == (0, 8)
    assert _rows(db, f"SELECT {SHARED} FROM session_memories ORDER BY id") == rows
    assert store_shape(db).predictor_tables == ()


@pytest.mark.parametrize(("line", "asked"), [("0.58", "current"), ("current", "0.58")])
def test_a_store_of_another_line_is_refused(
    tmp_path: Path, line_stores: dict[str, Path], line: str, asked: str
) -> None:
    db = tmp_path / "store.db"
    shutil.copy(line_stores[line], db)
    before = db.read_bytes()
    with pytest.raises(UserError, match=f"a store of release line {line}, not {asked}"):
        simulate(db, LINE_SESSIONS, SimOptions(seed=1, schema=asked))
    assert db.read_bytes() == before
