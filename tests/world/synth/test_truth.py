"""The planted relevance function and its storage."""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from signet_bench.errors import UserError
from signet_bench.store.schema import connect_writer, create_store
from signet_bench.world.synth.persona import TIME_PATTERNS, get_persona
from signet_bench.world.synth.plans import PromptTopic, make_context
from signet_bench.world.synth.truth import (
    ALL_HOURS_MASK,
    ALL_WEEKDAYS_MASK,
    EFFECTS,
    PROMPT_ASIDE,
    MemoryTruth,
    _coalition_values,
    live_rows,
    load_truth,
    prompt_relevance,
    save_truth,
    true_relevance,
    variance_shares,
)

NOW = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)  # a Friday
INF = float("inf")


def _store_with(path, truth: MemoryTruth, meta: dict[str, str] | None = None, after: str = ""):
    """A Signet store holding `truth` (the truth is read like any store, read-only through
    `store.read.open_readonly`), with the `after` statement run on it."""
    create_store(path)
    con = connect_writer(path)
    try:
        save_truth(con, get_persona("light"), truth, meta or {})
        if after:
            con.execute(after)
    finally:
        con.close()
    return path


def _truth(rows: list[dict]) -> MemoryTruth:
    def col(key, default, dtype=object):
        return np.array([r.get(key, default) for r in rows], dtype=dtype)

    def secs(key):
        return np.array([r[key].timestamp() if key in r else INF for r in rows])

    fri = TIME_PATTERNS["friday_deploy"]
    return MemoryTruth(
        ids=np.array([f"m{i}" for i in range(len(rows))], dtype=object),
        project=col("project", "a"),
        topic=col("topic", "postgres"),
        is_global=col("is_global", False, bool),
        memory_type=col("type", "procedural"),
        importance=col("importance", 0.6, np.float64),
        created_s=np.array([r.get("created", NOW - timedelta(days=2)).timestamp() for r in rows]),
        hour_mask=np.array(
            [fri.hour_mask if r.get("friday") else ALL_HOURS_MASK for r in rows], np.int64
        ),
        weekday_mask=np.array(
            [fri.weekday_mask if r.get("friday") else ALL_WEEKDAYS_MASK for r in rows], np.int64
        ),
        time_pattern=np.array(["friday_deploy" if r.get("friday") else "" for r in rows], object),
        half_life_days=np.array([30.0 if r.get("type") == "decision" else INF for r in rows]),
        stale_since_s=secs("stale_since"),
        deleted_at_s=secs("deleted_at"),
        replaced_by=col("replaced_by", ""),
        supersede_mode=col("mode", ""),
        now=NOW,
        usefulness=col("useful", 1.0, np.float64),
    )


def _ctx(project="a", topic="postgres", when=NOW, tz="UTC"):
    return make_context("s1", project, topic, when, tz)


def test_topic_and_project_match_order():
    t = _truth(
        [
            {},  # same project, focus topic
            {"topic": "auth"},  # same project, other topic
            {"is_global": True, "project": "", "topic": "habits"},
            {"project": "b"},  # other project, same topic name
            {"project": "b", "topic": "ios"},  # other project, other topic
        ]
    )
    r = true_relevance(t, _ctx())
    assert r[0] > r[2] > r[1] > r[3] > r[4] >= 0
    assert r[0] > 0.8 and r[4] < 0.05


def test_time_patterned_memory_matters_only_inside_its_window():
    t = _truth(
        [{"friday": True, "topic": "auth"}, {"friday": True, "project": "b", "topic": "ios"}]
    )
    inside = true_relevance(t, _ctx(when=NOW.replace(hour=15)))  # Friday 15:00
    outside = true_relevance(t, _ctx(when=NOW - timedelta(days=3)))  # Tuesday
    assert inside[0] > 0.7 and outside[0] < 0.05
    assert inside[1] < 0.05  # another project's window does not matter here


def test_time_window_is_read_in_local_time():
    t = _truth([{"friday": True}])
    # 2026-03-20 23:30 UTC is Friday in UTC but Saturday 08:30 in Tokyo
    late = NOW.replace(hour=23, minute=30)
    assert true_relevance(t, _ctx(when=late.replace(hour=13), tz="UTC"))[0] > 0.7
    assert true_relevance(t, _ctx(when=late, tz="Asia/Tokyo"))[0] < 0.05


