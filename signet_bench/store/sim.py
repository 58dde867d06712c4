"""The simulator's own bookkeeping tables in a synthetic store: its predictor state, the plan
slot of every finished session, and a few keyed values (the session plan, the last trained
session). A Signet reader ignores them; nothing here writes Signet's own tables (those writes
are `store/write.py`'s).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from signet_bench.store.write import replace_row

__all__ = [
    "done_sessions",
    "ensure_sim_tables",
    "get_sim_meta",
    "insert_sim_session",
    "load_sim_state",
    "newest_session_key",
    "save_sim_state",
    "set_sim_meta",
]

_SIM_DDL = (
    """CREATE TABLE IF NOT EXISTS sim_predictor_state (
        agent_id TEXT PRIMARY KEY, state_json TEXT NOT NULL, updated_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS sim_sessions (
        session_key TEXT PRIMARY KEY, idx INTEGER NOT NULL UNIQUE, project TEXT,
        focus_topic TEXT, tz TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT NOT NULL,
        scorer TEXT NOT NULL, alpha REAL NOT NULL, context_rule TEXT,
        explored_memory_id TEXT, cosine_ndcg REAL)""",
    "CREATE TABLE IF NOT EXISTS sim_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)


def ensure_sim_tables(con: sqlite3.Connection) -> None:
    """The simulator's own bookkeeping tables (a Signet reader ignores them); a store made
    before `sim_sessions.cosine_ndcg` existed gets the column (NULL for its old sessions)."""
    for ddl in _SIM_DDL:
        con.execute(ddl)
    cols = {r[1] for r in con.execute("PRAGMA table_info(sim_sessions)")}
    if "cosine_ndcg" not in cols:
        con.execute("ALTER TABLE sim_sessions ADD COLUMN cosine_ndcg REAL")


def insert_sim_session(con: sqlite3.Connection, **cols: Any) -> None:
    """The simulator's record of one finished session (its plan slot, scorer and alpha)."""
    replace_row(con, "sim_sessions", cols)


def newest_session_key(con: sqlite3.Connection) -> str | None:
    """The key of the latest finished session (by plan slot), None before the first."""
    row = con.execute("SELECT session_key FROM sim_sessions ORDER BY idx DESC LIMIT 1").fetchone()
    return None if row is None else row[0]


def done_sessions(con: sqlite3.Connection) -> set[int]:
    """Plan slots of the sessions already recorded."""
    return {r[0] for r in con.execute("SELECT idx FROM sim_sessions")}


def set_sim_meta(con: sqlite3.Connection, key: str, value: str) -> None:
    """One simulator bookkeeping value (session plan, last trained session)."""
    con.execute("INSERT OR REPLACE INTO sim_meta (key, value) VALUES (?, ?)", (key, value))


def get_sim_meta(con: sqlite3.Connection, key: str) -> str | None:
    """A simulator bookkeeping value, or None when it was never set."""
    row = con.execute("SELECT value FROM sim_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def save_sim_state(
    con: sqlite3.Connection, state_json: str, updated_at: str, agent_id: str = "default"
) -> None:
    """Persist the predictor state (Signet keeps it in state-{agentId}.json)."""
    con.execute(
        "INSERT OR REPLACE INTO sim_predictor_state (agent_id, state_json, updated_at) "
        "VALUES (?, ?, ?)",
        (agent_id, state_json, updated_at),
    )


def load_sim_state(con: sqlite3.Connection, agent_id: str = "default") -> str | None:
    """The persisted predictor state JSON, or None for a fresh store."""
    ensure_sim_tables(con)
    row = con.execute(
        "SELECT state_json FROM sim_predictor_state WHERE agent_id = ?", (agent_id,)
    ).fetchone()
    return None if row is None else row[0]
