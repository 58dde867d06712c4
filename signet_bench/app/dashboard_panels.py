"""The dashboard's panels: each builds one section of the page (markdown, cards, charts from
`app.dashboard_charts`, tables) from the frames of `analysis.queries.dashboard`; the notebook
only wires them to its cells. Kept out of the notebook file, which marimo parses and compiles
again for every visitor's session before the first chart can be drawn.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

import marimo as mo
import polars as pl

from signet_bench.analysis.queries import dashboard as dash
from signet_bench.analysis.queries.derived import label_sources_text
from signet_bench.analysis.queries.hook_usage import hook_usage_summary
from signet_bench.analysis.queries.injections import injection_summary, injection_table
from signet_bench.analysis.queries.inspector import SessionDetail
from signet_bench.analysis.queries.sessions import projects_of
from signet_bench.analysis.queries.training import served_by_hook
from signet_bench.app.dashboard_charts import (
    alpha_gauge,
    latency_chart,
    progress_chart,
    project_chart,
    training_chart,
    weekly_chart,
    win_loss_chart,
)
from signet_bench.app.ui import static, table
from signet_bench.config import DEFAULT_CONFIG
from signet_bench.learn.serving import PROMPT_KEY

__all__ = [
    "DEFAULT_WINDOW",
    "TABLE_SESSIONS",
    "chosen_session",
    "cold_start",
    "errors",
    "filters",
    "first_chart",
    "injections",
    "inspector",
    "label_sources",
    "label_sources_line",
    "overview",
    "slices",
    "status",
    "timeline",
    "timeline_widgets",
    "training",
]

TONES = {"success": "success", "warn": "warn", "neutral": "neutral"}
BADGES = {"green": "success", "yellow": "warn", "red": "danger"}
# each hook's serving choice, as the overview titles it (`training.served_by_hook`)
HOOK_TITLES = {
    "session_start": "Served at session start",
    PROMPT_KEY: "Served at each prompt (user-prompt-submit)",
}
DEFAULT_WINDOW = datetime.timedelta(days=90)
TABLE_SESSIONS = 200
# The columns of the timeline's session table, the training runs' table and the inspector's
# injected memories.
SESSION_COLUMNS = (
    "n",
    "started_at",
    "project",
    "outcome",
    "margin",
    "confidence",
    "counted",
    "session_key",
)
RUN_COLUMNS = (
    "run",
    "model_version",
    "accepted",
    "served_model",
    "served_why",
    "prompt_served_model",
    "prompt_served_why",
    "heldout_comparator",
    "heldout_ndcg",
    "heldout_bar",
    "heldout_served_ndcg",
    "heldout_sessions",
    "heldout_method",
    "loss",
    "sample_count",
    "canary_ndcg",
    "canary_topk_churn",
    "created_at",
)
INJECTED_COLUMNS = (
    "baseline_rank",
    "predictor_rank",
    "preview",
    "relevance_score",
    "fts_hit_count",
    "is_constraint",
)


FIGURES = (
    "**The figure that leads** is the NDCG@10 margin above: the predictor's ranking against "
    "the strongest free ranker (plain cosine, or Signet's hybrid where it ranks better), with "
    "its 95% interval; only a margin above zero, interval included, is called helping. The "
    "others below answer narrower questions: the *success rate (EMA)* is the daemon's "
    "smoothed share of sessions the predictor beat the baseline in, which sets α; the "
    "*per-project success rates* are that EMA per project; the *win rate* by project and "
    "entity is the plain share of counted sessions it beat the baseline in."
)


def first_chart(store_name: str, weekly: pl.DataFrame) -> mo.Html:
    """The page's title and its first chart: the judge's sessions per week."""
    return mo.vstack(
        [
            mo.md(f"# Signet predictor · `{store_name}`"),
            mo.md(
                "**Sessions the judge scored, per week** (blue: its confidence passed "
                f"{DEFAULT_CONFIG.min_scorer_confidence:g}, so the session counts and trains)"
            ),
            static(weekly_chart(weekly)) if weekly.height else mo.md("_none yet_"),
        ]
    )


def filters(sessions: pl.DataFrame) -> tuple[Any, Any]:
    """The project and date filters (the date range starts on the last DEFAULT_WINDOW; None
    when no session has a start date)."""
    days = sessions["started_at"].dt.date().drop_nulls()
    projects = mo.ui.multiselect(options=projects_of(sessions), label="Projects")
    dates = (
        mo.ui.date_range(
            start=days.min(),
            stop=days.max(),
            value=(max(days.min(), days.max() - DEFAULT_WINDOW), days.max()),
            label=f"Sessions started (first shown: the last {DEFAULT_WINDOW.days} days)",
        )
        if days.len()
        else None
    )
    return projects, dates


def overview(data: dash.DashboardData, view: dash.DashboardView, shown: list) -> mo.Html:
    """The release line, the verdict, the health badge with the status line, and the filters
    `shown`."""
    answer, tone = dash.verdict(view)
    health = view.health
    why = f" — {'; '.join(health.reasons)}" if health.reasons else ""
    line = (
        "Current Signet: it runs no predictor and keeps no comparisons, so the comparisons "
        "and the success-rate EMA below are recomputed by the workbench from the store's "
        "sessions."
        if data.line == "current"
        else "Signet 0.58: comparisons as the daemon recorded them."
    )
    served = served_by_hook(data.workbench)
    return mo.vstack(
        [
            mo.md(f"**Release line** · {line}"),
            mo.callout(mo.md(f"**{answer}**"), kind=TONES[tone]),
            *[mo.md(f"**{HOOK_TITLES[hook]}** · {why}") for hook, why in served.items()],
            mo.md(FIGURES),
            mo.hstack(
                [
                    mo.callout(
                        mo.md(f"**Health {health.score:.2f} · {health.status}**{why}"),
                        kind=BADGES[health.color],
                    ),
                    mo.md(f"Session-start status line: `{view.status_line}`"),
                ],
                justify="start",
                gap=2,
            ),
            mo.hstack(shown, justify="start", gap=2),
        ]
    )


def label_sources_line(details: dash.DashboardDetails) -> mo.Html:
    """One line naming what the labels learn from."""
    return mo.md(f"**Label sources** · {label_sources_text(details.label_sources)}")


def cold_start(data: dash.DashboardData, view: dash.DashboardView) -> mo.Html:
    """Cold start: progress towards the first prediction, diagnostics, the recent sessions."""
    st = view.status
    bar = "█" * int(20 * st.progress) + "░" * (20 - int(20 * st.progress))
    cfg = DEFAULT_CONFIG
    model = {True: "yes", False: "no", None: "none yet (no workbench)"}[data.model_available]
    diag = mo.md(
        f"""
        ### Diagnostics
        - model file: **{model}**
        - trained: **{"yes" if st.trained else "not yet"}** · model version {st.model_version}
        - still needed before the predictor earns influence: **{"; ".join(st.blockers) or "nothing"}**
        - config: minTrainingSessions {cfg.min_training_sessions}, trainIntervalSessions
          {cfg.train_interval_sessions}, scoreTimeoutMs {cfg.score_timeout_ms},
          rrfK {cfg.rrf_k}, explorationRate {cfg.exploration_rate},
          driftResetWindow {cfg.drift_reset_window}
        - state: {st.source}
        """
    )
    return mo.vstack(
        [
            mo.md("## Cold start: collecting training data"),
            mo.md(
                f"`Collecting training data: {st.scored_sessions}/{st.min_sessions} sessions "
                f"[{bar}] {st.progress:.0%}` — first prediction available after "
                f"{st.min_sessions} scored sessions"
            ),
            static(progress_chart(st.scored_sessions, st.min_sessions)),
            mo.callout(diag, kind="neutral"),
            mo.md(
                "### Recent sessions\nThe judge's continuity score and confidence per session: "
                f"a session counts towards the minimum when its confidence passes "
                f"{cfg.min_scorer_confidence:g} and it yields training data."
            ),
            table(view.recent, page_size=15),
        ]
    )


def _stats(data: dash.DashboardData, view: dash.DashboardView) -> list[mo.Html]:
    """The status card's figures."""
    st = view.status
    lat = view.latency
    p = {m: lat.filter(pl.col("metric") == m)["ms"] for m in ("p50", "p95")}
    latency = f"{p['p50'][-1]:.1f} / {p['p95'][-1]:.1f} ms" if p["p95"].len() else "no data yet"
    drift = "n/a" if view.drift != view.drift else f"{view.drift:+.2f}"
    when = st.last_trained_at.strftime("%Y-%m-%d %H:%M") if st.last_trained_at else "never"
    return [
        mo.stat(f"{st.success_rate:.2f}", label="success rate (EMA)", bordered=True),
        mo.stat(f"{st.alpha:.2f}", label="α (baseline weight)", bordered=True),
        mo.stat(f"v{st.model_version}", label="model", caption=f"trained {when}", bordered=True),
        mo.stat(
            str(st.training_pairs or "-"), label="samples in the last training run", bordered=True
        ),
        mo.stat(
            f"{data.parameters:,}" if data.parameters else "-", label="parameters", bordered=True
        ),
        mo.stat(str(st.drift_resets), label="drift resets", bordered=True),
        mo.stat(
            drift,
            label="judge drift signal",
            caption="relevance < 7 d old − > 30 d old"
            if drift != "n/a"
            else "no judged memory < 7 d old lately",
            bordered=True,
        ),
        mo.stat(latency, label="scoring p50 / p95", bordered=True),
    ]


