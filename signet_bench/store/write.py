"""The writers of the simulated daemon, following Signet's write paths: memories (insert,
supersede, delete) and sessions (candidates, FTS hits, feedback, scores, comparisons).

Each writer writes rows in the shape of the store it is given (`store.read.release_line`): on a
0.58 store as Signet 0.58 did; on a current store (release 0.145.7) the session rows carry the
agent (`DEFAULT_AGENT`, 'default') as current Signet's `session-memories.ts` writes them, keyed
on (session_key, agent_id, memory_id). Current Signet has no predictor tables: the comparison
and training-log writers are for 0.58 stores only.

Plain functions over an open `sqlite3` connection (from `schema.connect_writer`). Each one runs
inside `transaction(con)`: its own BEGIN/COMMIT, or a SAVEPOINT when the caller already holds a
transaction, so a caller can group many writes into one commit. Row ids are derived from their
content (uuid5), so repeating a write changes nothing.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from signet_bench.store.content import content_hash, normalized_content, storage_content
from signet_bench.store.read import release_line
from signet_bench.store.timestamps import format_iso
from signet_scorer.workbench import DEFAULT_AGENT

__all__ = [
    "MEMORY_COLUMNS",
    "NO_FOCAL_ENTITIES",
    "CandidateRow",
    "FocalEntityRecord",
    "comparison_id",
    "insert_comparison",
    "insert_embeddings",
    "insert_memories",
    "insert_session_checkpoint",
    "insert_session_score",
    "insert_session_transcript",
    "insert_summary_job",
    "insert_training_log",
    "record_agent_feedback",
    "record_session_candidates",
    "replace_row",
    "soft_delete",
    "supersede_attribute",
    "supersede_memory",
    "track_fts_hits",
    "transaction",
    "write_relevance_scores",
]

MEMORY_COLUMNS: tuple[str, ...] = (
    "id",
    "type",
    "category",
    "content",
    "confidence",
    "importance",
    "source_id",
    "source_type",
    "tags",
    "who",
    "why",
    "project",
    "created_at",
    "updated_at",
    "updated_by",
    "last_accessed",
    "access_count",
    "vector_clock",
    "version",
    "manual_override",
    "pinned",
    "content_hash",
    "normalized_content",
    "is_deleted",
    "deleted_at",
    "extraction_status",
    "embedding_model",
    "extraction_model",
    "update_count",
    "idempotency_key",
    "runtime_path",
    "source_path",
    "source_section",
)
"""The `memories` columns of Signet 0.58 (migrations 001-030)."""

_DEFAULTS: dict[str, Any] = {
    "type": "fact",
    "confidence": 1.0,
    "importance": 0.5,
    "updated_by": "system",
    "access_count": 0,
    "vector_clock": "{}",
    "version": 1,
    "manual_override": 0,
    "pinned": 0,
    "is_deleted": 0,
    "extraction_status": "none",
    "update_count": 0,
}
_DERIVED = {"content_hash", "normalized_content"}
_CHUNK = 500  # ids per `IN (...)` lookup
_savepoints = itertools.count()


def _uid(*parts: str) -> str:
    """Deterministic id for a row, so repeating a write hits the same key."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "signet-bench:" + "/".join(parts)))


def _stamp(value: Any) -> Any:
    return format_iso(value) if isinstance(value, datetime) else value


@contextmanager
def transaction(con: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, or a SAVEPOINT inside the caller's open transaction."""
    if con.in_transaction:
        name = f"sb_write_{next(_savepoints)}"
        con.execute(f"SAVEPOINT {name}")
        try:
            yield con
        except BaseException:
            con.execute(f"ROLLBACK TO {name}")
            con.execute(f"RELEASE {name}")
            raise
        con.execute(f"RELEASE {name}")
    else:
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")


@dataclass(frozen=True, slots=True)
class _Event:
    """One memory_history row: `event` of `memory_id` at `at` by `changed_by`, the content
    before (`old`) and after (`new`), why, and its metadata."""

    memory_id: str
    event: str
    at: str
    changed_by: str
    old: str | None = None
    new: str | None = None
    reason: str | None = None
    metadata: Mapping[str, Any] | None = None


def _history(con: sqlite3.Connection, e: _Event) -> None:
    con.execute(
        "INSERT OR IGNORE INTO memory_history (id, memory_id, event, old_content, new_content,"
        " changed_by, reason, metadata, created_at, actor_type) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (
            _uid("history", e.memory_id, e.event, e.at),
            e.memory_id,
            e.event,
            e.old,
            e.new,
            e.changed_by,
            e.reason,
            json.dumps(dict(e.metadata)) if e.metadata else None,
            e.at,
            "user" if e.changed_by == "user" else "system",
        ),
    )


