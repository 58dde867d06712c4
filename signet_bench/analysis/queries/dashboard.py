"""The dashboard's data in two steps: `load_dashboard` reads the store and the workbench once
(the first render), `dashboard_view` derives every panel's frame from it for the chosen
projects and dates (a filter change: in-memory work only, no store access). What only the
lower panels show and costs seconds on a big store (the label sources, focal entities and the
injection contrast, each hook's injections) is read apart, by `load_details`, and filtered by
`details_view`, so the status card and the timeline are drawn first; `start_details` reads it
on a connection and thread of its own while the upper panels are read and drawn.

Both release lines: on a current store, which keeps no comparison rows, the comparisons (and
the success-rate EMA in them) are the ones the workbench recomputes from its sessions
(`derived.derived_frames`), and the predictor, which that Signet does not run, is judged
offline from the first session (`status`). The verdict weighs the predictor against the
strongest free ranker (plain cosine, or its hybrid with BM25 of the query terms), not only
against Signet's baseline: as the daemon recorded it where the store keeps cosine's NDCG@10 beside
the predictor's (simulated stores), else the model the workbench serves, scored offline on the
store's judged sessions (`served`). Where current Signet's session-start hook ran
through the workbench's wrapper, its record beside the workbench (the store's when none is
named) says what was injected: the label sources count it and the injections panel sets it
beside Signet's choice. What the user-prompt-submit wrapper (or the replayed loop) added at the
prompts is in the same record: the panel sets each hook's injections, and how often the session
used them, side by side (`hook_usage`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb
import polars as pl

from signet_bench.analysis.judge_monitor import drift_signal
from signet_bench.analysis.queries import drift as d
from signet_bench.analysis.queries import sessions as s
from signet_bench.analysis.queries import status as st
from signet_bench.analysis.queries import training as t
from signet_bench.analysis.queries.candidate_pass import candidate_sessions
from signet_bench.analysis.queries.derived import served_sessions, store_line
from signet_bench.analysis.queries.entities import FocalEntities, focal_entities
from signet_bench.analysis.queries.hook_usage import (
    BY_HOOK_SCHEMA,
    INJECTION_SCHEMA,
    PER_SESSION_SCHEMA,
    injections_by_hook,
    signet_starts,
    usage_by_hook,
    usage_per_session,
)
from signet_bench.analysis.queries.injections import (
    HOOK_COLUMNS,
    injection_contrast,
    served_ranks,
)
from signet_bench.analysis.queries.label_counts import candidate_conditions, label_source_counts
from signet_bench.analysis.queries.served import SERVED_SCHEMA
from signet_bench.analysis.queries.source import open_store
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.metrics import Interval, bootstrap_interval, wilson_interval
from signet_bench.daemon.predictor_state import PredictorState
from signet_scorer.workbench import (
    CHECKPOINT_FILE,
    MODEL_DIR_SUFFIX,
    SERVED_MODEL_FILE,
    default_workbench,
)

__all__ = [
    "DRIFT_RECENT_SESSIONS",
    "VERDICT_BOOTSTRAP_SEED",
    "Comparison",
    "DashboardData",
    "DashboardDetails",
    "DashboardView",
    "DetailsView",
    "Evidence",
    "FreeRanker",
    "dashboard_view",
    "details_view",
    "load_dashboard",
    "load_details",
    "model_available",
    "model_parameters",
    "next_step",
    "start_details",
    "verdict",
    "verdict_evidence",
]

DRIFT_RECENT_SESSIONS = 100  # the status card's drift signal: over the latest sessions
VERDICT_BOOTSTRAP_SEED = 0  # fixed, so the same sessions always show the same interval


@dataclass(frozen=True, slots=True)
class DashboardData:
    """What the status card, the verdict, the timeline, the inspector and the training panel
    read from the store and the workbench: `line` is the store's release line, `served` the
    workbench's served model scored offline per judged session (`served.served_frame`)."""

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
    served: pl.DataFrame = dataclasses.field(default_factory=pl.DataFrame)