def status(data: dash.DashboardData, view: dash.DashboardView) -> mo.Html:
    """The status card: figures, the α split, scoring latency, per-project success rates."""
    st = view.status
    lat = view.latency
    projects = pl.DataFrame(
        list(st.project_rates),
        schema={"project": pl.String, "success rate": pl.Float64, "sessions": pl.Int64},
        orient="row",
    )
    spark = static(latency_chart(lat)) if lat.height else mo.md("_latency: no data yet_")
    return mo.vstack(
        [
            mo.md("## Status"),
            mo.hstack(_stats(data, view), wrap=True, justify="start", gap=1),
            mo.hstack(
                [
                    mo.vstack(
                        [
                            mo.md("**Ranking weight** (α split)"),
                            static(alpha_gauge(st.alpha)),
                        ]
                    ),
                    mo.vstack([mo.md("**Scoring latency**: p50, p95 per bench run"), spark]),
                    mo.vstack(
                        [
                            mo.md("**Per-project success rates** (top 3 by sessions)"),
                            table(projects, show_search=False, show_download=False)
                            if projects.height
                            else mo.md("-"),
                        ]
                    ),
                ],
                widths=[2, 1, 2],
                gap=2,
            ),
        ]
    )


def timeline_widgets(view: dash.DashboardView) -> tuple[Any, Any]:
    """The win/loss timeline (a dot picks a session) and the table of the latest
    TABLE_SESSIONS sessions in view (a row picks one)."""
    chart = mo.ui.altair_chart(win_loss_chart(view.sessions, view.resets), legend_selection=False)
    latest = view.sessions.sort("n", descending=True).head(TABLE_SESSIONS)
    rows = table(
        latest.select(SESSION_COLUMNS),
        selection="single",
        page_size=8,
        label=f"The latest {TABLE_SESSIONS} sessions in view (older ones: click their dot)",
    )
    return chart, rows


