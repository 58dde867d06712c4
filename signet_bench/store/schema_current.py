"""Current Signet's SQLite schema (release 0.145.7, migrations 001-080) for the tables the
workbench reads and writes.

The DDL is the final shape Signet's migrations leave in `sqlite_master` when they run on an empty
database (`platform/core/src/migrations/`, release 0.145.7): each statement below is that
table's `CREATE TABLE` with the columns later migrations added folded in, in their order.
Where each table comes from:

- `memories`: 001 baseline; 002 hash, deletion and extraction columns; 006 idempotency key;
  013 runtime path; 033 `scope`; 043 `agent_id`, `visibility`; 056 the content-hash
  uniqueness per agent, project, scope and visibility; 072 the idempotency key per agent.
- `memories_fts`: 001, rebuilt by 057 with `tokenize='unicode61'`; 063 re-indexes only when
  the content changes (`AFTER UPDATE OF content`).
- `embeddings`: 001, 008 (unique content hash), 065 `agent_id`.
- `session_memories`: 015, 020 (structural columns), 025 (agent feedback), 041 (`path_json`),
  rebuilt by 042 with `agent_id NOT NULL DEFAULT 'default'` and
  `UNIQUE(session_key, agent_id, memory_id)`.
- `session_scores`: 011, 015 (confidence, continuity reasoning), 045 `agent_id`.
- `summary_jobs`: 009, 045 (`agent_id`, `session_id`, `trigger`, capture times).
- `memory_history`: 002, 004 (actor, session, request). `memories_cold`: 028.
- `session_checkpoints`: 016, 021 (structural columns).
- Graph: `entities` 002, 005, 019, 022 (pinning), 035 (`entities_fts`), 037 (communities),
  064 (source provenance), 070 (status, archiving, proposals); `entity_aspects`,
  `entity_attributes`, `entity_dependencies` 019, then 031/036 (dependency reason and
  confidence), 039 (unique dependency per source, target, type and agent), 050 (reason rule
  and `entity_dependency_history`), 059/060 (claim and group keys), 064, 067, 070, 071
  (versioned claims); `relations` and `memory_entity_mentions` 002, 005;
  `entity_communities` 037.
- `path_feedback_events`: 041. `session_recall_events`: 073.
- `schema_migrations`, `schema_migrations_audit`: the migration runner; versions 1..80.

Current Signet has no `predictor_comparisons`, `predictor_training_log` or
`predictor_training_pairs` (migrations 023, 024 and 026 are retired slots and 020 no longer
creates them), so a new current store has none. Tables Signet has that the workbench neither
reads nor writes (documents, skills, tasks, telemetry, transcripts, ...) are left out.
"""

from __future__ import annotations

__all__ = [
    "CURRENT_SCHEMA_VERSION",
    "FTS_DDL",
    "INDEXES_DDL",
    "TABLES_DDL",
    "TRIGGERS_DDL",
]

CURRENT_SCHEMA_VERSION = 80
"""The highest migration release 0.145.7 applies (`schema_migrations` holds 1..80)."""

