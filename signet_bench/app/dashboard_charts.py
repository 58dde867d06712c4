"""The dashboard's charts: Altair specs built from the frames of `analysis.queries.dashboard`
(the notebook only lays them out). Kept out of the notebook file, which marimo parses and
compiles again for every visitor's session.
"""

from __future__ import annotations

import functools

import altair as alt
import polars as pl

from signet_bench.analysis.queries.sessions import CONFIDENCE_GROUPS
from signet_bench.app.ui import count_axis

__all__ = [
    "OUTCOME_COLORS",
    "alpha_gauge",
    "finite_losses",
    "latency_chart",
    "progress_chart",
    "project_chart",
    "training_chart",
    "weekly_chart",
    "win_loss_chart",
    "win_loss_template",
]

OUTCOME_COLORS = alt.Scale(
    domain=["predictor won", "baseline won", "tie", "not scored"],
    range=["#2e9d4f", "#d1453b", "#9a9a9a", "#c8c8c8"],
)


def alpha_gauge(alpha: float) -> alt.Chart:
    """The ranking's split: the baseline's weight α and the predictor's 1 − α."""
    frame = pl.DataFrame(
        {"ranker": ["baseline (α)", "predictor (1 − α)"], "weight": [alpha, 1.0 - alpha]}
    )
    bars = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("weight:Q", scale=alt.Scale(domain=[0, 1]), title="share of the ranking"),
            y=alt.Y("ranker:N", title=None, sort=None),
            color=alt.Color(
                "ranker:N",
                scale=alt.Scale(range=["#8a8f98", "#2f6fdf"]),
                legend=None,
            ),
            tooltip=["ranker", alt.Tooltip("weight:Q", format=".0%")],
        )
    )
    text = bars.mark_text(align="left", dx=4).encode(
        text=alt.Text("weight:Q", format=".0%"), color=alt.value("#222")
    )
    return (bars + text).properties(height=70, width="container")


@functools.cache
def win_loss_template(resets: bool = True) -> alt.LayerChart:
    """The win/loss timeline's layers without data (built once per kind: Altair's validation
    costs more than the data); the drift resets' layers only when there are `resets` (an
    empty layer leaves Vega an infinite domain to warn about)."""
    pick = alt.selection_point(fields=["n"], on="click", name="pick")
    x = alt.X("n:Q", title="session #", axis=count_axis())
    dots = (
        alt.Chart()
        .mark_point(size=45, strokeWidth=1.6)
        .encode(
            x=x,
            y=alt.Y(
                "margin:Q",
                title="predictor − baseline NDCG@10 (above 0: predictor better)",
                axis=alt.Axis(format=".2~f"),  # a one-value domain would read 0.000000
            ),
            color=alt.Color("outcome:N", scale=OUTCOME_COLORS, legend=alt.Legend(orient="top")),
            fill=alt.condition(
                "datum.counted",
                alt.Color("outcome:N", scale=OUTCOME_COLORS),
                alt.value("transparent"),
            ),
            opacity=alt.condition(pick, alt.value(1.0), alt.value(0.35)),
            tooltip=[
                "n:Q",
                "started:N",
                "project:N",
                "outcome:N",
                alt.Tooltip("predictor_ndcg:Q", format=".3f"),
                alt.Tooltip("baseline_ndcg:Q", format=".3f"),
                alt.Tooltip("cosine_ndcg:Q", format=".3f", title="cosine_ndcg (simulated)"),
                alt.Tooltip("margin:Q", format="+.3f"),
                alt.Tooltip("confidence:Q", format=".2f"),
                "counted:N",
            ],
        )
        .add_params(pick)
    )
    ema = (
        alt.Chart()
        .transform_filter("isValid(datum.success_rate)")
        .mark_line(color="#2f6fdf", strokeWidth=2)
        .encode(
            x=x,
            y=alt.Y(
                "success_rate:Q",
                title="success-rate EMA",
                scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(titleColor="#2f6fdf", orient="right"),
            ),
        )
    )
    rules = (
        alt.Chart()
        .transform_filter("datum.reset")
        .mark_rule(color="#d1453b", strokeDash=[6, 4], strokeWidth=2)
        .encode(x=x, tooltip=[alt.Tooltip("n:Q", title="drift reset after session")])
    )
    labels = (
        alt.Chart()
        .transform_filter("datum.reset")
        .mark_text(align="left", dx=4, dy=-4, color="#d1453b", fontWeight="bold")
        .encode(x=x, y=alt.value(0), text=alt.value("drift reset"))
    )
    zero = alt.Chart().mark_rule(color="#666").encode(y=alt.datum(0))
    left = alt.layer(zero, dots, rules, labels) if resets else alt.layer(zero, dots)
    return (
        alt.layer(left, ema)
        .resolve_scale(y="independent")
        .properties(height=260, width="container")
    )


