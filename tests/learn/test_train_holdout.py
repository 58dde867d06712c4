"""A full training run is judged on sessions it never trained on, against the served model and
the strongest free ranker, and moves from its start only as far as those sessions support."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta

import duckdb
import numpy as np
import pytest

from signet_bench.bench.train_speed import synthetic_samples
from signet_bench.config import DEFAULT_CONFIG
from signet_bench.learn.base import shipped_base_params
from signet_bench.learn.holdout import (
    free_ranker_params,
    heuristic_scores,
    holdout_plan,
    session_ndcgs,
)
from signet_bench.learn.model.params import init_params
from signet_bench.learn.publish import run_record
from signet_bench.learn.serving import ServingChoice
from signet_bench.learn.train import (
    PRIOR_PARAMS,
    START_CHOICE_MIN_SESSIONS,
    Guard,
    _Fit,
    _fit,
    _Prior,
    run_start,
    session_probs,
    train_model,
)
from signet_bench.store.workbench import open_workbench, record_training_run
from signet_scorer.signals import signal_column
from tests.learn.lexical_support import with_lexical

DIM = 16
# the gate's mechanics with the fresh scorer as the base (the shipped base is tested in test_base)
FRESH = init_params(DEFAULT_CONFIG, DIM)


def _samples(n: int, seed: int = 0):
    return synthetic_samples(n, dim=DIM, mean_candidates=12, seed=seed)


def test_enough_sessions_are_judged_on_the_newest_ones_against_cosine():
    data = _samples(60)
    res = train_model(data, None, epochs=3, seed=0)
    d = res.holdout
    assert d is not None and d.method == "time" and d.sessions == 25
    assert (res.sample_count, res.canary_count) == (35, 25)
    held = [data[i] for i in holdout_plan(data).folds[0].held]
    cosine = session_ndcgs(held, [heuristic_scores(s)["cosine"] for s in held]).mean()
    assert d.heuristics["cosine"] == pytest.approx(cosine)
    # no query terms in these sessions: the hybrid orders as cosine
    assert d.heuristics == {name: pytest.approx(cosine) for name in ("cosine", "hybrid")}
    assert d.served is None  # nothing served yet: the bar is the free ranker
    # the candidate when shown better than the run's start and cosine, else the start: the
    # shipped base, or the free ranker it gave way to on these sessions
    assert d.accepted == res.serving.per_user
    start = "free" if res.serving.reason == "free-start" else "base"
    assert res.accepted and (d.accepted or res.gate_reason == start)


def test_when_nothing_beats_the_free_ranker_the_start_is_what_is_served():
    """Labels that are cosine itself: cosine is perfect on every held-out session, so no epoch
    can gain on the start, and the model served is exactly the start (it ranks as cosine)."""
    data = [
        dataclasses.replace(s, labels=heuristic_scores(s)["cosine"]) for s in _samples(60, seed=1)
    ]
    res = train_model(data, None, epochs=5, seed=0, guard=Guard(base=FRESH))
    assert res.best_epoch == 0 and res.accepted
    assert res.holdout.candidate == pytest.approx(1.0) and res.holdout.bar == pytest.approx(1.0)
    start = init_params(DEFAULT_CONFIG, DIM)
    for name, value in start.items():
        assert np.array_equal(res.params[name], value), name


def test_few_sessions_are_judged_forward_and_the_served_model_learns_from_all():
    data = _samples(30, seed=2)
    res = train_model(data, None, epochs=4, seed=0)
    d = res.holdout
    assert d.method == "forward" and d.sessions == 24 and res.sample_count == 30
    assert 0 <= res.best_epoch <= 4 and res.epochs_run == res.best_epoch


def test_below_the_minimum_of_sessions_a_training_serves_its_start():
    """12 sessions are judged (forward) but not learned from: no epoch runs, and what is
    served ranks exactly as the free ranker; with the minimum switched off the same sessions
    choose the start the labels favour, and it is held to the free rankers' bar."""
    data = _samples(12, seed=2)
    res = train_model(data, None, epochs=4, seed=0, guard=Guard(base=FRESH))
    assert res.holdout.method == "forward" and res.holdout.sessions == 9
    assert res.epochs_run == 0 and res.best_epoch == 0 and res.accepted
    assert res.holdout.candidate == pytest.approx(res.holdout.heuristics["cosine"])
    # labels a lexical signal explains: the hybrid wins on them, the cosine start is served
    res = train_model(with_lexical(data), None, epochs=4, seed=0, guard=Guard(base=FRESH))
    d = res.holdout
    assert d.heuristics["hybrid"] > d.heuristics["cosine"] == pytest.approx(d.candidate)
    assert res.accepted and d.comparator == "start" and d.bar == d.candidate
    assert res.params["signal_weights"][signal_column("lexical")] == 0.0
    cfg = DEFAULT_CONFIG.replace(holdout_min_sessions=0)
    learned = train_model(
        with_lexical(data), None, cfg=cfg, epochs=4, seed=0, guard=Guard(base=FRESH)
    )
    assert learned.params["signal_weights"][signal_column("lexical")] > 0.0
    assert learned.holdout.comparator != "start"