@dataclass(frozen=True, slots=True)
class DashboardDetails:
    """What the lower panels read: `label_sources` what the store's labels learn from
    (`learn.samples.label_sources`), `focal` its sessions' focal entities, `injections`
    Signet's injections against the scorer's picks and the session-start wrapper's injections
    per session (`injections.injection_contrast`), `reordered` each memory the wrapper
    injected with its rank and Signet's (`injections.served_ranks`), `hooks` each hook's
    injections, session start's and the prompts', and whether they were used
    (`hook_usage.injections_by_hook`)."""

    label_sources: pl.DataFrame
    focal: FocalEntities
    injections: pl.DataFrame
    reordered: pl.DataFrame = dataclasses.field(default_factory=pl.DataFrame)
    hooks: pl.DataFrame = dataclasses.field(
        default_factory=lambda: pl.DataFrame(schema=INJECTION_SCHEMA)
    )


@dataclass(frozen=True, slots=True)
class DashboardView:
    """Every upper panel's frame for one choice of filters: `served` the offline scores of the
    sessions in view, `rejections` the training runs the gates rejected, `next_step` the one
    thing to do when there is nothing to judge."""

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
    served: pl.DataFrame = dataclasses.field(default_factory=pl.DataFrame)
    rejections: pl.DataFrame = dataclasses.field(default_factory=pl.DataFrame)
    next_step: str = ""


@dataclass(frozen=True, slots=True)
class DetailsView:
    """The lower panels' frames for the sessions in view: per focal entity, per session
    Signet's injections against the scorer's picks (with each hook's counts,
    `hook_usage.PER_SESSION_SCHEMA`), the wrapper's reordering, and per hook its injections
    and how often they were used (`hook_usage.usage_by_hook`)."""

    entities: pl.DataFrame
    injections: pl.DataFrame
    reordered: pl.DataFrame = dataclasses.field(default_factory=pl.DataFrame)
    hooks: pl.DataFrame = dataclasses.field(
        default_factory=lambda: pl.DataFrame(schema=BY_HOOK_SCHEMA)
    )


def model_available(workbench: Path | None) -> bool | None:
    """Whether a model file sits beside the workbench (None: no workbench, unknown)."""
    if workbench is None or not workbench.exists():
        return None
    return any((workbench.parent / name).exists() for name in (SERVED_MODEL_FILE, CHECKPOINT_FILE))


def model_parameters(workbench: Path | None) -> int | None:
    """The parameter count of the model beside the workbench (`model.sbm`), or None."""
    path = None if workbench is None else workbench.parent / CHECKPOINT_FILE
    if path is None or not path.exists():
        return None
    # here: the dashboard's first render does without the model's modules (start-up time)
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
    sessions, served = served_sessions(con, db, wb, cfg)
    return DashboardData(
        db=Path(db),
        workbench=wb,
        sessions=sessions,
        runs=t.training_runs(con, wb, db),
        judged=d.judged_of_sessions(con, sessions.sort("n").tail(DRIFT_RECENT_SESSIONS)),
        bench=t.bench_rows(wb, bench_dir),
        state=st.read_state(con),
        model_available=model_available(wb),
        parameters=model_parameters(wb),
        line=store_line(con),
        served=served,
    )


