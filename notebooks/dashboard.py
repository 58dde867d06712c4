import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full", app_title="Signet predictor")

with app.setup:
    import datetime
    import functools

    import altair as alt
    import marimo as mo
    import polars as pl

    from signet_bench.analysis.queries import dashboard as dash
    from signet_bench.analysis.queries import inspector
    from signet_bench.analysis.queries.derived import label_sources_text
    from signet_bench.analysis.queries.injections import injection_summary, injection_table
    from signet_bench.analysis.queries.sessions import (
        CONFIDENCE_GROUPS,
        projects_of,
        weekly_sessions,
    )
    from signet_bench.analysis.queries.source import open_store
    from signet_bench.app.launch import notebook_args
    from signet_bench.app.ui import static, table
    from signet_bench.config import DEFAULT_CONFIG

    OUTCOME_COLORS = alt.Scale(
        domain=["predictor won", "baseline won", "tie", "not scored"],
        range=["#2e9d4f", "#d1453b", "#9a9a9a", "#c8c8c8"],
    )
    TONES = {"success": "success", "warn": "warn", "neutral": "neutral"}
    DEFAULT_WINDOW = datetime.timedelta(days=90)
    TABLE_SESSIONS = 200


@app.function
def alpha_gauge(alpha: float) -> alt.Chart:
    """Seed 000 §4.6's split gauge: the baseline's weight α and the predictor's 1 − α."""
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


