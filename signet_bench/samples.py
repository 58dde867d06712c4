"""Training samples from any Signet store: one per scored session, built with the shared
feature, context and label functions so training sees exactly what serving sees."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.context import context_embedding
from signet_bench.features import CandidateInfo, SessionInfo, candidate_features
from signet_bench.labels import SessionLabelInput, seed_labels, session_trainable
from signet_bench.model.tokenizer import project_slot, token_buckets
from signet_bench.store.read import MemoryTable, open_readonly, read_memories
from signet_bench.timestamps import parse_ts

__all__ = ["SessionSample", "StoreSnapshot", "build_sample", "load_samples", "superseded_at"]


@dataclass(frozen=True, slots=True)
class SessionSample:
    """One session's candidate set as the model sees it, with its labels."""

    session_key: str
    start: datetime
    project: str | None
    confidence: float
    continuity: float
    memory_ids: np.ndarray  # (n,) str
    context: np.ndarray  # (D,) float32
    cand_emb: np.ndarray  # (n, D) float32, zero rows on the text path
    has_emb: np.ndarray  # (n,) bool
    tokens: tuple[np.ndarray, ...]  # hash buckets per candidate (text path)
    features: np.ndarray  # (n, 17) float32
    project_slot: int
    labels: np.ndarray  # (n,) float64
    baseline_rank: np.ndarray  # (n,) 0-based rank at session start (fts_only rows last)

    def __len__(self) -> int:
        return len(self.memory_ids)


@dataclass(frozen=True, slots=True)
class StoreSnapshot:
    """The parts of a store sample assembly needs, read once."""

    memories: MemoryTable
    index: dict[str, int]
    superseded_at: np.ndarray  # epoch seconds, NaN if never
    deleted_at: np.ndarray  # epoch seconds, NaN if not deleted
    created_at: np.ndarray  # epoch seconds
    tokens: list[np.ndarray]


def superseded_at(con: sqlite3.Connection, mem: MemoryTable) -> np.ndarray:
    """When each memory became stale (a superseded knowledge-graph attribute, or a soft
    delete), as epoch seconds; NaN when it never did. An in-place update is not staleness: the
    live row holds the new content (see store.read)."""
    ids = mem.frame["id"].to_list()
    when: dict[str, float] = {}
    for mid, at in con.execute(
        "SELECT memory_id, MIN(updated_at) FROM entity_attributes WHERE memory_id IS NOT NULL "
        "AND (status = 'superseded' OR superseded_by IS NOT NULL) GROUP BY memory_id"
    ):
        t = parse_ts(at).timestamp()
        when[mid] = min(when.get(mid, t), t)
    out = np.array([when.get(i, np.nan) for i in ids], dtype=np.float64)
    deleted = _epoch(mem.frame["deleted_at"])
    return np.fmin(out, np.where(mem.frame["is_deleted"].to_numpy(), deleted, np.nan))


def _epoch(col: pl.Series) -> np.ndarray:
    """Datetime column -> epoch seconds (NaN for nulls)."""
    s = col.dt.epoch("us").cast(pl.Float64) / 1e6
    return s.fill_null(np.nan).to_numpy()


def snapshot(con: sqlite3.Connection) -> StoreSnapshot:
    """Read memories (deleted included: labels need them) and derived per-memory arrays."""
    mem = read_memories(con, include_deleted=True)
    ids = mem.frame["id"].to_list()
    return StoreSnapshot(
        memories=mem,
        index={m: i for i, m in enumerate(ids)},
        superseded_at=superseded_at(con, mem),
        deleted_at=_epoch(mem.frame["deleted_at"]),
        created_at=_epoch(mem.frame["created_at"]),
        tokens=[token_buckets(t) for t in mem.frame["content"].to_list()],
    )