def timeline(chart: Any, rows: Any) -> mo.Html:
    """The win/loss timeline's section: what a dot means, the chart, the sessions' table."""
    return mo.vstack(
        [
            mo.md(
                "## Win/loss timeline\n"
                "Each dot is a session at its judge-scored NDCG@10 margin: **green** the "
                "predictor's ranking beat the baseline's, **red** the baseline's won, grey a tie; "
                "hollow dots did not count (judge confidence below 0.6, or the predictor did "
                "not score). The blue line is the success-rate EMA that sets α; dashed red "
                "lines are drift resets. Click a dot (or a row below) to inspect the session."
            ),
            chart,
            rows,
        ]
    )


def chosen_session(view: dash.DashboardView, chart: Any, rows: Any) -> dict | None:
    """The session to inspect: the dot picked on the timeline, else the row picked in the
    table, else the latest session in view (None when there is none)."""
    picked = chart.apply_selection(view.sessions) if chart.selections else view.sessions.head(0)
    chosen = rows.value
    if picked.height:
        key = picked["session_key"][0]
    elif chosen is not None and len(chosen):
        key = chosen["session_key"][0]
    else:
        key = view.sessions.sort("n")["session_key"][-1] if view.sessions.height else None
    if key is None:
        return None
    return view.sessions.filter(pl.col("session_key") == key).row(0, named=True)


def _figure(value: float | None, spec: str) -> str:
    """A figure in a sentence, "-" when missing (never a made-up 0)."""
    return "-" if value is None or math.isnan(value) else format(value, spec)


