"""The predictor state machine: EMA, alpha ramp, cold-start exit, drift, training, JSON."""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.predictor_state import (
    PredictorState,
    StateError,
    cold_start_blockers,
    cold_start_ready,
    effective_alpha,
    initial_state,
    on_comparison,
    on_session_labelled,
    on_session_start,
    on_training,
    project_slices,
    state_from_json,
    state_to_json,
    training_due,
)


@dataclass(frozen=True)
class Cmp:
    """The fields of `comparison.Comparison` that the state machine reads."""

    predictor_won: bool
    has_predictor_scores: bool = True
    scorer_confidence: float = 0.9
    project: str | None = None
    margin: float = 0.0


WIN, LOSS = Cmp(True, margin=0.1), Cmp(False, margin=-0.1)
OFFLINE = Cmp(False, has_predictor_scores=False)


def run(state: PredictorState, comparisons) -> PredictorState:
    for c in comparisons:
        state = on_comparison(state, c).state
    return state


def active(success_rate: float = 0.5, after: int = 30) -> PredictorState:
    return PredictorState(
        success_rate=success_rate,
        cold_start_exited=True,
        trained=True,
        sessions_after_cold_start=after,
        scored_sessions=50,
    )


# --- EMA -----------------------------------------------------------------------------------------


def test_ema_sequence():
    """Check 0.5 -> win -> 0.55 -> loss -> 0.495 (EMA alpha 0.1)."""
    s = initial_state()
    assert s.success_rate == 0.5 and s.alpha == 1.0
    step = on_comparison(s, WIN)
    assert step.state.success_rate == pytest.approx(0.55)
    assert step.kinds == ("ema_update",)
    assert on_comparison(step.state, LOSS).state.success_rate == pytest.approx(0.495)


def test_ema_skipped_without_predictor_scores():
    """Check sessions without predictor scores never move the EMA (ema_skip)."""
    step = on_comparison(initial_state(), OFFLINE)
    assert step.state.success_rate == 0.5
    assert step.events[0].kind == "ema_skip" and "no predictor scores" in step.events[0].detail


@pytest.mark.parametrize("conf", [0.59, math.nan])
def test_ema_skipped_for_low_confidence(conf):
    """Check the confidence gate: < 0.6 (or absent) records nothing in the EMA."""
    step = on_comparison(initial_state(), Cmp(True, scorer_confidence=conf))
    assert step.state.success_rate == 0.5 and step.kinds == ("ema_skip",)
    assert on_comparison(initial_state(), Cmp(True, scorer_confidence=0.6)).kinds == ("ema_update",)


def test_every_comparison_counts_towards_training():
    """Check skipped and updating comparisons both advance the training interval."""
    s = run(initial_state(), [WIN, OFFLINE, Cmp(True, scorer_confidence=0.1)])
    assert s.comparisons_since_training == 3


# --- alpha ---------------------------------------------------------------------------------------


def test_alpha_is_one_in_cold_start():
    """Check alpha stays 1.0 before cold start exit whatever the success rate."""
    assert effective_alpha(PredictorState(success_rate=0.95)) == 1.0


@pytest.mark.parametrize("after", [1, 5, 10])
def test_alpha_floor_point_eight_sessions_1_to_10(after):
    """Check sessions 1-10 after exit: alpha >= 0.8 even with success 0.9."""
    assert effective_alpha(active(0.9, after)) == pytest.approx(0.8)


@pytest.mark.parametrize("after", [11, 15, 20])
def test_alpha_floor_point_six_sessions_11_to_20(after):
    """Check sessions 11-20 after exit: alpha >= 0.6."""
    assert effective_alpha(active(0.9, after)) == pytest.approx(0.6)


def test_alpha_unfloored_after_ramp():
    """Check from session 21: alpha = 1 - success_rate."""
    assert effective_alpha(active(0.9, 21)) == pytest.approx(0.1)
    assert effective_alpha(active(0.3, 21)) == pytest.approx(0.7)
    assert effective_alpha(active(0.1, 5)) == pytest.approx(0.9)  # floor is a floor only


