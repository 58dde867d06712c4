"""The shipped base serves unless the user's own model has shown, on sessions it did not train
on, a gain whose lower confidence bound is above 0 against the base and the strongest free
ranker; the choice says why, in one sentence with the figures."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from signet_bench.daemon.metrics import bootstrap_interval
from signet_bench.learn.serving import (
    PROMPT_KEY,
    ServingChoice,
    choose_served,
    earned_alpha,
    gain_over,
    hook_choices,
    served_base,
)

RNG = np.random.default_rng(7)
BASE = RNG.uniform(0.3, 0.7, 60)
COSINE = BASE - 0.01  # the strongest free ranker, a little below the base
HYBRID = BASE - 0.05


def _free(cosine=COSINE):
    return {"cosine": cosine, "hybrid": HYBRID}


def test_a_clear_gain_over_both_serves_the_per_user_model():
    candidate = BASE + RNG.uniform(0.02, 0.06, BASE.size)
    choice = choose_served(candidate, BASE, _free())
    assert choice.served == "per-user" and choice.reason == "shown-better"
    assert choice.sessions == 60 and choice.over_free.rival == "cosine"
    assert choice.over_base.lower > 0 and choice.over_free.lower > 0
    # the bound is the one-sided 95% bootstrap bound of the paired gain
    lo = bootstrap_interval(candidate - BASE, 0, level=0.9).low
    assert choice.over_base.lower == pytest.approx(lo)
    assert choice.over_base.mean == pytest.approx(float(np.mean(candidate - BASE)))


def test_a_gain_over_the_base_alone_is_not_enough():
    """Ahead of the base, level with a free ranker that beats the base: not the per-user
    model, and not the base either (it trails that free ranker): the free ranker serves."""
    rng = np.random.default_rng(8)  # its own draws: the module's depend on the tests run before
    candidate = BASE + rng.normal(0.03, 0.01, BASE.size)
    noise = rng.normal(0.0, 0.05, BASE.size)
    strong_cosine = candidate + noise - noise.mean()  # level with the candidate on average
    choice = choose_served(candidate, BASE, _free(strong_cosine))
    assert choice.over_base.shown and not choice.over_free.shown
    assert choice.served == "free" and choice.reason == "base-below-free"


def test_a_mean_gain_within_the_noise_is_not_enough():
    """A positive mean whose bound is below 0 (half the sessions lose): the base serves."""
    noise = np.where(np.arange(BASE.size) % 2 == 0, 0.2, -0.19)
    choice = choose_served(BASE + noise, BASE, _free(BASE - 0.3))
    assert choice.over_base.mean > 0 > choice.over_base.lower
    assert choice.served == "base"


def test_a_per_user_model_equal_to_the_base_never_serves():
    choice = choose_served(BASE.copy(), BASE, _free())
    assert choice.over_base == gain_over(BASE, BASE, "base")
    assert (choice.over_base.mean, choice.over_base.lower) == (0.0, 0.0)
    assert choice.served == "base" and not choice.per_user


def test_a_gain_alike_on_every_session_is_its_own_bound():
    choice = choose_served(BASE + 0.02, BASE, _free())
    assert choice.over_base.lower == pytest.approx(0.02) and choice.per_user


def test_certainty_bounds_nothing():
    assert gain_over(BASE + 0.02, BASE, "base", level=1.0).lower == -math.inf


def test_the_sentence_says_which_model_and_why_with_the_figures():
    candidate = BASE + RNG.uniform(0.02, 0.06, BASE.size)
    served = choose_served(candidate, BASE, _free()).sentence()
    assert served.startswith("This user's own model serves: on 60 held-out sessions")
    assert "leads the base by +0.0" in served and "95% lower bound +0.0" in served
    assert "and cosine by" in served
    kept = choose_served(BASE.copy(), BASE, _free()).sentence()
    assert kept.startswith("The shipped base serves: this user's model is not shown better")
    assert "lower bound +0.000" in kept and "both lower bounds must be above 0" in kept
    assert served_base("no-sessions").sentence() == (
        "The shipped base serves: no session has been trained on yet."
    )
    # a run that started at the strongest free ranker names it once
    started = choose_served(candidate, COSINE, _free(), start="cosine").sentence()
    assert started.startswith(
        "This user's own model serves: on 60 held-out sessions it leads its start, cosine, "
        "the strongest free ranker, by +0.0"
    )
    assert started.count("cosine") == 1 and started.count("lower bound") == 1
    few = served_base("too-few", 12, 20).sentence()
    assert (
        few == "The shipped base serves: 12 trainable sessions are too few to learn from "
        "(at least 20)."
    )


def test_the_choice_travels_as_json_and_back():
    choice = choose_served(BASE + RNG.uniform(0.02, 0.06, BASE.size), BASE, _free())
    record = json.loads(json.dumps(choice.record()))
    assert record["sentence"] == choice.sentence() and record["served"] == "per-user"
    assert ServingChoice.from_record(record) == choice
    nothing = served_base("no-sessions")
    assert ServingChoice.from_record(json.loads(json.dumps(nothing.record()))) == nothing


def test_the_earned_alpha_is_the_share_of_sessions_the_baseline_wins():
    model = np.array([0.5, 0.6, 0.7, 0.4])
    baseline = np.array([0.4, 0.6, 0.8, 0.1])  # loses, ties, wins, loses
    assert earned_alpha(model, baseline) == pytest.approx((0 + 0.5 + 1 + 0) / 4)
    assert earned_alpha(np.array([]), np.array([])) == 1.0


def test_a_base_below_the_strongest_free_ranker_gives_way_to_it():
    """The base trails cosine on this user's held-out sessions by a clear margin and the
    per-user model is not shown better: cosine serves, and the sentence says why."""
    low_base = COSINE - 0.1 + RNG.normal(0.0, 0.01, COSINE.size)
    choice = choose_served(low_base + 0.02, low_base, _free())
    assert choice.served == "free" and choice.reason == "base-below-free"
    assert not choice.per_user and choice.free_over_base is not None
    assert choice.free_over_base.lower > 0.0
    assert choice.sentence().startswith("The free ranker cosine serves: on 60 held-out sessions")
    assert ServingChoice.from_record(json.loads(json.dumps(choice.record()))) == choice
    # a base ahead of (or level with) the free rankers keeps serving
    assert choose_served(BASE, BASE, _free()).served == "base"
    assert choose_served(low_base, low_base, _free(), level=1.0).served == "base"


def test_each_hooks_choice_is_read_back_and_an_older_record_holds_session_starts_alone():
    """A run's serving record keeps session start's choice at the top, as runs recorded it
    before the prompt hook had its own, and the prompt hook's under `PROMPT_KEY`."""
    rng = np.random.default_rng(3)
    base = rng.uniform(0.3, 0.6, 40)
    start = choose_served(base + 0.2, base, {"cosine": base + 0.05})
    prompt = choose_served(base - 0.1, base, {"cosine": base}, unit="prompts")
    assert start.per_user and not prompt.per_user
    assert hook_choices(start.record()) == {"session_start": start}
    both = hook_choices(start.record() | {PROMPT_KEY: prompt.record()})
    assert both == {"session_start": start, PROMPT_KEY: prompt}
    assert "held-out prompts" in both[PROMPT_KEY].sentence()
    assert "held-out sessions" in both["session_start"].sentence()
    assert hook_choices(None) == {}