def _memory_row(row: Mapping[str, Any]) -> tuple[Any, ...]:
    unknown = set(row) - set(MEMORY_COLUMNS)
    if unknown:
        raise ValueError(f"unknown memories column(s): {', '.join(sorted(unknown))}")
    if set(row) & _DERIVED:
        raise ValueError("content_hash and normalized_content are derived from content")
    for key in ("id", "content", "created_at"):
        if row.get(key) is None:
            raise ValueError(f"memory row without {key!r}: {dict(row)!r}")
    values = {**_DEFAULTS, **{k: _stamp(v) for k, v in row.items()}}
    values["content"] = storage_content(values["content"])
    values["normalized_content"] = normalized_content(values["content"])
    values["content_hash"] = content_hash(values["content"])
    values.setdefault("updated_at", values["created_at"])
    for key in ("pinned", "is_deleted", "manual_override"):
        values[key] = int(values[key])
    return tuple(values.get(c) for c in MEMORY_COLUMNS)


def insert_memories(
    con: sqlite3.Connection, rows: Iterable[Mapping[str, Any]], *, history: bool = True
) -> int:
    """Insert memories (Signet columns; timestamps as datetimes or Signet text) with their
    content hash and normalised content, plus a 'created' history event each. A row whose id
    exists is left alone; a duplicate live content hash raises `sqlite3.IntegrityError`.
    Returns the number of rows added."""
    values = [_memory_row(r) for r in rows]
    placeholders = ", ".join("?" * len(MEMORY_COLUMNS))
    at = {c: i for i, c in enumerate(MEMORY_COLUMNS)}
    with transaction(con):
        added = 0
        for v in values:
            cur = con.execute(
                f"INSERT INTO memories ({', '.join(MEMORY_COLUMNS)}) VALUES ({placeholders})"
                " ON CONFLICT(id) DO NOTHING",
                v,
            )
            if cur.rowcount == 1:
                added += 1
                if history:
                    _history(
                        con,
                        _Event(
                            v[at["id"]],
                            "created",
                            v[at["created_at"]],
                            new=v[at["content"]],
                            changed_by=v[at["who"]] or "pipeline-v2",
                        ),
                    )
    return added


def _lookup(con: sqlite3.Connection, memory_ids: Sequence[str], cols: str) -> dict[str, tuple]:
    found: dict[str, tuple] = {}
    for lo in range(0, len(memory_ids), _CHUNK):
        chunk = list(memory_ids[lo : lo + _CHUNK])
        marks = ", ".join("?" * len(chunk))
        for row in con.execute(f"SELECT id, {cols} FROM memories WHERE id IN ({marks})", chunk):
            found[row[0]] = row[1:]
    return found


def insert_embeddings(
    con: sqlite3.Connection,
    memory_ids: Sequence[str],
    vectors: np.ndarray,
    model_name: str,
    *,
    created_at: datetime | str | None = None,
) -> int:
    """Store one embedding per memory as Signet does: raw little-endian float32 blob,
    `dimensions`, source_type 'memory', content_hash = the memory's hash, chunk_text = its
    content (upsert on content_hash; older rows of the same memory with another hash are
    removed). Also sets `memories.embedding_model`. Returns the number of rows written."""
    vecs = np.asarray(vectors, dtype="<f4")
    if vecs.ndim != 2 or len(vecs) != len(memory_ids):
        raise ValueError(f"expected ({len(memory_ids)}, dim) vectors, got shape {vecs.shape}")
    if not np.isfinite(vecs).all():
        raise ValueError("embedding vectors must be finite")
    known = _lookup(con, memory_ids, "content, content_hash, updated_at")
    missing = [m for m in memory_ids if m not in known]
    if missing:
        raise ValueError(f"no memories with id(s): {', '.join(missing[:5])}")
    rows = []
    for mid, vec in zip(memory_ids, vecs, strict=True):
        content, chash, updated = known[mid]
        chash = chash or content_hash(content)
        stamp = _stamp(created_at) if created_at is not None else updated
        rows.append((_uid("embedding", chash), chash, vec.tobytes(), len(vec), mid, content, stamp))
    with transaction(con):
        con.executemany(
            "INSERT INTO embeddings (id, content_hash, vector, dimensions, source_type,"
            " source_id, chunk_text, created_at) VALUES (?, ?, ?, ?, 'memory', ?, ?, ?)"
            " ON CONFLICT(content_hash) DO UPDATE SET vector = excluded.vector,"
            " dimensions = excluded.dimensions, source_type = 'memory',"
            " source_id = excluded.source_id, chunk_text = excluded.chunk_text,"
            " created_at = excluded.created_at",
            rows,
        )
        con.executemany(
            "DELETE FROM embeddings WHERE source_type = 'memory' AND source_id = ?"
            " AND content_hash <> ?",
            [(r[4], r[1]) for r in rows],
        )
        con.executemany(
            "UPDATE memories SET embedding_model = ? WHERE id = ?",
            [(model_name, mid) for mid in memory_ids],
        )
    return len(rows)