def candidate_info(snap: StoreSnapshot, rows: np.ndarray, cand: pl.DataFrame) -> CandidateInfo:
    """The feature inputs of the candidates at `rows` of the snapshot."""
    f = snap.memories.frame
    return CandidateInfo(
        created_at=snap.created_at[rows],
        importance=f["importance"].to_numpy()[rows].astype(np.float64),
        access_count=f["access_count"].to_numpy()[rows].astype(np.float64),
        has_embedding=f["has_embedding"].to_numpy()[rows],
        superseded_at=snap.superseded_at[rows],
        entity_slot=cand["entity_slot"].cast(pl.Float64).fill_null(-1).to_numpy(),
        aspect_slot=cand["aspect_slot"].cast(pl.Float64).fill_null(-1).to_numpy(),
        is_constraint=np.maximum(
            cand["is_constraint"].fill_null(0).to_numpy(),
            f["is_constraint"].to_numpy()[rows].astype(np.int64),
        ),
        structural_density=cand["structural_density"].cast(pl.Float64).fill_null(0).to_numpy(),
        is_traversal=(cand["source"] == "ka_traversal").to_numpy(),
    )


def build_sample(
    snap: StoreSnapshot,
    session: dict,
    cand: pl.DataFrame,
    previous_used: Sequence[str],
    previous_project_start: datetime | None,
    *,
    tz: str,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    rng: np.random.Generator | None = None,
) -> SessionSample | None:
    """One session's sample (None when no candidate of it still exists)."""
    cand = cand.filter(pl.col("memory_id").is_in(list(snap.index)))
    if cand.height == 0:
        return None
    cand = cand.sort(
        [pl.col("source") == "fts_only", "rank", "memory_id"], descending=[False, False, False]
    )
    rows = np.array([snap.index[m] for m in cand["memory_id"].to_list()], dtype=np.int64)
    mem = snap.memories
    has = mem.frame["has_embedding"].to_numpy()
    emb = mem.embeddings
    start: datetime = session["start"]
    prev_rows = [snap.index[m] for m in previous_used if m in snap.index]
    prev_rows = [r for r in prev_rows if has[r]]
    top = [r for r, s in zip(rows, cand["source"].to_list(), strict=True) if s != "fts_only"]
    top = [r for r in top if has[r]][:10]
    ctx, _rule = context_embedding(emb[prev_rows], emb[top])
    if ctx is None:
        return None
    cos = emb[rows] @ ctx
    start_s = start.timestamp()
    deleted_after = (snap.deleted_at[rows] - start_s) / 3600.0
    label_input = SessionLabelInput(
        memory_ids=np.asarray(cand["memory_id"].to_list(), dtype=object),
        was_injected=cand["was_injected"].to_numpy().astype(bool),
        relevance_score=cand["relevance_score"].cast(pl.Float64).fill_null(np.nan).to_numpy(),
        fts_hit_count=cand["fts_hit_count"].fill_null(0).to_numpy().astype(np.int64),
        agent_relevance_score=cand["agent_relevance_score"]
        .cast(pl.Float64)
        .fill_null(np.nan)
        .to_numpy(),
        cosine_to_context=np.where(has[rows], cos, 0.0),
        superseded=np.isfinite(snap.superseded_at[rows]),
        deleted_at_hours_after_injection=deleted_after,
        access_count=mem.frame["access_count"].to_numpy()[rows].astype(np.int64),
        continuity_score=float(session["score"]),
        confidence=float(session["confidence"]),
        novel_context_count=int(session.get("novel_context_count") or 0),
    )
    result = seed_labels(label_input, cfg, rng=rng or np.random.default_rng(0))
    keep = np.asarray(result.include, dtype=bool)
    labels = np.asarray(result.labels, dtype=np.float64)
    if keep.sum() < 2 or not session_trainable(float(session["confidence"]), labels[keep], cfg):
        return None
    rows, cand = rows[keep], cand.filter(pl.Series(keep))
    features = candidate_features(
        candidate_info(snap, rows, cand),
        SessionInfo(start, tz, session.get("project"), previous_project_start),
    )
    return SessionSample(
        session_key=session["session_key"],
        start=start,
        project=session.get("project"),
        confidence=float(session["confidence"]),
        continuity=float(session["score"]),
        memory_ids=np.asarray(cand["memory_id"].to_list(), dtype=object),
        context=ctx,
        cand_emb=emb[rows],
        has_emb=has[rows],
        tokens=tuple(snap.tokens[r] for r in rows),
        features=features,
        project_slot=project_slot(session.get("project"), cfg.project_slots),
        labels=labels[keep],
        baseline_rank=cand["rank"].to_numpy().astype(np.int64),
    )