def test_a_shipped_base_starts_with_the_weight_it_earned():
    """With a base serving, cold start fuses with the baseline weight the base earned (not the
    baseline alone); after exit no ramp floor is above it, and a drift reset returns to it."""
    start = initial_state(DEFAULT_CONFIG, start_alpha=0.2)
    assert start.alpha == 0.2 and effective_alpha(start) == 0.2
    # the success rate starts at the base's record: alpha stays 0.2 when cold start exits
    assert start.success_rate == pytest.approx(0.8) and initial_state().success_rate == 0.5
    left = dataclasses.replace(start, cold_start_exited=True, sessions_after_cold_start=1)
    assert effective_alpha(left) == pytest.approx(0.2)
    assert on_session_start(start).state.alpha == 0.2
    exited = dataclasses.replace(active(0.9, 5), start_alpha=0.2)
    assert effective_alpha(exited) == pytest.approx(0.2)  # the 0.8 floor is capped at 0.2
    assert effective_alpha(dataclasses.replace(exited, success_rate=0.3)) == pytest.approx(0.7)
    low = dataclasses.replace(active(0.1), start_alpha=0.2, drift_low_sessions=9)
    reset = on_comparison(low, LOSS).state
    assert not reset.cold_start_exited and reset.alpha == 0.2 == effective_alpha(reset)
    assert reset.success_rate == pytest.approx(0.8)
    assert state_from_json(state_to_json(reset)).start_alpha == 0.2
    assert initial_state().start_alpha == 1.0  # no base: Signet's cold start
    with pytest.raises(ValueError, match="start_alpha"):
        initial_state(DEFAULT_CONFIG, start_alpha=1.5)


def test_comparison_updates_alpha():
    """Check the EMA update also refreshes alpha = max(floor, 1 - success)."""
    s = on_comparison(active(0.5, 30), WIN).state
    assert s.alpha == pytest.approx(1 - 0.55)


# --- cold start ----------------------------------------------------------------------------------


def _ready(**kw) -> PredictorState:
    base = {"trained": True, "scored_sessions": 10, "success_rate": 0.5}
    base.update(kw)
    return PredictorState(**base)


def test_cold_start_exits_when_all_three_hold():
    """Check trained AND >= 10 scored sessions AND success > 0.4 -> exit; session 1 after exit."""
    step = on_session_start(_ready())
    assert step.kinds == ("cold_start_exit",)
    assert step.state.cold_start_exited and step.state.sessions_after_cold_start == 1
    assert step.state.alpha == pytest.approx(0.8)


@pytest.mark.parametrize(
    "missing",
    [{"trained": False}, {"scored_sessions": 9}, {"success_rate": 0.4}, {"success_rate": 0.3}],
)
def test_cold_start_needs_every_condition(missing):
    """Check any single unmet condition keeps cold start (alpha 1.0)."""
    step = on_session_start(_ready(**missing))
    assert not step.state.cold_start_exited and step.events == ()
    assert step.state.alpha == 1.0 and step.state.sessions_after_cold_start == 0
    assert len(cold_start_blockers(_ready(**missing))) == 1


def test_cold_start_blockers_describe_progress():
    """Check the dashboard's progress line."""
    assert cold_start_blockers(initial_state()) == (
        "no accepted training yet",
        "0/10 scored sessions",
    )
    assert cold_start_ready(_ready())


def test_sessions_after_exit_count_every_start():
    """Check the ramp counter increments per session start once exited."""
    s = _ready()
    alphas = []
    for _ in range(22):
        step = on_session_start(s)
        s = step.state
        alphas.append(s.alpha)
    assert s.sessions_after_cold_start == 22
    assert alphas[:10] == [pytest.approx(0.8)] * 10
    assert alphas[10:20] == [pytest.approx(0.6)] * 10
    assert alphas[20:] == [pytest.approx(0.5)] * 2


def test_scored_sessions_counts_trainable_sessions():
    """Check only sessions that produced training data count towards cold start."""
    s = initial_state()
    for trainable in (True, False, True):
        s = on_session_labelled(s, trainable=trainable).state
    assert s.scored_sessions == 2