# Each table as release 0.145.7 leaves it, whole, even where 0.58's (`store.schema`) or
# `memories`' own columns (`memories_cold`, migration 028) read alike: each is that DDL.
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
            version INTEGER NOT NULL,
            applied_at TEXT NOT NULL,
            duration_ms INTEGER,
            checksum TEXT
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
            source_section TEXT,
            scope TEXT DEFAULT NULL,
            agent_id TEXT DEFAULT 'default',
            visibility TEXT DEFAULT 'global'
        )""",
    "embeddings": """
        CREATE TABLE embeddings (
            id TEXT PRIMARY KEY,
            content_hash TEXT NOT NULL UNIQUE,
            vector BLOB NOT NULL,
            dimensions INTEGER NOT NULL,
            source_type TEXT NOT NULL,
            source_id TEXT NOT NULL,
            chunk_text TEXT NOT NULL,
            created_at TEXT NOT NULL,
            agent_id TEXT
        )""",
    "session_memories": """
        CREATE TABLE session_memories (
            id TEXT PRIMARY KEY,
            session_key TEXT NOT NULL,
            agent_id TEXT NOT NULL DEFAULT 'default',
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
            path_json TEXT,
            UNIQUE(session_key, agent_id, memory_id)
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
            continuity_reasoning TEXT,
            agent_id TEXT NOT NULL DEFAULT 'default'
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
            error TEXT,
            agent_id TEXT NOT NULL DEFAULT 'default',
            session_id TEXT,
            trigger TEXT NOT NULL DEFAULT 'session_end',
            captured_at TEXT,
            started_at TEXT,
            ended_at TEXT
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
            request_id TEXT,
            FOREIGN KEY (memory_id) REFERENCES memories(id)
        )""",
    "memories_cold": """
        CREATE TABLE memories_cold (
            archive_id TEXT PRIMARY KEY,
            memory_id TEXT NOT NULL,
            type TEXT DEFAULT 'fact',
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
            content_hash TEXT,
            normalized_content TEXT,
            extraction_status TEXT,
            embedding_model TEXT,
            extraction_model TEXT,
            update_count INTEGER DEFAULT 0,
            original_created_at TEXT NOT NULL,
            archived_at TEXT NOT NULL,
            archived_reason TEXT,
            cold_source_id TEXT,
            agent_id TEXT NOT NULL DEFAULT 'default',
            original_row_json TEXT
        )""",
    "session_checkpoints": """
        CREATE TABLE session_checkpoints (
            id TEXT PRIMARY KEY,
            session_key TEXT NOT NULL,
            harness TEXT NOT NULL,
            project TEXT,
            project_normalized TEXT,
            trigger TEXT NOT NULL,
            digest TEXT NOT NULL,
            prompt_count INTEGER NOT NULL,
            memory_queries TEXT,
            recent_remembers TEXT,
            created_at TEXT NOT NULL,
            focal_entity_ids TEXT,
            focal_entity_names TEXT,
            active_aspect_ids TEXT,
            surfaced_constraint_count INTEGER,
            traversal_memory_count INTEGER
        )""",
    "entity_communities": """
        CREATE TABLE entity_communities (
            id TEXT PRIMARY KEY,
            agent_id TEXT NOT NULL,
            name TEXT,
            cohesion REAL DEFAULT 0.0,
            member_count INTEGER DEFAULT 0,
            created_at TEXT NOT NULL DEFAULT (datetime('now')),
            updated_at TEXT NOT NULL DEFAULT (datetime('now')),
            source_id TEXT,
            source_kind TEXT,
            source_path TEXT,
            source_root TEXT
        )""",
    "entities": """
        CREATE TABLE entities (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            entity_type TEXT NOT NULL,
            description TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            canonical_name TEXT,
            mentions INTEGER DEFAULT 0,
            embedding BLOB,
            agent_id TEXT NOT NULL DEFAULT 'default',
            pinned INTEGER NOT NULL DEFAULT 0,
            pinned_at TEXT,
            last_synthesized_at TEXT,
            community_id TEXT REFERENCES entity_communities(id),
            source_id TEXT,
            source_kind TEXT,
            source_path TEXT,
            source_root TEXT,
            status TEXT NOT NULL DEFAULT 'active',
            archived_at TEXT,
            archived_by TEXT,
            archive_reason TEXT,
            proposal_id TEXT,
            proposal_evidence TEXT NOT NULL DEFAULT '[]'
        )""",
    "relations": """
        CREATE TABLE relations (
            id TEXT PRIMARY KEY,
            source_entity_id TEXT NOT NULL,
            target_entity_id TEXT NOT NULL,
            relation_type TEXT NOT NULL,
            strength REAL DEFAULT 1.0,
            metadata TEXT,
            created_at TEXT NOT NULL,
            mentions INTEGER DEFAULT 1,
            confidence REAL DEFAULT 0.5,
            updated_at TEXT,
            FOREIGN KEY (source_entity_id) REFERENCES entities(id),
            FOREIGN KEY (target_entity_id) REFERENCES entities(id)
        )""",
    "memory_entity_mentions": """
        CREATE TABLE memory_entity_mentions (
            memory_id TEXT NOT NULL,
            entity_id TEXT NOT NULL,
            mention_text TEXT,
            confidence REAL,
            created_at TEXT,
            PRIMARY KEY (memory_id, entity_id),
            FOREIGN KEY (memory_id) REFERENCES memories(id),
            FOREIGN KEY (entity_id) REFERENCES entities(id)
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
            status TEXT NOT NULL DEFAULT 'active',
            archived_at TEXT,
            archived_by TEXT,
            archive_reason TEXT,
            proposal_id TEXT,
            proposal_evidence TEXT NOT NULL DEFAULT '[]',
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
            normalized_content TEXT NOT NULL,
            confidence REAL NOT NULL DEFAULT 0.0,
            importance REAL NOT NULL DEFAULT 0.5,
            status TEXT NOT NULL DEFAULT 'active',
            superseded_by TEXT,
            created_at TEXT NOT NULL DEFAULT (datetime('now')),
            updated_at TEXT NOT NULL DEFAULT (datetime('now')),
            claim_key TEXT,
            group_key TEXT,
            source_id TEXT,
            source_kind TEXT,
            source_path TEXT,
            source_root TEXT,
            proposal_id TEXT,
            proposal_evidence TEXT NOT NULL DEFAULT '[]',
            version INTEGER NOT NULL DEFAULT 1,
            version_root_id TEXT,
            previous_attribute_id TEXT,
            archived_at TEXT,
            archived_by TEXT,
            archive_reason TEXT
        )""",
    "entity_dependencies": """
        CREATE TABLE entity_dependencies (
            id TEXT PRIMARY KEY,
            source_entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            target_entity_id TEXT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            agent_id TEXT NOT NULL DEFAULT 'default',
            aspect_id TEXT REFERENCES entity_aspects(id) ON DELETE SET NULL,
            dependency_type TEXT NOT NULL,
            strength REAL NOT NULL DEFAULT 0.5,
            created_at TEXT NOT NULL DEFAULT (datetime('now')),
            updated_at TEXT NOT NULL DEFAULT (datetime('now')),
            reason TEXT,
            confidence REAL DEFAULT 0.7,
            source_id TEXT,
            source_kind TEXT,
            source_path TEXT,
            source_root TEXT,
            proposal_id TEXT,
            proposal_evidence TEXT NOT NULL DEFAULT '[]',
            status TEXT NOT NULL DEFAULT 'active',
            archived_at TEXT,
            archived_by TEXT,
            archive_reason TEXT
        )""",
    "entity_dependency_history": """
        CREATE TABLE entity_dependency_history (
            id TEXT PRIMARY KEY,
            dependency_id TEXT NOT NULL,
            source_entity_id TEXT NOT NULL,
            target_entity_id TEXT NOT NULL,
            agent_id TEXT NOT NULL DEFAULT 'default',
            dependency_type TEXT NOT NULL,
            event TEXT NOT NULL,
            changed_by TEXT NOT NULL,
            reason TEXT NOT NULL,
            previous_reason TEXT,
            metadata TEXT,
            created_at TEXT NOT NULL DEFAULT (datetime('now'))
        )""",
    "path_feedback_events": """
        CREATE TABLE path_feedback_events (
            id TEXT PRIMARY KEY,
            agent_id TEXT NOT NULL,
            session_key TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            path_hash TEXT NOT NULL,
            path_json TEXT NOT NULL,
            rating REAL NOT NULL,
            reward REAL NOT NULL DEFAULT 0,
            reward_forward REAL NOT NULL DEFAULT 0,
            reward_update REAL NOT NULL DEFAULT 0,
            reward_downstream REAL NOT NULL DEFAULT 0,
            reward_dead_end REAL NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL
        )""",
    "session_recall_events": """
        CREATE TABLE session_recall_events (
            session_key TEXT NOT NULL,
            agent_id TEXT NOT NULL DEFAULT 'default',
            context_epoch INTEGER NOT NULL DEFAULT 0,
            item_kind TEXT NOT NULL,
            item_id TEXT NOT NULL,
            surface TEXT NOT NULL,
            mode TEXT NOT NULL,
            score REAL,
            source TEXT,
            created_at TEXT NOT NULL DEFAULT (datetime('now')),
            PRIMARY KEY (session_key, agent_id, context_epoch, item_kind, item_id)
        )""",
}
"""Each table's final `CREATE TABLE`, in creation order."""

