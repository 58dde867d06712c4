"""The predictor's state as the status card, the session-start status line (docs/specification.md
§9.6) and the diagnostics health score (§9.1) show it.

A synthetic store keeps the simulated daemon's exact state (`sim_predictor_state`); a real
Signet store keeps it outside the database (`state-{agentId}.json`), so there it is derived
from what the store records: the last comparison's success rate and alpha (alpha < 1 only
after cold start has exited), the training log's model versions, and the sessions whose judge
confidence passed the gate.

Current Signet (its release line, not a state) runs no predictor: its ranking is the baseline's
alone and it has no cold start to leave. There the mode is "offline": the scorer is judged by
the workbench on the store's sessions, from the first one (`PredictorStatus.comparing`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

import duckdb
import polars as pl

from signet_bench.analysis.queries.source import store_has
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.predictor_state import (
    PredictorState,
    cold_start_blockers,
    project_slices,
    state_from_json,
)

__all__ = [
    "Health",
    "PredictorStatus",
    "health",
    "predictor_status",
    "read_state",
    "status_line",
]

MODES = ("collecting", "warming", "active", "retraining", "disabled", "offline")


@dataclass(frozen=True, slots=True)
class PredictorStatus:
    """What the status card shows. `mode` is one of MODES; `source` says where the state came
    from ("simulator state" or "derived from the store"); `line` is the store's release line."""

    mode: str
    source: str
    success_rate: float
    alpha: float
    model_version: int
    scored_sessions: int
    min_sessions: int
    sessions: int
    drift_resets: int
    trained: bool
    cold_start_exited: bool
    blockers: tuple[str, ...] = ()
    project_rates: tuple[tuple[str, float, int], ...] = ()
    last_trained_at: datetime | None = None
    last_train_loss: float | None = None
    training_pairs: int | None = None
    line: str = "0.58"

    @property
    def comparing(self) -> bool:
        """Whether the predictor is judged against the baseline session by session: past cold
        start, or on a store whose Signet runs no predictor (judged offline from the start)."""
        return self.cold_start_exited or self.mode == "offline"

    @property
    def progress(self) -> float:
        """Share of the minimum scored sessions reached (cold start's progress bar), 0..1."""
        return min(1.0, self.scored_sessions / max(1, self.min_sessions))


@dataclass(frozen=True, slots=True)
class Health:
    """The predictor's diagnostics domain: score 0..1, status, and why."""

    score: float
    status: str  # healthy | degraded | unhealthy | cold_start | disabled | offline
    reasons: tuple[str, ...] = field(default=())

    @property
    def color(self) -> str:
        """The badge colour of the other diagnostics domains: green, yellow or red."""
        if self.status in ("healthy",):
            return "green"
        if self.status in ("degraded", "cold_start", "offline"):
            return "yellow"
        return "red"


def read_state(con: duckdb.DuckDBPyConnection, agent_id: str = "default") -> PredictorState | None:
    """The simulated daemon's persisted state, or None (a real store keeps it elsewhere)."""
    if not store_has(con, "sim_predictor_state"):
        return None
    row = con.execute(
        "SELECT state_json FROM store.sim_predictor_state WHERE agent_id = ?", [agent_id]
    ).fetchone()
    return None if row is None else state_from_json(row[0])


def _mode(st: PredictorState, offline: bool) -> str:
    if offline:
        return "offline"
    if st.cold_start_exited:
        return "active"
    if st.trained:
        return "warming"
    return "retraining" if st.drift_resets > 0 else "collecting"


def _derived_state(
    sessions: pl.DataFrame, training: pl.DataFrame, resets: int, cfg: PredictorConfig
) -> PredictorState:
    """The state a real store implies (see the module docstring)."""
    cmp = sessions.filter(pl.col("success_rate").is_not_null()).sort("n")
    last = cmp.row(-1, named=True) if cmp.height else {}
    alpha = float(last.get("alpha", 1.0) or 1.0)
    version = int(training["model_version"].max() or 0) if training.height else 0
    scored = sessions.filter(pl.col("confidence") >= cfg.min_scorer_confidence).height
    return PredictorState(
        success_rate=float(last.get("success_rate", cfg.initial_success_rate)),
        alpha=alpha,
        cold_start_exited=alpha < 1.0,
        trained=version > 0,
        scored_sessions=scored,
        drift_resets=resets,
        model_version=version,
    )