def inspector(detail: SessionDetail, events: pl.DataFrame) -> mo.Html:
    """The comparison inspector: the session's outcome, both rankers' top 10 (one above the
    other: side by side, their columns do not fit a 1280 px page), and what was injected,
    missed, diversified, reasoned and logged."""
    s = detail.session
    j = detail.judge
    reason = (j.get("reasoning") or "-") + (
        "\n\n" + j["continuity_reasoning"] if j.get("continuity_reasoning") else ""
    )
    injected = int(detail.candidates["was_injected"].sum())
    return mo.vstack(
        [
            mo.md(
                f"## Comparison inspector · session #{s['n']} ({s['project']}, "
                f"{s['started_at']:%Y-%m-%d %H:%M} UTC)\n"
                f"**{s['outcome']}** — predictor NDCG@10 {_figure(s['predictor_ndcg'], '.3f')}, "
                f"baseline {_figure(s['baseline_ndcg'], '.3f')}, α {_figure(s['alpha'], '.2f')}. "
                f"Confidence gate: {detail.gate}. EMA: {detail.ema}."
            ),
            mo.md("**Baseline's top 10**"),
            table(detail.baseline_top, page_size=10),
            mo.md("**Predictor's top 10**"),
            table(detail.predictor_top, page_size=10)
            if detail.predictor_top.height
            else mo.md("_The predictor did not score this session: it ranked nothing._"),
            mo.accordion(
                {
                    f"Injected memories ({injected}) with relevance and FTS hits": table(
                        detail.candidates.filter(pl.col("was_injected")).select(INJECTED_COLUMNS),
                        selection=None,
                    ),
                    "FTS-only memories: searched for but missed by the pre-filter "
                    f"({detail.fts_missed.height})": table(detail.fts_missed),
                    f"Topic diversity adjustments ({detail.diversity.height})": table(
                        detail.diversity
                    ),
                    "Judge's reasoning": mo.md(reason),
                    "Event timeline": table(events),
                },
                multiple=True,
            ),
        ]
    )


def training(view: dash.DashboardView) -> mo.Html:
    """The training section: loss per epoch over every run, the runs' gate figures, and the
    runs the gates rejected."""
    runs = view.runs.sort("run", descending=True).select(RUN_COLUMNS)
    if view.steps.height:
        curve = static(training_chart(view.steps, view.markers))
    elif runs.height:
        curve = mo.md(
            "_No run trained an epoch yet: the shipped base serves (too few sessions to learn "
            "from, or the held-out sessions chose the start)._"
        )
    else:
        curve = mo.md(f"_No training run recorded yet._ {view.next_step}")
    rejected = view.rejections
    n = rejected.height
    return mo.vstack(
        [
            mo.md(
                "## Training\nLoss per epoch over every run; dots end each run (blue "
                "accepted, red rejected by the gates), labels are model versions, dashed red "
                "lines are drift resets. The shipped base serves until a run's own model has "
                "shown it is better: on sessions it never trained on (the newest ones, or "
                "forward folds while there are few), scored by NDCG@10 against the agent's "
                "and the judge's ratings of their memories, the 95% lower bound of its gain "
                "must be above 0 against the base and against the strongest free ranker "
                "(cosine, or its hybrid with BM25); `served_model` says which model each run "
                "serves at session start and `served_why` why, with the figures; "
                "`prompt_served_model` and `prompt_served_why` the same at the user's prompts, "
                "judged on the held-out sessions' prompts against the prompt's own cosine and "
                "hybrid. `heldout_ndcg` is the run's "
                "own model there, `heldout_bar` the best of the model served before and the "
                "free rankers (`heldout_comparator`; `start`: too few sessions to learn from). "
                "Runs judged by "
                "Signet's own canary gates show the canary figures instead."
            ),
            curve,
            table(runs, page_size=5, label="Runs and canary figures") if runs.height else mo.md(""),
            mo.md(
                f"**Rejected by the gates** ({n} run{'' if n == 1 else 's'}): the model "
                "served before each stayed served (`served`); a rejection is the gates doing "
                "their work, not an error."
            )
            if n
            else mo.md(""),
            table(rejected, page_size=5, show_search=False) if n else mo.md(""),
        ]
    )


