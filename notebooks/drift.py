import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="Drift explorer")

with app.setup:
    import altair as alt
    import marimo as mo
    import polars as pl

    from signet_bench.analysis.queries import drift
    from signet_bench.analysis.queries.derived import line_sessions
    from signet_bench.analysis.queries.entities import focal_entities
    from signet_bench.analysis.queries.feature_drift import (
        feature_drift,
        feature_frames,
        feature_histogram,
    )
    from signet_bench.analysis.queries.sessions import drift_resets
    from signet_bench.analysis.queries.source import open_store
    from signet_bench.analysis.queries.stattests import STATTESTS
    from signet_bench.analysis.wording import plural
    from signet_bench.app.launch import notebook_args
    from signet_bench.app.ui import count_axis, static, table
    from signet_bench.config import DEFAULT_CONFIG
    from signet_scorer.contract import N_FEATURES


@app.function
def drift_chart(frame: pl.DataFrame, threshold: float, color: str | None = None) -> alt.Chart:
    """The judge's drift signal per stretch of sessions, with the flag threshold."""
    enc = {"color": alt.Color(f"{color}:N", legend=alt.Legend(orient="top"))} if color else {}
    points = (
        alt.Chart(frame.filter(pl.col("drift").is_not_nan()))
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "last_n:Q",
                title="session #",
                scale=alt.Scale(domain=[0, frame["last_n"].max()]),
                axis=count_axis(),
            ),
            y=alt.Y("drift:Q", title="relevance < 7 d − > 30 d"),
            tooltip=["last_n", "until:T", alt.Tooltip("drift:Q", format="+.3f"), "recent", "old"],
            **enc,
        )
    )
    limit = (
        alt.Chart(pl.DataFrame({"t": [threshold]}))
        .mark_rule(color="#d1453b", strokeDash=[6, 4])
        .encode(y="t:Q")
    )
    return (points + limit).properties(height=200, width="container")


@app.function
def success_chart(sessions: pl.DataFrame, resets: pl.DataFrame) -> alt.LayerChart:
    """The success-rate EMA recorded with each comparison (a dot each, so one session shows),
    and the drift resets (no layer without one: an empty layer's domain is infinite)."""
    line = (
        alt.Chart(sessions.filter(pl.col("success_rate").is_not_null()).select("n", "success_rate"))
        .mark_line(color="#2f6fdf", point=True)
        .encode(
            x=alt.X("n:Q", title="session #", axis=count_axis()),
            y=alt.Y("success_rate:Q", scale=alt.Scale(domain=[0, 1]), title="success-rate EMA"),
        )
    )
    floor = (
        alt.Chart(pl.DataFrame({"t": [DEFAULT_CONFIG.drift_reset_threshold]}))
        .mark_rule(color="#8a8f98", strokeDash=[2, 2])
        .encode(y="t:Q")
    )
    rules = (
        alt.Chart(resets.select("n"))
        .mark_rule(color="#d1453b", strokeDash=[6, 4], strokeWidth=2)
        .encode(x="n:Q", tooltip=[alt.Tooltip("n:Q", title="drift reset after session")])
    )
    layers = [line, floor, rules] if resets.height else [line, floor]
    return alt.layer(*layers).properties(height=200, width="container")


@app.function
def project_success_chart(frame: pl.DataFrame) -> alt.Chart:
    """The predictor's win rate per project per stretch of sessions."""
    return (
        alt.Chart(frame.filter(pl.col("win_rate").is_not_null()))
        .mark_line(point=True)
        .encode(
            x=alt.X("last_n:Q", title="session #", axis=count_axis()),
            y=alt.Y("win_rate:Q", scale=alt.Scale(domain=[0, 1]), title="win rate"),
            color=alt.Color("project:N", legend=alt.Legend(orient="top")),
            tooltip=["project", "last_n", "counted", alt.Tooltip("win_rate:Q", format=".0%")],
        )
        .properties(height=200, width="container")
    )