def _row(con: sqlite3.Connection, memory_id: str) -> dict[str, Any]:
    cur = con.execute("SELECT * FROM memories WHERE id = ?", (memory_id,))
    row = cur.fetchone()
    if row is None:
        raise ValueError(f"no memory with id {memory_id!r}")
    return dict(zip([d[0] for d in cur.description], row, strict=True))


def _columns_between(first: str, last: str) -> tuple[str, ...]:
    """The run of `MEMORY_COLUMNS` from `first` to `last`, both included."""
    return MEMORY_COLUMNS[MEMORY_COLUMNS.index(first) : MEMORY_COLUMNS.index(last) + 1]


_COLD_COPIED: tuple[str, ...] = (
    *_columns_between("type", "project"),
    *_columns_between("content_hash", "normalized_content"),
    *_columns_between("extraction_status", "update_count"),
)
"""The `memories` columns a `memories_cold` snapshot keeps under the same name: type ..
project, content_hash, normalized_content, extraction_status .. update_count."""

_ARCHIVE_SUPERSEDED = (
    "INSERT OR IGNORE INTO memories_cold (archive_id, memory_id, "
    + ", ".join(_COLD_COPIED)
    + ", original_created_at, archived_at, archived_reason, original_row_json) VALUES ("
    + ",".join("?" * (len(_COLD_COPIED) + 4))
    + ",'superseded',?)"
)


def _archive_superseded(
    con: sqlite3.Connection, memory_id: str, old: Mapping[str, Any], stamp: Any
) -> str:
    """Snapshot `old`, the row of `memory_id`, into `memories_cold` as 'superseded'; return
    the archive id."""
    archive_id = _uid("cold", memory_id, str(old["version"]), old["content_hash"] or "")
    con.execute(
        _ARCHIVE_SUPERSEDED,
        (
            archive_id,
            memory_id,
            *(old[c] for c in _COLD_COPIED),
            old["created_at"],
            stamp,
            json.dumps(old, sort_keys=True),
        ),
    )
    return archive_id


def _rewrite_content(
    con: sqlite3.Connection, memory_id: str, text: str, mtype: str, stamp: Any, changed_by: str
) -> None:
    """Rewrite a memory's content in place (hash, type; version+1, update_count+1)."""
    con.execute(
        "UPDATE memories SET content = ?, normalized_content = ?, content_hash = ?,"
        " type = ?, updated_at = ?, updated_by = ?, version = COALESCE(version, 1) + 1,"
        " update_count = COALESCE(update_count, 0) + 1 WHERE id = ?",
        (
            text,
            normalized_content(text),
            content_hash(text),
            mtype,
            stamp,
            changed_by,
            memory_id,
        ),
    )


def supersede_memory(
    con: sqlite3.Connection,
    memory_id: str,
    new_content: str,
    at: datetime | str,
    *,
    new_type: str | None = None,
    changed_by: str = "pipeline-v2",
    reason: str = "superseded by a newer fact",
) -> bool:
    """Signet's update path: snapshot the row into `memories_cold` (archived_reason
    'superseded', full `original_row_json`), rewrite the row in place (content, hash, type;
    version+1, update_count+1) and record a history 'updated' event. Returns False (and
    writes nothing) when the row already holds `new_content`."""
    stamp = _stamp(at)
    text = storage_content(new_content)
    with transaction(con):
        old = _row(con, memory_id)
        if old["is_deleted"]:
            raise ValueError(f"memory {memory_id} is deleted; it cannot be superseded")
        if old["content"] == text:
            return False
        archive_id = _archive_superseded(con, memory_id, old, stamp)
        _rewrite_content(con, memory_id, text, new_type or old["type"], stamp, changed_by)
        _history(
            con,
            _Event(
                memory_id,
                "updated",
                stamp,
                old=old["content"],
                new=text,
                changed_by=changed_by,
                reason=reason,
                metadata={"archive_id": archive_id, "archived_reason": "superseded"},
            ),
        )
    return True