def test_a_worse_candidate_gives_way_to_the_base():
    """The sessions it trains on teach the candidate the opposite of what the (clean) newest
    sessions show, so it stays below the served model there: not shown better, the base (the
    run's start) is served."""
    data = _samples(60, seed=3)
    train = set(holdout_plan(data).folds[0].train.tolist())
    taught = [
        dataclasses.replace(s, labels=-s.labels) if i in train else s for i, s in enumerate(data)
    ]
    served = train_model(data, None, epochs=5, seed=0, guard=Guard(canary=data, base=FRESH)).params
    res = train_model(taught, None, epochs=5, seed=0, guard=Guard(reference=served, base=FRESH))
    d = res.holdout
    assert d.served is not None and not d.accepted and res.gate_reason == "base"
    assert d.candidate < d.bar and res.serving.served == "base"
    assert res.serving.over_base.lower < 0.0
    start = init_params(DEFAULT_CONFIG, DIM)
    assert all(np.array_equal(res.params[k], start[k]) for k in start)


def test_the_prior_pulls_towards_the_start_in_proportion_to_the_sessions():
    start = init_params(DEFAULT_CONFIG, DIM)
    prior = _Prior.for_run(start, 10, DEFAULT_CONFIG.replace(prior_strength=2.0))
    assert prior is not None and prior.weight == pytest.approx(0.2)
    assert set(prior.start) == set(PRIOR_PARAMS) & set(start)
    work = {k: v.copy() for k, v in start.items()}
    work["q_proj"] = work["q_proj"] + 0.5
    grads = {k: np.zeros_like(v) for k, v in work.items()}
    loss = prior.add_to(work, grads)
    assert loss == pytest.approx(0.2 * 0.25 * work["q_proj"].size)
    assert np.allclose(grads["q_proj"], 2 * 0.2 * 0.5)
    assert not grads["down_proj"].any()  # only the weights through which learning reaches
    assert _Prior.for_run(start, 10, DEFAULT_CONFIG.replace(prior_strength=0.0)) is None


def test_a_strong_prior_keeps_the_weights_near_the_start():
    data = _samples(40, 4)
    start = init_params(DEFAULT_CONFIG, DIM)

    def distance(strength: float) -> float:
        cfg = DEFAULT_CONFIG.replace(prior_strength=strength)
        how = _Fit(cfg, 3, 16, np.random.default_rng(0), lambda: False, False, {})
        work, _, _ = _fit(start, data, (), how, 3, None)
        return sum(float(np.sum((work[k] - start[k]) ** 2)) for k in PRIOR_PARAMS)

    free, held = distance(0.0), distance(1e4)
    assert free > 0 and held < 0.5 * free


def test_the_verdict_is_recorded_with_the_run(tmp_path):
    res = train_model(_samples(60, 5), None, epochs=2, seed=0)
    row = run_record(res, run_id="r1", store_path="s.db", started_at=None, model_path=None)
    with open_workbench(tmp_path / "wb.duckdb") as wb:
        record_training_run(wb, row)
        stored = wb.execute("SELECT holdout FROM training_runs WHERE run_id = 'r1'").fetchone()
    got = json.loads(stored[0])
    assert got["method"] == "time" and got["sessions"] == 25
    assert got["comparator"] in {"cosine", "hybrid"}
    assert got["best_epoch"] == res.best_epoch
    assert got["accepted"] == res.holdout.accepted
    assert res.accepted and got["accepted"] == res.serving.per_user
    assert got["evidence_needed"] == DEFAULT_CONFIG.holdout_gain_evidence


