"""The dashboard's data in two steps: `load_dashboard` reads the store and the workbench once
(the first render), `dashboard_view` derives every panel's frame from it for the chosen
projects and dates (a filter change: in-memory work only, no store access). What only the
lower panels show and costs seconds on a big store (the label sources, focal entities and the
injection contrast) is read apart, by `load_details`, and filtered by `details_view`, so the
status card and the timeline are drawn first.

Both release lines: on a current store, which keeps no comparison rows, the comparisons (and
the success-rate EMA in them) are the ones the workbench recomputes from its sessions
(`derived.derived_frames`), and the predictor, which that Signet does not run, is judged
offline from the first session (`status`). Where current Signet's session-start hook ran
through the workbench's wrapper, its record beside the workbench (the store's when none is
named) says what was injected: the label sources count it and the injections panel sets it
beside Signet's choice.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb
import polars as pl

from signet_bench.analysis.judge_monitor import drift_signal
from signet_bench.analysis.metrics import Interval, bootstrap_interval, wilson_interval
from signet_bench.analysis.queries import drift as d
from signet_bench.analysis.queries import sessions as s
from signet_bench.analysis.queries import status as st
from signet_bench.analysis.queries import training as t
from signet_bench.analysis.queries.derived import derived_frames, line_sessions, store_line
from signet_bench.analysis.queries.entities import FocalEntities, focal_entities
from signet_bench.analysis.queries.injections import HOOK_COLUMNS, injection_contrast
from signet_bench.analysis.queries.source import default_workbench
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.predictor_state import PredictorState

__all__ = [
    "DRIFT_RECENT_SESSIONS",
    "VERDICT_BOOTSTRAP_SEED",
    "Comparison",
    "DashboardData",
    "DashboardDetails",
    "DashboardView",
    "DetailsView",
    "Evidence",
    "dashboard_view",
    "details_view",
    "load_dashboard",
    "load_details",
    "model_available",
    "model_parameters",
    "verdict",
    "verdict_evidence",
]

DRIFT_RECENT_SESSIONS = 100  # the status card's drift signal: over the latest sessions
VERDICT_BOOTSTRAP_SEED = 0  # fixed, so the same sessions always show the same interval


@dataclass(frozen=True, slots=True)
class DashboardData:
    """What the status card, the verdict, the timeline, the inspector and the training panel
    read from the store and the workbench: `line` is the store's release line."""

    db: Path
    workbench: Path | None
    sessions: pl.DataFrame
    runs: pl.DataFrame
    judged: pl.DataFrame
    bench: pl.DataFrame
    state: PredictorState | None
    model_available: bool | None
    parameters: int | None
    line: str


@dataclass(frozen=True, slots=True)
class DashboardDetails:
    """What the lower panels read: `label_sources` what the store's labels learn from
    (`learn.samples.label_sources`), `focal` its sessions' focal entities, `injections`
    Signet's injections against the scorer's picks and the session-start wrapper's injections
    per session (`injections.injection_contrast`)."""

    label_sources: pl.DataFrame
    focal: FocalEntities
    injections: pl.DataFrame


@dataclass(frozen=True, slots=True)
class DashboardView:
    """Every upper panel's frame for one choice of filters."""

    sessions: pl.DataFrame
    resets: pl.DataFrame
    projects: pl.DataFrame
    recent: pl.DataFrame
    steps: pl.DataFrame
    markers: pl.DataFrame
    runs: pl.DataFrame
    latency: pl.DataFrame
    errors: pl.DataFrame
    status: st.PredictorStatus
    health: st.Health
    status_line: str
    drift: float


@dataclass(frozen=True, slots=True)
class DetailsView:
    """The lower panels' frames for the sessions in view: per focal entity, and per session
    Signet's injections against the scorer's picks."""

    entities: pl.DataFrame
    injections: pl.DataFrame


def model_available(workbench: Path | None) -> bool | None:
    """Whether a model file sits beside the workbench (None: no workbench, unknown)."""
    if workbench is None or not workbench.exists():
        return None
    return any((workbench.parent / name).exists() for name in ("model.onnx", "model.sbm"))


def model_parameters(workbench: Path | None) -> int | None:
    """The parameter count of the model beside the workbench (`model.sbm`), or None."""
    path = None if workbench is None else workbench.parent / "model.sbm"
    if path is None or not path.exists():
        return None
    from signet_bench.learn.model.checkpoint import load_checkpoint
    from signet_bench.learn.model.params import param_count

    try:
        return param_count(load_checkpoint(path)[0])
    except Exception:  # noqa: BLE001 - a model that cannot be read shows no count
        return None