@app.function
def distribution_chart(histogram: pl.DataFrame, feature: str) -> alt.Chart:
    """A feature's distribution over the earlier sessions (what the model learned from) and
    over the latest ones (what it is serving now), on shared bins."""
    return (
        alt.Chart(histogram)
        .mark_bar(opacity=0.55, binSpacing=0)
        .encode(
            x=alt.X("bin_start:Q", title=feature, bin="binned"),
            x2="bin_end:Q",
            y=alt.Y("share:Q", title="share of candidates", stack=None),
            color=alt.Color(
                "window:N",
                scale=alt.Scale(range=["#2f6fdf", "#e8892b"]),
                legend=alt.Legend(orient="top", title=None),
            ),
            tooltip=["window", "bin_start", "bin_end", alt.Tooltip("share:Q", format=".1%")],
        )
        .properties(height=180, width="container")
    )


@app.cell
def _():
    _args = notebook_args(mo.cli_args())
    db_path = _args.db
    return (db_path,)


@app.cell
def _(db_path):
    con = open_store(db_path)
    sessions = line_sessions(con, db_path, DEFAULT_CONFIG)
    resets = drift_resets(sessions, DEFAULT_CONFIG)
    judged = drift.judged_memories(con)
    return con, judged, resets, sessions


@app.cell
def _():
    window = mo.ui.slider(5, 200, value=25, step=5, label="Sessions per point", show_value=True)
    return (window,)


@app.cell
def _(con):
    focal = focal_entities(con)
    _options = drift.entity_options(focal.pairs)
    entity = mo.ui.dropdown(
        options=_options,
        value=drift.ALL_SESSIONS,
        label="Focal entity",
        disabled=len(_options) == 1,
    )
    return entity, focal


@app.cell
def _(entity, focal, sessions):
    shown = drift.sessions_of_entity(sessions, focal.pairs, entity.value)
    return (shown,)


@app.cell
def _(db_path, entity, focal, window):
    _cfg = DEFAULT_CONFIG
    mo.vstack(
        [
            mo.md(
                f"""
                # Drift explorer · `{db_path.name}`
                Two kinds of drift: the **judge's** (does the continuity scorer favour young
                memories more than it used to? the mean relevance it gives memories under
                {_cfg.drift_recent_days:g} days old minus that of memories over
                {_cfg.drift_old_days:g} days old) and the **user's** (did the work change so
                the predictor stopped helping? its success rate stays below
                {_cfg.drift_reset_threshold:g} for {_cfg.drift_reset_window} sessions in a row
                and it resets), plus the model's input features drifting away from what it was
                trained on.
                """
            ),
            mo.hstack([window, entity], justify="start", gap=2),
            mo.md(f"<small>{focal.note}</small>"),
        ]
    )


@app.cell
def _(entity, judged, resets, shown, window):
    _limit = DEFAULT_CONFIG.judge_drift_signal_threshold
    overall = drift.drift_by_window(judged, shown, window.value, cfg=DEFAULT_CONFIG)
    per_project = drift.drift_by_window(
        judged, shown, window.value, by_project=True, cfg=DEFAULT_CONFIG
    )
    success = drift.success_by_window(shown, window.value, by_project=True)
    _of = (
        ""
        if entity.value is None
        else f" Shown at the {plural(shown.height, 'session')} `{entity.value}` is focal in; "
        "the EMA and its resets are the whole loop's."
    )
    _flagged = overall.filter(pl.col("flagged"))
    _valid = overall.filter(pl.col("drift").is_not_nan())
    _note = (
        mo.callout(
            mo.md(
                f"The judge favoured young memories by more than {_limit:g} in "
                f"{_flagged.height} of {plural(overall.height, 'stretch', 'stretches')}: check it "
                "for recency bias."
            ),
            kind="warn",
        )
        if _flagged.height
        else mo.md(
            f"No stretch above {_limit:g} (positive: the judge rates young memories higher)."
            + (
                ""
                if _valid.height == overall.height
                else f" {overall.height - _valid.height} of "
                f"{plural(overall.height, 'stretch', 'stretches')} judged no memory under 7 days "
                "old (or none over 30): no point there."
            )
        )
    )
    mo.vstack(
        [
            mo.md("## Judge drift signal"),
            _note,
            static(drift_chart(overall, _limit)) if _valid.height else mo.md(""),
            mo.md("**Per project**"),
            static(drift_chart(per_project, _limit, "project"))
            if per_project.filter(pl.col("drift").is_not_nan()).height
            else mo.md("_not enough judged memories per project_"),
            mo.md(
                f"## Success rate and drift resets ({resets.height})\n"
                f"The EMA with the reset floor ({DEFAULT_CONFIG.drift_reset_threshold:g}); a "
                "reset fires after "
                f"{DEFAULT_CONFIG.drift_reset_window} consecutive counted sessions below it." + _of
            ),
            static(success_chart(shown, resets))
            if shown["success_rate"].is_not_null().any()
            else mo.md("_No comparison yet: the EMA starts with the first one._"),
            mo.md("**Win rate per project**"),
            static(project_success_chart(success))
            if success["win_rate"].is_not_null().any()
            else mo.md("_No counted comparison yet._"),
        ]
    )
    return overall, per_project, success


