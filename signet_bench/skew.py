"""Train/serve feature skew: for a store, the features our way beside the two ways Signet 0.58
computed them (its Rust trainer and its TypeScript inference path), and where they differ."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from signet_bench.features import (
    FEATURE_NAMES,
    SessionInfo,
    candidate_features,
    signet058_inference_features,
    signet058_training_features,
)
from signet_bench.samples import candidate_info, read_candidates, session_table, snapshot
from signet_bench.store.read import open_readonly
from signet_bench.timestamps import parse_ts

__all__ = ["feature_triples", "skew_report"]

_TOL = 1e-6


def _session_end_checkpoints(con: sqlite3.Connection) -> list[float]:
    rows = con.execute(
        "SELECT created_at FROM session_checkpoints WHERE trigger = 'session_end'"
    ).fetchall()
    return sorted(parse_ts(r[0]).timestamp() for r in rows)


def _stack(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros((0, len(FEATURE_NAMES)), np.float32)


def feature_triples(
    store: str | Path | sqlite3.Connection, *, tz: str = "UTC", max_sessions: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ours, signet-0.58 training, signet-0.58 inference) feature rows for every recorded
    session-start candidate of every scored session, stacked in the same order."""
    con = store if isinstance(store, sqlite3.Connection) else open_readonly(store)
    try:
        snap = snapshot(con)
        sessions = session_table(con)
        if sessions.height == 0:
            empty = np.zeros((0, len(FEATURE_NAMES)), dtype=np.float32)
            return empty, empty, empty
        if max_sessions:
            sessions = sessions.tail(max_sessions)
        cands = read_candidates(con, sessions["session_key"].to_list())
        by_key = {k[0]: g for k, g in cands.group_by("session_key")}
        ends = _session_end_checkpoints(con)
        is_deleted = snap.memories.frame["is_deleted"].to_numpy()
        last_start: dict[str | None, datetime] = {}
        last_end: dict[str | None, datetime] = {}
        all_ends = sorted(sessions["end"].to_list())
        ours, train, infer = [], [], []
        for s in sessions.iter_rows(named=True):
            proj, start, end = s["project"], s["start"], s["end"]
            prev_start, prev_end = last_start.get(proj), last_end.get(proj)
            last_start[proj], last_end[proj] = start, end
            cand = by_key.get(s["session_key"])
            if cand is None:
                continue
            cand = cand.filter(
                (pl.col("source") != "fts_only") & pl.col("memory_id").is_in(list(snap.index))
            )
            if cand.height == 0:
                continue
            rows = np.array([snap.index[m] for m in cand["memory_id"].to_list()])
            info = candidate_info(snap, rows, cand)
            before = [
                e for e in (ends or [x.timestamp() for x in all_ends]) if e < start.timestamp()
            ]
            last_any = datetime.fromtimestamp(before[-1], tz=start.tzinfo) if before else None
            ours.append(candidate_features(info, SessionInfo(start, tz, proj, prev_start)))
            train.append(signet058_training_features(info, end, prev_end, is_deleted[rows]))
            infer.append(signet058_inference_features(info, start, tz, last_any))
        return _stack(ours), _stack(train), _stack(infer)
    finally:
        if not isinstance(store, sqlite3.Connection):
            con.close()


def skew_report(
    store: str | Path | sqlite3.Connection, *, tz: str = "UTC", max_sessions: int | None = None
) -> pl.DataFrame:
    """Per feature: how often and by how much Signet 0.58's training and inference values
    differ from ours (mean |Δ| and share of candidate rows with |Δ| > 1e-6)."""
    ours, train, infer = feature_triples(store, tz=tz, max_sessions=max_sessions)
    n_rows, n_feat = ours.shape
    if n_rows == 0:
        ours = train = infer = np.zeros((1, n_feat))  # all-zero differences, rows = 0
    d_train, d_infer = np.abs(ours - train), np.abs(ours - infer)
    return pl.DataFrame(
        {
            "index": list(range(n_feat)),
            "feature": list(FEATURE_NAMES),
            "rows": [n_rows] * n_feat,
            "train_mean_abs_diff": d_train.mean(axis=0),
            "train_share_differs": (d_train > _TOL).mean(axis=0),
            "infer_mean_abs_diff": d_infer.mean(axis=0),
            "infer_share_differs": (d_infer > _TOL).mean(axis=0),
        }
    )