def soft_delete(
    con: sqlite3.Connection,
    memory_id: str,
    at: datetime | str,
    *,
    changed_by: str = "user",
    reason: str | None = None,
    force: bool = False,
) -> bool:
    """Signet's soft delete: is_deleted=1, deleted_at, version+1 and a history 'deleted'
    event. Pinned memories need `force` (as in Signet). Returns False if already deleted."""
    stamp = _stamp(at)
    with transaction(con):
        old = _row(con, memory_id)
        if old["is_deleted"]:
            return False
        if old["pinned"] and not force:
            raise ValueError(f"memory {memory_id} is pinned; deleting it needs force=True")
        con.execute(
            "UPDATE memories SET is_deleted = 1, deleted_at = ?, updated_at = ?,"
            " updated_by = ?, version = COALESCE(version, 1) + 1 WHERE id = ?",
            (stamp, stamp, changed_by, memory_id),
        )
        _history(
            con,
            _Event(
                memory_id,
                "deleted",
                stamp,
                old=old["content"],
                changed_by=changed_by,
                reason=reason,
            ),
        )
    return True


def supersede_attribute(
    con: sqlite3.Connection,
    old_memory_id: str,
    new_memory_id: str,
    at: datetime | str,
    *,
    entity_name: str,
    aspect_name: str,
    entity_type: str = "project",
    kind: str = "attribute",
) -> str:
    """Knowledge-graph supersession: both memories become attributes of one entity aspect;
    the old attribute gets status 'superseded' and `superseded_by` the new one. The old
    memory row itself stays live. Returns the new attribute's id."""
    stamp = _stamp(at)
    entity_id = _uid("entity", entity_name)
    aspect_id = _uid("aspect", entity_name, aspect_name)
    old_attr, new_attr = _uid("attribute", old_memory_id), _uid("attribute", new_memory_id)
    with transaction(con):
        rows = _lookup(
            con,
            [old_memory_id, new_memory_id],
            "content, normalized_content, importance, created_at",
        )
        for mid in (old_memory_id, new_memory_id):
            if mid not in rows:
                raise ValueError(f"no memory with id {mid!r}")
        canonical = " ".join(entity_name.lower().split())
        con.execute(
            "INSERT OR IGNORE INTO entities (id, name, entity_type, created_at, updated_at,"
            " canonical_name, mentions) VALUES (?, ?, ?, ?, ?, ?, 0)",
            (entity_id, entity_name, entity_type, stamp, stamp, canonical),
        )
        con.execute(
            "INSERT OR IGNORE INTO entity_aspects (id, entity_id, name, canonical_name,"
            " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
            (
                aspect_id,
                entity_id,
                aspect_name,
                " ".join(aspect_name.lower().split()),
                stamp,
                stamp,
            ),
        )
        for attr, mid in ((old_attr, old_memory_id), (new_attr, new_memory_id)):
            content, normalized, importance, created = rows[mid]
            con.execute(
                "INSERT OR IGNORE INTO entity_attributes (id, aspect_id, memory_id, kind,"
                " content, normalized_content, confidence, importance, status, created_at,"
                " updated_at) VALUES (?, ?, ?, ?, ?, ?, 0.9, ?, 'active', ?, ?)",
                (attr, aspect_id, mid, kind, content, normalized, importance, created, created),
            )
            con.execute(
                "INSERT OR IGNORE INTO memory_entity_mentions (memory_id, entity_id,"
                " mention_text, confidence, created_at) VALUES (?, ?, ?, 0.9, ?)",
                (mid, entity_id, entity_name, created),
            )
        con.execute(
            "UPDATE entity_attributes SET status = 'superseded', superseded_by = ?,"
            " updated_at = ? WHERE id = ? AND status = 'active'",
            (new_attr, stamp, old_attr),
        )
        con.execute(
            "UPDATE entities SET mentions = (SELECT COUNT(*) FROM memory_entity_mentions"
            " WHERE entity_id = ?) WHERE id = ?",
            (entity_id, entity_id),
        )
    return new_attr


