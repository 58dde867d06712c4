"""A training's cost is bounded whatever the history: each epoch passes over at most the
session budget (its newest half always), the time hold-out is capped, and a training reads
only the newest sessions of its store. A history within the bounds trains exactly as without
them, and above them a candidate is still served only if it beats the held-out bar."""

from __future__ import annotations

import dataclasses
import math
from datetime import timedelta

import numpy as np
import pytest

from signet_bench.bench.train_speed import synthetic_samples
from signet_bench.config import DEFAULT_CONFIG, from_mapping
from signet_bench.learn.holdout import holdout_plan
from signet_bench.learn.samples import Selection, load_samples
from signet_bench.learn.train import Guard, _Draw, train_model

DIM = 16
UNBOUNDED = DEFAULT_CONFIG.replace(
    training_window_sessions=0, holdout_max_sessions=0, epoch_session_budget=0
)


def _samples(n: int, seed: int = 0):
    return synthetic_samples(n, dim=DIM, mean_candidates=12, seed=seed)


def _same_run(a, b) -> None:
    """Two runs that drew and computed exactly the same: weights, losses, verdict."""
    assert a.loss_curve == b.loss_curve and a.steps == b.steps and a.best_epoch == b.best_epoch
    assert a.holdout == b.holdout and a.accepted == b.accepted
    assert a.params.keys() == b.params.keys()
    for name in a.params:
        assert np.array_equal(a.params[name], b.params[name]), name


def test_a_history_within_the_bounds_trains_exactly_as_without_them():
    """80 sessions: 25 held out, 55 to train on, under the default budget (250) and hold-out
    cap (100); a budget of exactly the training part changes nothing either."""
    data = _samples(80, seed=4)
    off = train_model(data, None, cfg=UNBOUNDED, epochs=4, seed=3)
    assert (off.sample_count, off.canary_count) == (55, 25)
    _same_run(off, train_model(data, None, cfg=DEFAULT_CONFIG, epochs=4, seed=3))
    exact = UNBOUNDED.replace(epoch_session_budget=55, holdout_max_sessions=25)
    _same_run(off, train_model(data, None, cfg=exact, epochs=4, seed=3))


def test_the_defaults_leave_300_trainable_sessions_and_a_hold_out_of_100_untouched():
    cfg = DEFAULT_CONFIG
    held = max(cfg.canary_size, round(cfg.holdout_share * 300))
    assert 300 - held <= cfg.epoch_session_budget
    assert round(cfg.holdout_share * 500) <= cfg.holdout_max_sessions
    assert cfg.training_window_sessions >= 300


def _timeline(n: int):
    """`n` sessions an hour apart, in shuffled order (only their times and keys matter)."""
    one = _samples(1)[0]
    t0 = one.start
    rows = [
        dataclasses.replace(one, session_key=f"s{i:05d}", start=t0 + timedelta(hours=i))
        for i in range(n)
    ]
    order = np.random.default_rng(0).permutation(n)
    return [rows[i] for i in order]


def test_the_time_hold_out_is_capped_and_stays_the_newest_sessions():
    data = _timeline(1000)
    capped = holdout_plan(data, DEFAULT_CONFIG).folds[0]
    uncapped = holdout_plan(data, UNBOUNDED).folds[0]
    assert (len(capped.held), len(uncapped.held)) == (100, 200)
    newest = sorted(data, key=lambda s: s.start)[-100:]
    assert {data[i].session_key for i in capped.held} == {s.session_key for s in newest}
    assert len(capped.train) == 900
    small = _timeline(400)  # 80 held out either way
    assert np.array_equal(
        holdout_plan(small, DEFAULT_CONFIG).held, holdout_plan(small, UNBOUNDED).held
    )