def start_details(db: str | Path, workbench: str | Path | None) -> Future[DashboardDetails]:
    """`load_details` on a store connection of its own, in a thread started now (it keeps the
    calling thread's priority, `app.priority`): its reads run while the upper panels are
    read and drawn, on the other core, and its result is waited for only by the panels that
    show it."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dashboard-details")
    try:
        return pool.submit(_details_apart, Path(db), workbench)
    finally:
        pool.shutdown(wait=False)


def _details_apart(db: Path, workbench: str | Path | None) -> DashboardDetails:
    con = open_store(db)
    try:
        return load_details(con, db, workbench)
    finally:
        con.close()


def load_details(
    con: duckdb.DuckDBPyConnection, db: str | Path, workbench: str | Path | None
) -> DashboardDetails:
    """Read what the lower panels show, with the session-start wrapper's record beside
    `workbench` (default: the store's); the candidate rows in one pass for all of them
    (`candidate_pass`)."""
    hook_wb = Path(workbench) if workbench is not None else default_workbench(Path(db))
    candidates = candidate_sessions(con, counted=candidate_conditions(con))
    return DashboardDetails(
        label_sources=label_source_counts(con, hook_wb, candidates=candidates),
        focal=focal_entities(con, traversal=int(candidates["traversal"].sum())),
        injections=injection_contrast(con, workbench=hook_wb, candidates=candidates),
        reordered=served_ranks(con, hook_wb),
        hooks=injections_by_hook(con, hook_wb),
    )


def _current_drift(data: DashboardData, cfg: PredictorConfig) -> float:
    """The judge's drift signal over the store's latest DRIFT_RECENT_SESSIONS sessions."""
    rows = data.judged
    if rows.height == 0:
        return math.nan
    age = rows["age_days"].fill_null(math.nan).to_numpy()
    return drift_signal(rows["relevance"].to_numpy(), age, cfg)


def _runs_in(runs: pl.DataFrame, view: pl.DataFrame, sessions: pl.DataFrame) -> pl.DataFrame:
    """Training runs made while the sessions in `view` ran: from the first one's start to the
    start of the first of all `sessions` after them, with no end when `view` holds the newest
    session (a training after the last session, e.g. `signet-bench train` today, is shown)."""
    if runs.height == 0 or view.height == 0:
        return runs.head(0)
    lo = view["started_at"].min()
    after = sessions.filter(pl.col("n") > view["n"].max())["started_at"]
    hi = after.min() if after.len() else None
    kept = runs.filter(pl.col("created_at") >= lo)
    return kept if hi is None else kept.filter(pl.col("created_at") < hi)


def _injections_in(
    injections: pl.DataFrame, sessions: pl.DataFrame, per_session: pl.DataFrame
) -> pl.DataFrame:
    """The injection contrast of the sessions in view, by session number, with each hook's
    counts (`per_session`: `hook_usage.usage_per_session`; 0 where a session has none)."""
    if injections.height == 0:
        return injections
    counts = [c for c in PER_SESSION_SCHEMA if c != "session_key"]
    return (
        sessions.select("n", "session_key", "project")
        .join(injections, on="session_key")
        .join(per_session, on="session_key", how="left")
        .with_columns(pl.col(counts).fill_null(0))
        .sort("n")
        .with_columns(_project_of_hook())
        .select(
            "n",
            "project",
            "signet_injected",
            "scorer_picks",
            "both_chose",
            "signet_relevance",
            "scorer_relevance",
            "signet_judged",
            "scorer_judged",
            "signet_relevance_sum",
            "scorer_relevance_sum",
            *HOOK_COLUMNS,
            *counts,
            "session_key",
        )
    )


def _project_of_hook() -> pl.Expr:
    """The project the wrapper's record names for the session (what the harness said at its
    start), else the store's."""
    return pl.coalesce("hook_project", "project").alias("project")