@app.function
@functools.cache
def win_loss_template() -> alt.LayerChart:
    """The win/loss timeline's layers without data (built once: Altair's validation costs
    more than the data)."""
    pick = alt.selection_point(fields=["n"], on="click", name="pick")
    x = alt.X("n:Q", title="session #")
    dots = (
        alt.Chart()
        .mark_point(size=45, strokeWidth=1.6)
        .encode(
            x=x,
            y=alt.Y("margin:Q", title="predictor − baseline NDCG@10 (above 0: predictor better)"),
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
    return (
        alt.layer(alt.layer(zero, dots, rules, labels), ema)
        .resolve_scale(y="independent")
        .properties(height=260, width="container")
    )


@app.function
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
    chart = win_loss_template().copy(deep=False)
    chart.data = data
    return chart


@app.function
def training_chart(steps: pl.DataFrame, markers: pl.DataFrame) -> alt.LayerChart:
    """Loss over training steps (epochs), each run's end marked by its verdict and model
    version, drift resets as dashed lines."""
    line = (
        alt.Chart(steps)
        .mark_line(color="#555")
        .encode(x=alt.X("step:Q", title="training step (epoch)"), y=alt.Y("loss:Q", title="loss"))
    )
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
    labels = (
        alt.Chart(ends.filter(pl.col("accepted") & ((pl.col("run") - 1) % every == 0)))
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
    return alt.layer(line, points, labels, rules, reset_text).properties(
        height=220, width="container"
    )


@app.function
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


@app.function
def project_chart(projects: pl.DataFrame) -> alt.LayerChart:
    """Per-project win rate over the sessions that counted (green above half), labelled."""
    bars = (
        alt.Chart(projects.filter(pl.col("counted") > 0))
        .mark_bar()
        .encode(
            x=alt.X(
                "win_rate:Q",
                scale=alt.Scale(domain=[0, 1]),
                title="predictor win rate (counted sessions)",
                axis=alt.Axis(format="%"),
            ),
            y=alt.Y("project:N", sort="-x", title=None),
            color=alt.condition("datum.win_rate > 0.5", alt.value("#2e9d4f"), alt.value("#d1453b")),
            tooltip=["project", "sessions", "counted", alt.Tooltip("win_rate:Q", format=".0%")],
        )
    )
    text = bars.mark_text(align="left", dx=4, color="#222").encode(
        text=alt.Text("win_rate:Q", format=".0%")
    )
    half = alt.Chart(pl.DataFrame({"x": [0.5]})).mark_rule(strokeDash=[3, 3]).encode(x="x:Q")
    return (bars + text + half).properties(height=alt.Step(24), width=420)


@app.function
def weekly_chart(weekly: pl.DataFrame) -> alt.Chart:
    """The judge's sessions per week, stacked by whether its confidence passed the gate."""
    return (
        alt.Chart(weekly)
        .mark_bar()
        .encode(
            x=alt.X("week:T", title=None),
            y=alt.Y("sessions:Q", title="sessions"),
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


@app.function
def progress_chart(done: int, need: int) -> alt.Chart:
    """Cold start's progress bar: scored sessions against the minimum."""
    frame = pl.DataFrame({"what": ["scored sessions"], "done": [min(done, need)], "need": [need]})
    base = alt.Chart(frame).encode(y=alt.Y("what:N", title=None))
    axis = alt.Axis(tickMinStep=1, format="d")
    total = base.mark_bar(color="#e3e6ea").encode(x=alt.X("need:Q", title=None, axis=axis))
    filled = base.mark_bar(color="#2f6fdf").encode(x="done:Q")
    return (total + filled).properties(height=40, width="container")


@app.cell
def _():
    _args = notebook_args(mo.cli_args())
    db_path, workbench_path, bench_dir = _args.db, _args.workbench, _args.bench_dir
    return bench_dir, db_path, workbench_path


@app.cell
def _(db_path):
    con = open_store(db_path)
    return (con,)


@app.cell
def _(con, db_path):
    # Before the session frame is read (see weekly_sessions): the page's first chart.
    _weekly = weekly_sessions(con, DEFAULT_CONFIG)
    mo.vstack(
        [
            mo.md(f"# Signet predictor · `{db_path.name}`"),
            mo.md(
                "**Sessions the judge scored, per week** (blue: its confidence passed "
                f"{DEFAULT_CONFIG.min_scorer_confidence:g}, so the session counts and trains)"
            ),
            static(weekly_chart(_weekly)) if _weekly.height else mo.md("_none yet_"),
        ]
    )


@app.cell
def _(bench_dir, con, db_path, workbench_path):
    data = dash.load_dashboard(con, db_path, workbench_path, DEFAULT_CONFIG, bench_dir)
    return (data,)


@app.cell
def _(data):
    _days = data.sessions["started_at"].dt.date().drop_nulls()
    project_filter = mo.ui.multiselect(options=projects_of(data.sessions), label="Projects")
    date_filter = (
        mo.ui.date_range(
            start=_days.min(),
            stop=_days.max(),
            value=(max(_days.min(), _days.max() - DEFAULT_WINDOW), _days.max()),
            label=f"Sessions started (first shown: the last {DEFAULT_WINDOW.days} days)",
        )
        if _days.len()
        else None
    )
    return date_filter, project_filter


@app.cell
def _(data, date_filter, project_filter):
    _since, _until = date_filter.value if date_filter is not None else (None, None)
    view = dash.dashboard_view(data, project_filter.value, _since, _until, DEFAULT_CONFIG)
    return (view,)


@app.cell
def _(data, date_filter, project_filter, view):
    _answer, _tone = dash.verdict(view)
    _health = view.health
    _badge = {"green": "success", "yellow": "warn", "red": "danger"}[_health.color]
    _why = f" — {'; '.join(_health.reasons)}" if _health.reasons else ""
    _filters = [project_filter] + ([date_filter] if date_filter is not None else [])
    _line = (
        "Current Signet: it runs no predictor and keeps no comparisons, so the comparisons "
        "and the success-rate EMA below are recomputed by the workbench from the store's "
        "sessions."
        if data.line == "current"
        else "Signet 0.58: comparisons as the daemon recorded them."
    )
    mo.vstack(
        [
            mo.md(f"**Release line** · {_line}"),
            mo.callout(mo.md(f"**{_answer}**"), kind=TONES[_tone]),
            mo.hstack(
                [
                    mo.callout(
                        mo.md(f"**Health {_health.score:.2f} · {_health.status}**{_why}"),
                        kind=_badge,
                    ),
                    mo.md(f"Session-start status line: `{view.status_line}`"),
                ],
                justify="start",
                gap=2,
            ),
            mo.hstack(_filters, justify="start", gap=2),
        ]
    )


@app.cell
def _(details):
    mo.md(f"**Label sources** · {label_sources_text(details.label_sources)}")


@app.cell
def _(data, view):
    _st = view.status
    mo.stop(_st.comparing)
    _line = "█" * int(20 * _st.progress) + "░" * (20 - int(20 * _st.progress))
    _cfg = DEFAULT_CONFIG
    _model = {True: "yes", False: "no", None: "none yet (no workbench)"}[data.model_available]
    _diag = mo.md(
        f"""
        ### Diagnostics
        - model file: **{_model}**
        - trained: **{"yes" if _st.trained else "not yet"}** · model version {_st.model_version}
        - still needed before the predictor earns influence: **{"; ".join(_st.blockers) or "nothing"}**
        - config: minTrainingSessions {_cfg.min_training_sessions}, trainIntervalSessions
          {_cfg.train_interval_sessions}, scoreTimeoutMs {_cfg.score_timeout_ms},
          rrfK {_cfg.rrf_k}, explorationRate {_cfg.exploration_rate},
          driftResetWindow {_cfg.drift_reset_window}
        - state: {_st.source}
        """
    )
    mo.vstack(
        [
            mo.md("## Cold start: collecting training data"),
            mo.md(
                f"`Collecting training data: {_st.scored_sessions}/{_st.min_sessions} sessions "
                f"[{_line}] {_st.progress:.0%}` — first prediction available after "
                f"{_st.min_sessions} scored sessions"
            ),
            static(progress_chart(_st.scored_sessions, _st.min_sessions)),
            mo.callout(_diag, kind="neutral"),
            mo.md(
                "### Recent sessions\nThe judge's continuity score and confidence per session: "
                f"a session counts towards the minimum when its confidence passes "
                f"{_cfg.min_scorer_confidence:g} and it yields training data."
            ),
            table(view.recent, page_size=15),
        ]
    )


@app.cell
def _(data, view):
    _st = view.status
    mo.stop(not _st.comparing)
    _lat = view.latency
    _p = {m: _lat.filter(pl.col("metric") == m)["ms"] for m in ("p50", "p95")}
    _latency = f"{_p['p50'][-1]:.1f} / {_p['p95'][-1]:.1f} ms" if _p["p95"].len() else "no data yet"
    _drift = "n/a" if view.drift != view.drift else f"{view.drift:+.2f}"
    _projects = pl.DataFrame(
        list(_st.project_rates),
        schema={"project": pl.String, "success rate": pl.Float64, "sessions": pl.Int64},
        orient="row",
    )
    _when = _st.last_trained_at.strftime("%Y-%m-%d %H:%M") if _st.last_trained_at else "never"
    _stats = [
        mo.stat(f"{_st.success_rate:.2f}", label="success rate (EMA)", bordered=True),
        mo.stat(f"{_st.alpha:.2f}", label="α (baseline weight)", bordered=True),
        mo.stat(f"v{_st.model_version}", label="model", caption=f"trained {_when}", bordered=True),
        mo.stat(
            str(_st.training_pairs or "-"), label="samples in the last training run", bordered=True
        ),
        mo.stat(
            f"{data.parameters:,}" if data.parameters else "-", label="parameters", bordered=True
        ),
        mo.stat(str(_st.drift_resets), label="drift resets", bordered=True),
        mo.stat(
            _drift,
            label="judge drift signal",
            caption="relevance < 7 d old − > 30 d old"
            if _drift != "n/a"
            else "no judged memory < 7 d old lately",
            bordered=True,
        ),
        mo.stat(_latency, label="scoring p50 / p95", bordered=True),
    ]
    _spark = static(latency_chart(_lat)) if _lat.height else mo.md("_latency: no data yet_")
    mo.vstack(
        [
            mo.md("## Status"),
            mo.hstack(_stats, wrap=True, justify="start", gap=1),
            mo.hstack(
                [
                    mo.vstack(
                        [
                            mo.md("**Ranking weight** (α split)"),
                            static(alpha_gauge(_st.alpha)),
                        ]
                    ),
                    mo.vstack([mo.md("**Scoring latency**: p50, p95 per bench run"), _spark]),
                    mo.vstack(
                        [
                            mo.md("**Per-project success rates** (top 3 by sessions)"),
                            table(_projects, show_search=False, show_download=False)
                            if _projects.height
                            else mo.md("-"),
                        ]
                    ),
                ],
                widths=[2, 1, 2],
                gap=2,
            ),
        ]
    )


@app.cell
def _(view):
    mo.stop(not view.status.comparing)
    timeline = mo.ui.altair_chart(
        win_loss_chart(view.sessions, view.resets), legend_selection=False
    )
    session_table = table(
        view.sessions.sort("n", descending=True).head(TABLE_SESSIONS).select(
            "n",
            "started_at",
            "project",
            "outcome",
            "margin",
            "confidence",
            "counted",
            "session_key",
        ),
        selection="single",
        page_size=8,
        label=f"The latest {TABLE_SESSIONS} sessions in view (older ones: click their dot)",
    )
    return session_table, timeline


@app.cell
def _(session_table, timeline):
    mo.vstack(
        [
            mo.md(
                "## Win/loss timeline\n"
                "Each dot is a session at its judge-scored NDCG@10 margin: **green** the "
                "predictor's ranking beat the baseline's, **red** the baseline's won, grey a tie; "
                "hollow dots did not count (judge confidence below 0.6, or the predictor did "
                "not score). The blue line is the success-rate EMA that sets α; dashed red "
                "lines are drift resets. Click a dot (or a row below) to inspect the session."
            ),
            timeline,
            session_table,
        ]
    )


@app.cell
def _(session_table, timeline, view):
    mo.stop(not view.status.comparing)
    _picked = (
        timeline.apply_selection(view.sessions) if timeline.selections else view.sessions.head(0)
    )
    _rows = session_table.value
    if _picked.height:
        _key = _picked["session_key"][0]
    elif _rows is not None and len(_rows):
        _key = _rows["session_key"][0]
    else:
        _key = view.sessions.sort("n")["session_key"][-1] if view.sessions.height else None
    chosen_session = (
        None
        if _key is None
        else view.sessions.filter(pl.col("session_key") == _key).row(0, named=True)
    )
    return (chosen_session,)


@app.cell
def _(chosen_session, con, data, view):
    mo.stop(chosen_session is None)
    detail = inspector.session_detail(con, chosen_session, DEFAULT_CONFIG)
    events = inspector.session_events(con, detail, data.runs, view.resets)
    return detail, events


@app.cell
def _(detail, events):
    _s = detail.session
    _j = detail.judge
    _reason = (_j.get("reasoning") or "-") + (
        "\n\n" + _j["continuity_reasoning"] if _j.get("continuity_reasoning") else ""
    )
    mo.vstack(
        [
            mo.md(
                f"## Comparison inspector · session #{_s['n']} ({_s['project']}, "
                f"{_s['started_at']:%Y-%m-%d %H:%M} UTC)\n"
                f"**{_s['outcome']}** — predictor NDCG@10 {_s['predictor_ndcg'] or 0:.3f}, "
                f"baseline {_s['baseline_ndcg'] or 0:.3f}, α {_s['alpha'] or 1:.2f}. "
                f"Confidence gate: {detail.gate}. EMA: {detail.ema}."
            ),
            mo.hstack(
                [
                    mo.vstack(
                        [
                            mo.md("**Baseline's top 10**"),
                            table(detail.baseline_top, page_size=10),
                        ]
                    ),
                    mo.vstack(
                        [
                            mo.md("**Predictor's top 10**"),
                            table(detail.predictor_top, page_size=10),
                        ]
                    ),
                ],
                widths="equal",
                gap=1,
            ),
            mo.accordion(
                {
                    f"Injected memories ({int(detail.candidates['was_injected'].sum())}) with relevance and FTS hits": table(
                        detail.candidates.filter(pl.col("was_injected")).select(
                            "baseline_rank",
                            "predictor_rank",
                            "preview",
                            "relevance_score",
                            "fts_hit_count",
                            "is_constraint",
                        ),
                        selection=None,
                    ),
                    f"FTS-only memories: searched for but missed by the pre-filter ({detail.fts_missed.height})": table(
                        detail.fts_missed
                    ),
                    f"Topic diversity adjustments ({detail.diversity.height})": table(
                        detail.diversity
                    ),
                    "Judge's reasoning": mo.md(_reason),
                    "Event timeline": table(events),
                },
                multiple=True,
            ),
        ]
    )


@app.cell
def _(view):
    mo.stop(not view.status.comparing)
    _runs = view.runs.sort("run", descending=True).select(
        "run",
        "model_version",
        "accepted",
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
    _curve = (
        static(training_chart(view.steps, view.markers))
        if view.steps.height
        else mo.md("_no training run recorded yet_")
    )
    mo.vstack(
        [
            mo.md(
                "## Training\nLoss per epoch over every run; dots end each run (blue "
                "accepted, red rejected by the gates), labels are model versions, dashed red "
                "lines are drift resets. A run is served only if, on sessions it never "
                "trained on (the newest ones, or forward folds while there are few), its NDCG@10 "
                "(`heldout_ndcg`) reaches the bar (`heldout_bar`): the best of the model "
                "served now and the free rankers (cosine, and its hybrid with BM25), named in "
                "`heldout_comparator` (`start`: too few sessions to learn from, so the "
                "model is its start, cosine, served as it is). Runs judged by Signet's own "
                "canary gates show the "
                "canary figures instead."
            ),
            _curve,
            table(_runs, page_size=5, label="Runs and canary figures"),
        ]
    )


@app.cell
def _(lower, view):
    mo.stop(not view.status.comparing)
    _rows = injection_table(lower.injections)
    mo.vstack(
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
            table(_rows.sort("n", descending=True), page_size=8) if _rows.height else mo.md("-"),
        ]
    )


@app.cell
def _(details, lower, view):
    _entities = (
        table(lower.entities)
        if lower.entities.height
        else mo.callout(mo.md(details.focal.note), kind="neutral")
    )
    _projects = (
        static(project_chart(view.projects))
        if view.projects.filter(pl.col("counted") > 0).height
        else mo.md("_no judged comparison yet_")
    )
    mo.vstack(
        [
            mo.md("## Success by project and entity"),
            _projects,
            table(view.projects),
            mo.md("**By focal entity**"),
            mo.md(details.focal.note) if lower.entities.height else mo.md(""),
            _entities,
        ]
    )


@app.cell
def _(details):
    _sources = details.label_sources.select(
        "source", "where", "present", "sessions", "rows", "what"
    )
    mo.vstack(
        [
            mo.md(
                "## Label sources\nWhat the training labels learn from, where the store keeps "
                "it, and how many sessions carry it (the default agent's on a current store). "
                "`hook_injections.db` is no part of the store: it is the session-start "
                "wrapper's record beside the workbench, and in the sessions it served, its "
                "injections replace Signet's as what was shown."
            ),
            table(_sources, show_search=False, show_download=False),
        ]
    )


@app.cell
def _(view):
    mo.vstack(
        [
            mo.md("## Errors"),
            table(view.errors)
            if view.errors.height
            else mo.md(
                "No predictor errors recorded (rejected or diverged training runs). Sidecar "
                "timeouts and crashes are kept in the daemon's error ring, not in the store."
            ),
        ]
    )


@app.cell
def _(con, db_path, workbench_path):
    # Last in the file, so every panel above is drawn before these seconds-long reads run
    # (marimo runs cells that are ready in the order they appear).
    details = dash.load_details(con, db_path, workbench_path)
    return (details,)


@app.cell
def _(details, view):
    lower = dash.details_view(details, view)
    return (lower,)


if __name__ == "__main__":
    app.run()