INDEXES_DDL: tuple[str, ...] = (
    "CREATE INDEX idx_memories_type ON memories(type)",
    "CREATE INDEX idx_memories_category ON memories(category)",
    "CREATE INDEX idx_memories_pinned ON memories(pinned)",
    "CREATE INDEX idx_memories_importance ON memories(importance DESC)",
    "CREATE INDEX idx_memories_created ON memories(created_at DESC)",
    "CREATE INDEX idx_embeddings_source ON embeddings(source_type, source_id)",
    "CREATE INDEX idx_memories_is_deleted ON memories(is_deleted)",
    "CREATE INDEX idx_memories_extraction_status ON memories(extraction_status)",
    "CREATE INDEX idx_memory_history_memory_id ON memory_history(memory_id)",
    "CREATE INDEX idx_relations_source ON relations(source_entity_id)",
    "CREATE INDEX idx_relations_target ON relations(target_entity_id)",
    "CREATE INDEX idx_memory_entity_mentions_entity ON memory_entity_mentions(entity_id)",
    "CREATE INDEX idx_memories_deleted_at ON memories(deleted_at) WHERE is_deleted = 1",
    "CREATE INDEX idx_memory_history_created_at ON memory_history(created_at)",
    "CREATE INDEX idx_entities_canonical_name ON entities(canonical_name)",
    "CREATE INDEX idx_relations_composite ON relations(source_entity_id, relation_type)",
    "CREATE UNIQUE INDEX idx_embeddings_content_hash_unique ON embeddings(content_hash)",
    "CREATE INDEX idx_summary_jobs_status ON summary_jobs(status)",
    "CREATE INDEX idx_session_scores_project ON session_scores(project, created_at)",
    "CREATE INDEX idx_session_scores_session ON session_scores(session_key)",
    "CREATE INDEX idx_checkpoints_session ON session_checkpoints(session_key, created_at DESC)",
    (
        "CREATE INDEX idx_checkpoints_project ON session_checkpoints(project_normalized, "
        "created_at DESC)"
    ),
    "CREATE INDEX idx_entities_agent ON entities(agent_id)",
    "CREATE INDEX idx_entity_aspects_entity ON entity_aspects(entity_id)",
    "CREATE INDEX idx_entity_aspects_agent ON entity_aspects(agent_id)",
    "CREATE INDEX idx_entity_aspects_weight ON entity_aspects(weight DESC)",
    "CREATE INDEX idx_entity_attributes_aspect ON entity_attributes(aspect_id)",
    "CREATE INDEX idx_entity_attributes_agent ON entity_attributes(agent_id)",
    "CREATE INDEX idx_entity_attributes_kind ON entity_attributes(kind)",
    "CREATE INDEX idx_entity_attributes_status ON entity_attributes(status)",
    "CREATE INDEX idx_entity_dependencies_source ON entity_dependencies(source_entity_id)",
    "CREATE INDEX idx_entity_dependencies_target ON entity_dependencies(target_entity_id)",
    "CREATE INDEX idx_entity_dependencies_agent ON entity_dependencies(agent_id)",
    "CREATE INDEX idx_entities_pinned ON entities(agent_id, pinned, pinned_at DESC)",
    "CREATE INDEX idx_cold_memory_id ON memories_cold(memory_id)",
    "CREATE INDEX idx_cold_agent ON memories_cold(agent_id)",
    "CREATE INDEX idx_cold_project ON memories_cold(project)",
    "CREATE INDEX idx_cold_archived_at ON memories_cold(archived_at)",
    "CREATE INDEX idx_cold_source ON memories_cold(cold_source_id)",
    "CREATE INDEX idx_memories_scope ON memories(scope) WHERE scope IS NOT NULL",
    "CREATE INDEX idx_entity_communities_agent ON entity_communities(agent_id)",
    (
        "CREATE UNIQUE INDEX idx_entity_deps_unique ON entity_dependencies(source_entity_id, "
        "target_entity_id, dependency_type, agent_id)"
    ),
    "CREATE INDEX idx_path_feedback_events_agent_path ON path_feedback_events(agent_id, path_hash)",
    "CREATE INDEX idx_path_feedback_events_session ON path_feedback_events(session_key)",
    "CREATE INDEX idx_path_feedback_events_memory ON path_feedback_events(memory_id)",
    "CREATE INDEX idx_session_memories_session ON session_memories(session_key)",
    "CREATE INDEX idx_session_memories_memory ON session_memories(memory_id)",
    "CREATE INDEX idx_session_memories_agent_session ON session_memories(agent_id, session_key)",
    "CREATE INDEX idx_memories_agent_id ON memories(agent_id)",
    "CREATE INDEX idx_memories_agent_visibility ON memories(agent_id, visibility)",
    "CREATE INDEX idx_summary_jobs_agent ON summary_jobs(agent_id, created_at)",
    (
        "CREATE INDEX idx_session_scores_agent_session ON session_scores(agent_id, session_key, "
        "created_at)"
    ),
    "CREATE INDEX idx_entity_dependency_history_dep ON entity_dependency_history(dependency_id)",
    "CREATE INDEX idx_entity_dependency_history_agent ON entity_dependency_history(agent_id)",
    (
        "CREATE INDEX idx_entity_dependency_history_created ON "
        "entity_dependency_history(created_at DESC)"
    ),
    "CREATE INDEX idx_summary_jobs_agent_trigger ON summary_jobs(agent_id, trigger, created_at)",
    (
        "CREATE INDEX idx_summary_jobs_agent_session ON summary_jobs(agent_id, session_key, "
        "created_at)"
    ),
    (
        "CREATE INDEX idx_entities_order ON entities(agent_id, pinned DESC, pinned_at DESC, "
        "mentions DESC, updated_at DESC, name)"
    ),
    (
        "CREATE INDEX idx_entities_extracted_mentions ON entities(entity_type, mentions) WHERE "
        "entity_type = 'extracted'"
    ),
    (
        "CREATE INDEX idx_entity_attributes_claim_key ON entity_attributes(agent_id, aspect_id, "
        "claim_key, status) WHERE claim_key IS NOT NULL"
    ),
    (
        "CREATE INDEX idx_entity_attributes_group_key ON entity_attributes(agent_id, aspect_id, "
        "group_key, status) WHERE group_key IS NOT NULL"
    ),
    (
        "CREATE INDEX idx_entity_attributes_group_claim ON entity_attributes(agent_id, aspect_id,"
        " group_key, claim_key, status) WHERE claim_key IS NOT NULL"
    ),
    "CREATE INDEX idx_entities_source ON entities(agent_id, source_id, source_path)",
    (
        "CREATE INDEX idx_entity_communities_source ON entity_communities(agent_id, source_id, "
        "source_path)"
    ),
    (
        "CREATE INDEX idx_entity_attributes_source ON entity_attributes(agent_id, source_id, "
        "source_path)"
    ),
    (
        "CREATE INDEX idx_entity_dependencies_source_origin ON entity_dependencies(agent_id, "
        "source_id, source_path)"
    ),
    "CREATE INDEX idx_embeddings_agent_source ON embeddings(agent_id, source_type, source_id)",
    "CREATE INDEX idx_entity_attributes_proposal ON entity_attributes(agent_id, proposal_id)",
    "CREATE INDEX idx_entity_dependencies_proposal ON entity_dependencies(agent_id, proposal_id)",
    "CREATE INDEX idx_entities_status ON entities(agent_id, status, updated_at DESC)",
    "CREATE INDEX idx_entity_aspects_status ON entity_aspects(agent_id, entity_id, status)",
    (
        "CREATE INDEX idx_entity_attributes_version_root ON entity_attributes(agent_id, "
        "version_root_id, version DESC)"
    ),
    (
        "CREATE INDEX idx_entity_attributes_claim_version ON entity_attributes(agent_id, "
        "aspect_id, group_key, claim_key, version DESC)"
    ),
    (
        "CREATE INDEX idx_entity_dependencies_status ON entity_dependencies(agent_id, status, "
        "updated_at DESC)"
    ),
    "CREATE INDEX idx_entities_proposal ON entities(agent_id, proposal_id)",
    "CREATE INDEX idx_entity_aspects_proposal ON entity_aspects(agent_id, proposal_id)",
    (
        "CREATE UNIQUE INDEX idx_memories_idempotency_key ON memories(idempotency_key, "
        "COALESCE(NULLIF(agent_id, ''), 'default'), COALESCE(visibility, 'global'), "
        "COALESCE(scope, '__NULL__')) WHERE idempotency_key IS NOT NULL AND is_deleted = 0"
    ),
    (
        "CREATE INDEX idx_session_recall_events_session ON session_recall_events(session_key, "
        "agent_id, context_epoch, created_at DESC)"
    ),
    (
        "CREATE INDEX idx_session_recall_events_item ON session_recall_events(item_kind, item_id,"
        " created_at DESC)"
    ),
    (
        "CREATE UNIQUE INDEX idx_memories_content_hash_unique ON memories(content_hash, "
        "COALESCE(NULLIF(agent_id, ''), 'default'), COALESCE(project, ''), COALESCE(scope, "
        "'__NULL__'), COALESCE(visibility, 'global')) WHERE content_hash IS NOT NULL AND "
        "is_deleted = 0"
    ),
)
"""Every index Signet defines on those tables (their own names and column lists)."""

