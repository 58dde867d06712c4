"""The daemon's predictor state machine: cold start, success-rate EMA, alpha, drift, training.

Pure and replayable: every transition takes a `PredictorState` and returns a `Step` holding a
new state plus the events a loop logs (``cold_start_exit``, ``ema_update``, ``ema_skip``,
``drift_reset``, ``training_accepted``, ``training_rejected``). Session lifecycle:

1. `on_session_start` — evaluate cold-start exit, count the session after exit, set alpha;
2. `on_session_labelled` — count the session if it yields training data;
3. `on_comparison` — EMA, per-project slices, drift;
4. `training_due` → train → `on_training` (also after a drift reset's ``retrain_with_replay``).

Drift follows docs/specification.md §7.4 by default: reset when ``success_rate <
driftResetThreshold`` (0.3) for ``driftResetWindow`` (10) consecutive sessions, counted in
``drift_low_sessions``. ``drift_rule="signet-0.58"`` keeps Signet 0.58's rule instead
(docs/specification.md §7.4): reset when the win rate of the last 10 outcomes (``recent_outcomes``)
is below 0.3. Both rules count only sessions in which the predictor produced scores and the EMA was
updated; the other sessions leave both counts alone.

Differences from Signet 0.58 (docs/specification.md §7.5), each a fix of a documented defect:
``scored_sessions`` counts sessions that produced training data (Signet counted an opt-in
telemetry table that is empty by default, so cold start never exited); ``trained`` is part of
the persisted state (Signet lost it on restart); drift counts only EMA-updated sessions
(Signet counted offline sessions as losses, so drift fired while the predictor was offline);
and a drift reset re-enters cold start until the replay retrain is accepted, so "reset α to
1.0" holds until the predictor earns influence again through the early-active ramp (in Signet
α was recomputed from the reset success rate at the next session, i.e. 0.5).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.errors import UserError

if TYPE_CHECKING:
    from signet_bench.daemon.comparison import Comparison

__all__ = [
    "DRIFT_RULES",
    "STATE_FORMAT",
    "DriftRule",
    "Event",
    "EventKind",
    "PredictorState",
    "StateError",
    "Step",
    "cold_start_blockers",
    "cold_start_ready",
    "effective_alpha",
    "initial_state",
    "on_comparison",
    "on_session_labelled",
    "on_session_start",
    "on_training",
    "project_slices",
    "start_success",
    "state_from_json",
    "state_to_json",
    "training_due",
]

STATE_FORMAT = 1

DriftRule = Literal["seed", "signet-0.58"]
DRIFT_RULES: tuple[DriftRule, ...] = ("seed", "signet-0.58")

EventKind = Literal[
    "cold_start_exit",
    "ema_update",
    "ema_skip",
    "drift_reset",
    "training_accepted",
    "training_rejected",
]


class StateError(UserError, ValueError):
    """A saved predictor state that cannot be read."""


@dataclass(frozen=True, slots=True)
class PredictorState:
    """Everything the daemon persists about the predictor between sessions.

    ``project_success`` holds per-project success-rate EMAs for at most ``max_project_slices``
    projects, those with the most EMA-updating sessions (``project_sessions`` counts every
    project). ``drift_low_sessions`` counts consecutive EMA-updated sessions whose updated
    success rate is below ``drift_reset_threshold`` (the specification's drift rule,
    docs/specification.md §7.4); ``recent_outcomes`` holds the last ``drift_reset_window`` of their
    outcomes, 1 = win, 0 = loss, oldest first (Signet 0.58's drift rule).
    ``trained`` = a model passed the gates since start-up or since the last drift reset.
    Treat the dicts as read-only; transitions copy them.
    """

    success_rate: float = DEFAULT_CONFIG.initial_success_rate
    alpha: float = 1.0
    cold_start_exited: bool = False
    trained: bool = False
    sessions_after_cold_start: int = 0
    scored_sessions: int = 0
    drift_resets: int = 0
    comparisons_since_training: int = 0
    recent_outcomes: tuple[int, ...] = ()
    drift_low_sessions: int = 0
    project_success: dict[str, float] = field(default_factory=dict)
    project_sessions: dict[str, int] = field(default_factory=dict)
    model_version: int = 0
    # the baseline's weight before this user's predictor has earned its own: 1.0 (Signet's
    # rule, an untrained predictor) or the weight the shipped base earned against the
    # baseline on its own held-out sessions (`learn.serving.earned_alpha`)
    start_alpha: float = 1.0


@dataclass(frozen=True, slots=True)
class Event:
    """Something a loop logs: what happened and a short human-readable detail."""

    kind: EventKind
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Step:
    """A transition's result: the new state, its events, and whether to retrain with replay."""

    state: PredictorState
    events: tuple[Event, ...] = ()
    retrain_with_replay: bool = False

    @property
    def kinds(self) -> tuple[str, ...]:
        """The event kinds, in order."""
        return tuple(e.kind for e in self.events)


def initial_state(
    cfg: PredictorConfig = DEFAULT_CONFIG, start_alpha: float = 1.0
) -> PredictorState:
    """A fresh state: cold start, alpha `start_alpha` (1.0: the baseline alone; a shipped base
    serving: the weight it earned) and the success rate that goes with it (`start_success`)."""
    if not 0.0 <= start_alpha <= 1.0:
        raise ValueError(f"start_alpha must be in [0, 1], got {start_alpha!r}")
    return PredictorState(
        success_rate=start_success(start_alpha, cfg), alpha=start_alpha, start_alpha=start_alpha
    )


def start_success(start_alpha: float, cfg: PredictorConfig = DEFAULT_CONFIG) -> float:
    """The success rate's start (and its value after a drift reset): ``initial_success_rate``
    (0.5) without a base (`start_alpha` 1); with a base, the success rate it earned on other
    users' held-out sessions, ``1 − start_alpha``, so that the EMA moves from the base's record
    and alpha does not jump to 0.5 when cold start exits (docs/specification.md §3.4, §7.2)."""
    return cfg.initial_success_rate if start_alpha >= 1.0 else 1.0 - start_alpha


def cold_start_blockers(
    state: PredictorState, cfg: PredictorConfig = DEFAULT_CONFIG
) -> tuple[str, ...]:
    """Which of the three cold-start exit conditions (docs/specification.md §7.3) are not met
    yet."""
    out = []
    if not state.trained:
        out.append("no accepted training yet")
    if state.scored_sessions < cfg.min_training_sessions:
        out.append(f"{state.scored_sessions}/{cfg.min_training_sessions} scored sessions")
    if not state.success_rate > cfg.cold_start_min_success_rate:
        out.append(f"success rate {state.success_rate:.3f} <= {cfg.cold_start_min_success_rate:g}")
    return tuple(out)


def cold_start_ready(state: PredictorState, cfg: PredictorConfig = DEFAULT_CONFIG) -> bool:
    """True when trained AND scored_sessions >= min_training_sessions AND success rate > 0.4."""
    return not cold_start_blockers(state, cfg)


def effective_alpha(state: PredictorState, cfg: PredictorConfig = DEFAULT_CONFIG) -> float:
    """The baseline's RRF weight: ``start_alpha`` in cold start (1.0 without a shipped base),
    else max(ramp floor, 1 − success_rate).

    The early-active ramp splits ``early_active_ramp_sessions`` (20) evenly over the floors
    ``early_active_alpha_floors`` (0.8, 0.6): sessions 1–10 after exit → 0.8, 11–20 → 0.6,
    later → no floor; no floor is above ``start_alpha``: a user's own model never starts with
    less influence than the base it started from had earned (docs/specification.md §3.4).
    """
    if not state.cold_start_exited:
        return state.start_alpha
    floors = cfg.early_active_alpha_floors
    n = state.sessions_after_cold_start
    idx = max(n - 1, 0) * len(floors) // cfg.early_active_ramp_sessions
    floor = min(floors[idx] if idx < len(floors) else 0.0, state.start_alpha)
    return min(1.0, max(floor, 1.0 - state.success_rate))


def on_session_start(state: PredictorState, cfg: PredictorConfig = DEFAULT_CONFIG) -> Step:
    """Session start: exit cold start if all three conditions hold; count sessions after exit.

    The session in which cold start exits is session 1 after exit. ``alpha`` becomes the
    alpha used for this session's fusion.
    """
    events: list[Event] = []
    exited, after = state.cold_start_exited, state.sessions_after_cold_start
    if not exited and cold_start_ready(state, cfg):
        exited, after = True, 0
        events.append(
            Event(
                "cold_start_exit",
                f"scored_sessions={state.scored_sessions} success_rate={state.success_rate:.3f}",
            )
        )
    if exited:
        after += 1
    new = dataclasses.replace(state, cold_start_exited=exited, sessions_after_cold_start=after)
    return Step(dataclasses.replace(new, alpha=effective_alpha(new, cfg)), tuple(events))


def on_session_labelled(state: PredictorState, *, trainable: bool) -> Step:
    """Count a distinct session that produced training data (call once per session)."""
    if not trainable:
        return Step(state)
    return Step(dataclasses.replace(state, scored_sessions=state.scored_sessions + 1))


def _ema(old: float, win: int, cfg: PredictorConfig) -> float:
    return cfg.ema_alpha * win + (1.0 - cfg.ema_alpha) * old


def _update_projects(
    state: PredictorState, project: str | None, win: int, cfg: PredictorConfig
) -> tuple[dict[str, float], dict[str, int]]:
    sessions = dict(state.project_sessions)
    success = dict(state.project_success)
    if not project:
        return success, sessions
    sessions[project] = sessions.get(project, 0) + 1
    # Keep the most-used projects; on equal counts a project that already has a slice stays.
    ranked = sorted(sessions, key=lambda p: (-sessions[p], p not in success, p))
    keep = set(ranked[: cfg.max_project_slices])
    success = {p: v for p, v in success.items() if p in keep}
    if project in keep:
        success[project] = _ema(success.get(project, cfg.initial_success_rate), win, cfg)
    return success, sessions


def _drift_reason(state: PredictorState, cfg: PredictorConfig, drift_rule: DriftRule) -> str | None:
    """Why drift fires on an EMA-updated `state` under `drift_rule`, or None if it does not."""
    if drift_rule == "seed":
        if state.drift_low_sessions < cfg.drift_reset_window:
            return None
        return (
            f"success rate {state.success_rate:.3f} < {cfg.drift_reset_threshold:g} for "
            f"{state.drift_low_sessions} consecutive scored sessions"
        )
    window = state.recent_outcomes
    rate = sum(window) / len(window) if window else math.nan
    if len(window) < cfg.drift_reset_window or rate >= cfg.drift_reset_threshold:
        return None
    return (
        f"win rate {rate:.2f} < {cfg.drift_reset_threshold:g} over the last "
        f"{cfg.drift_reset_window} scored sessions"
    )


def on_comparison(
    state: PredictorState,
    comparison: Comparison,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    *,
    drift_rule: DriftRule = "seed",
) -> Step:
    """Session end: update the success-rate EMA, project slices and the drift counts.

    The EMA (``success ← 0.1·win + 0.9·success``) moves only for sessions in which the
    predictor produced scores and the judge's confidence is >= ``min_scorer_confidence``;
    other sessions log ``ema_skip`` and leave the drift counts alone. Drift (``drift_rule``,
    see the module docstring): success 0.5, alpha 1.0, back to cold start until a retrain is
    accepted (``trained`` False, ramp restarts), drift counts cleared, ``drift_resets`` + 1,
    and ``retrain_with_replay`` set. Every comparison counts towards `training_due`.
    """
    if drift_rule not in DRIFT_RULES:
        raise ValueError(f"drift_rule must be one of {DRIFT_RULES}, got {drift_rule!r}")
    n_cmp = state.comparisons_since_training + 1
    conf = comparison.scorer_confidence
    if not comparison.has_predictor_scores:
        skip = Event("ema_skip", "no predictor scores")
        return Step(dataclasses.replace(state, comparisons_since_training=n_cmp), (skip,))
    if math.isnan(conf) or conf < cfg.min_scorer_confidence:
        skip = Event("ema_skip", f"scorer confidence {conf:.3g} < {cfg.min_scorer_confidence:g}")
        return Step(dataclasses.replace(state, comparisons_since_training=n_cmp), (skip,))
    win = 1 if comparison.predictor_won else 0
    success = _ema(state.success_rate, win, cfg)
    slices, counts = _update_projects(state, comparison.project, win, cfg)
    low = state.drift_low_sessions + 1 if success < cfg.drift_reset_threshold else 0
    new = dataclasses.replace(
        state,
        success_rate=success,
        comparisons_since_training=n_cmp,
        recent_outcomes=(*state.recent_outcomes, win)[-cfg.drift_reset_window :],
        drift_low_sessions=low,
        project_success=slices,
        project_sessions=counts,
    )
    new = dataclasses.replace(new, alpha=effective_alpha(new, cfg))
    update = Event(
        "ema_update",
        f"{'win' if win else 'loss'} margin={comparison.margin:+.4f} "
        f"success_rate {state.success_rate:.3f} -> {success:.3f}",
    )
    reason = _drift_reason(new, cfg, drift_rule)
    if reason is None:
        return Step(new, (update,))
    reset = dataclasses.replace(
        new,
        success_rate=start_success(state.start_alpha, cfg),
        alpha=state.start_alpha,
        cold_start_exited=False,
        trained=False,
        sessions_after_cold_start=0,
        recent_outcomes=(),
        drift_low_sessions=0,
        drift_resets=state.drift_resets + 1,
    )
    return Step(reset, (update, Event("drift_reset", reason)), retrain_with_replay=True)


def on_training(state: PredictorState, accepted: bool) -> Step:
    """After a training run: accepted → trained, model_version + 1; the interval restarts either way."""
    if accepted:
        new = dataclasses.replace(
            state,
            trained=True,
            model_version=state.model_version + 1,
            comparisons_since_training=0,
        )
        return Step(new, (Event("training_accepted", f"model_v{new.model_version}"),))
    new = dataclasses.replace(state, comparisons_since_training=0)
    return Step(new, (Event("training_rejected", "kept the previous model"),))


def training_due(state: PredictorState, cfg: PredictorConfig = DEFAULT_CONFIG) -> bool:
    """True once ``train_interval_sessions`` (10) comparisons happened since the last training."""
    return state.comparisons_since_training >= cfg.train_interval_sessions


def project_slices(state: PredictorState) -> list[tuple[str, float, int]]:
    """(project, success rate, sessions) of the sliced projects, most sessions first."""
    rows = [(p, v, state.project_sessions.get(p, 0)) for p, v in state.project_success.items()]
    return sorted(rows, key=lambda r: (-r[2], r[0]))


# --- JSON ---------------------------------------------------------------------------------------

_FIELDS = {f.name: f for f in dataclasses.fields(PredictorState)}


def state_to_json(state: PredictorState) -> str:
    """Serialise a state as a JSON object (with a ``format`` version key)."""
    doc: dict[str, Any] = {"format": STATE_FORMAT}
    for name in _FIELDS:
        value = getattr(state, name)
        doc[name] = list(value) if isinstance(value, tuple) else value
    return json.dumps(doc, sort_keys=True, allow_nan=False)


def _num(name: str, v: Any, kind: type) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise StateError(f"predictor state: {name}: expected a number, got {v!r}")
    if kind is int:
        if not float(v).is_integer() or v < 0:
            raise StateError(f"predictor state: {name}: expected a whole number >= 0, got {v!r}")
        return int(v)
    if not math.isfinite(v):
        raise StateError(f"predictor state: {name}: expected a finite number, got {v!r}")
    return float(v)


def state_from_json(text: str | bytes | dict[str, Any]) -> PredictorState:
    """Read a state written by `state_to_json`; missing keys take defaults, unknown keys are ignored."""
    try:
        doc = json.loads(text) if isinstance(text, (str, bytes)) else text
    except ValueError as exc:
        raise StateError(f"predictor state: not valid JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise StateError("predictor state: expected a JSON object")
    fmt = doc.get("format", STATE_FORMAT)
    if fmt != STATE_FORMAT:
        raise StateError(f"predictor state: unsupported format {fmt!r} (expected {STATE_FORMAT})")
    kwargs: dict[str, Any] = {}
    for name, f in _FIELDS.items():
        if name not in doc:
            continue
        v = doc[name]
        if f.type == "bool":
            if not isinstance(v, bool):
                raise StateError(f"predictor state: {name}: expected true/false, got {v!r}")
            kwargs[name] = v
        elif f.type in ("int", "float"):
            kwargs[name] = _num(name, v, int if f.type == "int" else float)
        elif name == "recent_outcomes":
            if not isinstance(v, list) or any(type(x) is not int or x not in (0, 1) for x in v):
                raise StateError(f"predictor state: {name}: expected a list of 0/1, got {v!r}")
            kwargs[name] = tuple(int(x) for x in v)
        else:  # project_success / project_sessions
            if not isinstance(v, dict):
                raise StateError(f"predictor state: {name}: expected an object, got {v!r}")
            kind = int if name == "project_sessions" else float
            kwargs[name] = {str(p): _num(f"{name}.{p}", x, kind) for p, x in v.items()}
    return PredictorState(**kwargs)