# --- session side: the loop wraps one whole session in one transaction, so a session is
# recorded entirely or not at all; these functions write inside it ----------------------------------------------------------------------


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
    path_json: str | None = None  # the knowledge-graph path that reached it (current stores)


def _agent(con: sqlite3.Connection) -> tuple[str, str, tuple[str, ...]]:
    """How a session row names its agent in this store: (extra column, extra condition,
    extra value) — `agent_id` 'default' on a current store, nothing on a 0.58 store."""
    if release_line(con) == "current":
        return ", agent_id", " AND agent_id = ?", (DEFAULT_AGENT,)
    return "", "", ()


def _has_path_json(con: sqlite3.Connection) -> bool:
    """Whether the store's `session_memories` records traversal paths (current Signet's)."""
    return any(r[1] == "path_json" for r in con.execute("PRAGMA table_info(session_memories)"))


def record_session_candidates(
    con: sqlite3.Connection, session_key: str, rows: Sequence[CandidateRow], created_at: str
) -> int:
    """Signet recordSessionCandidates: `INSERT OR IGNORE`, fts_hit_count 0; a row's traversal
    path goes to `path_json` where the store has that column. Returns rows added."""
    before = con.total_changes
    column, _, agent = _agent(con)
    paths = any(r.path_json is not None for r in rows) and _has_path_json(con)
    path_column = ", path_json" if paths else ""
    con.executemany(
        f"""INSERT OR IGNORE INTO session_memories (
            id, session_key, memory_id, source, effective_score, predictor_score, final_score,
            rank, was_injected, fts_hit_count, created_at, entity_slot, aspect_slot,
            is_constraint, structural_density, predictor_rank, agent_feedback_count{column}
            {path_column})
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, 0{", ?" * len(agent)}
            {", ?" if paths else ""})""",
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
                *agent,
                *((r.path_json,) if paths else ()),
            )
            for r in rows
        ],
    )
    return con.total_changes - before


def track_fts_hits(
    con: sqlite3.Connection, session_key: str, memory_ids: Iterable[str], created_at: str
) -> None:
    """Signet trackFtsHits: new ids get an 'fts_only' row, existing rows count one more hit."""
    column, _, agent = _agent(con)
    con.executemany(
        f"""INSERT INTO session_memories (
            id, session_key, memory_id, source, effective_score, final_score, rank,
            was_injected, fts_hit_count, created_at{column})
        VALUES (?, ?, ?, 'fts_only', 0, 0, 0, 0, 1, ?{", ?" * len(agent)})
        ON CONFLICT(session_key{column}, memory_id)
        DO UPDATE SET fts_hit_count = fts_hit_count + 1""",
        [
            (_uid(session_key, m), session_key, m, created_at, *agent)
            for m in dict.fromkeys(memory_ids)
        ],
    )


def record_agent_feedback(
    con: sqlite3.Connection, session_key: str, scores: Mapping[str, float]
) -> None:
    """Running mean of the agent's ratings: new = (old*count + s)/(count+1), or s if none."""
    _, condition, agent = _agent(con)
    con.executemany(
        f"""UPDATE session_memories SET
            agent_relevance_score = CASE WHEN agent_relevance_score IS NULL THEN ?
                ELSE (agent_relevance_score * agent_feedback_count + ?)
                     / (agent_feedback_count + 1) END,
            agent_feedback_count = COALESCE(agent_feedback_count, 0) + 1
        WHERE session_key = ? AND memory_id = ?{condition}""",
        [(s, s, session_key, m, *agent) for m, s in scores.items()],
    )


def write_relevance_scores(
    con: sqlite3.Connection, session_key: str, relevance: Mapping[str, float]
) -> None:
    """The continuity judge's per-memory relevance, clamped to [0, 1]."""
    _, condition, agent = _agent(con)
    con.executemany(
        "UPDATE session_memories SET relevance_score = ?"
        f" WHERE session_key = ? AND memory_id = ?{condition}",
        [(min(1.0, max(0.0, float(v))), session_key, m, *agent) for m, v in relevance.items()],
    )