def test_a_workbench_made_before_the_verdict_column_gets_it(tmp_path):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE training_runs (run_id TEXT PRIMARY KEY, store_path TEXT)")
    con.execute("INSERT INTO training_runs VALUES ('old', 's.db')")
    con.close()
    with open_workbench(path) as wb:
        cols = [r[0] for r in wb.execute("DESCRIBE training_runs").fetchall()]
        old = wb.execute("SELECT holdout FROM training_runs WHERE run_id = 'old'").fetchone()
    assert "holdout" in cols and old == (None,)


def test_below_the_query_minimum_only_cosine_matches_the_context():
    """With fewer sessions than `query_min_sessions` the learned query stays at its zero start
    while the rest of the model learns; with the minimum switched off the same run moves it."""
    data = _samples(60, seed=1)
    start = init_params(DEFAULT_CONFIG, DIM)
    # the fit is served on any mean gain
    any_lead = DEFAULT_CONFIG.replace(holdout_gain_evidence=0.0, serving_confidence=0.5)
    held = train_model(data, None, cfg=any_lead, epochs=4, seed=0, guard=Guard(base=FRESH))
    assert held.best_epoch > 0 and 60 < DEFAULT_CONFIG.query_min_sessions
    assert np.array_equal(held.params["q_proj"], start["q_proj"])
    assert not np.array_equal(held.params["gate_proj"], start["gate_proj"])
    cfg = any_lead.replace(query_min_sessions=0)
    moved = train_model(data, None, cfg=cfg, epochs=4, seed=0, guard=Guard(base=FRESH))
    assert moved.best_epoch > 0 and not np.array_equal(moved.params["q_proj"], start["q_proj"])


def test_prompt_samples_count_towards_the_minimum_and_the_sentence_names_sessions():
    """A prompt's sample counts towards the minimum as a session start's: 12 sessions with two
    prompt samples each (36) learn, and their prompts are judged, while session start keeps the
    base until it has the minimum's sessions of its own (its two or three held-out starts bound
    nothing); 6 with two each (18) do not learn, and the base serves, saying the 6 sessions
    they come from, not the 18 samples; with 24 sessions session start is judged too."""

    def with_prompts(starts):
        return starts + [
            dataclasses.replace(
                s,
                session_key=f"{s.session_key}#prompt-{j}",
                start=s.start + timedelta(seconds=j + 1),
            )
            for s in starts
            for j in range(2)
        ]

    learned = train_model(
        with_prompts(_samples(12, seed=2)), None, epochs=4, seed=0, guard=Guard(base=FRESH)
    )
    assert learned.prompt_serving is not None
    assert learned.prompt_serving.reason != "too-few" and learned.prompt_serving.unit == "prompts"
    assert learned.serving is not None and learned.serving.reason == "too-few"
    assert learned.serving.sessions == 12 and learned.serving.over_base is None
    # from the minimum's sessions on session start is judged on its own held-out starts, the
    # prompts on theirs: each held-out sample judged one hook
    both = train_model(
        with_prompts(_samples(24, seed=2)), None, epochs=4, seed=0, guard=Guard(base=FRESH)
    )
    assert both.serving is not None and both.prompt_serving is not None
    assert both.serving.reason != "too-few" and both.holdout is not None
    assert 0 < both.serving.sessions < both.holdout.sessions
    assert both.serving.sessions + both.prompt_serving.sessions == both.holdout.sessions
    few = train_model(
        with_prompts(_samples(6, seed=2)), None, epochs=4, seed=0, guard=Guard(base=FRESH)
    )
    assert few.epochs_run == 0 and few.serving is not None and few.serving.reason == "too-few"
    assert few.serving.sessions == 6 and few.serving.needed == DEFAULT_CONFIG.holdout_min_sessions


