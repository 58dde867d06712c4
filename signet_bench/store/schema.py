"""Signet's SQLite schema for the tables the workbench reads, in its two release lines: Signet
0.58 (migrations 001-030, here) and current Signet (0.145.7, migrations 001-080,
`store.schema_current`).

`create_store` makes an empty, Signet-compatible `memories.db` of either line: for 0.58 the
columns of docs/specification.md §2.1, the `memories_fts` external-content FTS5 table keyed
on rowid with its three triggers, and `schema_migrations` rows 1..30; for the current line the
tables `schema_current` holds and rows 1..80. Both in WAL mode.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from signet_bench.errors import UserError
from signet_bench.store import schema_current
from signet_bench.store.timestamps import format_iso

__all__ = [
    "KNOWN_TABLES",
    "LINE_RELEASES",
    "LINE_VERSIONS",
    "RELEASE_LINES",
    "REQUIRED_TABLES",
    "SCHEMA_VERSION",
    "TABLES_DDL",
    "ReleaseLine",
    "check_release_line",
    "connect_writer",
    "create_store",
    "indexes_ddl",
    "new_store",
    "release_line_of",
]

ReleaseLine = Literal["0.58", "current"]
RELEASE_LINES: tuple[ReleaseLine, ...] = ("0.58", "current")

SCHEMA_VERSION = 30

# Each table as migrations 001-030 leave it, whole, even where the current line's
# (`store.schema_current`) reads alike: each release line's DDL reads as that release's.
TABLES_DDL: dict[str, str] = {
    "schema_migrations": """
        CREATE TABLE schema_migrations (
            version INTEGER PRIMARY KEY,
            applied_at TEXT NOT NULL,
            checksum TEXT NOT NULL
        )""",
    "schema_migrations_audit": """
        CREATE TABLE schema_migrations_audit (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            version INTEGER, applied_at TEXT, duration_ms INTEGER, checksum TEXT
        )""",
    "memories": """
        CREATE TABLE memories (
            id TEXT PRIMARY KEY,
            type TEXT NOT NULL DEFAULT 'fact',
            category TEXT,
            content TEXT NOT NULL,
            confidence REAL DEFAULT 1.0,
            importance REAL DEFAULT 0.5,
            source_id TEXT,
            source_type TEXT,
            tags TEXT,
            who TEXT,
            why TEXT,
            project TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            updated_by TEXT NOT NULL DEFAULT 'system',
            last_accessed TEXT,
            access_count INTEGER DEFAULT 0,
            vector_clock TEXT NOT NULL DEFAULT '{}',
            version INTEGER DEFAULT 1,
            manual_override INTEGER DEFAULT 0,
            pinned INTEGER DEFAULT 0,
            content_hash TEXT,
            normalized_content TEXT,
            is_deleted INTEGER DEFAULT 0,
            deleted_at TEXT,
            extraction_status TEXT DEFAULT 'none',
            embedding_model TEXT,
            extraction_model TEXT,
            update_count INTEGER DEFAULT 0,
            idempotency_key TEXT,
            runtime_path TEXT,
            source_path TEXT,
            source_section TEXT
        )""",
    "embeddings": """
        CREATE TABLE embeddings (
            id TEXT PRIMARY KEY,
            content_hash TEXT NOT NULL,
            vector BLOB NOT NULL,
            dimensions INTEGER NOT NULL,
            source_type TEXT NOT NULL,
            source_id TEXT NOT NULL,
            chunk_text TEXT NOT NULL,
            created_at TEXT NOT NULL
        )""",
    "session_memories": """
        CREATE TABLE session_memories (
            id TEXT PRIMARY KEY,
            session_key TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            source TEXT NOT NULL,
            effective_score REAL,
            predictor_score REAL,
            final_score REAL NOT NULL,
            rank INTEGER NOT NULL,
            was_injected INTEGER NOT NULL,
            relevance_score REAL,
            fts_hit_count INTEGER NOT NULL DEFAULT 0,
            agent_preference TEXT,
            created_at TEXT NOT NULL,
            entity_slot INTEGER,
            aspect_slot INTEGER,
            is_constraint INTEGER NOT NULL DEFAULT 0,
            structural_density INTEGER,
            predictor_rank INTEGER,
            agent_relevance_score REAL,
            agent_feedback_count INTEGER DEFAULT 0,
            UNIQUE(session_key, memory_id)
        )""",
    "session_scores": """
        CREATE TABLE session_scores (
            id TEXT PRIMARY KEY,
            session_key TEXT NOT NULL,
            project TEXT,
            harness TEXT,
            score REAL NOT NULL,
            memories_recalled INTEGER,
            memories_used INTEGER,
            novel_context_count INTEGER,
            reasoning TEXT,
            created_at TEXT NOT NULL,
            confidence REAL,
            continuity_reasoning TEXT
        )""",
    "summary_jobs": """
        CREATE TABLE summary_jobs (
            id TEXT PRIMARY KEY,
            session_key TEXT,
            harness TEXT NOT NULL,
            project TEXT,
            transcript TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending',
            result TEXT,
            attempts INTEGER DEFAULT 0,
            max_attempts INTEGER DEFAULT 3,
            created_at TEXT NOT NULL,
            completed_at TEXT,
            error TEXT
        )""",
    "memory_history": """
        CREATE TABLE memory_history (
            id TEXT PRIMARY KEY,
            memory_id TEXT NOT NULL,
            event TEXT NOT NULL,
            old_content TEXT,
            new_content TEXT,
            changed_by TEXT NOT NULL,
            reason TEXT,
            metadata TEXT,
            created_at TEXT NOT NULL,
            actor_type TEXT,
            session_id TEXT,
            request_id TEXT
        )""",
    "memories_cold": """
        CREATE TABLE memories_cold (
            archive_id TEXT PRIMARY KEY,
            memory_id TEXT NOT NULL,
            type TEXT, category TEXT,
            content TEXT NOT NULL,
            confidence REAL, importance REAL,
            source_id TEXT, source_type TEXT, tags TEXT, who TEXT, why TEXT, project TEXT,
            content_hash TEXT, normalized_content TEXT, extraction_status TEXT,
            embedding_model TEXT, extraction_model TEXT, update_count INTEGER,
            original_created_at TEXT NOT NULL,
            archived_at TEXT NOT NULL,
            archived_reason TEXT,
            cold_source_id TEXT,
            agent_id TEXT NOT NULL DEFAULT 'default',
            original_row_json TEXT
        )""",
    "predictor_comparisons": """
        CREATE TABLE predictor_comparisons (
            id TEXT PRIMARY KEY,
            session_key TEXT NOT NULL,
            agent_id TEXT NOT NULL DEFAULT 'default',
            predictor_ndcg REAL NOT NULL,
            baseline_ndcg REAL NOT NULL,
            predictor_won INTEGER NOT NULL,
            margin REAL NOT NULL,
            alpha REAL NOT NULL,
            ema_updated INTEGER NOT NULL DEFAULT 0,
            focal_entity_id TEXT,
            focal_entity_name TEXT,
            project TEXT,
            candidate_count INTEGER NOT NULL,
            traversal_count INTEGER NOT NULL DEFAULT 0,
            constraint_count INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL DEFAULT (datetime('now')),
            scorer_confidence REAL NOT NULL DEFAULT 0,
            success_rate REAL NOT NULL DEFAULT 0.5,
            predictor_top_ids TEXT NOT NULL DEFAULT '[]',
            baseline_top_ids TEXT DEFAULT '[]',
            relevance_scores TEXT NOT NULL DEFAULT '{}',
            fts_overlap_score REAL
        )""",
    "predictor_training_log": """
        CREATE TABLE predictor_training_log (
            id TEXT PRIMARY KEY,
            agent_id TEXT NOT NULL DEFAULT 'default',
            model_version INTEGER NOT NULL,
            loss REAL NOT NULL,
            sample_count INTEGER NOT NULL,
            duration_ms INTEGER NOT NULL,
            canary_ndcg REAL,
            canary_ndcg_delta REAL,
            canary_score_variance REAL,
            canary_topk_churn REAL,
            created_at TEXT DEFAULT (datetime('now'))
        )""",
    "predictor_training_pairs": """
        CREATE TABLE predictor_training_pairs (
            id TEXT PRIMARY KEY,
            agent_id TEXT NOT NULL DEFAULT 'default',
            session_key TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            recency_days REAL, access_count INTEGER, importance REAL, decay_factor REAL,
            embedding_similarity REAL, entity_slot INTEGER, aspect_slot INTEGER,
            is_constraint INTEGER, structural_density INTEGER, fts_hit_count INTEGER,
            agent_relevance_score REAL, continuity_score REAL, fts_overlap_score REAL,
            combined_label REAL NOT NULL,
            was_injected INTEGER, predictor_rank INTEGER, baseline_rank INTEGER,
            created_at TEXT DEFAULT (datetime('now'))
        )""",
    "session_checkpoints": """
        CREATE TABLE session_checkpoints (
            id TEXT PRIMARY KEY,
            session_key TEXT NOT NULL,
            harness TEXT,
            project TEXT,
            project_normalized TEXT,
            trigger TEXT NOT NULL,
            digest TEXT,
            prompt_count INTEGER,
            memory_queries TEXT,
            recent_remembers TEXT,
            created_at TEXT NOT NULL,
            focal_entity_ids TEXT,
            focal_entity_names TEXT,
            active_aspect_ids TEXT,
            surfaced_constraint_count INTEGER,
            traversal_memory_count INTEGER
        )""",
    "entities": """
        CREATE TABLE entities (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            entity_type TEXT NOT NULL,
            description TEXT,
            created_at TEXT NOT NULL DEFAULT (datetime('now')),
            updated_at TEXT NOT NULL DEFAULT (datetime('now')),
            canonical_name TEXT,
            mentions INTEGER DEFAULT 0,
            embedding BLOB,
            agent_id TEXT NOT NULL DEFAULT 'default',
            pinned INTEGER NOT NULL DEFAULT 0,
            pinned_at TEXT
        )""",
    "relations": """
        CREATE TABLE relations (
            id TEXT PRIMARY KEY,
            source_entity_id TEXT NOT NULL REFERENCES entities(id),
            target_entity_id TEXT NOT NULL REFERENCES entities(id),
            relation_type TEXT NOT NULL,
            strength REAL DEFAULT 1.0,
            metadata TEXT,
            created_at TEXT NOT NULL DEFAULT (datetime('now')),
            mentions INTEGER DEFAULT 1,
            confidence REAL DEFAULT 0.5,
            updated_at TEXT
        )""",
    "memory_entity_mentions": """
        CREATE TABLE memory_entity_mentions (
            memory_id TEXT NOT NULL REFERENCES memories(id),
            entity_id TEXT NOT NULL REFERENCES entities(id),
            mention_text TEXT,
            confidence REAL,
            created_at TEXT,
            PRIMARY KEY (memory_id, entity_id)
        )""",
    "entity_aspects": """
        CREATE TABLE entity_aspects (
            id TEXT PRIMARY KEY,
            entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            agent_id TEXT NOT NULL DEFAULT 'default',
            name TEXT NOT NULL,
            canonical_name TEXT NOT NULL,
            weight REAL NOT NULL DEFAULT 0.5,
            created_at TEXT NOT NULL DEFAULT (datetime('now')),
            updated_at TEXT NOT NULL DEFAULT (datetime('now')),
            UNIQUE(entity_id, canonical_name)
        )""",
    "entity_attributes": """
        CREATE TABLE entity_attributes (
            id TEXT PRIMARY KEY,
            aspect_id TEXT REFERENCES entity_aspects(id) ON DELETE SET NULL,
            agent_id TEXT NOT NULL DEFAULT 'default',
            memory_id TEXT REFERENCES memories(id) ON DELETE SET NULL,
            kind TEXT NOT NULL,
            content TEXT NOT NULL,
            normalized_content TEXT,
            confidence REAL DEFAULT 0.0,
            importance REAL DEFAULT 0.5,
            status TEXT DEFAULT 'active',
            superseded_by TEXT,
            created_at TEXT NOT NULL DEFAULT (datetime('now')),
            updated_at TEXT NOT NULL DEFAULT (datetime('now'))
        )""",
}

INDEXES_DDL: tuple[str, ...] = (
    "CREATE INDEX idx_memories_type ON memories(type)",
    "CREATE INDEX idx_memories_category ON memories(category)",
    "CREATE INDEX idx_memories_pinned ON memories(pinned)",
    "CREATE INDEX idx_memories_importance ON memories(importance DESC)",
    "CREATE INDEX idx_memories_created ON memories(created_at DESC)",
    "CREATE INDEX idx_memories_is_deleted ON memories(is_deleted)",
    "CREATE INDEX idx_memories_extraction_status ON memories(extraction_status)",
    "CREATE INDEX idx_memories_deleted_at ON memories(deleted_at) WHERE is_deleted = 1",
    (
        "CREATE UNIQUE INDEX idx_memories_content_hash_unique ON memories(content_hash)"
        " WHERE content_hash IS NOT NULL AND is_deleted = 0"
    ),
    (
        "CREATE UNIQUE INDEX idx_memories_idempotency_key ON memories(idempotency_key)"
        " WHERE idempotency_key IS NOT NULL"
    ),
    "CREATE UNIQUE INDEX idx_embeddings_content_hash_unique ON embeddings(content_hash)",
    "CREATE INDEX idx_embeddings_source ON embeddings(source_type, source_id)",
    "CREATE INDEX idx_session_memories_session ON session_memories(session_key)",
    "CREATE INDEX idx_session_memories_memory ON session_memories(memory_id)",
    "CREATE INDEX idx_session_scores_project ON session_scores(project, created_at)",
    "CREATE INDEX idx_session_scores_session ON session_scores(session_key)",
    "CREATE INDEX idx_summary_jobs_status ON summary_jobs(status)",
    "CREATE INDEX idx_memory_history_memory ON memory_history(memory_id)",
    "CREATE INDEX idx_memory_history_created ON memory_history(created_at)",
    "CREATE INDEX idx_memories_cold_memory ON memories_cold(memory_id)",
    "CREATE INDEX idx_predictor_comparisons_session ON predictor_comparisons(session_key)",
    "CREATE INDEX idx_predictor_comparisons_agent ON predictor_comparisons(agent_id)",
    "CREATE INDEX idx_predictor_comparisons_project ON predictor_comparisons(project)",
    "CREATE INDEX idx_predictor_comparisons_entity ON predictor_comparisons(focal_entity_id)",
    "CREATE INDEX idx_relations_source ON relations(source_entity_id)",
    "CREATE INDEX idx_relations_target ON relations(target_entity_id)",
    "CREATE INDEX idx_relations_source_type ON relations(source_entity_id, relation_type)",
)

FTS_DDL: tuple[str, ...] = (
    "CREATE VIRTUAL TABLE memories_fts USING fts5(content, content=memories, content_rowid=rowid)",
    """CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, content) VALUES (new.rowid, new.content);
    END""",
    """CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, content)
            VALUES ('delete', old.rowid, old.content);
    END""",
    """CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, content)
            VALUES ('delete', old.rowid, old.content);
        INSERT INTO memories_fts(rowid, content) VALUES (new.rowid, new.content);
    END""",
)

# The tables a store must have for the workbench to read it (docs/specification.md §2).
REQUIRED_TABLES: tuple[str, ...] = (
    "memories",
    "memories_fts",
    "embeddings",
    "session_memories",
    "session_scores",
    "schema_migrations",
)


@dataclass(frozen=True)
class _LineSchema:
    """What `create_store` writes for one release line: tables, then the other statements
    (indexes, FTS tables and triggers), and the highest migration it records."""

    tables: Mapping[str, str]
    indexes: tuple[str, ...]
    others: tuple[str, ...]
    version: int


_SCHEMAS: dict[str, _LineSchema] = {
    "0.58": _LineSchema(TABLES_DDL, INDEXES_DDL, FTS_DDL, SCHEMA_VERSION),
    "current": _LineSchema(
        schema_current.TABLES_DDL,
        schema_current.INDEXES_DDL,
        (*schema_current.FTS_DDL, *schema_current.TRIGGERS_DDL),
        schema_current.CURRENT_SCHEMA_VERSION,
    ),
}

LINE_VERSIONS: dict[ReleaseLine, int] = {
    "0.58": SCHEMA_VERSION,
    "current": schema_current.CURRENT_SCHEMA_VERSION,
}
"""The highest migration each release line's schema here is known to (0.58: 30; current: 80)."""