def win_loss_chart(sessions: pl.DataFrame, resets: pl.DataFrame) -> alt.LayerChart:
    """Session-by-session dots (green: predictor won, red: baseline won, grey: tie; hollow:
    not counted) at their NDCG@10 margin, the success-rate EMA, and drift resets (a point is
    picked by its session number `n`)."""
    data = sessions.filter(pl.col("outcome") != "no comparison").select(
        "n",
        pl.col("started_at").dt.strftime("%m-%d %H:%M").alias("started"),
        "project",
        "outcome",
        "counted",
        pl.col("margin").round(3),
        pl.col("predictor_ndcg").round(3),
        pl.col("baseline_ndcg").round(3),
        pl.col("cosine_ndcg").round(3),
        pl.col("confidence").round(2),
        pl.col("success_rate").round(3),
        pl.col("n").is_in(resets["n"].to_list()).alias("reset"),
    )
    chart = win_loss_template(bool(data["reset"].any())).copy(deep=False)
    chart.data = data
    return chart


def finite_losses(steps: pl.DataFrame) -> pl.DataFrame:
    """The training steps with a finite loss: a run that trained nothing (its start served
    as it is) or diverged logs +inf, which no axis can hold."""
    return steps.filter(pl.col("loss").is_finite())


def training_chart(steps: pl.DataFrame, markers: pl.DataFrame) -> alt.LayerChart:
    """Loss over training steps (epochs) with a finite loss (`finite_losses`; the y-domain
    holds every point drawn), each run's end marked by its verdict and model version, drift
    resets as dashed lines."""
    steps = finite_losses(steps)
    x = alt.X("step:Q", title="training step (epoch)", axis=count_axis())
    line = alt.Chart(steps).mark_line(color="#555").encode(x=x, y=alt.Y("loss:Q", title="loss"))
    ends = (
        steps.group_by("run")
        .agg(pl.all().last())
        .sort("run")
        .with_columns(
            pl.when(pl.col("accepted"))
            .then(pl.lit("accepted"))
            .otherwise(pl.lit("rejected"))
            .alias("verdict"),
            pl.format("v{}", "model_version").alias("version"),
        )
    )
    points = (
        alt.Chart(ends)
        .mark_circle(size=50)
        .encode(
            x="step:Q",
            y="loss:Q",
            color=alt.Color(
                "verdict:N",
                scale=alt.Scale(domain=["accepted", "rejected"], range=["#2f6fdf", "#d1453b"]),
                legend=alt.Legend(orient="top", title="run"),
            ),
            tooltip=["run", "version", "verdict", alt.Tooltip("loss:Q", format=".4f")],
        )
    )
    every = max(1, ends.height // 8)
    labelled = ends.filter(pl.col("accepted") & ((pl.col("run") - 1) % every == 0))
    labels = (
        alt.Chart(labelled)
        .mark_text(dy=-10, fontSize=10, color="#2f6fdf")
        .encode(x="step:Q", y="loss:Q", text="version:N")
    )
    rules = (
        alt.Chart(markers.select("step", "n"))
        .mark_rule(color="#d1453b", strokeDash=[6, 4], strokeWidth=2)
        .encode(x="step:Q", tooltip=[alt.Tooltip("n:Q", title="drift reset after session")])
    )
    reset_text = rules.mark_text(
        align="left", dx=4, dy=-4, color="#d1453b", fontWeight="bold"
    ).encode(y=alt.value(0), text=alt.value("drift reset: full retrain"))
    layers = [line, points] + ([labels] if labelled.height else [])
    layers += [rules, reset_text] if markers.height else []  # no empty layer: no infinite domain
    return alt.layer(*layers).properties(height=220, width="container")


def latency_chart(latency: pl.DataFrame) -> alt.Chart:
    """Scoring latency per benchmark run (p50 and p95), coloured by closeness to the timeout."""
    lat = latency.filter(pl.col("metric").is_in(["p50", "p95"])).with_row_index("i")
    return (
        alt.Chart(lat)
        .mark_line(point=True)
        .encode(
            x=alt.X("run:N", sort=None, title=None, axis=alt.Axis(labels=False, ticks=False)),
            y=alt.Y("ms:Q", title="ms"),
            detail="metric:N",
            color=alt.Color(
                "color:N",
                scale=alt.Scale(
                    domain=["green", "yellow", "red"], range=["#2e9d4f", "#d9a400", "#d1453b"]
                ),
                legend=None,
            ),
            tooltip=["run", "name", "metric", alt.Tooltip("ms:Q", format=".2f")],
        )
        .properties(height=70, width=160)
    )


def project_chart(projects: pl.DataFrame) -> alt.LayerChart:
    """Per-project win rate over the sessions that counted (green above half), labelled;
    highest first, in an order both layers share (a sort by the bars' x would differ from the
    labels' in Vega's eyes and make it warn)."""
    counted = projects.filter(pl.col("counted") > 0).sort(
        "win_rate", "project", descending=[True, False]
    )
    bars = (
        alt.Chart(counted)
        .mark_bar()
        .encode(
            x=alt.X(
                "win_rate:Q",
                scale=alt.Scale(domain=[0, 1]),
                title="predictor win rate (counted sessions)",
                axis=alt.Axis(format="%"),
            ),
            y=alt.Y("project:N", sort=counted["project"].to_list(), title=None),
            color=alt.condition("datum.win_rate > 0.5", alt.value("#2e9d4f"), alt.value("#d1453b")),
            tooltip=["project", "sessions", "counted", alt.Tooltip("win_rate:Q", format=".0%")],
        )
    )
    text = bars.mark_text(align="left", dx=4, color="#222").encode(
        text=alt.Text("win_rate:Q", format=".0%")
    )
    half = alt.Chart(pl.DataFrame({"x": [0.5]})).mark_rule(strokeDash=[3, 3]).encode(x="x:Q")
    return (bars + text + half).properties(height=alt.Step(24), width=420)


def weekly_chart(weekly: pl.DataFrame) -> alt.Chart:
    """The judge's sessions per week, stacked by whether its confidence passed the gate."""
    return (
        alt.Chart(weekly)
        .mark_bar()
        .encode(
            x=alt.X("week:T", title=None),
            y=alt.Y("sessions:Q", title="sessions", axis=count_axis()),
            color=alt.Color(
                "judged:N",
                scale=alt.Scale(domain=list(CONFIDENCE_GROUPS), range=["#2f6fdf", "#c8c8c8"]),
                legend=alt.Legend(orient="right", title=None),
            ),
            order=alt.Order("judged:N", sort="descending"),
            tooltip=[alt.Tooltip("week:T", title="week of"), "judged:N", "sessions:Q"],
        )
        .properties(height=80, width="container")
    )


def progress_chart(done: int, need: int) -> alt.Chart:
    """Cold start's progress bar: scored sessions against the minimum."""
    frame = pl.DataFrame({"what": ["scored sessions"], "done": [min(done, need)], "need": [need]})
    base = alt.Chart(frame).encode(y=alt.Y("what:N", title=None))
    axis = alt.Axis(tickMinStep=1, format="d")
    total = base.mark_bar(color="#e3e6ea").encode(x=alt.X("need:Q", title=None, axis=axis))
    filled = base.mark_bar(color="#2f6fdf").encode(x="done:Q")
    return (total + filled).properties(height=40, width="container")