def test_decisions_decay_preferences_do_not():
    old = NOW - timedelta(days=90)
    t = _truth(
        [
            {"type": "decision"},
            {"type": "decision", "created": old},
            {"type": "preference"},
            {"type": "preference", "created": old},
        ]
    )
    r = true_relevance(t, _ctx())
    assert r[1] < 0.6 * r[0]
    assert r[3] == pytest.approx(r[2])


def test_importance_is_a_mild_factor():
    r = true_relevance(_truth([{"importance": 1.0}, {"importance": 0.1}]), _ctx())
    assert r[0] > r[1] > 0.6 * r[0]


def test_stale_deleted_and_future_memories():
    t = _truth(
        [
            {"stale_since": NOW - timedelta(days=1), "replaced_by": "m1", "mode": "attribute"},
            {"created": NOW - timedelta(days=1)},  # its replacement
            {"deleted_at": NOW - timedelta(hours=1)},
            {"created": NOW + timedelta(days=1)},
            {"topic": "ios", "project": "b"},
        ]
    )
    r = true_relevance(t, _ctx())
    assert -0.3 <= r[0] < -0.2 and r[1] > 0.8
    assert r[0] < r[4]  # a stale memory is worse than an unrelated one
    assert r[2] == -0.5 and r[3] == 0.0
    # before it went stale the memory was as good as any
    earlier = true_relevance(t, _ctx(when=NOW - timedelta(days=1, hours=2)))
    assert earlier[0] > 0.8 and earlier[2] > 0.8


def test_soft_deleted_superseded_row_counts_as_stale_not_deleted():
    at = NOW - timedelta(days=1)
    t = _truth([{"stale_since": at, "deleted_at": at, "mode": "soft_delete"}])
    assert -0.3 <= true_relevance(t, _ctx())[0] < -0.2


def test_range_and_vectorised_shape():
    rng = np.random.default_rng(0)
    rows = [
        {
            "topic": str(rng.choice(["postgres", "auth"])),
            "project": str(rng.choice(["a", "b"])),
            "type": str(rng.choice(["decision", "fact", "constraint"])),
            "importance": float(rng.random()),
            "friday": bool(rng.random() < 0.2),
            "created": NOW - timedelta(days=float(rng.uniform(0, 200))),
        }
        for _ in range(500)
    ]
    r = true_relevance(_truth(rows), _ctx())
    assert r.shape == (500,) and np.isfinite(r).all()
    assert r.min() >= -0.5 and r.max() <= 1.0


def test_take_and_positions_select_candidates():
    t = _truth([{}, {"topic": "auth"}, {"project": "b"}])
    sub = t.take(t.positions(["m2", "m0"]))
    assert list(sub.ids) == ["m2", "m0"]
    assert np.allclose(true_relevance(sub, _ctx()), true_relevance(t, _ctx())[[2, 0]])


def test_save_and_load_round_trip(tmp_path):
    persona = get_persona("light")
    t = _truth(
        [
            {},
            {"is_global": True, "project": "", "topic": "habits", "type": "preference"},
            {"friday": True, "stale_since": NOW, "replaced_by": "m0", "mode": "attribute"},
            {"type": "decision", "deleted_at": NOW - timedelta(days=1), "useful": 0.7},
        ]
    )
    path = _store_with(tmp_path / "truth.db", t, {"seed": "3", "embedder": "synth-topic"})
    p2, t2 = load_truth(path)
    assert p2 == persona
    assert t2.now == NOW
    for name in ("ids", "project", "topic", "memory_type", "time_pattern", "replaced_by"):
        assert list(getattr(t2, name)) == list(getattr(t, name)), name
    for name in (
        "importance",
        "created_s",
        "half_life_days",
        "stale_since_s",
        "deleted_at_s",
        "usefulness",
    ):
        assert np.array_equal(getattr(t2, name), getattr(t, name)), name
    assert np.array_equal(t2.hour_mask, t.hour_mask)
    assert np.array_equal(t2.is_global, t.is_global)
    ctx = _ctx()
    assert np.allclose(true_relevance(t2, ctx), true_relevance(t, ctx))