def next_step(data: DashboardData, cfg: PredictorConfig = DEFAULT_CONFIG) -> str:
    """The one thing to do while there is nothing to judge, with its command: train the scorer
    on the judged sessions (into the folder of the dashboard's workbench, the store's
    `<db>.predictor` when there is none yet, where the session-start wrapper looks for it)."""
    known = data.workbench is not None and data.workbench.exists()
    out = data.workbench.parent if known else data.db.with_name(data.db.name + MODEL_DIR_SUFFIX)
    judged = data.sessions.filter(pl.col("confidence") >= cfg.min_scorer_confidence).height
    train = f"`signet-bench train --db {data.db} --out {out}`"
    if judged == 0:
        return (
            f"Next: let Signet's judge score a few sessions (it scores each as it ends; none "
            f"of this store's passed its confidence gate, {cfg.min_scorer_confidence:g}, yet), "
            f"then train the scorer on them: {train}."
        )
    if served_model_is_missing(data):
        return f"Next: train the scorer on the store's {judged} judged sessions: {train}."
    return (
        "Next: let the session-start wrapper serve the model (`signet-bench export --model "
        f"{out}/model.sbm --out {out}/model.onnx`, then its hook; docs/user-guide.md "
        "§3) and judge more sessions."
    )


def served_model_is_missing(data: DashboardData) -> bool:
    """Whether no trained model sits beside the dashboard's workbench."""
    return data.workbench is None or not (data.workbench.parent / CHECKPOINT_FILE).exists()


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
    runs = _runs_in(data.runs, view, data.sessions) if dated else data.runs
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
        served=_served_in(data.served, view),
        rejections=t.gate_rejections(runs),
        next_step=next_step(data, cfg),
    )


def _served_in(served: pl.DataFrame, view: pl.DataFrame) -> pl.DataFrame:
    """The offline scores of the sessions in view, oldest first."""
    if served.height == 0:
        return pl.DataFrame(schema=SERVED_SCHEMA)
    return served.filter(pl.col("session_key").is_in(view["session_key"].to_list())).sort(
        "started_at"
    )


def details_view(details: DashboardDetails, view: DashboardView) -> DetailsView:
    """The lower panels' frames for the sessions of `view`."""
    keys = view.sessions.select("session_key")
    hooks = details.hooks.join(keys, on="session_key", how="semi")
    signet = signet_starts(details.injections).join(keys, on="session_key", how="semi")
    per_session = usage_per_session(hooks, signet)
    injections = _injections_in(details.injections, view.sessions, per_session)
    reordered = details.reordered
    if reordered.height:
        reordered = (
            injections.select("n", "project", "session_key")
            .join(reordered, on="session_key")
            .sort(["n", "rank"], descending=[True, False])
        )
    return DetailsView(
        entities=s.entity_slices(view.sessions, details.focal.pairs),
        injections=injections,
        reordered=reordered,
        hooks=usage_by_hook(hooks, signet),
    )


@dataclass(frozen=True, slots=True)
class Comparison:
    """The predictor against another ranker over the sessions that have both: that ranker's
    mean NDCG@10, and the margin (the mean per-session NDCG@10 difference, predictor − it)
    with its 95% paired bootstrap interval. `identical`: the two ranked every session alike."""

    ndcg: float
    margin: float
    interval: Interval
    identical: bool = False

    def __str__(self) -> str:
        low, high = self.interval
        return f"{self.margin:+.2f} (95% interval {low:+.2f} to {high:+.2f})"


@dataclass(frozen=True, slots=True)
class FreeRanker:
    """The predictor against the strongest free ranker (`name`: the one of plain cosine and
    its hybrid with BM25 with the higher mean NDCG@10 on the sessions), over `sessions`
    sessions; `offline`: the workbench's served model scored offline (else as recorded)."""

    name: str
    versus: Comparison
    sessions: int
    offline: bool


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
    return Comparison(float(other.mean()), float(diff.mean()), interval, not diff.any())


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


HYBRID = "Signet's hybrid (cosine with BM25 of the query terms)"


def offline_free_ranker(served: pl.DataFrame) -> FreeRanker:
    """The served model against the strongest free ranker on its offline rows (at least two;
    `served.served_frame`): the hybrid where it leads cosine on them, else plain cosine."""
    if served.height < 2:
        raise ValueError(f"the evidence needs at least two judged sessions, got {served.height}")
    hybrid = served["hybrid_ndcg"].mean() > served["cosine_ndcg"].mean()
    name, column = (HYBRID, "hybrid_ndcg") if hybrid else ("plain cosine", "cosine_ndcg")
    return FreeRanker(name, _comparison(served["model_ndcg"], served[column]), served.height, True)


