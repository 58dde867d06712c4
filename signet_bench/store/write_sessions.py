"""Session-side writers of the simulated daemon, following Signet 0.58's write contract.

Each function takes an open connection and writes inside the caller's transaction (the loop
wraps one whole session in one transaction, so a session is recorded entirely or not at all).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CandidateRow",
    "insert_comparison",
    "insert_session_checkpoint",
    "insert_session_score",
    "insert_summary_job",
    "insert_training_log",
    "load_sim_state",
    "record_agent_feedback",
    "record_session_candidates",
    "save_sim_state",
    "track_fts_hits",
    "write_relevance_scores",
]


def _uid(*parts: str) -> str:
    """Deterministic id for a row, so re-running a session writes the same keys."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "signet-bench:" + "/".join(parts)))


@dataclass(frozen=True, slots=True)
class CandidateRow:
    """One `session_memories` row as recorded at session start."""

    memory_id: str
    source: str
    effective_score: float | None
    predictor_score: float | None
    final_score: float
    rank: int
    was_injected: bool
    predictor_rank: int | None = None
    is_constraint: bool = False
    entity_slot: int | None = None
    aspect_slot: int | None = None
    structural_density: int | None = None


def record_session_candidates(
    con: sqlite3.Connection, session_key: str, rows: Sequence[CandidateRow], created_at: str
) -> int:
    """Signet recordSessionCandidates: `INSERT OR IGNORE`, fts_hit_count 0. Returns rows added."""
    before = con.total_changes
    con.executemany(
        """INSERT OR IGNORE INTO session_memories (
            id, session_key, memory_id, source, effective_score, predictor_score, final_score,
            rank, was_injected, fts_hit_count, created_at, entity_slot, aspect_slot,
            is_constraint, structural_density, predictor_rank, agent_feedback_count)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, 0)""",
        [
            (
                _uid(session_key, r.memory_id),
                session_key,
                r.memory_id,
                r.source,
                r.effective_score,
                r.predictor_score,
                r.final_score,
                r.rank,
                int(r.was_injected),
                created_at,
                r.entity_slot,
                r.aspect_slot,
                int(r.is_constraint),
                r.structural_density,
                r.predictor_rank,
            )
            for r in rows
        ],
    )
    return con.total_changes - before


def track_fts_hits(
    con: sqlite3.Connection, session_key: str, memory_ids: Iterable[str], created_at: str
) -> None:
    """Signet trackFtsHits: new ids get an 'fts_only' row, existing rows count one more hit."""
    con.executemany(
        """INSERT INTO session_memories (
            id, session_key, memory_id, source, effective_score, final_score, rank,
            was_injected, fts_hit_count, created_at)
        VALUES (?, ?, ?, 'fts_only', 0, 0, 0, 0, 1, ?)
        ON CONFLICT(session_key, memory_id) DO UPDATE SET fts_hit_count = fts_hit_count + 1""",
        [(_uid(session_key, m), session_key, m, created_at) for m in dict.fromkeys(memory_ids)],
    )


def record_agent_feedback(
    con: sqlite3.Connection, session_key: str, scores: Mapping[str, float]
) -> None:
    """Running mean of the agent's ratings: new = (old*count + s)/(count+1), or s if none."""
    con.executemany(
        """UPDATE session_memories SET
            agent_relevance_score = CASE WHEN agent_relevance_score IS NULL THEN ?
                ELSE (agent_relevance_score * agent_feedback_count + ?)
                     / (agent_feedback_count + 1) END,
            agent_feedback_count = COALESCE(agent_feedback_count, 0) + 1
        WHERE session_key = ? AND memory_id = ?""",
        [(s, s, session_key, m) for m, s in scores.items()],
    )


def write_relevance_scores(
    con: sqlite3.Connection, session_key: str, relevance: Mapping[str, float]
) -> None:
    """The continuity judge's per-memory relevance, clamped to [0, 1]."""
    con.executemany(
        "UPDATE session_memories SET relevance_score = ? WHERE session_key = ? AND memory_id = ?",
        [(min(1.0, max(0.0, float(v))), session_key, m) for m, v in relevance.items()],
    )


def insert_session_score(con: sqlite3.Connection, session_key: str, **cols: Any) -> None:
    """One `session_scores` row per processed session (idempotent on the session key)."""
    keys = ["id", "session_key", *cols]
    con.execute(
        f"INSERT OR REPLACE INTO session_scores ({', '.join(keys)}) "
        f"VALUES ({', '.join('?' * len(keys))})",
        [_uid("score", session_key), session_key, *cols.values()],
    )


def insert_summary_job(con: sqlite3.Connection, session_key: str, **cols: Any) -> None:
    """The session's summary job (transcript), completed."""
    keys = ["id", "session_key", *cols]
    con.execute(
        f"INSERT OR REPLACE INTO summary_jobs ({', '.join(keys)}) "
        f"VALUES ({', '.join('?' * len(keys))})",
        [_uid("job", session_key), session_key, *cols.values()],
    )


def insert_session_checkpoint(
    con: sqlite3.Connection, session_key: str, trigger: str, **cols: Any
) -> None:
    """A `session_checkpoints` row (Signet writes one with trigger 'session_end')."""
    keys = ["id", "session_key", "trigger", *cols]
    con.execute(
        f"INSERT OR REPLACE INTO session_checkpoints ({', '.join(keys)}) "
        f"VALUES ({', '.join('?' * len(keys))})",
        [_uid("checkpoint", session_key, trigger), session_key, trigger, *cols.values()],
    )


def insert_comparison(con: sqlite3.Connection, session_key: str, row: Mapping[str, Any]) -> None:
    """One `predictor_comparisons` row; JSON-valued columns are serialised here."""
    cols = dict(row)
    for k in ("predictor_top_ids", "baseline_top_ids", "relevance_scores"):
        if k in cols and not isinstance(cols[k], str):
            cols[k] = json.dumps(cols[k])
    cols.pop("id", None)
    cols.pop("session_key", None)
    keys = ["id", "session_key", *cols]
    con.execute(
        f"INSERT OR REPLACE INTO predictor_comparisons ({', '.join(keys)}) "
        f"VALUES ({', '.join('?' * len(keys))})",
        [_uid("comparison", session_key), session_key, *cols.values()],
    )


def insert_training_log(con: sqlite3.Connection, run_id: str, **cols: Any) -> None:
    """One `predictor_training_log` row per training run."""
    keys = ["id", *cols]
    con.execute(
        f"INSERT OR REPLACE INTO predictor_training_log ({', '.join(keys)}) "
        f"VALUES ({', '.join('?' * len(keys))})",
        [run_id, *cols.values()],
    )


_SIM_DDL = (
    """CREATE TABLE IF NOT EXISTS sim_predictor_state (
        agent_id TEXT PRIMARY KEY, state_json TEXT NOT NULL, updated_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS sim_sessions (
        session_key TEXT PRIMARY KEY, idx INTEGER NOT NULL UNIQUE, project TEXT,
        focus_topic TEXT, tz TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT NOT NULL,
        scorer TEXT NOT NULL, alpha REAL NOT NULL, context_rule TEXT,
        explored_memory_id TEXT)""",
)


def ensure_sim_tables(con: sqlite3.Connection) -> None:
    """The simulator's own bookkeeping tables (a Signet reader ignores them)."""
    for ddl in _SIM_DDL:
        con.execute(ddl)


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