def test_load_truth_refuses_a_store_without_truth(tmp_path):
    path = create_store(tmp_path / "plain.db")
    with pytest.raises(UserError, match="synth_persona"):
        load_truth(path)
    with pytest.raises(UserError, match="no such file"):
        load_truth(tmp_path / "missing.db")
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(UserError, match="not an SQLite database file"):
        load_truth(empty)


def test_a_store_written_before_usefulness_reads_fully_useful(tmp_path):
    # the table as it was before the column existed
    drop = "ALTER TABLE synth_memory_truth DROP COLUMN usefulness"
    path = _store_with(tmp_path / "old.db", _truth([{}, {"useful": 0.6}]), after=drop)
    _, t = load_truth(path)
    assert list(t.usefulness) == [1.0, 1.0]


def test_usefulness_scales_relevance_and_is_hidden_from_the_rest():
    t = _truth([{}, {"useful": 0.6}])
    r = true_relevance(t, _ctx())
    assert r[1] == pytest.approx(0.6 * r[0])
    assert np.allclose(true_relevance(t, _ctx(), without=["usefulness"]), r[0])


def test_switching_an_effect_off_removes_it():
    old = NOW - timedelta(days=90)
    t = _truth(
        [
            {},
            {"topic": "auth"},
            {"project": "b"},
            {"friday": True},
            {"type": "decision", "created": old},
            {"importance": 0.1},
            {"stale_since": NOW - timedelta(days=1), "replaced_by": "m0", "mode": "attribute"},
            {"deleted_at": NOW - timedelta(days=1)},
            {"is_global": True, "project": "", "topic": "habits"},
        ]
    )
    ctx = _ctx(when=NOW.replace(hour=9))  # Friday morning: the deploy window is closed
    full = true_relevance(t, ctx)
    assert full[1] < full[0]
    assert true_relevance(t, ctx, without=["topic"])[0] == pytest.approx(full[1])
    assert true_relevance(t, ctx, without=["project"])[2] == pytest.approx(full[0])
    assert true_relevance(t, ctx, without=["time"])[3] == pytest.approx(full[0])
    assert true_relevance(t, ctx, without=["recency"])[4] > full[4]
    flat = true_relevance(t, ctx, without=["importance"])
    assert full[5] < full[0] and flat[5] == pytest.approx(flat[0])
    assert true_relevance(t, ctx, without=["stale"])[6] == pytest.approx(full[0])
    assert true_relevance(t, ctx, without=["deleted"])[7] == pytest.approx(full[0])
    assert true_relevance(t, ctx, without=["global"])[8] < full[8]
    with pytest.raises(ValueError, match="unknown effects"):
        true_relevance(t, ctx, without=["weather"])


def _random_truth(n: int, *, friday: float, stale: float, seed: int = 0) -> MemoryTruth:
    rng = np.random.default_rng(seed)
    rows = [
        {
            "topic": str(rng.choice(["postgres", "auth", "ios"])),
            "project": str(rng.choice(["a", "b"])),
            "type": str(rng.choice(["decision", "fact", "procedural"])),
            "importance": float(rng.uniform(0.2, 1.0)),
            "friday": bool(rng.random() < friday),
            "created": NOW - timedelta(days=float(rng.uniform(1, 100))),
            "useful": float(rng.uniform(0.6, 1.0)),
        }
        for _ in range(n)
    ]
    for r in rows:
        if rng.random() < stale:
            r.update(stale_since=NOW - timedelta(days=2), replaced_by="m0", mode="attribute")
    return _truth(rows)


def _plans(n: int) -> list:
    """`n` sessions cycling through projects a, b and three topics, 7 hours apart."""
    topics = ("postgres", "auth", "ios")
    return [
        _ctx(project="ab"[k % 2], topic=topics[k % 3], when=NOW - timedelta(hours=7 * k))
        for k in range(n)
    ]