def _offline_rows(view: DashboardView, last: int) -> pl.DataFrame:
    """The served model's offline rows the verdict may weigh: the latest `last` sessions in
    view it did not learn from."""
    served = view.served
    if served.height == 0 or "learned_from" not in served.columns:
        return pl.DataFrame(schema=SERVED_SCHEMA)
    return served.filter(~pl.col("learned_from")).sort("started_at").tail(last)


def _free_text(f: FreeRanker) -> str:
    """The headline: the predictor against the strongest free ranker, one sentence."""
    c = f.versus
    low, high = c.interval
    who = "The model the workbench serves" if f.offline else "The predictor"
    if c.identical:
        return (
            f"No gain yet: {who.lower()} ranks every session as {f.name} does, so its learned "
            f"part adds nothing over that free ranker: NDCG@10 margin {c}."
        )
    if low > 0:
        return (
            f"Yes, the predictor is helping: {who.lower()} beats the strongest free ranker, "
            f"{f.name}, by an NDCG@10 margin of {c}, its whole 95% interval above zero."
        )
    if high < 0:
        return (
            f"Not now: {f.name} ranks better; {who.lower()}'s NDCG@10 margin over it is {c}, "
            "its whole 95% interval below zero."
        )
    return (
        f"No clear gain over {f.name} yet: {who.lower()}'s NDCG@10 margin over it is {c}, "
        "and its 95% interval holds zero."
    )


def _tone(f: FreeRanker | None) -> str:
    """success only when the margin over the strongest free ranker is above zero, interval
    included; warn when below; else neutral."""
    if f is None or f.versus.identical:
        return "neutral"
    low, high = f.versus.interval
    return "success" if low > 0 else "warn" if high < 0 else "neutral"


def _evidence_text(e: Evidence, share: float | None) -> str:
    """The recorded evidence against Signet's baseline: NDCG@10 and margin, win rate, weight
    (None: judged offline, the store's Signet gives the predictor no weight)."""
    text = (
        f"Against Signet's baseline over the last {e.sessions} judged sessions: NDCG@10 "
        f"{e.predictor_ndcg:.2f} vs {e.baseline.ndcg:.2f}, margin {e.baseline}; it won "
        f"{e.wins / e.sessions:.0%} of them (95% interval {e.win_share.low:.0%}–"
        f"{e.win_share.high:.0%})"
    )
    if share is None:
        return f"{text}. Judged offline: this Signet runs no predictor and ranks by its baseline."
    return f"{text}. It carries {share:.0%} of the ranking weight."


def _offline_text(rows: pl.DataFrame, f: FreeRanker) -> str:
    """What the offline judgement rests on: the sessions, the baseline's margin, the caveat
    of the labels, the wrapper's sessions among them."""
    model = rows["model"][0]
    base = _comparison(rows["model_ndcg"], rows["baseline_ndcg"])
    served = int(rows["hook_served"].sum())
    head = (
        f"The workbench's served model is {'plain cosine' if model == 'cosine' else HYBRID} "
        "itself (no training has moved it from its start); scored offline on the store's last "
        f"{f.sessions} judged sessions"
        if model != "learned"
        else "The workbench's served model, scored offline on the store's last "
        f"{f.sessions} judged sessions it did not learn from"
    )
    text = (
        f"{head}: NDCG@10 {float(rows['model_ndcg'].mean()):.2f}, {f.name} "
        f"{f.versus.ndcg:.2f}, Signet's baseline {base.ndcg:.2f}, a margin over the baseline of "
        f"{base}. Their labels exist mostly for what Signet injected, its baseline's top, "
        "which favours the baseline's order"
    )
    if served:
        text += (
            f"; in {served} of them the session-start wrapper served the model, and its "
            "injections were judged"
        )
    return f"{text}."


