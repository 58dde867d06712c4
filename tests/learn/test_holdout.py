"""Judging out of sample: which sessions judge a run, the free rankers, and the verdict."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import numpy as np
import pytest

from signet_bench.bench.train_speed import synthetic_samples
from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.metrics import ndcg_at_k
from signet_bench.learn.holdout import (
    decide,
    heuristic_scores,
    holdout_plan,
    hybrid_leads,
    judged_relevance,
    lead_evidence,
    session_ndcgs,
    start_at_best_free_ranker,
)
from signet_bench.learn.model.params import init_params
from signet_scorer.contract import N_SIGNALS
from signet_scorer.signals import signal_column
from tests.learn.lexical_support import with_lexical


def _samples(n: int, seed: int = 0):
    out = synthetic_samples(n, dim=16, mean_candidates=12, seed=seed)
    rng = np.random.default_rng(seed)
    return [out[i] for i in rng.permutation(n)]  # input order is not time order


def test_enough_sessions_hold_out_the_newest_and_train_on_the_rest():
    samples = _samples(120)
    plan = holdout_plan(samples, DEFAULT_CONFIG)
    assert plan.method == "time" and len(plan.folds) == 1
    fold = plan.folds[0]
    assert len(fold.held) == 25 == DEFAULT_CONFIG.canary_size  # 20% of 120 is 24 < 25
    assert not set(fold.train) & set(fold.held)
    assert set(fold.train) | set(fold.held) == set(range(120))
    newest_trained = max(samples[i].start for i in fold.train)
    assert all(samples[i].start > newest_trained for i in fold.held)
    bigger = holdout_plan(_samples(300), DEFAULT_CONFIG)
    assert len(bigger.folds[0].held) == 60  # the share wins once it exceeds the canary size


def test_few_sessions_are_judged_forward_block_by_block():
    """Every block in time but the oldest is judged, each by a model trained only on the
    blocks before it: never on a session after the ones it is judged on."""
    samples = _samples(12)
    plan = holdout_plan(samples, DEFAULT_CONFIG)
    assert plan.method == "forward" and len(plan.folds) == DEFAULT_CONFIG.holdout_folds - 1
    held = [i for f in plan.folds for i in f.held]
    assert len(held) == len(set(held))  # no session judged twice
    oldest = min(samples[i].start for i in held)
    assert sum(samples[i].start < oldest for i in range(12)) == 3  # the oldest block: never judged
    for f in plan.folds:
        starts = sorted(samples[i].start for i in f.held)
        others = [samples[i].start for i in range(12) if i not in set(f.held)]
        # a contiguous block in time: no other session falls between its first and last
        assert not any(starts[0] < t < starts[-1] for t in others)
        # trained on every session before the block, and on none after it
        assert {i for i in range(12) if samples[i].start < starts[0]} == set(f.train)
    assert holdout_plan(_samples(3), DEFAULT_CONFIG).method == "forward"
    assert len(holdout_plan(_samples(3), DEFAULT_CONFIG).folds) == 2
    with pytest.raises(ValueError, match="at least 2"):
        holdout_plan(_samples(1), DEFAULT_CONFIG)


def test_the_heuristics_are_cosine_and_hybrid_never_the_baseline_order():
    s = _samples(1)[0]
    h = heuristic_scores(s)
    assert set(h) == {"cosine", "hybrid"}  # no baseline, no BM25 alone: see the docstrings
    # no query terms: no lexical evidence, and the hybrid orders as cosine
    assert np.array_equal(np.argsort(-h["hybrid"]), np.argsort(-h["cosine"]))
    lexical = np.linspace(0.0, 1.0, len(s))
    signals = np.zeros((len(s), N_SIGNALS), dtype=np.float32)
    signals[:, signal_column("lexical")] = lexical
    h = heuristic_scores(dataclasses.replace(s, signals=signals))
    assert np.allclose(h["hybrid"], 0.7 * h["cosine"] + 0.3 * lexical)


def test_below_the_minimum_of_sessions_the_start_is_cosine_whatever_the_labels_say():
    samples = _samples(DEFAULT_CONFIG.holdout_min_sessions - 1)
    lex = signal_column("lexical")
    good = with_lexical(samples)
    start = init_params(DEFAULT_CONFIG, 16)
    assert start_at_best_free_ranker(start, good, DEFAULT_CONFIG)["signal_weights"][lex] == 0.0
    cfg = DEFAULT_CONFIG.replace(holdout_min_sessions=0)  # allowed to choose: the hybrid
    assert start_at_best_free_ranker(start, good, cfg) is start


def test_fresh_weights_start_at_the_better_free_ranker():
    samples = _samples(DEFAULT_CONFIG.holdout_min_sessions)
    start = init_params(DEFAULT_CONFIG, 16)
    lex = signal_column("lexical")
    assert start["signal_weights"][lex] > 0  # the hybrid ratio
    # no query terms: cosine and the hybrid tie, and the start is kept
    assert start_at_best_free_ranker(start, samples, DEFAULT_CONFIG) is start
    # a lexical signal that is anti-relevant: cosine wins, the lexical weight goes to 0
    bad = with_lexical(samples, follows=False)
    moved = start_at_best_free_ranker(start, bad, DEFAULT_CONFIG)
    assert moved["signal_weights"][lex] == 0.0
    assert start["signal_weights"][lex] > 0  # the caller's weights are untouched
    for name in start:
        if name != "signal_weights":
            assert moved[name] is start[name]


def test_session_ndcgs_score_each_session_against_its_labels():
    samples = _samples(4)
    perfect = [s.labels for s in samples]
    got = session_ndcgs(samples, perfect)
    want = [ndcg_at_k(s.labels, s.labels, s.memory_ids.astype(str), k=10) for s in samples]
    assert np.allclose(got, want)
    assert np.all(session_ndcgs(samples, [-s.labels for s in samples]) <= got)


def test_the_candidate_must_reach_the_served_model_and_every_heuristic():
    h = {"baseline": np.array([0.3, 0.5]), "cosine": np.array([0.6, 0.6])}
    ok = decide("time", np.array([0.7, 0.5]), np.array([0.5, 0.5]), h)
    assert ok.accepted and ok.comparator == "cosine" and ok.bar == pytest.approx(0.6)
    assert ok.margin == pytest.approx(0.0) and ok.sessions == 2
    below = decide("time", np.array([0.55, 0.6]), None, h)
    assert not below.accepted and below.served is None
    served_best = decide("forward", np.array([0.7, 0.7]), np.array([0.8, 0.8]), h)
    assert not served_best.accepted and served_best.comparator == "served"
    tie = decide("time", np.array([0.6, 0.6]), np.array([0.6, 0.6]), h)
    assert tie.accepted and tie.comparator == "served"  # ties name the served model
    assert not decide("time", np.array([np.nan]), None, {"cosine": np.array([0.0])}).accepted
    assert decide("time", np.array([0.59]), None, {"cosine": np.array([0.6])}, 0.02).accepted


def test_a_lead_within_the_noise_of_the_held_out_sessions_is_not_served():
    cosine = np.full(8, 0.6)
    h = {"cosine": cosine, "hybrid": np.full(8, 0.5)}
    noisy = cosine + np.array([0.30, -0.25, 0.20, -0.22, 0.28, -0.24, 0.01, -0.04])
    shown = lead_evidence(noisy, cosine)
    assert noisy.mean() > cosine.mean() and 0 < shown < 1
    assert shown == pytest.approx(
        (noisy - cosine).mean() / ((noisy - cosine).std(ddof=1) / np.sqrt(8))
    )
    assert decide("time", noisy, None, h).accepted  # any lead, as without the rule
    verdict = decide("time", noisy, None, h, evidence=1.0)
    assert not verdict.accepted and verdict.lead_evidence == pytest.approx(shown)
    assert verdict.evidence_needed == 1.0 and verdict.comparator == "cosine"
    steady = cosine + np.array([0.05, 0.04, 0.06, 0.05, 0.03, 0.05, 0.04, 0.06])
    assert decide("time", steady, None, h, evidence=1.0).lead_evidence > 1.0
    assert decide("time", steady, None, h, evidence=1.0).accepted
    # level with the strongest free ranker on every session: no evidence, the served model
    # (or the start) stays
    assert lead_evidence(cosine, cosine) == 0.0
    assert not decide("time", cosine.copy(), None, h, evidence=1.0).accepted
    assert decide("time", cosine.copy(), None, h).accepted
    assert lead_evidence(cosine + 0.1, cosine) == np.inf
    # the lead is measured against the strongest free ranker, not the served model
    served = decide("time", steady, np.full(8, 0.7), h, evidence=1.0)
    assert not served.accepted and served.comparator == "served" and served.lead_evidence > 1
    # a rejected run gives way to its start only where the served model trails a free ranker
    below = decide("time", noisy, np.full(8, 0.55), h, evidence=1.0)
    assert below.start_instead("cosine").demoted_to == "cosine"
    above = decide("time", noisy, np.full(8, 0.65), h, evidence=1.0)
    assert not above.accepted and above.start_instead("cosine") is None
    assert decide("time", steady, np.full(8, 0.55), h, evidence=1.0).start_instead("x") is None
    assert decide("forward", noisy, None, h, evidence=1.0).start_instead("cosine") is None
    # below the minimum of sessions the start is served whatever the evidence
    start = decide("forward", noisy, None, h, evidence=1.0).unjudged_start()
    assert start.accepted and start.evidence_needed == 0.0


def test_samples_in_the_same_instant_keep_one_order():
    a = _samples(60)
    same = [dataclasses.replace(s, start=a[0].start) for s in a]
    p1 = holdout_plan(same, DEFAULT_CONFIG)
    p2 = holdout_plan(list(reversed(same)), DEFAULT_CONFIG)
    held1 = {same[i].session_key for i in p1.folds[0].held}
    held2 = {list(reversed(same))[i].session_key for i in p2.folds[0].held}
    assert held1 == held2


def test_the_hybrid_start_needs_a_lead_beyond_the_noise_of_the_labels():
    samples = _samples(DEFAULT_CONFIG.holdout_min_sessions + 20)

    def lead_of(mixed):
        per = [heuristic_scores(s) for s in mixed]
        return session_ndcgs(mixed, [h["hybrid"] for h in per]) - session_ndcgs(
            mixed, [h["cosine"] for h in per]
        )

    # the fewest sessions whose lexical signal explains the labels (the rest: it misleads)
    # for the hybrid to lead on average
    for k in range(len(samples)):
        mixed = with_lexical(samples[:k]) + with_lexical(samples[k:], follows=False)
        if (lead := lead_of(mixed)).mean() > 0:
            break
    assert lead.mean() > 0  # the hybrid leads on average, but by little against its spread
    assert lead.mean() < lead.std(ddof=1) / np.sqrt(len(lead))
    start = init_params(DEFAULT_CONFIG, 16)
    lex = signal_column("lexical")
    assert not hybrid_leads(mixed, DEFAULT_CONFIG)
    assert start_at_best_free_ranker(start, mixed, DEFAULT_CONFIG)["signal_weights"][lex] == 0.0
    any_lead = DEFAULT_CONFIG.replace(hybrid_start_evidence=0.0)
    assert hybrid_leads(mixed, any_lead)
    assert start_at_best_free_ranker(start, mixed, any_lead) is start
    assert hybrid_leads(with_lexical(samples), DEFAULT_CONFIG)  # a clear lead


def _rated(samples, rated):
    """Copies of `samples` whose ratings are `rated(sample)` (NaN: unrated)."""
    return [dataclasses.replace(s, rated=np.asarray(rated(s), dtype=np.float64)) for s in samples]


def test_held_out_sessions_are_judged_on_their_ratings_over_the_rated_candidates():
    samples = _rated(
        _samples(6), lambda s: np.where(np.arange(len(s)) % 2 == 0, s.labels[::-1], np.nan)
    )
    scores = [np.random.default_rng(i).normal(size=len(s)) for i, s in enumerate(samples)]
    got = session_ndcgs(samples, scores)
    for s, p, g in zip(samples, scores, got, strict=True):
        rated = np.arange(len(s)) % 2 == 0
        ids = s.memory_ids.astype(str)
        assert g == pytest.approx(ndcg_at_k(s.rated[rated], p[rated], ids[rated], k=10))
        relevance, mask = judged_relevance(s)
        assert np.array_equal(mask, rated) and np.array_equal(relevance, s.rated[rated])
    labels_only = DEFAULT_CONFIG.replace(holdout_on_ratings=False)
    want = [
        ndcg_at_k(s.labels, p, s.memory_ids.astype(str), k=10)
        for s, p in zip(samples, scores, strict=True)
    ]
    assert np.allclose(session_ndcgs(samples, scores, labels_only), want)


def test_a_session_with_fewer_than_two_ratings_is_judged_on_its_labels():
    one = _rated(_samples(3), lambda s: np.where(np.arange(len(s)) == 0, 1.0, np.nan))
    unrated = [dataclasses.replace(s, rated=None) for s in one]
    scores = [s.labels for s in one]
    assert np.array_equal(session_ndcgs(one, scores), session_ndcgs(unrated, scores))
    assert judged_relevance(one[0])[1] is None


def test_the_start_follows_the_ratings_where_keyword_labels_favour_the_lexical_ranker():
    """Labels that the lexical signal explains (as FTS-hit labels are) but ratings that it
    misleads on: judged on the ratings the hybrid does not lead, so a fresh model starts at
    cosine; judged on the labels it would have started at the hybrid."""
    samples = with_lexical(_samples(DEFAULT_CONFIG.holdout_min_sessions + 20))
    rated = _rated(samples, lambda s: s.labels.max() - s.labels)
    assert hybrid_leads(samples, DEFAULT_CONFIG)
    assert hybrid_leads(rated, DEFAULT_CONFIG.replace(holdout_on_ratings=False))
    assert not hybrid_leads(rated, DEFAULT_CONFIG)
    start = init_params(DEFAULT_CONFIG, 16)
    lex = signal_column("lexical")
    assert start_at_best_free_ranker(start, rated, DEFAULT_CONFIG)["signal_weights"][lex] == 0.0


def test_a_sessions_prompts_are_held_out_or_trained_on_with_its_start():
    """Counted and split by session: with three prompt samples a session, the newest 25
    sessions are held out whole (their starts and prompts), as 25 would be without prompts;
    forward folds keep a session whole too."""

    def with_prompts(starts, per):
        out = list(starts)
        for s in starts:
            out += [
                dataclasses.replace(
                    s,
                    session_key=f"{s.session_key}#prompt-{j}",
                    start=s.start + timedelta(seconds=j + 1),
                )
                for j in range(per)
            ]
        return out

    def session(samples, positions):
        return {samples[i].session_key.split("#prompt-")[0] for i in positions}

    samples = with_prompts(_samples(60), 3)
    plan = holdout_plan(samples, DEFAULT_CONFIG)
    fold = plan.folds[0]
    assert plan.method == "time" and len(fold.held) == 4 * DEFAULT_CONFIG.canary_size
    assert len(session(samples, fold.held)) == DEFAULT_CONFIG.canary_size
    assert not session(samples, fold.held) & session(samples, fold.train)
    few = with_prompts(_samples(12), 1)
    forward = holdout_plan(few, DEFAULT_CONFIG)
    assert forward.method == "forward" and len(forward.folds) == DEFAULT_CONFIG.holdout_folds - 1
    for f in forward.folds:
        assert not session(few, f.held) & session(few, f.train)


def test_a_session_start_is_judged_on_the_pool_it_ranked():
    """Rows recorded after the start (what the prompts recalled) are trained on, but no session
    start ranks them: a ranking that puts them first gains nothing, on ratings or labels."""
    samples = _rated(_samples(6), lambda s: s.labels)
    cut = [len(s) * 2 // 3 for s in samples]
    pooled = [
        dataclasses.replace(s, start_pool=np.arange(len(s)) < c)
        for s, c in zip(samples, cut, strict=True)
    ]
    rng = np.random.default_rng(5)
    plain = [rng.normal(size=len(s)) for s in samples]
    # the same order of the pool, with the rows after it put first
    after_first = [
        np.where(s.start_pool, p, 10.0 + s.labels) for s, p in zip(pooled, plain, strict=True)
    ]
    for cfg in (DEFAULT_CONFIG, DEFAULT_CONFIG.replace(holdout_on_ratings=False)):
        got = session_ndcgs(pooled, after_first, cfg)
        assert np.array_equal(got, session_ndcgs(pooled, plain, cfg))
        for s, p, g, c in zip(samples, plain, got, cut, strict=True):
            ids = s.memory_ids.astype(str)[:c]
            assert g == pytest.approx(ndcg_at_k(s.labels[:c], p[:c], ids, k=10))
        # without the pool every row counts, and putting the relevant late rows first pays
        whole = session_ndcgs(samples, after_first, cfg)
        assert whole.mean() > got.mean()
