"""The comparison rows of a store, whichever its release line.

Signet 0.58 keeps one `predictor_comparisons` row per session. Current Signet has no such table,
so there the rows are recomputed from what a store does keep: each scored session's
`session_memories` rows (baseline and predictor scores, injection, FTS hits, the judge's
relevance) and its `session_scores` row (confidence, project), by the loop's own rule
(`comparison.compare_session`), with the success-rate EMA replayed through
`predictor_state.on_comparison` session by session. On a store the simulated loop wrote, the
recomputed rows equal the ones it writes to a 0.58 store.

What a store cannot say is taken as the loop takes it: a session's order and alpha from the
simulator's `sim_sessions` when the store has it (else sessions in the order they ended, and
alpha 1.0: without predictor scores the baseline alone ranks, as in current Signet, which
writes none); the row's time is the session's end plus `COMPARE_DELAY`, when the summary worker
compares it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.comparison import ComparisonInput, compare_session
from signet_bench.daemon.predictor_state import DriftRule, initial_state, on_comparison
from signet_bench.learn.samples import scored_sessions
from signet_bench.replay.lifecycle import COMPARE_DELAY
from signet_bench.store.read import (
    open_readonly,
    read_comparisons,
    read_session_memories,
    read_sessions,
    release_line,
    table_names,
)
from signet_bench.store.write import comparison_id
from signet_scorer.workbench import DEFAULT_AGENT

__all__ = ["derive_comparisons", "store_comparisons"]

_BOOLS = ("predictor_won", "ema_updated")


@contextmanager
def _reading(store: str | Path | sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """The store's connection: a given one is borrowed, a path is opened read-only."""
    if isinstance(store, sqlite3.Connection):
        yield store
        return
    con = open_readonly(store)
    try:
        yield con
    finally:
        con.close()


def _loop_sessions(con: sqlite3.Connection) -> dict[str, tuple[int, float]]:
    """session key -> (plan index, alpha) from the simulator's `sim_sessions` (empty without)."""
    if "sim_sessions" not in table_names(con):
        return {}
    rows = con.execute("SELECT session_key, idx, alpha FROM sim_sessions").fetchall()
    return {key: (int(idx), float(alpha)) for key, idx, alpha in rows}


def derive_comparisons(
    store: str | Path | sqlite3.Connection,
    *,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    drift_rule: DriftRule = "seed",
    agent_id: str = DEFAULT_AGENT,
) -> pl.DataFrame:
    """One comparison row per scored session of `agent_id`, recomputed from the store's
    session rows (see the module docstring), in `read_comparisons`' columns and order.
    `drift_rule`: the loop's ("signet-0.58" for a run in that mode)."""
    with _reading(store) as con:
        cands = read_session_memories(con, agent_id=agent_id)
        sessions = scored_sessions(read_sessions(con, agent_id=agent_id), cands)
        loop = _loop_sessions(con)
        empty = read_comparisons(con).clear()
    by_key = {k[0]: g for k, g in cands.group_by("session_key")}
    order = sorted(
        sessions.iter_rows(named=True),
        key=lambda s: (loop.get(s["session_key"], (0,))[0], s["created_at"], s["session_key"]),
    )
    state, rows = initial_state(cfg), []
    for s in order:
        key = s["session_key"]
        cand = by_key[key].sort(["created_at", "rank", "memory_id"], maintain_order=True)
        inp = ComparisonInput.from_candidates(
            key, cand, scorer_confidence=s["confidence"], project=s["project"]
        )
        alpha = loop.get(key, (0, 1.0))[1]
        comp = compare_session(inp, alpha=alpha, success_rate=state.success_rate, cfg=cfg)
        state = on_comparison(state, comp, cfg, drift_rule=drift_rule).state
        row = comp.to_row()
        row |= {"id": comparison_id(key), "agent_id": agent_id}
        rows.append(row | {"created_at": s["created_at"] + COMPARE_DELAY})
    if not rows:
        return empty
    frame = pl.DataFrame(rows, infer_schema_length=None)
    frame = frame.with_columns(pl.col(c).cast(pl.Boolean) for c in _BOOLS)
    return frame.select(pl.col(c).cast(t) for c, t in empty.schema.items()).sort(
        ["created_at", "id"], maintain_order=True
    )


def store_comparisons(
    store: str | Path | sqlite3.Connection,
    *,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    drift_rule: DriftRule = "seed",
    agent_id: str = DEFAULT_AGENT,
) -> pl.DataFrame:
    """The store's comparison rows: a 0.58 store's `predictor_comparisons`; on a current store
    (which has no such table, or only the rows of the sessions before its upgrade) the rows
    `derive_comparisons` recomputes from its sessions."""
    with _reading(store) as con:
        if release_line(con) == "0.58":
            return read_comparisons(con)
        return derive_comparisons(con, cfg=cfg, drift_rule=drift_rule, agent_id=agent_id)