LINE_RELEASES: dict[ReleaseLine, str] = {"0.58": "Signet 0.58", "current": "Signet 0.145.7"}
"""The release each line's schema here was taken from."""


def release_line_of(columns: Mapping[str, Collection[str]]) -> ReleaseLine:
    """The release line of a store from its tables (name -> column names): "current" when
    `session_memories` has `agent_id`, else "0.58". Migration 042 rebuilt `session_memories`
    with `agent_id` (its key is per agent since), so every current store has it, new or upgraded
    from 0.58, and no 0.58 store does. The predictor tables tell nothing on their own: a store
    upgraded from 0.58 keeps them, and a new current store has none."""
    return "current" if "agent_id" in columns.get("session_memories", ()) else "0.58"


KNOWN_TABLES: frozenset[str] = frozenset(TABLES_DDL) | frozenset(schema_current.TABLES_DDL)
"""Every ordinary table either release line's DDL here defines."""


def check_release_line(schema: str) -> ReleaseLine:
    """`schema` when it names a release line ("0.58" or "current"), else a ValueError."""
    if schema not in _SCHEMAS:
        raise ValueError(f"schema: {schema!r} is not one of {', '.join(RELEASE_LINES)}")
    return schema  # type: ignore[return-value]


def indexes_ddl(schema: str = "0.58") -> tuple[str, ...]:
    """The `CREATE INDEX` statements of a release line's store."""
    return _SCHEMAS[check_release_line(schema)].indexes