def session_table(con: sqlite3.Connection) -> pl.DataFrame:
    """Scored sessions with their start (first candidate row) and end (score row) times."""
    rows = con.execute(
        """SELECT ss.session_key, ss.project, ss.score, ss.confidence, ss.novel_context_count,
                  ss.created_at AS ended_at,
                  (SELECT MIN(sm.created_at) FROM session_memories sm
                    WHERE sm.session_key = ss.session_key) AS started_at
           FROM session_scores ss WHERE ss.score IS NOT NULL"""
    ).fetchall()
    cols = ["session_key", "project", "score", "confidence", "novel_context_count"]
    recs = []
    for r in rows:
        if r[6] is None:
            continue
        d = dict(zip(cols, r[:5], strict=True))
        d["start"] = parse_ts(r[6])
        d["end"] = parse_ts(r[5])
        recs.append(d)
    recs.sort(key=lambda d: (d["start"], d["session_key"]))
    return (
        pl.DataFrame(recs, schema_overrides={"confidence": pl.Float64}) if recs else pl.DataFrame()
    )


def load_samples(
    store: str | Path | sqlite3.Connection,
    *,
    tz: str = "UTC",
    cfg: PredictorConfig = DEFAULT_CONFIG,
    limit: int = 5000,
    min_confidence: float | None = None,
    seed: int = 0,
) -> tuple[list[SessionSample], int]:
    """All trainable sessions of a store, oldest first, and how many were skipped."""
    con = store if isinstance(store, sqlite3.Connection) else open_readonly(store)
    try:
        snap = snapshot(con)
        sessions = session_table(con)
        if sessions.height == 0:
            return [], 0
        keys = sessions["session_key"].to_list()
        cands = read_candidates(con, keys)
        by_key = {k[0]: g for k, g in cands.group_by("session_key")}
        threshold = cfg.min_scorer_confidence if min_confidence is None else min_confidence
        rng = np.random.default_rng(seed)
        last: dict[str | None, tuple[str, datetime]] = {}
        out: list[SessionSample] = []
        skipped = 0
        for s in sessions.iter_rows(named=True):
            proj = s["project"]
            prev = last.get(proj)
            cand = by_key.get(s["session_key"])
            prev_used = _used(by_key.get(prev[0])) if prev else []
            last[proj] = (s["session_key"], s["start"])
            conf = s["confidence"]
            if cand is None or conf is None or conf < threshold:
                skipped += 1
                continue
            sample = build_sample(
                snap, s, cand, prev_used, prev[1] if prev else None, tz=tz, cfg=cfg, rng=rng
            )
            if sample is None:
                skipped += 1
            else:
                out.append(sample)
        return out[-limit:], skipped
    finally:
        if not isinstance(store, sqlite3.Connection):
            con.close()


def _used(cand: pl.DataFrame | None) -> list[str]:
    """Memories a finished session actually used: FTS hits or a positive agent rating."""
    if cand is None:
        return []
    used = cand.filter(
        (pl.col("fts_hit_count") > 0) | (pl.col("agent_relevance_score").fill_null(0) > 0)
    )
    return used["memory_id"].to_list()


def read_candidates(con: sqlite3.Connection, session_keys: Sequence[str]) -> pl.DataFrame:
    """session_memories rows of the given sessions, columns by name."""
    cols = [r[1] for r in con.execute("PRAGMA table_info(session_memories)")]
    want = [
        "session_key",
        "memory_id",
        "source",
        "effective_score",
        "predictor_score",
        "rank",
        "was_injected",
        "relevance_score",
        "fts_hit_count",
        "agent_relevance_score",
        "entity_slot",
        "aspect_slot",
        "is_constraint",
        "structural_density",
    ]
    sel = ", ".join(c if c in cols else f"NULL AS {c}" for c in want)
    keyset = set(session_keys)
    data = [r for r in con.execute(f"SELECT {sel} FROM session_memories") if r[0] in keyset]
    schema = {
        "session_key": pl.String,
        "memory_id": pl.String,
        "source": pl.String,
        "effective_score": pl.Float64,
        "predictor_score": pl.Float64,
        "rank": pl.Int64,
        "was_injected": pl.Int64,
        "relevance_score": pl.Float64,
        "fts_hit_count": pl.Int64,
        "agent_relevance_score": pl.Float64,
        "entity_slot": pl.Int64,
        "aspect_slot": pl.Int64,
        "is_constraint": pl.Int64,
        "structural_density": pl.Int64,
    }
    return pl.DataFrame(data, schema=schema, orient="row")