def test_a_learned_base_gives_way_to_the_free_ranker_only_where_the_session_starts_rank_it_higher():
    """The run's start (`run_start`): a learned base stays where this user's session starts
    rank it at least as high as the better free ranker, gives way to that ranker where they
    rank the ranker higher, and stays whatever the labels below the minimum of sessions."""
    base = shipped_base_params(DIM)
    data = _samples(30, seed=3)
    by_cosine = [dataclasses.replace(s, labels=heuristic_scores(s)["cosine"]) for s in data]
    by_base = [
        dataclasses.replace(s, labels=p)
        for s, p in zip(data, session_probs(base, data, DEFAULT_CONFIG), strict=True)
    ]
    gave_way = run_start(by_cosine, base, DIM, DEFAULT_CONFIG)
    # no query terms in these sessions: the hybrid orders as cosine, and a tie keeps the hybrid
    assert gave_way.name == "hybrid"
    hybrid = free_ranker_params("hybrid", DIM)
    assert all(np.array_equal(gave_way.params[k], hybrid[k]) for k in hybrid)
    assert gave_way.lead > 0.0
    few = START_CHOICE_MIN_SESSIONS - 1
    for samples in (by_base, by_cosine[:few]):
        kept = run_start(samples, base, DIM, DEFAULT_CONFIG)
        assert kept.name == "base" and kept.params is base
    # below `holdout_min_sessions` the free ranker is cosine (`start_at_best_free_ranker`)
    assert run_start(by_cosine[: few + 1], base, DIM, DEFAULT_CONFIG).name == "cosine"
    # the fresh scorer as the base is a free ranker already: it starts at the better one
    assert run_start(by_cosine, FRESH, DIM, DEFAULT_CONFIG).name == "base"


def test_a_run_too_short_to_learn_serves_the_free_ranker_its_session_starts_rank_higher():
    """Below `holdout_min_sessions` nothing is learned, but from `START_CHOICE_MIN_SESSIONS`
    session starts a learned base the starts rank below the free ranker gives way to it: that
    ranker serves, and the sentence says why and by how much."""
    data = [
        dataclasses.replace(s, labels=heuristic_scores(s)["cosine"]) for s in _samples(12, seed=4)
    ]
    base = shipped_base_params(DIM)
    res = train_model(data, None, epochs=3, seed=0, guard=Guard(base=base))
    assert res.epochs_run == 0 and res.serving is not None
    assert (res.serving.served, res.serving.reason, res.gate_reason) == (
        "free",
        "free-start",
        "free",
    )
    lead = res.serving.free_over_base
    assert lead is not None and lead.rival == "cosine" and lead.mean > 0.0
    assert res.serving.sentence() == (
        "The free ranker cosine serves: this user's session starts rank it above the shipped "
        f"base ({lead.mean:+.3f} NDCG@10 on average), and 12 trainable sessions are too few to "
        f"learn from (at least {DEFAULT_CONFIG.holdout_min_sessions})."
    )
    cosine = free_ranker_params("cosine", DIM)
    assert res.params is not None
    assert all(np.array_equal(res.params[k], cosine[k]) for k in cosine)
    # the record the workbench keeps reads back as the same choice
    assert ServingChoice.from_record(res.serving.record()).sentence() == res.serving.sentence()
    # labels that are the base's own scores keep it
    by_base = [
        dataclasses.replace(s, labels=p)
        for s, p in zip(data, session_probs(base, data, DEFAULT_CONFIG), strict=True)
    ]
    kept = train_model(by_base, None, epochs=3, seed=0, guard=Guard(base=base))
    assert kept.serving is not None and kept.serving.reason == "too-few"
    assert kept.serving.served == "base"


def test_a_run_that_started_at_the_free_ranker_serves_it_and_says_why():
    data = [
        dataclasses.replace(s, labels=heuristic_scores(s)["cosine"]) for s in _samples(60, seed=4)
    ]
    res = train_model(data, None, epochs=3, seed=0, guard=Guard(base=shipped_base_params(DIM)))
    assert res.serving is not None and not res.serving.per_user
    assert (res.serving.served, res.serving.reason, res.gate_reason) == (
        "free",
        "free-start",
        "free",
    )
    # no query terms in these sessions: the better free ranker is the hybrid (it ties cosine)
    assert res.serving.over_base is not None and res.serving.over_base.rival == "hybrid"
    assert res.serving.sentence().startswith(
        "The free ranker hybrid serves: this user's sessions rank it above the shipped base"
    )
    hybrid = free_ranker_params("hybrid", DIM)
    assert all(np.array_equal(res.params[k], hybrid[k]) for k in hybrid)