def test_full_cold_start_lifecycle():
    """Check 10 scored sessions -> training due -> accepted -> exit at the next session start."""
    s, cfg = initial_state(), DEFAULT_CONFIG
    for _ in range(cfg.train_interval_sessions):
        s = on_session_start(s).state
        assert s.alpha == 1.0
        s = on_session_labelled(s, trainable=True).state
        s = on_comparison(s, OFFLINE).state
    assert training_due(s) and s.scored_sessions == 10
    s = on_training(s, accepted=True).state
    assert not training_due(s) and s.trained and s.model_version == 1
    assert on_session_start(s).kinds == ("cold_start_exit",)


# --- drift ---------------------------------------------------------------------------------------


def test_seed_drift_counts_consecutive_sessions_below_the_threshold():
    """Check docs/specification.md §7.4: from 0.6 the 7th loss takes the EMA to 0.287 < 0.3 (count
    1), the 16th loss is the 10th consecutive session below 0.3 -> drift_reset."""
    s = run(active(0.6), [LOSS] * 6)
    assert s.success_rate == pytest.approx(0.6 * 0.9**6) and s.success_rate > 0.3
    assert s.drift_low_sessions == 0
    s = run(s, [LOSS])
    assert s.success_rate == pytest.approx(0.28697814) and s.drift_low_sessions == 1
    s = run(s, [LOSS] * 8)
    assert s.drift_low_sessions == 9 and s.drift_resets == 0
    step = on_comparison(s, LOSS)
    assert step.kinds == ("ema_update", "drift_reset") and step.retrain_with_replay
    assert "for 10 consecutive" in step.events[-1].detail
    r = step.state
    assert (r.success_rate, r.alpha, r.drift_resets, r.drift_low_sessions) == (0.5, 1.0, 1, 0)
    assert r.recent_outcomes == ()
    assert not r.cold_start_exited and not r.trained and r.sessions_after_cold_start == 0
    assert effective_alpha(r) == 1.0


def test_seed_drift_count_follows_the_rate_not_the_outcome():
    """Check a win that leaves the EMA below 0.3 still counts (0.1 + 0.9·0.2 = 0.28), and a
    session that lifts it to >= 0.3 restarts the count."""
    s = run(active(0.2), [LOSS] * 3)
    assert s.drift_low_sessions == 3
    s = run(s, [WIN])
    assert s.success_rate == pytest.approx(0.1 + 0.9 * 0.2 * 0.9**3) and s.success_rate < 0.3
    assert s.drift_low_sessions == 4
    s = run(active(0.29), [WIN])  # 0.1 + 0.9 * 0.29 = 0.361
    assert s.success_rate >= 0.3 and s.drift_low_sessions == 0
    s = run(active(0.2), [LOSS] * 5 + [WIN] * 2)  # 0.118 -> 0.206 -> 0.286: still below
    assert s.drift_low_sessions == 7
    s = run(s, [WIN])  # 0.357
    assert s.success_rate >= 0.3 and s.drift_low_sessions == 0 and s.drift_resets == 0


def test_seed_drift_is_not_the_window_win_rate():
    """Check 2 wins then 8 losses from 0.6: the Signet 0.58 rule (win rate 0.2) fires, the seed's
    does not (the EMA is 0.676·0.9^8 = 0.291, below 0.3 for one session only)."""
    seq = [WIN, WIN] + [LOSS] * 8
    seed = run(active(0.6), seq)
    assert seed.drift_resets == 0 and seed.drift_low_sessions == 1
    assert seed.success_rate == pytest.approx(0.676 * 0.9**8)
    s = active(0.6)
    for c in seq:
        s = on_comparison(s, c, drift_rule="signet-0.58").state
    assert s.drift_resets == 1


def test_drift_does_not_fire_when_predictor_was_offline():
    """Check sessions without predictor scores leave both drift counts alone (Signet 0.58 bug)."""
    s = run(active(0.6), [OFFLINE] * 50)
    assert s.drift_resets == 0 and s.recent_outcomes == () and s.success_rate == 0.6
    s = run(s, [LOSS] * 12 + [OFFLINE] * 20)
    assert s.drift_resets == 0 and s.drift_low_sessions == 6 and len(s.recent_outcomes) == 10
    s = run(s, [LOSS] * 3 + [Cmp(False, scorer_confidence=0.3)] * 5)
    assert s.drift_low_sessions == 9 and s.drift_resets == 0
    assert run(s, [LOSS]).drift_resets == 1


