"""A training's cost is bounded whatever the history: each epoch passes over at most the
session budget (its newest half always), a run over at most the step budget, the time
hold-out is capped, and a training reads only the newest sessions of its store, assembling
their samples in bulk. A history within the bounds trains exactly as without them, above them
a candidate is still served only if it beats the held-out bar, and a scheduled retrain starts
from the served model only where the held-out sessions judge it fairly."""

from __future__ import annotations

import dataclasses
import math
from datetime import timedelta

import numpy as np
import pytest

from signet_bench.bench.train_speed import synthetic_samples
from signet_bench.config import DEFAULT_CONFIG, from_mapping
from signet_bench.daemon.context import previous_sessions
from signet_bench.daemon.session_query import StartQueries
from signet_bench.learn.holdout import holdout_plan
from signet_bench.learn.samples import (
    SampleRules,
    Selection,
    build_sample,
    load_samples,
    read_label_signals,
    scored_sessions,
    session_structure,
    signals_frame,
    track_records,
)
from signet_bench.learn.train import Guard, _Draw, train_model, warm_start
from signet_bench.store.corpus import read_corpus
from signet_bench.store.read import open_readonly
from signet_bench.store.timestamps import format_iso
from signet_scorer.signals import signal_column

DIM = 16
UNBOUNDED = DEFAULT_CONFIG.replace(
    training_window_sessions=0,
    holdout_max_sessions=0,
    epoch_session_budget=0,
    training_step_budget=0,
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
        {
            "trainingWindowSessions": 0,
            "holdoutMaxSessions": 0,
            "epochSessionBudget": 0,
            "trainingStepBudget": 0,
        }
    )
    assert cfg == UNBOUNDED
    assert not from_mapping({"warmStart": False}).warm_start
    with pytest.raises(ValueError, match="predictor.warmStart: expected true/false"):
        from_mapping({"warmStart": 1})
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


def test_a_held_out_run_takes_at_most_its_step_budget_whatever_the_history():
    """The step budget bounds a run however many sessions and epochs it is given; the
    held-out sessions judge the epoch it cut short, and within the budget nothing changes."""
    cfg = DEFAULT_CONFIG.replace(training_step_budget=11, holdout_patience=100)
    for n in (60, 200):
        res = train_model(_samples(n, seed=6), None, cfg=cfg, epochs=50, seed=0)
        assert res.steps == 11 and res.stopped_early == "step-budget"
        assert res.holdout is not None and res.best_epoch is not None
        assert res.best_epoch <= res.epochs_run
    data = _samples(60, seed=6)
    free = train_model(data, None, cfg=cfg.replace(training_step_budget=0), epochs=50, seed=0)
    assert free.steps > 11 and free.stopped_early != "step-budget"
    _same_run(
        train_model(data, None, cfg=cfg.replace(training_step_budget=0), epochs=2, seed=0),
        train_model(data, None, cfg=cfg.replace(training_step_budget=1000), epochs=2, seed=0),
    )


def test_a_scheduled_retrain_starts_from_the_served_model_only_when_fair_and_no_worse():
    """The served model is the start when it ranks the held-out sessions no worse than the
    base and learned from none of them; a model worse there, one that saw them, or the
    option off leave the base as the start. A fresh run given the served model and the
    newest session it saw starts from it (its first held-out value is the served model's)."""
    cfg = DEFAULT_CONFIG
    data = _samples(120, seed=7)
    fold = holdout_plan(data, cfg).folds[0]
    older = [data[i] for i in fold.train]
    base = train_model(data, None, epochs=0, seed=0).params
    good = train_model(data, None, epochs=8, seed=0, guard=Guard(canary=older)).params
    flipped = [dataclasses.replace(s, labels=-s.labels) for s in data]
    bad = train_model(flipped, None, epochs=8, seed=0, guard=Guard(canary=older)).params
    before = format_iso(min(data[i].start for i in fold.held) - timedelta(seconds=1))
    after = format_iso(max(s.start for s in data))
    assert warm_start(data, base, (good, before), cfg) is good
    assert warm_start(data, base, (bad, before), cfg) is base
    assert warm_start(data, base, (good, after), cfg) is base
    assert warm_start(data, base, (good, before), cfg.replace(warm_start=False)) is base
    guard = Guard(reference=good, previous_is_trained=True, served_through=before)
    warm = train_model(data, None, epochs=1, seed=0, guard=guard)
    cold = train_model(
        data, None, epochs=1, seed=0, guard=dataclasses.replace(guard, served_through=None)
    )
    assert warm.holdout.served is not None
    assert warm.holdout.candidate != cold.holdout.candidate or warm.best_epoch != cold.best_epoch


def _one_by_one(store, tz: str = "UTC", seed: int = 0) -> list:
    """Every trainable session's sample assembled on its own, from its own frame of candidate
    rows and its own track-record read (`build_sample`, the loop's path; `track_records`)."""
    con = open_readonly(store)
    try:
        corpus = read_corpus(con)
        signals = read_label_signals(con)
        cands = signals_frame(signals)
        sessions = scored_sessions(signals.sessions, cands)
        jobs = StartQueries.read(con)
        structure = session_structure(con, cands)
        by_key = {k[0]: g for k, g in cands.group_by("session_key")}
        rows = list(sessions.rename({"created_at": "end"}).iter_rows(named=True))
        threshold = DEFAULT_CONFIG.min_scorer_confidence
        rows = [s for s in rows if s["confidence"] is not None and s["confidence"] >= threshold]
        for s in rows:
            s["track_record"] = track_records(con, s, by_key[s["session_key"]])
    finally:
        con.close()
    previous = previous_sessions(sessions, by_key)
    out = []
    for s in rows:
        query = jobs.query(s.get("project"), s["start"])
        rules = SampleRules(tz, DEFAULT_CONFIG, seed)
        key = s["session_key"]
        sample = build_sample(
            corpus, s, by_key[key], previous[key], rules, query=query, structure=structure
        )
        if sample is not None:
            out.append(sample)
    return out


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray):
        nan = a.dtype.kind == "f"
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=nan)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_the_bulk_load_gives_each_sample_as_a_session_by_session_assembly(line_store):
    """`load_samples` reads the store once for every session (columns, track records) and
    gives, bit for bit, the samples a session-by-session assembly gives."""
    bulk, _ = load_samples(line_store, tz="UTC", seed=2)
    alone = _one_by_one(line_store, seed=2)
    assert [s.session_key for s in bulk] == [s.session_key for s in alone]
    assert len(bulk) > 10
    for a, b in zip(bulk, alone, strict=True):
        for name in a.__slots__:
            assert _equal(getattr(a, name), getattr(b, name)), (a.session_key, name)
    tracks = np.concatenate([s.signals[:, signal_column("track_record")] for s in bulk])
    assert np.unique(tracks).size > 5  # the track records are compared, not constants
