"""Fast generators of large, plausible Signet stores for load and analytics benchmarks.

Values are drawn with numpy from a seeded generator and bulk-inserted in one transaction. They
have realistic shapes (about 80 candidates per session, ~10 injected, sparse FTS hits, unscored
early sessions) but no planted relevance: use `signet_bench.world.synth` for that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.store.content import content_hash, normalized_content
from signet_bench.store.schema import connect_writer, create_store, indexes_ddl
from signet_bench.store.timestamps import format_iso, format_sqlite

__all__ = ["ScaleSummary", "write_memories_scale", "write_session_memories_scale"]

DEFAULT_NOW = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
CANDIDATES_PER_SESSION = 80
INJECTED_PER_SESSION = 10
HISTORY_DAYS = 365.0

_WORDS_TEXT = (
    "deploy api schema cache queue token python rust sqlite docker build test release config "
    "migration index embedding vector latency budget review branch merge error logging metric "
    "user session memory prompt model scorer ranking fusion feedback label drift gate canary"
)
_WORDS = tuple(_WORDS_TEXT.split(" "))
_TYPES = ("fact", "preference", "decision", "rationale", "procedural", "episodic", "constraint")
_TYPE_P = (0.35, 0.15, 0.15, 0.1, 0.1, 0.1, 0.05)
_PROJECTS = ("signet", "webapp", "infra", None)
_BULK_INDEXES = (
    "idx_session_memories_session",
    "idx_session_memories_memory",
    "idx_session_memories_agent_session",  # the current line's
)


@dataclass(frozen=True, slots=True)
class ScaleSummary:
    """What a generator wrote."""

    path: Path
    memories: int
    embeddings: int
    sessions: int
    session_memories: int


def _iso_list(base: datetime, seconds: np.ndarray) -> list[str]:
    return [format_iso(base + timedelta(seconds=float(s))) for s in seconds.tolist()]


def _memory_rows(rng: np.random.Generator, n: int, now: datetime) -> tuple[list[tuple], list[str]]:
    """Rows for `memories` (both timestamp formats in use) and their content hashes."""
    start = now - timedelta(days=HISTORY_DAYS)
    created = np.sort(rng.uniform(0, HISTORY_DAYS * 86_400, n))
    created_at = _iso_list(start, created)
    types = rng.choice(len(_TYPES), size=n, p=_TYPE_P).tolist()
    importance = np.round(rng.beta(2.0, 2.0, n), 3).tolist()
    pinned = (rng.random(n) < 0.02).astype(int).tolist()
    access = rng.poisson(2.0, n).tolist()
    projects = rng.integers(0, len(_PROJECTS), n).tolist()
    words = rng.integers(0, len(_WORDS), (n, 8)).tolist()
    accessed = rng.random(n) < 0.5
    rows, hashes = [], []
    for i in range(n):
        text = f"memory {i}: " + " ".join(_WORDS[w] for w in words[i])
        h = content_hash(text)
        hashes.append(h)
        last = None
        if accessed[i]:  # Signet's recall path writes datetime('now') here
            last = format_sqlite(start + timedelta(seconds=float(created[i]) + 3600.0))
        rows.append(
            (
                f"mem-{i:07d}",
                _TYPES[types[i]],
                text,
                importance[i],
                pinned[i],
                access[i],
                created_at[i],
                created_at[i],
                last,
                _PROJECTS[projects[i]],
                ",".join(_WORDS[w] for w in words[i][:2]),
                h,
                normalized_content(text),
            )
        )
    return rows, hashes


def _insert_memories(
    con, rng: np.random.Generator, n: int, dim: int | None, now: datetime
) -> tuple[list[str], int]:
    rows, hashes = _memory_rows(rng, n, now)
    con.executemany(
        "INSERT INTO memories (id, type, content, importance, pinned, access_count, created_at,"
        " updated_at, last_accessed, project, tags, content_hash, normalized_content)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    ids = [r[0] for r in rows]
    if not dim:
        return ids, 0
    vecs = rng.standard_normal((n, dim), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    blobs = vecs.astype("<f4")
    con.executemany(
        "INSERT INTO embeddings (id, content_hash, vector, dimensions, source_type, source_id,"
        " chunk_text, created_at) VALUES (?, ?, ?, ?, 'memory', ?, ?, ?)",
        (
            (f"emb-{i:07d}", hashes[i], blobs[i].tobytes(), dim, ids[i], rows[i][2], rows[i][6])
            for i in range(n)
        ),
    )
    return ids, n


def write_memories_scale(
    path: str | Path,
    n_memories: int = 4000,
    *,
    dim: int = DEFAULT_CONFIG.native_dim,
    seed: int = 0,
    now: datetime = DEFAULT_NOW,
    schema: str = "0.58",
) -> ScaleSummary:
    """A new store of release line `schema` with `n_memories` memories and one unit-norm
    `dim`-d embedding each."""
    create_store(path, now=now, schema=schema)
    rng = np.random.default_rng(seed)
    con = connect_writer(path)
    try:
        con.execute("BEGIN")
        _, n_emb = _insert_memories(con, rng, n_memories, dim, now)
        con.execute("COMMIT")
    finally:
        con.close()
    return ScaleSummary(Path(path), n_memories, n_emb, 0, 0)


def _coprime_strides(n: int) -> np.ndarray:
    cand = np.arange(1, n, dtype=np.int64)
    return cand[np.gcd(cand, n) == 1] if n > 1 else np.array([1])


def write_session_memories_scale(
    path: str | Path,
    n_rows: int = 1_500_000,
    *,
    n_memories: int = 4000,
    seed: int = 0,
    now: datetime = DEFAULT_NOW,
    per_session: int = CANDIDATES_PER_SESSION,
    schema: str = "0.58",
) -> ScaleSummary:
    """A new store of release line `schema` with `n_memories` memories (no embeddings) and
    `n_rows` session_memories rows, `per_session` distinct candidates per session, plus one
    session_scores row each (a current store's rows are the default agent's)."""
    if per_session > n_memories:
        raise ValueError(f"per_session={per_session} exceeds n_memories={n_memories}")
    create_store(path, now=now, schema=schema)
    rng = np.random.default_rng(seed)
    n_sessions = math.ceil(n_rows / per_session)
    con = connect_writer(path)
    try:
        # A scratch store: skip the WAL for the bulk load (pages are written once), then return
        # to Signet's WAL mode.
        con.execute("PRAGMA journal_mode = MEMORY")
        con.execute("PRAGMA synchronous = OFF")
        con.execute("PRAGMA cache_size = -262144")
        con.execute("BEGIN")
        mem_ids, _ = _insert_memories(con, rng, n_memories, None, now)
        keys, times = _insert_sessions(con, rng, n_sessions, now)
        # Secondary indexes are rebuilt once after the bulk insert: much faster than per row.
        for name in _BULK_INDEXES:
            con.execute(f"DROP INDEX IF EXISTS {name}")
        _insert_candidates(con, rng, n_rows, per_session, keys, times, mem_ids)
        for ddl in indexes_ddl(schema):
            if any(f" {name} " in ddl for name in _BULK_INDEXES):
                con.execute(ddl)
        con.execute("COMMIT")
        con.execute("PRAGMA journal_mode = WAL")
    finally:
        con.close()
    return ScaleSummary(Path(path), n_memories, 0, n_sessions, n_rows)


def _insert_sessions(
    con, rng: np.random.Generator, n_sessions: int, now: datetime
) -> tuple[list[str], list[str]]:
    start = now - timedelta(days=HISTORY_DAYS)
    offsets = np.sort(rng.uniform(0, HISTORY_DAYS * 86_400, n_sessions))
    times = _iso_list(start, offsets)
    keys = [f"sess-{s:07d}" for s in range(n_sessions)]
    score = np.round(rng.beta(5.0, 2.0, n_sessions), 3).tolist()
    conf = np.round(rng.uniform(0.3, 1.0, n_sessions), 3).tolist()
    projects = rng.integers(0, len(_PROJECTS), n_sessions).tolist()
    used = rng.integers(0, INJECTED_PER_SESSION + 1, n_sessions).tolist()
    novel = rng.poisson(1.0, n_sessions).tolist()
    con.executemany(
        "INSERT INTO session_scores (id, session_key, project, harness, score, memories_recalled,"
        " memories_used, novel_context_count, reasoning, created_at, confidence)"
        " VALUES (?, ?, ?, 'claude-code', ?, ?, ?, ?, NULL, ?, ?)",
        (
            (
                f"score-{s:07d}",
                keys[s],
                _PROJECTS[projects[s]],
                score[s],
                INJECTED_PER_SESSION,
                used[s],
                novel[s],
                times[s],
                conf[s],
            )
            for s in range(n_sessions)
        ),
    )
    return keys, times


def _nullable(values: np.ndarray, mask: np.ndarray) -> list:
    out = values.tolist()
    for i in np.flatnonzero(mask).tolist():
        out[i] = None
    return out


def _insert_candidates(
    con,
    rng: np.random.Generator,
    n_rows: int,
    per_session: int,
    keys: list[str],
    times: list[str],
    mem_ids: list[str],
) -> None:
    n_mem = len(mem_ids)
    sess = np.arange(n_rows) // per_session
    rank = np.arange(n_rows) % per_session
    n_sessions = len(keys)
    starts = rng.integers(0, n_mem, n_sessions)
    strides = rng.choice(_coprime_strides(n_mem), n_sessions)
    mem = (starts[sess] + rank * strides[sess]) % n_mem  # distinct within a session
    eff = np.round(rng.uniform(0.05, 1.0, n_rows) * (1.0 - rank / (per_session + 1)), 4)
    unscored = sess < n_sessions // 10  # early sessions: predictor not scoring yet
    pred = np.round(rng.dirichlet(np.ones(per_session), n_sessions).reshape(-1)[:n_rows], 6)
    injected = rank < INJECTED_PER_SESSION
    relevance = np.round(rng.beta(2.0, 3.0, n_rows), 3)
    fts = np.where(rng.random(n_rows) < 0.08, rng.poisson(1.5, n_rows) + 1, 0)
    source = np.where(
        rank >= per_session - 3,
        "fts_only",
        np.where(rng.random(n_rows) < 0.01, "exploration", "effective"),
    )
    constraint = (rng.random(n_rows) < 0.03).astype(int)
    pred_rank = rng.permuted(
        np.tile(np.arange(per_session), n_sessions).reshape(n_sessions, -1), axis=1
    )
    pred_rank = pred_rank.reshape(-1)[:n_rows]
    agent = np.round(rng.uniform(-1.0, 1.0, n_rows), 3)
    agent_n = np.where(rng.random(n_rows) < 0.2, rng.integers(1, 4, n_rows), 0)
    cols = (
        [keys[s] for s in sess.tolist()],
        [mem_ids[m] for m in mem.tolist()],
        source.tolist(),
        eff.tolist(),
        rank.tolist(),
        _nullable(pred, unscored),
        _nullable(relevance, ~injected),
        fts.tolist(),
        [times[s] for s in sess.tolist()],
        constraint.tolist(),
        _nullable(pred_rank, unscored),
        _nullable(agent, agent_n == 0),
        agent_n.tolist(),
    )
    # id, was_injected and final_score follow from other values: computed by SQLite, not bound.
    con.executemany(
        "INSERT INTO session_memories (id, session_key, memory_id, source, effective_score,"
        " rank, predictor_score, final_score, was_injected, relevance_score, fts_hit_count,"
        " created_at, is_constraint, predictor_rank, agent_relevance_score,"
        " agent_feedback_count) VALUES (?1 || ':' || printf('%03d', ?5), ?1, ?2, ?3, ?4, ?5, ?6,"
        f" COALESCE(?6, ?4), ?5 < {INJECTED_PER_SESSION}, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        zip(*cols, strict=True),
    )