FTS_DDL: tuple[str, ...] = (
    (
        "CREATE VIRTUAL TABLE memories_fts USING fts5(content, content='memories',"
        " content_rowid='rowid', tokenize='unicode61')"
    ),
    """CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, content) VALUES (new.rowid, new.content);
    END""",
    """CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, content)
            VALUES ('delete', old.rowid, old.content);
    END""",
    """CREATE TRIGGER memories_au AFTER UPDATE OF content ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, content)
            VALUES ('delete', old.rowid, old.content);
        INSERT INTO memories_fts(rowid, content) VALUES (new.rowid, new.content);
    END""",
    (
        "CREATE VIRTUAL TABLE entities_fts USING fts5(name, canonical_name,"
        " content='entities', content_rowid='rowid')"
    ),
    """CREATE TRIGGER entities_fts_ai AFTER INSERT ON entities BEGIN
        INSERT INTO entities_fts(rowid, name, canonical_name)
            VALUES (new.rowid, new.name, new.canonical_name);
    END""",
    """CREATE TRIGGER entities_fts_ad AFTER DELETE ON entities BEGIN
        INSERT INTO entities_fts(entities_fts, rowid, name, canonical_name)
            VALUES ('delete', old.rowid, old.name, old.canonical_name);
    END""",
    """CREATE TRIGGER entities_fts_au AFTER UPDATE ON entities BEGIN
        INSERT INTO entities_fts(entities_fts, rowid, name, canonical_name)
            VALUES ('delete', old.rowid, old.name, old.canonical_name);
        INSERT INTO entities_fts(rowid, name, canonical_name)
            VALUES (new.rowid, new.name, new.canonical_name);
    END""",
)
"""The external-content FTS5 tables on `memories` (035: and `entities`) with their triggers."""