def load_dashboard(
    con: duckdb.DuckDBPyConnection,
    db: str | Path,
    workbench: str | Path | None,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    bench_dir: str | Path | None = None,
) -> DashboardData:
    """Read the store (through `con`; a current store's comparisons, which only the library's
    reader derives, in a child process) and the workbench for the upper panels."""
    wb = None if workbench is None else Path(workbench)
    sessions = line_sessions(con, db, cfg)
    return DashboardData(
        db=Path(db),
        workbench=wb,
        sessions=sessions,
        runs=t.training_runs(con, wb),
        judged=d.judged_of_sessions(con, sessions.sort("n").tail(DRIFT_RECENT_SESSIONS)),
        bench=t.bench_rows(wb, bench_dir),
        state=st.read_state(con),
        model_available=model_available(wb),
        parameters=model_parameters(wb),
        line=store_line(con),
    )


def load_details(
    con: duckdb.DuckDBPyConnection, db: str | Path, workbench: str | Path | None
) -> DashboardDetails:
    """Read what the lower panels show (the label sources in a child process, see
    `derived`), with the session-start wrapper's record beside `workbench` (default: the
    store's)."""
    hook_wb = Path(workbench) if workbench is not None else default_workbench(db)
    derived = derived_frames(db, workbench=hook_wb, frames=("label_sources",))
    return DashboardDetails(
        label_sources=derived.label_sources,
        focal=focal_entities(con),
        injections=injection_contrast(con, workbench=hook_wb),
    )


def _current_drift(data: DashboardData, cfg: PredictorConfig) -> float:
    """The judge's drift signal over the store's latest DRIFT_RECENT_SESSIONS sessions."""
    rows = data.judged
    if rows.height == 0:
        return math.nan
    age = rows["age_days"].fill_null(math.nan).to_numpy()
    return drift_signal(rows["relevance"].to_numpy(), age, cfg)