def replace_row(con: sqlite3.Connection, table: str, cols: Mapping[str, Any]) -> None:
    """`INSERT OR REPLACE` one row given as column -> value (ids are deterministic upstream,
    so writing the same row again leaves one row)."""
    keys = list(cols)
    con.execute(
        f"INSERT OR REPLACE INTO {table} ({', '.join(keys)}) VALUES ({', '.join('?' * len(keys))})",
        list(cols.values()),
    )


def insert_session_score(con: sqlite3.Connection, session_key: str, **cols: Any) -> None:
    """One `session_scores` row per processed session (idempotent on the session key)."""
    row = {"id": _uid("score", session_key), "session_key": session_key, **cols}
    replace_row(con, "session_scores", row)


def insert_summary_job(con: sqlite3.Connection, session_key: str, **cols: Any) -> None:
    """The session's summary job (transcript), completed."""
    replace_row(
        con, "summary_jobs", {"id": _uid("job", session_key), "session_key": session_key, **cols}
    )


# Signet's lossless transcripts (migration 040, after 0.58.1): one row per session, the raw
# conversation, beside the summary job's normalised transcript. A store without the table (a
# 0.58.1 one) gets it on the first write.
_SESSION_TRANSCRIPTS_DDL = """CREATE TABLE IF NOT EXISTS session_transcripts (
    session_key TEXT PRIMARY KEY, content TEXT NOT NULL, harness TEXT, project TEXT,
    agent_id TEXT, created_at TEXT)"""


def insert_session_transcript(
    con: sqlite3.Connection, session_key: str, content: str, **cols: Any
) -> None:
    """The session's conversation in `session_transcripts` (keyed by session, as Signet's
    summary worker writes it), for the default agent."""
    con.execute(_SESSION_TRANSCRIPTS_DDL)
    row = {"session_key": session_key, "content": content, "agent_id": DEFAULT_AGENT, **cols}
    replace_row(con, "session_transcripts", row)


@dataclass(frozen=True, slots=True)
class FocalEntityRecord:
    """A session's focal entities as Signet records them, the primary one first (ids and names
    aligned): all of them on the session's checkpoint (`focal_entity_ids`,
    `focal_entity_names`: JSON lists), the primary one on its comparison (`focal_entity_id`,
    `focal_entity_name`). Empty: the session named none, and those columns stay NULL."""

    ids: tuple[str, ...] = ()
    names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.names):
            raise ValueError(
                f"focal entities: {len(self.ids)} ids but {len(self.names)} names (one each)"
            )

    def checkpoint_columns(self) -> dict[str, str]:
        """The `session_checkpoints` columns (none when the session named no entity)."""
        if not self.ids:
            return {}
        return {
            "focal_entity_ids": json.dumps(list(self.ids)),
            "focal_entity_names": json.dumps(list(self.names)),
        }

    def comparison_columns(self) -> dict[str, str]:
        """The `predictor_comparisons` columns (none when the session named no entity)."""
        if not self.ids:
            return {}
        return {"focal_entity_id": self.ids[0], "focal_entity_name": self.names[0]}


NO_FOCAL_ENTITIES = FocalEntityRecord()


def insert_session_checkpoint(
    con: sqlite3.Connection, session_key: str, trigger: str, **cols: Any
) -> None:
    """A `session_checkpoints` row (Signet writes one with trigger 'session_end')."""
    row = {
        "id": _uid("checkpoint", session_key, trigger),
        "session_key": session_key,
        "trigger": trigger,
        **cols,
    }
    replace_row(con, "session_checkpoints", row)


def comparison_id(session_key: str) -> str:
    """The id of a session's comparison row (the same however often it is written)."""
    return _uid("comparison", session_key)


def insert_comparison(con: sqlite3.Connection, session_key: str, row: Mapping[str, Any]) -> None:
    """One `predictor_comparisons` row (a 0.58 store's); JSON-valued columns are serialised
    here."""
    cols = {k: v for k, v in row.items() if k not in ("id", "session_key")}
    for k in ("predictor_top_ids", "baseline_top_ids", "relevance_scores"):
        if k in cols and not isinstance(cols[k], str):
            cols[k] = json.dumps(cols[k])
    full = {"id": comparison_id(session_key), "session_key": session_key, **cols}
    replace_row(con, "predictor_comparisons", full)


def insert_training_log(con: sqlite3.Connection, run_id: str, **cols: Any) -> None:
    """One `predictor_training_log` row per training run (a 0.58 store's)."""
    replace_row(con, "predictor_training_log", {"id": run_id, **cols})