def test_an_epoch_over_budget_takes_the_newest_half_and_draws_the_rest():
    train = _timeline(300)
    draw = _Draw.for_run(train, 40)
    assert _Draw.for_run(train, 300) is None and _Draw.for_run(train, 0) is None
    newest = {s.session_key for s in sorted(train, key=lambda s: s.start)[-20:]}
    rng = np.random.default_rng(1)
    seen: set[str] = set()
    for _ in range(30):
        picked = draw(rng)
        keys = [train[i].session_key for i in picked]
        assert len(keys) == 40 == len(set(keys))
        assert newest <= set(keys)
        seen |= set(keys) - newest
    assert len(seen) > 200  # the older sessions all take turns, not a fixed subset


def test_a_training_over_budget_passes_over_the_budget_each_epoch():
    data = _samples(120, seed=5)  # 25 held out, 95 to train on
    cfg = DEFAULT_CONFIG.replace(epoch_session_budget=30, holdout_patience=100)
    res = train_model(data, None, cfg=cfg, epochs=3, seed=0)
    n_recent = 16 - round(16 * cfg.replay_share)
    assert res.sample_count == 95 and res.epochs_run == 3
    assert res.steps == 3 * math.ceil(30 / n_recent)
    full = train_model(data, None, cfg=cfg.replace(epoch_session_budget=0), epochs=3, seed=0)
    assert full.steps == 3 * math.ceil(95 / n_recent)


def test_over_budget_a_worse_candidate_keeps_the_served_model():
    """Over the budget and the hold-out cap, the candidate still answers to the held-out bar:
    trained on the opposite of what the (clean) newest sessions show, it stays below the
    served model there and the base serves in its place."""
    cfg = DEFAULT_CONFIG.replace(epoch_session_budget=30, holdout_max_sessions=30)
    data = _samples(200, seed=3)
    fold = holdout_plan(data, cfg).folds[0]
    assert (len(fold.train), len(fold.held)) == (170, 30)
    train = set(fold.train.tolist())
    taught = [
        dataclasses.replace(s, labels=-s.labels) if i in train else s for i, s in enumerate(data)
    ]
    served = train_model(data, None, cfg=cfg, epochs=5, seed=0, guard=Guard(canary=data)).params
    res = train_model(taught, None, cfg=cfg, epochs=5, seed=0, guard=Guard(reference=served))
    d = res.holdout
    assert d.method == "time" and d.sessions == 30 and d.served is not None
    assert not d.accepted and d.candidate < d.bar
    # the base serves in its place, or the free ranker where the base trails it
    assert res.accepted and res.serving.served in ("base", "free")
    assert res.gate_reason == res.serving.served


def test_the_bounds_have_seed_style_names_and_zero_switches_them_off():
    cfg = from_mapping(
        {"trainingWindowSessions": 0, "holdoutMaxSessions": 0, "epochSessionBudget": 0}
    )
    assert cfg == UNBOUNDED
    with pytest.raises(ValueError, match="predictor.epochSessionBudget: -1 must be positive"):
        from_mapping({"epochSessionBudget": -1})
    with pytest.raises(ValueError, match="predictor.trainingWindowSessions: expected a whole"):
        from_mapping({"trainingWindowSessions": 2.5})


def test_a_window_reads_the_newest_sessions_each_as_a_full_load_gives_it(line_store):
    full, skipped = load_samples(line_store, tz="UTC")
    same, same_skipped = load_samples(line_store, tz="UTC", select=Selection(window=10_000))
    assert [s.session_key for s in same] == [s.session_key for s in full]
    assert same_skipped == skipped
    part, part_skipped = load_samples(line_store, tz="UTC", select=Selection(window=12))
    assert 0 < len(part) <= 12 and len(part) + part_skipped == 12
    by_key = {s.session_key: s for s in full}
    assert [s.session_key for s in part] == [s.session_key for s in full][-len(part) :]
    for s in part:
        _same_sample(s, by_key[s.session_key])


def _same_sample(a, b) -> None:
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, tuple):
            assert len(x) == len(y) and all(np.array_equal(p, q) for p, q in zip(x, y, strict=True))
        elif isinstance(x, np.ndarray):
            assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), f.name  # NaN: unrated
        else:
            assert x == y, f.name
