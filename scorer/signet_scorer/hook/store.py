"""What the session-start hook reads from Signet's store, read-only (`file:...?mode=ro`,
`query_only`), by the ids it needs and never the whole store: the candidates' rows and newest
embeddings, the candidate pool the daemon recorded for this session, the previous scored
session of the project and the memories it used.

Columns are read by name and those a store lacks take Signet's defaults (importance 0.5,
access count 0, not pinned, not deleted), as the workbench's reader takes them; flags follow
its rules: "superseded" is a soft delete with its time or a superseded knowledge-graph
attribute, a constraint is a memory of type `constraint` or with an active constraint
attribute. Standard library and numpy only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from signet_scorer.context import USED_MEMORY_SQL
from signet_scorer.timestamps import parse_utc

__all__ = [
    "PoolRow",
    "StoreMemories",
    "open_store",
    "previous_session",
    "read_embeddings",
    "read_memories",
    "recorded_pool",
    "used_memories",
]

_SQLITE_MAGIC = b"SQLite format 3\x00"
_TIME = "REPLACE(REPLACE({}, 'T', ' '), 'Z', '')"  # both of Signet's formats, ordered as text
_SUPERSEDED_WHEN = (
    ("status = 'superseded'", "status"),
    ("superseded_by IS NOT NULL", "superseded_by"),
)
# The previous session is found among the project's latest scored sessions by score time (a
# session's score is written when it ends): the one of these that started last.
RECENT_SCORED = 20


def open_store(path: str | Path, timeout_s: float) -> sqlite3.Connection:
    """The store opened read-only; a missing file or one that is not SQLite raises OSError or
    sqlite3.Error naming it (an empty file would otherwise read as an empty database)."""
    p = Path(path).expanduser()
    with p.open("rb") as f:
        if f.read(len(_SQLITE_MAGIC)) != _SQLITE_MAGIC:
            raise sqlite3.DatabaseError(f"{p}: not a SQLite file")
    con = sqlite3.connect(
        p.resolve().as_uri() + "?mode=ro", uri=True, timeout=timeout_s, isolation_level=None
    )
    con.execute("PRAGMA query_only = ON")
    return con


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


def _marks(n: int) -> str:
    return ",".join("?" * n)


def _col(present: set[str], name: str, default: str) -> str:
    """`COALESCE(name, default)` when the column exists, else the default."""
    return f"COALESCE({name}, {default})" if name in present else default


@dataclass(frozen=True, eq=False)
class StoreMemories:
    """Per-candidate columns, aligned with the ids asked for."""

    ids: tuple[str, ...]
    contents: tuple[str, ...]
    created_at: np.ndarray  # (n,) epoch seconds
    importance: np.ndarray  # (n,) float64
    access_count: np.ndarray  # (n,) float64
    superseded: np.ndarray  # (n,) bool: deleted (with a time) or a superseded attribute
    is_constraint: np.ndarray  # (n,) bool: a constraint in the session's scope
    sources: tuple[str | None, ...]  # the memory's source session, None when unknown


def _flag_ids(con: sqlite3.Connection, ids: Sequence[str]) -> tuple[set[str], set[str]]:
    """Of `ids`: those with a superseded attribute (with its time), those with an active
    constraint attribute."""
    if "entity_attributes" not in _tables(con):
        return set(), set()
    cols = _columns(con, "entity_attributes")
    if "memory_id" not in cols:
        return set(), set()
    conds = [c for c, col in _SUPERSEDED_WHEN if col in cols]
    found: tuple[set[str], set[str]] = (set(), set())
    where = f"memory_id IN ({_marks(len(ids))})"
    if conds and "updated_at" in cols:
        sql = f"SELECT memory_id FROM entity_attributes WHERE {where} AND updated_at IS NOT NULL"
        found[0].update(r[0] for r in con.execute(f"{sql} AND ({' OR '.join(conds)})", ids))
    if "kind" in cols:
        active = " AND COALESCE(status, 'active') = 'active'" if "status" in cols else ""
        sql = f"SELECT memory_id FROM entity_attributes WHERE {where} AND kind = 'constraint'"
        found[1].update(r[0] for r in con.execute(sql + active, ids))
    return found


def _tables(con: sqlite3.Connection) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def read_memories(
    con: sqlite3.Connection, ids: Sequence[str], project: str | None
) -> StoreMemories:
    """The rows of the memories `ids` (in that order); a KeyError names an id the store lacks."""
    m = _columns(con, "memories")
    picked = ", ".join(
        [
            "id",
            "content",
            "created_at",
            _col(m, "importance", "0.5"),
            _col(m, "access_count", "0"),
            _col(m, "is_deleted", "0"),
            _col(m, "deleted_at", "NULL"),
            _col(m, "type", "'fact'"),
            _col(m, "project", "NULL"),
            _col(m, "source_section", "NULL"),
            _col(m, "source_id", "NULL"),
        ]
    )
    sql = f"SELECT {picked} FROM memories WHERE id IN ({_marks(len(ids))})"
    rows = {r[0]: r for r in con.execute(sql, list(ids))}
    missing = [i for i in ids if i not in rows]
    if missing:
        raise KeyError(f"memory {missing[0]!r} is not in the store")
    sup, cons = _flag_ids(con, ids)
    got = [rows[i] for i in ids]
    return StoreMemories(
        ids=tuple(ids),
        contents=tuple(str(r[1]) for r in got),
        created_at=np.array([parse_utc(r[2]).timestamp() for r in got], dtype=np.float64),
        importance=np.array([float(r[3]) for r in got], dtype=np.float64),
        access_count=np.array([float(r[4]) for r in got], dtype=np.float64),
        superseded=np.array([(bool(r[5]) and r[6] is not None) or r[0] in sup for r in got]),
        is_constraint=np.array([_constraint(r, cons, project) for r in got], dtype=bool),
        sources=tuple(_source(r[9], r[10]) for r in got),
    )


def _constraint(row: tuple[object, ...], attributes: set[str], project: str | None) -> bool:
    """A constraint (by type or an active attribute) of the session's scope: its project or
    none, the constraints the daemon forces in."""
    return (row[7] == "constraint" or row[0] in attributes) and row[8] in (None, project)


def _source(section: str | None, source_id: str | None) -> str | None:
    """The session a memory came from: `source_section`, else `source_id`, else unknown (the
    workbench's `memory_source_session`)."""
    return (section or "").strip() or (source_id or "").strip() or None


def read_embeddings(con: sqlite3.Connection, ids: Sequence[str], dim: int) -> dict[str, np.ndarray]:
    """The newest embedding of each memory of `ids` that has one of `dim` values."""
    if not ids:
        return {}
    cols = _columns(con, "embeddings")
    kind = "source_type = 'memory' AND " if "source_type" in cols else ""
    newest = _TIME.format("created_at") if "created_at" in cols else "0"
    sql = (
        f"SELECT source_id, CAST(vector AS BLOB), CAST(dimensions AS INTEGER) FROM embeddings "
        f"WHERE {kind}source_id IN ({_marks(len(ids))}) ORDER BY {newest}, rowid"
    )
    out: dict[str, np.ndarray] = {}
    for mid, blob, d in con.execute(sql, list(ids)):
        if d == dim and blob is not None and len(blob) == 4 * dim:
            out[mid] = np.frombuffer(blob, dtype="<f4")
        else:
            out.pop(mid, None)  # the newest row decides, and it is unusable
    return out


@dataclass(frozen=True, slots=True)
class PoolRow:
    """One candidate the daemon recorded for the session (`session_memories`)."""

    memory_id: str
    source: str
    entity_slot: float  # -1 when none
    aspect_slot: float
    structural_density: float
    is_constraint: bool


def recorded_pool(con: sqlite3.Connection, session_key: str, agent_id: str) -> list[PoolRow]:
    """The candidates the daemon recorded for this session, in the trainer's order (start pool
    by rank, then prompt-time `fts_only` rows, then memory id); none without a session key.
    Knowledge-graph columns the table lacks read as none (slots -1, density 0), and the ranking
    then computes them from the graph (`signet_scorer.structure.session_columns`)."""
    if not session_key:
        return []
    sm = _columns(con, "session_memories")
    agent = " AND agent_id = ?" if "agent_id" in sm else ""
    args = [session_key, agent_id] if agent else [session_key]
    sql = (
        f"SELECT memory_id, source, {_col(sm, 'entity_slot', '-1')}, "
        f"{_col(sm, 'aspect_slot', '-1')}, {_col(sm, 'structural_density', '0')}, "
        f"{_col(sm, 'is_constraint', '0')} FROM session_memories WHERE session_key = ?{agent} "
        "ORDER BY source = 'fts_only', rank, memory_id"
    )
    return [
        PoolRow(str(r[0]), str(r[1]), float(r[2]), float(r[3]), float(r[4]), bool(r[5]))
        for r in con.execute(sql, args)
    ]


def previous_session(
    con: sqlite3.Connection, project: str | None, session_key: str
) -> tuple[str, float] | None:
    """(key, start in epoch seconds) of the previous scored session of the project: among its
    `RECENT_SCORED` latest scored sessions (by score time; not this session), the one whose
    first candidate row is the latest (ties: the larger key), as the trainer orders them."""
    sql = (
        "SELECT session_key FROM session_scores WHERE score IS NOT NULL AND project IS ? "
        f"AND session_key != ? GROUP BY session_key ORDER BY MAX({_TIME.format('created_at')}) "
        f"DESC LIMIT {RECENT_SCORED}"
    )
    keys = [r[0] for r in con.execute(sql, [project or None, session_key])]
    if not keys:
        return None
    sql = (
        f"SELECT session_key, MIN({_TIME.format('created_at')}) FROM session_memories "
        f"WHERE session_key IN ({_marks(len(keys))}) GROUP BY session_key"
    )
    starts = [(parse_utc(t).timestamp(), k) for k, t in con.execute(sql, keys) if t]
    if not starts:
        return None
    start, key = max(starts)
    return key, start


def used_memories(con: sqlite3.Connection, session_key: str) -> list[str]:
    """The memories a finished session used (FTS hits or a positive agent rating), by id."""
    sql = f"SELECT memory_id FROM session_memories WHERE session_key = ? AND {USED_MEMORY_SQL}"
    return sorted(r[0] for r in con.execute(sql, [session_key]))