def test_variance_shares_sum_to_one_and_follow_what_was_planted():
    plans = _plans(6)
    shares = variance_shares(_random_truth(120, friday=0.2, stale=0.1), plans)
    assert set(shares) == set(EFFECTS)
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares["topic"] > 0.1 and shares["project"] > 0.1
    assert shares["time"] > 0.01 and shares["stale"] > 0.01 and shares["usefulness"] > 0.005
    assert abs(shares["global"]) < 1e-12 and abs(shares["deleted"]) < 1e-12
    plain = variance_shares(_random_truth(120, friday=0.0, stale=0.0), plans)
    assert abs(plain["time"]) < 1e-12 and abs(plain["stale"]) < 1e-12
    assert sum(plain.values()) == pytest.approx(1.0)
    one = _random_truth(120, friday=0.2, stale=0.1)
    one = dataclasses.replace(one, project=np.full(len(one), "a", dtype=object))
    in_a = [c for c in plans if c.project == "a"]
    assert abs(variance_shares(one, in_a)["project"]) < 1e-12  # one project: nothing to tell


def test_a_truth_without_a_graph_scores_the_graph_effect_zero_without_scoring_it():
    """The graph cannot act on a store without one: every coalition with or without it is
    worth the same, so its share is 0 and the others' Shapley values are those of the game
    over all the effects (computed here the long way)."""
    t, plans = _random_truth(80, friday=0.2, stale=0.1), _plans(4)
    assert t.graph is None
    shares = variance_shares(t, plans)
    v = _coalition_values(t, plans, None, EFFECTS)
    n, g = len(EFFECTS), EFFECTS.index("graph")
    with_graph = [m for m in range(1 << n) if (m >> g) & 1]
    assert np.allclose(v[with_graph], v[[m & ~(1 << g) for m in with_graph]])
    assert shares["graph"] == 0.0
    for k, effect in enumerate(EFFECTS):
        without = [m for m in range(1 << n) if not (m >> k) & 1]
        w = [math.factorial(m.bit_count()) * math.factorial(n - m.bit_count() - 1) for m in without]
        gain = v[[m | (1 << k) for m in without]] - v[without]
        assert shares[effect] == pytest.approx(np.dot(w, gain) / math.factorial(n) / v[-1])


def test_variance_shares_over_given_pools():
    t = _random_truth(60, friday=0.2, stale=0.1)
    plans = _plans(3)
    every = [live_rows(t, c) for c in plans]
    assert variance_shares(t, plans, every) == pytest.approx(variance_shares(t, plans))
    # a pool of one project's memories on one topic varies only by the per-memory factors
    t = _random_truth(60, friday=0.0, stale=0.0)
    narrow = [np.flatnonzero((t.project == c.project) & (t.topic == c.focus_topic)) for c in plans]
    shares = variance_shares(t, plans, narrow)
    assert abs(shares["topic"]) < 1e-9 and abs(shares["project"]) < 1e-9
    assert shares["usefulness"] > 0.3 and shares["importance"] > 0.05
    with pytest.raises(ValueError, match="one per plan"):
        variance_shares(t, plans, every[:2])


def test_a_prompt_keeps_what_it_is_about_and_weighs_the_rest_down():
    t = _truth(
        [
            {},  # same project, the prompt's topic
            {"topic": "auth"},  # same project, another topic: the session needs it less now
            {"is_global": True, "project": "", "topic": "habits"},  # a global preference
            {"topic": "auth", "friday": True},  # another topic, the prompt's time window
            {"topic": "auth", "stale_since": NOW - timedelta(days=1)},  # stale stays stale
        ]
    )
    ctx = _ctx(when=datetime(2026, 3, 20, 15, 0, tzinfo=UTC))  # Friday afternoon
    session = true_relevance(t, ctx)
    plain = prompt_relevance(t, ctx, PromptTopic("postgres"))
    assert plain[0] == session[0] and plain[2] == session[2]
    assert plain[1] == pytest.approx(PROMPT_ASIDE * session[1]) and plain[1] > 0
    assert plain[3] == pytest.approx(PROMPT_ASIDE * session[3])
    assert plain[4] == session[4] < 0
    windowed = prompt_relevance(t, ctx, PromptTopic("postgres", time_pattern="friday_deploy"))
    assert windowed[3] == session[3] > plain[3]
    other = prompt_relevance(t, ctx, PromptTopic("auth"))  # a prompt on another topic
    assert other[1] == session[1] and other[0] == pytest.approx(PROMPT_ASIDE * session[0])