def injections(lower: dash.DetailsView) -> mo.Html:
    """What Signet injected against what the scorer would have, per session in view."""
    rows = injection_table(lower.injections)
    return mo.vstack(
        [
            mo.md(
                "## What Signet injected and what the scorer would have\n"
                "Per session: the memories Signet injected, the scorer's picks (as many, in "
                "the order of its scores), the ones both chose, and the judge's mean "
                "relevance of each choice over its judged memories. Where the session-start "
                "wrapper ran, `hook` says whether it served the session (what it injected: "
                "`hook_injected` memories, `hook_kept` of them Signet's own, `hook_outside` "
                "not among Signet's candidates) or failed open and printed Signet's "
                "(`hook_reason`)."
            ),
            mo.callout(mo.md(injection_summary(lower.injections)), kind="neutral"),
            table(rows.sort("n", descending=True), page_size=8) if rows.height else mo.md("-"),
            *_reordering(lower.reordered),
            *_by_hook(lower.hooks),
        ]
    )


def _by_hook(hooks: pl.DataFrame) -> list[mo.Html]:
    """Session start's injections beside the prompts': how many, how often used, per hook."""
    return [
        mo.md(
            "### Session start and prompt time\n"
            "Per hook and chooser (Signet, or the scorer where a wrapper served): the sessions "
            "with its injections, the memories injected and per session, how many the session "
            "then **used** (FTS hits of its prompts or recalls of the memory, the agent's rating "
            "above 0, or the judge's relevance of at least "
            f"{DEFAULT_CONFIG.high_continuity_threshold:g}: the evidence the labels read) and "
            "the judge's mean relevance of the judged ones. Per session, `start_used`, "
            "`prompts`, `prompt_injected` and `prompt_used` in the table above."
        ),
        mo.callout(mo.md(hook_usage_summary(hooks)), kind="neutral"),
        table(hooks, show_search=False, show_download=False) if hooks.height else mo.md("-"),
    ]


def _reordering(reordered: Any) -> list[mo.Html]:
    """Each memory the wrapper injected, its rank beside Signet's (empty: it served none)."""
    if reordered is None or reordered.height == 0:
        return []
    n = reordered["session_key"].n_unique()
    return [
        mo.md(
            f"**How the wrapper reordered Signet's answer** ({n} served "
            f"session{'' if n == 1 else 's'}, newest first): per injected memory, its rank in "
            "the block the scorer ordered (`rank`) beside its rank in Signet's answer "
            "(`signet_rank`); `moved` counts the places the scorer moved it up, "
            "`signet_injected` whether Signet would have injected it, `relevance` the judge's."
        ),
        table(
            reordered.select(
                "n",
                "project",
                "rank",
                "signet_rank",
                "moved",
                "signet_injected",
                "relevance",
                "memory_id",
            ),
            page_size=10,
        ),
    ]


def slices(
    details: dash.DashboardDetails, lower: dash.DetailsView, view: dash.DashboardView
) -> mo.Html:
    """Success by project (chart and table) and by focal entity."""
    entities = (
        table(lower.entities)
        if lower.entities.height
        else mo.callout(mo.md(details.focal.note), kind="neutral")
    )
    projects = (
        static(project_chart(view.projects))
        if view.projects.filter(pl.col("counted") > 0).height
        else mo.md("_no judged comparison yet_")
    )
    return mo.vstack(
        [
            mo.md("## Success by project and entity"),
            projects,
            table(view.projects),
            mo.md("**By focal entity**"),
            mo.md(details.focal.note) if lower.entities.height else mo.md(""),
            entities,
        ]
    )


def label_sources(details: dash.DashboardDetails) -> mo.Html:
    """What the training labels learn from, where the store keeps it, how many sessions."""
    sources = details.label_sources.select("source", "where", "present", "sessions", "rows", "what")
    return mo.vstack(
        [
            mo.md(
                "## Label sources\nWhat the training labels learn from, where the store keeps "
                "it, and how many sessions carry it (the default agent's on a current store). "
                "`hook_injections.db` is no part of the store: it is the hook wrappers' record "
                "beside the workbench. In the sessions the session-start wrapper served, its "
                "injections replace Signet's as what was shown; what the prompt wrapper added "
                "was shown as well."
            ),
            table(sources, show_search=False, show_download=False),
        ]
    )


def errors(view: dash.DashboardView) -> mo.Html:
    """The predictor's errors (diverged training runs; rejections are under training)."""
    return mo.vstack(
        [
            mo.md("## Errors"),
            table(view.errors)
            if view.errors.height
            else mo.md(
                "No predictor errors recorded (training runs whose loss diverged; runs the "
                "gates rejected are listed under Training). Sidecar timeouts and crashes are "
                "kept in the daemon's error ring, not in the store."
            ),
        ]
    )