_REASON_RULE = """CREATE TRIGGER trg_entity_dependencies_related_to_reason_{event}
    BEFORE {what} ON entity_dependencies FOR EACH ROW
    WHEN NEW.dependency_type = 'related_to'
        AND (NEW.reason IS NULL OR length(trim(NEW.reason)) = 0)
    BEGIN
        SELECT RAISE(ABORT, 'related_to dependencies require a non-empty reason');
    END"""

_AUDIT = """CREATE TRIGGER trg_entity_dependencies_audit_{event} AFTER {what} ON entity_dependencies
    FOR EACH ROW BEGIN
        INSERT INTO entity_dependency_history (
            id, dependency_id, source_entity_id, target_entity_id, agent_id, dependency_type,
            event, changed_by, reason, previous_reason, metadata, created_at
        ) VALUES (
            lower(hex(randomblob(16))), {row}.id, {row}.source_entity_id, {row}.target_entity_id,
            {row}.agent_id, {row}.dependency_type, '{past}', 'db-trigger',
            COALESCE({row}.reason, '{past} without reason'), {previous},
            '{{"source":"trg_entity_dependencies_audit_{event}"}}', datetime('now')
        );
    END"""

TRIGGERS_DDL: tuple[str, ...] = (
    _REASON_RULE.format(event="insert", what="INSERT"),
    _REASON_RULE.format(event="update", what="UPDATE OF dependency_type, reason"),
    _AUDIT.format(event="insert", what="INSERT", row="NEW", past="created", previous="NULL"),
    _AUDIT.format(event="update", what="UPDATE", row="NEW", past="updated", previous="OLD.reason"),
    _AUDIT.format(event="delete", what="DELETE", row="OLD", past="deleted", previous="NULL"),
)
"""050's rules on `entity_dependencies`: a `related_to` edge needs a reason, and every change
is written to `entity_dependency_history`."""
