"""Train/serve feature skew: for a store, the features our way beside the two ways Signet 0.58
computed them (its Rust trainer and its TypeScript inference path), and where they differ.
The knowledge-graph columns are the same in all three (`learn.samples.session_graph`): Signet
0.58's inference computed them, recorded them with the candidates and its trainer read them."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from signet_bench.daemon.candidates import CandidateOrigin, candidate_info, session_inputs
from signet_bench.daemon.context import previous_sessions
from signet_bench.daemon.features import signet058_inference_features, signet058_training_features
from signet_bench.learn.samples import scored_sessions, session_graph, session_structure
from signet_bench.store.corpus import Corpus, read_corpus
from signet_bench.store.read import (
    open_readonly,
    read_session_memories,
    read_sessions,
    table_names,
)
from signet_bench.store.timestamps import parse_ts
from signet_scorer.context import SessionContextVector
from signet_scorer.contract import FEATURE_NAMES
from signet_scorer.features import SessionInfo
from signet_scorer.structure import GraphColumns, MemoryStructure

__all__ = ["feature_triples", "skew_report"]

_TOL = 1e-6


def _session_end_checkpoints(con: sqlite3.Connection) -> list[float]:
    """The session-end checkpoints' times (none when the store keeps no checkpoints)."""
    if "session_checkpoints" not in table_names(con):
        return []
    rows = con.execute(
        "SELECT created_at FROM session_checkpoints WHERE trigger = 'session_end'"
    ).fetchall()
    return sorted(parse_ts(r[0]).timestamp() for r in rows)


def _stack(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros((0, len(FEATURE_NAMES)), np.float32)


def _last_before(times: list[float], t: float, tz) -> datetime | None:
    """The latest of `times` (sorted epoch seconds) before `t`, as a datetime."""
    before = [e for e in times if e < t]
    return datetime.fromtimestamp(before[-1], tz=tz) if before else None


def _start_pool(
    cand: pl.DataFrame, corpus: Corpus, structure: MemoryStructure
) -> tuple[pl.DataFrame, GraphColumns]:
    """A session's session-start candidates still in the corpus and their knowledge-graph
    columns, recorded or computed as the trainer decides it (over all the session's rows)."""
    cand = cand.filter(pl.col("memory_id").is_in(list(corpus.row_of)))
    start = (cand["source"] != "fts_only").to_numpy()
    return cand.filter(start), session_graph(cand, structure).take(start)


def feature_triples(
    store: str | Path | sqlite3.Connection, *, tz: str = "UTC", max_sessions: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ours, signet-0.58 training, signet-0.58 inference) feature rows for every recorded
    session-start candidate of every scored session, stacked in the same order. Ours are the
    session inputs the loop and the trainer compute (`candidates.session_inputs`)."""
    con = store if isinstance(store, sqlite3.Connection) else open_readonly(store)
    try:
        corpus = read_corpus(con)
        cands = read_session_memories(con)
        sessions = scored_sessions(read_sessions(con), cands)
        ends = _session_end_checkpoints(con)
        structure = session_structure(con, cands)
    finally:
        if not isinstance(store, sqlite3.Connection):
            con.close()
    by_key = {k[0]: g for k, g in cands.group_by("session_key")}
    previous = previous_sessions(sessions, by_key)
    ends = ends or sorted(x.timestamp() for x in sessions["created_at"].to_list())
    if max_sessions:
        sessions = sessions.tail(max_sessions)
    last_end: dict[str | None, datetime] = {}
    ours, train, infer = [], [], []
    for s in sessions.iter_rows(named=True):
        proj, start, end = s["project"], s["start"], s["created_at"]
        prev_end = last_end.get(proj)
        last_end[proj] = end
        cand, graph = _start_pool(by_key[s["session_key"]], corpus, structure)
        if cand.height == 0:
            continue
        rows = corpus.rows(cand["memory_id"].to_list())
        prev = previous[s["session_key"]]
        inputs = session_inputs(
            corpus,
            rows,
            s["session_key"],
            SessionInfo(start, tz, proj, prev.start if prev else None),
            SessionContextVector(None, "none"),
            origin=CandidateOrigin(graph=graph),
        )
        info = candidate_info(corpus, rows, proj, graph)
        ours.append(inputs.features)
        train.append(signet058_training_features(info, end, prev_end, corpus.is_deleted[rows]))
        last_any = _last_before(ends, start.timestamp(), start.tzinfo)
        infer.append(signet058_inference_features(info, start, tz, last_any))
    return _stack(ours), _stack(train), _stack(infer)


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
