"""The one context rule: previous session of the project, else the top-10 baseline fallback."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.context import (
    PreviousSessions,
    previous_sessions,
    session_context,
    used_by_session,
    used_memory_ids,
)
from signet_scorer.context import context_embedding, mean_unit

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _cand(ids, fts=None, agent=None) -> pl.DataFrame:
    n = len(ids)
    return pl.DataFrame(
        {
            "memory_id": ids,
            "fts_hit_count": fts or [0] * n,
            "agent_relevance_score": agent or [None] * n,
        },
        schema={
            "memory_id": pl.String,
            "fts_hit_count": pl.Int64,
            "agent_relevance_score": pl.Float64,
        },
    )


def test_previous_session_rule_first():
    prev = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    top = np.array([[1.0, 1.0]], dtype=np.float32)
    ctx = context_embedding(prev, top)
    assert ctx.rule == "previous-session"
    np.testing.assert_allclose(ctx.vector, [2**-0.5, 2**-0.5], rtol=1e-6)


def test_fallback_to_baseline_top10_and_zero_rows_ignored():
    prev = np.zeros((2, 2), dtype=np.float32)  # used memories without embeddings
    top = np.array([[3.0, 0.0], [0.0, 0.0]], dtype=np.float32)
    ctx = context_embedding(prev, top)
    assert ctx.rule == "baseline-top10"
    np.testing.assert_allclose(ctx.vector, [1.0, 0.0])


def test_none_when_no_embeddings():
    ctx = context_embedding(np.zeros((0, 4)), np.zeros((3, 4)))
    assert ctx.vector is None and ctx.rule == "none"
    assert mean_unit(np.zeros((0, 4))) is None


def test_used_memories_are_fts_hits_or_positive_agent_ratings():
    cand = _cand(["c", "a", "b", "d"], fts=[0, 2, 0, 0], agent=[0.4, None, -0.5, 0.0])
    assert used_memory_ids(cand) == ("a", "c")
    assert used_memory_ids(None) == ()


def test_the_used_memories_of_many_sessions_at_once_are_each_sessions_own():
    """`used_by_session` on one frame of several sessions' rows gives each session what
    `used_memory_ids` gives its rows alone; a session that used none is absent."""
    parts = {
        "s1": _cand(["c", "a", "b"], fts=[0, 2, 0], agent=[0.4, None, -0.5]),
        "s2": _cand(["z", "y"], fts=[1, 3]),
        "s3": _cand(["q"], fts=[0], agent=[0.0]),
    }
    rows = pl.concat([c.with_columns(pl.lit(k).alias("session_key")) for k, c in parts.items()])
    by_session = used_by_session(rows)
    assert by_session == {"s1": ("a", "c"), "s2": ("y", "z")}
    assert all(by_session.get(k, ()) == used_memory_ids(c) for k, c in parts.items())


def test_fallback_takes_the_first_ten_of_the_baseline_order_then_those_with_embeddings():
    """Check the fallback looks at the top 10 only: a memory ranked 11th is never averaged in,
    even when some of the top 10 have no embedding."""
    n, d = 12, 3
    emb = np.zeros((n, d), dtype=np.float32)
    emb[0] = [1, 0, 0]
    emb[10] = [0, 1, 0]  # 11th in baseline order
    has = np.linalg.norm(emb, axis=1) > 0
    ctx = session_context(emb, has, {}, (), np.arange(n), DEFAULT_CONFIG)
    assert ctx.rule == "baseline-top10"
    np.testing.assert_allclose(ctx.vector, [1, 0, 0])


def test_unknown_previous_ids_are_ignored():
    emb = np.eye(3, dtype=np.float32)
    row_of = {"a": 0, "b": 1, "c": 2}
    ctx = session_context(emb, np.ones(3, bool), row_of, ("gone", "b"), np.array([0]))
    assert ctx.rule == "previous-session"
    np.testing.assert_allclose(ctx.vector, [0, 1, 0])


def test_previous_session_is_per_project_and_by_start():
    sessions = pl.DataFrame(
        {
            "session_key": ["s3", "s1", "s2", "s4"],
            "project": ["p", "p", "q", None],
            "start": [T0 + timedelta(hours=h) for h in (3, 1, 2, 4)],
        }
    )
    cands = {"s1": _cand(["x", "y"], fts=[1, 0]), "s3": _cand(["z"], agent=[0.9])}
    prev = previous_sessions(sessions, cands)
    assert prev["s1"] is None and prev["s2"] is None and prev["s4"] is None
    assert prev["s3"].session_key == "s1" and prev["s3"].used == ("x",)
    assert prev["s3"].start == T0 + timedelta(hours=1)


def test_tracker_matches_the_replay():
    tracker = PreviousSessions()
    tracker.record("s1", "p", T0, _cand(["x"], fts=[3]))
    tracker.record("s2", "p", T0 + timedelta(hours=1), _cand(["y"], fts=[0]))
    assert tracker.before("p").session_key == "s2" and tracker.before("p").used == ()
    assert tracker.before("q") is None