def test_drift_ignores_low_confidence_sessions():
    """Check sessions excluded from the EMA are excluded from the drift counts too."""
    s = run(active(0.2), [Cmp(False, scorer_confidence=0.3)] * 20)
    assert s.drift_resets == 0 and s.recent_outcomes == () and s.drift_low_sessions == 0


def test_unknown_drift_rule_raises():
    with pytest.raises(ValueError, match="drift_rule"):
        on_comparison(active(), LOSS, drift_rule="other")  # type: ignore[arg-type]


def run058(state: PredictorState, comparisons) -> PredictorState:
    for c in comparisons:
        state = on_comparison(state, c, drift_rule="signet-0.58").state
    return state


def test_signet058_drift_fires_after_ten_scored_losses():
    """Check Signet 0.58's rule: 10 scored losses -> drift_reset with the same reset effects."""
    s = run058(active(0.6), [LOSS] * 9)
    assert s.drift_resets == 0 and len(s.recent_outcomes) == 9
    step = on_comparison(s, LOSS, drift_rule="signet-0.58")
    assert step.kinds == ("ema_update", "drift_reset") and step.retrain_with_replay
    r = step.state
    assert (r.success_rate, r.alpha, r.drift_resets, r.recent_outcomes) == (0.5, 1.0, 1, ())
    assert r.drift_low_sessions == 0 and not r.cold_start_exited and not r.trained


def test_signet058_drift_threshold_is_window_win_rate():
    """Check 2 wins in 10 (0.2 < 0.3) fires; 3 wins in 10 (0.3) does not."""
    two = on_comparison(
        run058(active(0.6), [WIN, WIN] + [LOSS] * 7), LOSS, drift_rule="signet-0.58"
    )
    assert two.kinds[-1] == "drift_reset"
    three = on_comparison(
        run058(active(0.6), [WIN, WIN, WIN] + [LOSS] * 6), LOSS, drift_rule="signet-0.58"
    )
    assert "drift_reset" not in three.kinds and len(three.state.recent_outcomes) == 10


def test_signet058_drift_window_slides_and_refills_after_reset():
    """Check the window keeps the last 10 outcomes and a reset needs a fresh full window."""
    s = run058(active(0.6), [WIN] * 5 + [LOSS] * 7)
    assert s.recent_outcomes == (1, 1, 1) + (0,) * 7 and s.drift_resets == 0
    s = run058(s, [LOSS])  # window (1, 1, 0 x 8): 0.2 < 0.3
    assert s.drift_resets == 1
    s = run058(s, [LOSS] * 9)
    assert s.drift_resets == 1
    s = run058(s, [LOSS])
    assert s.drift_resets == 2


def test_after_drift_alpha_locked_until_retrain_accepted():
    """Check alpha stays 1.0 after a drift reset until a retrain passes, then the ramp restarts."""
    s = on_comparison(run(active(0.29), [LOSS] * 9), LOSS).state
    assert s.drift_resets == 1
    s = on_session_start(s).state
    assert s.alpha == 1.0 and not s.cold_start_exited
    s = on_training(s, accepted=False).state
    assert on_session_start(s).state.alpha == 1.0
    s = on_training(s, accepted=True).state
    step = on_session_start(s)
    assert step.kinds == ("cold_start_exit",) and step.state.alpha == pytest.approx(0.8)


# --- per-project slices --------------------------------------------------------------------------


def test_project_slices_track_their_own_ema():
    """Check each project keeps its own EMA next to the global one."""
    s = run(
        initial_state(), [Cmp(True, project="a"), Cmp(False, project="b"), Cmp(True, project="a")]
    )
    assert s.project_success["a"] == pytest.approx(0.1 + 0.9 * 0.55)
    assert s.project_success["b"] == pytest.approx(0.45)
    assert s.project_sessions == {"a": 2, "b": 1}
    assert project_slices(s)[0][0] == "a"
    assert run(initial_state(), [Cmp(True, project=None)]).project_success == {}