@app.cell
def _(db_path):
    features = feature_frames(db_path)
    return (features,)


@app.cell
def _(entity, features, focal):
    samples = drift.sessions_of_entity(features.samples, focal.pairs, entity.value)
    return (samples,)


@app.cell
def _(samples):
    _n = samples.select("session_key").n_unique()
    current = mo.ui.slider(
        1,
        max(2, _n - 1),
        value=min(50, max(1, _n // 4)),
        label="Serving window: latest sessions",
        show_value=True,
    )
    test_choice = mo.ui.dropdown(
        options=["default"] + list(STATTESTS), value="default", label="Drift test"
    )
    return current, test_choice


@app.cell
def _(current, samples, test_choice):
    _test = None if test_choice.value == "default" else test_choice.value
    drift_table = feature_drift(samples, current.value, _test)
    feature_picker = mo.ui.dropdown(
        options=drift_table["feature"].to_list(),
        value=drift_table.sort("statistic", descending=True, nulls_last=True)["feature"][0],
        label="Feature",
    )
    return drift_table, feature_picker


@app.cell
def _(current, drift_table, entity, feature_picker, features, samples, test_choice):
    _registry = pl.DataFrame(
        [
            {
                "test": t.name,
                "name": t.display_name,
                "for": ", ".join(t.kinds),
                "threshold": t.default_threshold,
                "drift when": f"statistic {'<' if t.direction == 'below' else '>'} threshold",
            }
            for t in STATTESTS.values()
        ]
    )
    _drifted = drift_table.filter(pl.col("drifted")).height
    _verdict = (
        f"**{_drifted} of {drift_table.height} features drifted.**"
        if drift_table["reference_rows"].max() and drift_table["current_rows"].max()
        else f"**Nothing to compare yet**: {plural(samples['session_key'].n_unique(), 'session')}"
        " with training candidates, and the test needs sessions on both sides of the window."
    )
    _scope = "" if entity.value is None else f" (of the sessions `{entity.value}` is focal in)"
    mo.vstack(
        [
            mo.md(
                "## Training vs serving features\n"
                f"Every trainable candidate's {N_FEATURES} input features{_scope}: the latest sessions "
                "(serving) against all earlier ones (what the model learned from), judged per "
                "feature "
                f"by a drift test. {_verdict} "
                "The time features (tod_, dow_, moy_) move with the calendar by design; "
                "drift in the memory features (recency, importance, usage, ...) means the "
                "candidates themselves changed."
            ),
            mo.hstack([current, test_choice], justify="start", gap=2),
            table(
                drift_table.sort("drifted", "statistic", descending=True, nulls_last=True),
                page_size=N_FEATURES,
            ),
            feature_picker,
            static(
                distribution_chart(
                    feature_histogram(samples, feature_picker.value, current.value),
                    feature_picker.value,
                )
            ),
            mo.accordion({"Drift tests (registry)": table(_registry)}),
            mo.md(
                "## Signet 0.58's train/serve skew\n"
                "How often Signet 0.58's trainer and its inference path computed each feature "
                "differently from the one definition used here (share of candidate rows and "
                "mean absolute difference)."
            ),
            table(features.skew.drop("index", strict=False), page_size=N_FEATURES),
        ]
    )


if __name__ == "__main__":
    app.run()