def connect_writer(path: str | Path, *, busy_timeout_ms: int = 10_000) -> sqlite3.Connection:
    """A read-write stdlib connection in WAL mode, as the (simulated) daemon holds one."""
    con = sqlite3.connect(str(path), timeout=busy_timeout_ms / 1000, isolation_level=None)
    con.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA synchronous = NORMAL")
    return con


def create_store(path: str | Path, *, now: datetime | None = None, schema: str = "0.58") -> Path:
    """Create an empty store of release line `schema` ("0.58", the default, or "current") at
    `path` (which must not exist yet)."""
    line = _SCHEMAS[check_release_line(schema)]
    p = Path(path)
    if p.exists():
        raise FileExistsError(f"{p}: already exists; refusing to overwrite a store")
    p.parent.mkdir(parents=True, exist_ok=True)
    stamp = format_iso(now or datetime.now(UTC))
    con = connect_writer(p)
    try:
        con.execute("BEGIN")
        for ddl in (*line.tables.values(), *line.indexes, *line.others):
            con.execute(ddl)
        con.executemany(
            "INSERT INTO schema_migrations(version, applied_at, checksum) VALUES (?, ?, ?)",
            [
                (v, stamp, hashlib.sha256(f"signet-migration-{v:03d}".encode()).hexdigest())
                for v in range(1, line.version + 1)
            ],
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        con.close()
        p.unlink(missing_ok=True)
        raise
    con.close()
    return p


@contextmanager
def new_store(
    path: str | Path, *, now: datetime | None = None, schema: str = "0.58"
) -> Iterator[sqlite3.Connection]:
    """A new store of release line `schema` at `path` and its writer connection: the caller
    fills it; on success the WAL is checkpointed into the file, on any failure the half-written
    store is removed, so a failed build leaves nothing behind. An existing file is refused,
    never overwritten."""
    p = Path(path)
    try:
        create_store(p, now=now, schema=schema)
    except FileExistsError:
        raise UserError(f"{p}: already exists; refusing to overwrite a store") from None
    con = connect_writer(p)
    try:
        yield con
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except BaseException:
        con.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{p}{suffix}").unlink(missing_ok=True)
        raise
    con.close()