def test_project_slices_capped_at_max_by_session_count():
    """Check at most 5 slices, kept for the projects with the most sessions."""
    comps = [Cmp(True, project=p) for p in "abcde" for _ in range(3)]
    s = run(initial_state(), comps)
    assert set(s.project_success) == set("abcde")
    s = run(s, [Cmp(False, project="f")])
    assert set(s.project_success) == set("abcde")  # f has 1 session
    s = run(s, [Cmp(False, project="f")] * 3)
    assert "f" in s.project_success and len(s.project_success) == 5
    assert s.project_sessions["f"] == 4
    assert s.project_success["f"] == pytest.approx(0.45)  # entered fresh at 0.5


def test_project_slices_skip_sessions_without_ema_update():
    """Check slices move only with the global EMA."""
    s = run(initial_state(), [Cmp(True, project="a", has_predictor_scores=False)])
    assert s.project_success == {} and s.project_sessions == {}


# --- training ------------------------------------------------------------------------------------


def test_training_due_every_interval():
    """Check training is due after trainIntervalSessions comparisons and resets after a run."""
    s = run(initial_state(), [OFFLINE] * 9)
    assert not training_due(s)
    s = run(s, [OFFLINE])
    assert training_due(s)
    rejected = on_training(s, accepted=False)
    assert rejected.kinds == ("training_rejected",)
    assert not rejected.state.trained and rejected.state.model_version == 0
    assert not training_due(rejected.state)


def test_training_accepted_bumps_version():
    """Check an accepted run sets trained and increments model_version."""
    step = on_training(initial_state(), accepted=True)
    assert step.kinds == ("training_accepted",) and step.events[0].detail == "model_v1"
    assert on_training(step.state, accepted=True).state.model_version == 2


# --- JSON ----------------------------------------------------------------------------------------


def test_json_round_trip():
    """Check a non-trivial state survives save/load exactly."""
    s = run(active(0.6), [Cmp(True, project="a"), LOSS, Cmp(False, project="b")])
    s = dataclasses.replace(s, model_version=3, drift_resets=2, drift_low_sessions=4)
    assert state_from_json(state_to_json(s)) == s
    assert json.loads(state_to_json(s))["drift_low_sessions"] == 4
    assert json.loads(state_to_json(s))["format"] == 1


def test_json_missing_keys_default_and_unknown_ignored():
    """Check an older or partial state file loads with defaults."""
    s = state_from_json('{"success_rate": 0.7, "trained": true, "lastTrainingAt": "x"}')
    assert s.success_rate == 0.7 and s.trained and s.alpha == 1.0
    old = json.loads(state_to_json(active(0.2)))
    del old["drift_low_sessions"]  # a state saved before the specification's drift count existed
    assert state_from_json(json.dumps(old)).drift_low_sessions == 0


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("{oops", "not valid JSON"),
        ("[]", "expected a JSON object"),
        ('{"format": 2}', "unsupported format"),
        ('{"trained": 1}', "trained: expected true/false"),
        ('{"scored_sessions": 1.5}', "scored_sessions: expected a whole number"),
        ('{"drift_low_sessions": -1}', "drift_low_sessions: expected a whole number"),
        ('{"success_rate": "high"}', "success_rate: expected a number"),
        ('{"recent_outcomes": [1, 2]}', "recent_outcomes: expected a list of 0/1"),
        ('{"project_success": {"a": null}}', "project_success.a: expected a number"),
    ],
)
def test_json_rejects_bad_state(text, match):
    """Check a corrupt state file raises a StateError naming the field."""
    with pytest.raises(StateError, match=match):
        state_from_json(text)


@given(st.lists(st.sampled_from([WIN, LOSS, OFFLINE, Cmp(True, project="p")]), max_size=60))
def test_replay_is_pure_and_bounded(comps):
    """Check replaying the same sequence twice gives equal states and values stay in range."""
    a, b = run(initial_state(), comps), run(initial_state(), comps)
    assert a == b
    assert 0.0 <= a.success_rate <= 1.0 and 0.0 <= a.alpha <= 1.0
    assert len(a.recent_outcomes) <= DEFAULT_CONFIG.drift_reset_window
    assert a.drift_low_sessions < DEFAULT_CONFIG.drift_reset_window
    assert state_from_json(state_to_json(a)) == a