def _too_early(counted: pl.DataFrame, need: int) -> str:
    """The verdict while too few sessions were judged to tell a margin from noise."""
    n = counted.height
    head = f"Too early to tell ({n} session{'' if n == 1 else 's'}): the verdict needs {need}"
    if n == 0:
        return f"{head} judged sessions and none is in view yet."
    wins = int(counted["predictor_won"].sum())
    return f"{head} judged sessions; so far the predictor won {wins} of {n}."


def _offline_verdict(view: DashboardView, last: int, need: int) -> tuple[str, str]:
    """The verdict on a store whose sessions carry no scorer scores: the served model scored
    offline, or what to do next."""
    rows = _offline_rows(view, last)
    if view.served.height == 0 and view.next_step:
        return (f"Nothing to judge yet. {view.next_step}", "neutral")
    if rows.height < need:
        n = rows.height
        return (
            f"Too early to tell ({n} session{'' if n == 1 else 's'}): the served model has "
            f"been scored on {n} judged session{'' if n == 1 else 's'} it did not learn from, "
            f"and the verdict needs {need}. {view.next_step}".strip(),
            "neutral",
        )
    f = offline_free_ranker(rows)
    return (f"{_free_text(f)} {_offline_text(rows, f)}", _tone(f))


def verdict(
    view: DashboardView, last: int = 50, cfg: PredictorConfig = DEFAULT_CONFIG
) -> tuple[str, str]:
    """The answer to "is the predictor helping?" and its tone (success, warn, neutral), from
    the latest `last` sessions in view that counted. In cold start: not yet. Below
    `verdict_min_sessions` judged sessions: too early to tell. From it on, the tone follows
    the NDCG@10 margin over the strongest free ranker (`FreeRanker`): success only when its
    95% interval lies above zero, warn when below, else neutral, and neutral when the
    predictor ranks as that free ranker does. The free ranker's figures are the recorded ones
    where the store keeps them beside the predictor's, else the served model's offline ones
    (`served`); without either, the margin over Signet's baseline is told, never as a success.
    A store whose sessions carry no scorer scores is judged on the offline figures alone, or
    told the next step (`next_step`)."""
    counted = view.sessions.filter(pl.col("counted")).sort("n").tail(last)
    st_ = view.status
    if not st_.comparing:
        blockers = "; ".join(st_.blockers) or "waiting for the next session"
        return (
            f"Not yet: the predictor is in cold start ({st_.mode}); still needed: {blockers}.",
            "neutral",
        )
    need = max(2, cfg.verdict_min_sessions)  # an interval needs two sessions at the least
    if st_.mode == "offline" and not (view.sessions["predictor_scored"] > 0).any():
        return _offline_verdict(view, last, need)
    if counted.height < need:
        return (_too_early(counted, need), "neutral")
    e = verdict_evidence(counted)
    share = None if st_.mode == "offline" else 1.0 - st_.alpha
    recorded = _evidence_text(e, share)
    if e.cosine is not None:
        f = FreeRanker("plain cosine", e.cosine, e.sessions, False)
        return (f"{_free_text(f)} {recorded}", _tone(f))
    rows = _offline_rows(view, last)
    if rows.height >= need:
        f = offline_free_ranker(rows)
        text = f"{_free_text(f)} {recorded} {_offline_text(rows, f)}"
        return (text, _tone(f))
    low, high = e.baseline.interval
    against = "beats" if low > 0 else "trails" if high < 0 else "shows no clear difference from"
    text = (
        f"Not measured against a free ranker: the predictor {against} Signet's baseline, but "
        "this store records no free ranker's NDCG@10 and no served model was scored offline "
        f"on {need} sessions it did not learn from. {recorded} {view.next_step}"
    ).strip()
    return (text, "warn" if high < 0 else "neutral")