def predictor_status(
    state: PredictorState | None,
    sessions: pl.DataFrame,
    training: pl.DataFrame,
    resets: int,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    line: str = "0.58",
) -> PredictorStatus:
    """The status card's figures from the exact state when there is one, else derived from the
    store's sessions and training log. `training` is `training.training_runs`' frame. A
    current store (`line`) without a state is "offline" (see the module docstring)."""
    source = "simulator state" if state is not None else "derived from the store"
    st = state if state is not None else _derived_state(sessions, training, resets, cfg)
    offline = state is None and line == "current"
    accepted = training.filter(pl.col("accepted")) if training.height else training
    last = accepted.sort("created_at").row(-1, named=True) if accepted.height else {}
    return PredictorStatus(
        mode=_mode(st, offline),
        source=source,
        success_rate=st.success_rate,
        alpha=st.alpha,
        model_version=st.model_version,
        scored_sessions=st.scored_sessions,
        min_sessions=cfg.min_training_sessions,
        sessions=sessions.height,
        drift_resets=st.drift_resets,
        trained=st.trained,
        cold_start_exited=st.cold_start_exited,
        blockers=cold_start_blockers(st, cfg) if not (st.cold_start_exited or offline) else (),
        project_rates=tuple(project_slices(st)[:3]),
        last_trained_at=last.get("created_at"),
        last_train_loss=last.get("loss"),
        training_pairs=int(last["sample_count"]) if last.get("sample_count") is not None else None,
        line=line,
    )


def status_line(status: PredictorStatus) -> str:
    """The one line the session-start hook injects (docs/specification.md §9.6), for the status's
    mode."""
    if status.mode == "collecting":
        return (
            f"[predictor: collecting | {status.scored_sessions}/{status.min_sessions} sessions"
            " | baseline only]"
        )
    if status.mode == "warming":
        return (
            f"[predictor: warming | success_rate={status.success_rate:.2f}"
            f" | model_v{status.model_version} | baseline only]"
        )
    if status.mode == "retraining":
        return "[predictor: retraining | drift detected | baseline fallback]"
    if status.mode == "disabled":
        return "[predictor: disabled | crash threshold hit | baseline fallback]"
    if status.mode == "offline":
        return (
            "[predictor: none in this Signet | baseline only"
            f" | scorer judged offline on {status.sessions} sessions]"
        )
    return (
        f"[predictor: active | success_rate={status.success_rate:.2f} | α={status.alpha:.2f}"
        f" | model_v{status.model_version} | {status.sessions} sessions]"
    )


def health(
    status: PredictorStatus,
    *,
    model_available: bool | None,
    latency_p95_ms: float | None = None,
    drift: float | None = None,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> Health:
    """The health score (docs/specification.md §9.1). No model to serve once one was trained: 0.0;
    cold start: 0.6 (degraded is expected); active and success rate above
    `cold_start_min_success_rate`: 0.8 rising to 1.0 at a success rate of 1; active at or below it:
    0.5. Minus 0.2 when scoring's p95 latency exceeds `score_timeout_ms`, minus 0.1 when the judge's
    drift signal exceeds `judge_drift_signal_threshold`. `model_available` None: unknown (not
    penalised). Offline (a Signet that runs no predictor): the cold-start score, status
    "offline"."""
    reasons: list[str] = []
    if model_available is False and status.trained:
        return Health(0.0, "unhealthy", ("no model file to serve",))
    if status.mode == "offline":
        why = "this Signet runs no predictor: the scorer is judged offline"
        return Health(cfg.health_cold_start, "offline", (why,))
    if not status.cold_start_exited:
        score, kind = cfg.health_cold_start, "cold_start"
        reasons.append(f"cold start ({status.mode})")
    elif status.success_rate > cfg.cold_start_min_success_rate:
        span = 1.0 - cfg.cold_start_min_success_rate
        gain = (status.success_rate - cfg.cold_start_min_success_rate) / span
        score, kind = cfg.health_healthy_min + (1.0 - cfg.health_healthy_min) * gain, ""
    else:
        score, kind = cfg.health_degraded_min, ""
        reasons.append(f"success rate {status.success_rate:.2f} is not above the baseline's")
    if latency_p95_ms is not None and latency_p95_ms > cfg.score_timeout_ms:
        score -= cfg.health_latency_penalty
        reasons.append(f"p95 latency {latency_p95_ms:.0f} ms > {cfg.score_timeout_ms} ms")
    if drift is not None and not math.isnan(drift) and drift > cfg.judge_drift_signal_threshold:
        score -= cfg.health_drift_penalty
        reasons.append(f"judge drift signal {drift:+.2f} > {cfg.judge_drift_signal_threshold:g}")
    score = max(0.0, min(1.0, score))
    if not kind:
        kind = (
            "healthy"
            if score >= cfg.health_healthy_min
            else "degraded"
            if score >= cfg.health_degraded_min
            else "unhealthy"
        )
    return Health(round(score, 3), kind, tuple(reasons))