def _runs_in(runs: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """Training runs made while the sessions in view ran (all of them when no date bounds)."""
    if runs.height == 0 or sessions.height == 0:
        return runs.head(0)
    lo, hi = sessions["started_at"].min(), sessions["compared_at"].max()
    hi = hi if hi is not None else sessions["started_at"].max()
    return runs.filter(pl.col("created_at").is_between(lo, hi))


def _injections_in(injections: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """The injection contrast of the sessions in view, by session number."""
    if injections.height == 0:
        return injections
    return (
        sessions.select("n", "session_key", "project")
        .join(injections, on="session_key")
        .sort("n")
        .select(
            "n", "project", "signet_injected", "scorer_picks", "both_chose",
            "signet_relevance", "scorer_relevance", "signet_judged", "scorer_judged",
            "signet_relevance_sum", "scorer_relevance_sum", *HOOK_COLUMNS, "session_key",
        )
    )  # fmt: skip


def dashboard_view(
    data: DashboardData,
    projects: Sequence[str] | None = None,
    since: date | None = None,
    until: date | None = None,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> DashboardView:
    """The panels' frames for the chosen projects and dates. The status card, status line and
    health describe the predictor as a whole (its state is global); the timeline, slices,
    training curve and error feed follow the filters."""
    view = s.filter_sessions(data.sessions, projects, since, until)
    all_resets = s.drift_resets(data.sessions, cfg)
    resets = all_resets.filter(pl.col("session_key").is_in(view["session_key"].to_list()))
    dated = since is not None or until is not None
    runs = _runs_in(data.runs, view) if dated else data.runs
    steps = t.loss_steps(runs)
    status = st.predictor_status(
        data.state, data.sessions, data.runs, all_resets.height, cfg, data.line
    )
    latency = t.latency_series(data.bench, cfg)
    p95 = latency.filter(pl.col("metric") == "p95")["ms"]
    drift = _current_drift(data, cfg)
    health = st.health(
        status,
        model_available=data.model_available,
        latency_p95_ms=float(p95[-1]) if p95.len() else None,
        drift=drift,
        cfg=cfg,
    )
    return DashboardView(
        sessions=view,
        resets=resets,
        projects=s.project_slices(view),
        recent=s.recent_sessions(view, cfg=cfg),
        steps=steps,
        markers=t.reset_markers(steps, resets),
        runs=runs,
        latency=latency,
        errors=t.error_feed(runs),
        status=status,
        health=health,
        status_line=st.status_line(status),
        drift=drift,
    )


def details_view(details: DashboardDetails, view: DashboardView) -> DetailsView:
    """The lower panels' frames for the sessions of `view`."""
    return DetailsView(
        entities=s.entity_slices(view.sessions, details.focal.pairs),
        injections=_injections_in(details.injections, view.sessions),
    )


@dataclass(frozen=True, slots=True)
class Comparison:
    """The predictor against another ranker over the sessions that have both: that ranker's
    mean NDCG@10, and the margin (the mean per-session NDCG@10 difference, predictor − it)
    with its 95% paired bootstrap interval."""

    ndcg: float
    margin: float
    interval: Interval

    def __str__(self) -> str:
        low, high = self.interval
        return f"{self.margin:+.2f} (95% interval {low:+.2f} to {high:+.2f})"


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the judged sessions say about the predictor: its wins with the Wilson 95% interval
    of their share, its NDCG@10, and how it compares with the baseline and (on simulated
    stores) plain cosine."""

    sessions: int
    wins: int
    win_share: Interval
    predictor_ndcg: float
    baseline: Comparison
    cosine: Comparison | None = None


def _comparison(predictor: pl.Series, other: pl.Series) -> Comparison:
    diff = (predictor - other).to_numpy()
    interval = bootstrap_interval(diff, VERDICT_BOOTSTRAP_SEED)
    return Comparison(float(other.mean()), float(diff.mean()), interval)


def verdict_evidence(counted: pl.DataFrame) -> Evidence:
    """The evidence of judged sessions (columns predictor_won, predictor_ndcg, baseline_ndcg,
    optional cosine_ndcg; at least two rows). Deterministic: the bootstrap's seed is fixed."""
    if counted.height < 2:
        raise ValueError(f"the evidence needs at least two judged sessions, got {counted.height}")
    wins = int(counted["predictor_won"].sum())
    pred = counted["predictor_ndcg"]
    evidence = Evidence(
        counted.height,
        wins,
        wilson_interval(wins, counted.height),
        float(pred.mean()),
        _comparison(pred, counted["baseline_ndcg"]),
    )
    paired = (
        counted.filter(pl.col("cosine_ndcg").is_not_null()) if "cosine_ndcg" in counted else None
    )
    if paired is None or paired.height < 2:
        return evidence
    cosine = _comparison(paired["predictor_ndcg"], paired["cosine_ndcg"])
    return dataclasses.replace(evidence, cosine=cosine)


def _evidence_text(e: Evidence, share: float | None) -> str:
    """The evidence in words: win rate, NDCG@10 and margins with their intervals, weight
    (None: judged offline, the store's Signet gives the predictor no weight)."""
    text = (
        f"Over the last {e.sessions} judged sessions it won {e.wins / e.sessions:.0%} "
        f"(95% interval {e.win_share.low:.0%}–{e.win_share.high:.0%}); NDCG@10 "
        f"{e.predictor_ndcg:.2f} vs {e.baseline.ndcg:.2f} for the baseline, margin {e.baseline}"
    )
    if e.cosine is not None:
        text += f", and {e.cosine.ndcg:.2f} for plain cosine, margin {e.cosine}"
    if share is None:
        return f"{text}. Judged offline: this Signet runs no predictor and ranks by its baseline."
    return f"{text}. It carries {share:.0%} of the ranking weight."


def _too_early(counted: pl.DataFrame, need: int) -> str:
    """The verdict while too few sessions were judged to tell a margin from noise."""
    n = counted.height
    head = f"Too early to tell ({n} session{'' if n == 1 else 's'}): the verdict needs {need}"
    if n == 0:
        return f"{head} judged sessions and none is in view yet."
    wins = int(counted["predictor_won"].sum())
    return f"{head} judged sessions; so far the predictor won {wins} of {n}."


_NO_SCORES = (
    "Nothing to judge yet: no session in view carries the scorer's scores "
    "(session_memories.predictor_score is empty; current Signet writes none), so its ranking "
    "cannot be set against the baseline's."
)

_TONES = {  # the verdict's first sentence per tone: the rule behind it
    "success": (
        "Yes, the predictor is helping: its NDCG@10 margin over the baseline is above zero, "
        "its whole 95% interval included."
    ),
    "warn": (
        "Not now: the baseline ranks better; the predictor's NDCG@10 margin over it is below "
        "zero, its whole 95% interval included."
    ),
    "neutral": (
        "No clear difference yet: the 95% interval of the predictor's NDCG@10 margin over the "
        "baseline holds zero."
    ),
}


def verdict(
    view: DashboardView, last: int = 50, cfg: PredictorConfig = DEFAULT_CONFIG
) -> tuple[str, str]:
    """The answer to "is the predictor helping?" and its tone (success, warn, neutral), from
    the latest `last` sessions in view that counted. In cold start: not yet; judged offline
    with no session the scorer scored: nothing to judge. Below `verdict_min_sessions` judged
    sessions: too early to tell. From it on, the tone follows the NDCG@10 margin over the
    baseline: success when its 95% interval lies above zero, warn when below, else neutral."""
    counted = view.sessions.filter(pl.col("counted")).sort("n").tail(last)
    st_ = view.status
    if not st_.comparing:
        blockers = "; ".join(st_.blockers) or "waiting for the next session"
        return (
            f"Not yet: the predictor is in cold start ({st_.mode}); still needed: {blockers}.",
            "neutral",
        )
    if st_.mode == "offline" and not (view.sessions["predictor_scored"] > 0).any():
        return (_NO_SCORES, "neutral")
    need = max(2, cfg.verdict_min_sessions)  # an interval needs two sessions at the least
    if counted.height < need:
        return (_too_early(counted, need), "neutral")
    e = verdict_evidence(counted)
    low, high = e.baseline.interval
    tone = "success" if low > 0 else "warn" if high < 0 else "neutral"
    share = None if st_.mode == "offline" else 1.0 - st_.alpha
    return (f"{_TONES[tone]} {_evidence_text(e, share)}", tone)
