import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="Judge calibration")

with app.setup:
    import altair as alt
    import marimo as mo
    import polars as pl

    from signet_bench.analysis.queries import calibration as cal
    from signet_bench.analysis.queries.sessions import session_frame
    from signet_bench.analysis.queries.source import WorkbenchBusy, open_store
    from signet_bench.app.launch import notebook_args
    from signet_bench.app.ui import static, table
    from signet_bench.config import DEFAULT_CONFIG

    SKIP = "skip"
    LEVEL_TEXTS = [SKIP] + [f"{level:.2f}" for level in cal.LABEL_LEVELS]


@app.function
def mae_chart(mae: pl.DataFrame, threshold: float) -> alt.LayerChart:
    """Judge-vs-human MAE per labelling day and the running MAE, against the flag threshold."""
    base = alt.Chart(mae).encode(x=alt.X("day:T", title="labelling day"))
    daily = base.mark_circle(size=60, color="#8a8f98").encode(
        y=alt.Y("mae:Q", title="mean |human − judge|"),
        tooltip=["day:T", "labeler", "labels", alt.Tooltip("mae:Q", format=".3f")],
    )
    running = base.mark_line(point=True, color="#2f6fdf").encode(y="running_mae:Q")
    limit = (
        alt.Chart(pl.DataFrame({"threshold": [threshold]}))
        .mark_rule(color="#d1453b", strokeDash=[6, 4])
        .encode(y="threshold:Q")
    )
    return alt.layer(daily, running, limit).properties(height=200, width="container")


@app.cell
def _():
    _args = notebook_args(mo.cli_args())
    db_path, workbench_path, labeler = _args.db, _args.workbench, _args.labeler
    return db_path, labeler, workbench_path


@app.cell
def _(db_path, workbench_path):
    con = open_store(db_path)
    sessions = session_frame(con, DEFAULT_CONFIG)
    labels_at_start = cal.read_labels(workbench_path)
    sample = cal.calibration_sample(sessions, labels_at_start, DEFAULT_CONFIG)
    return con, labels_at_start, sample


@app.cell
def _(db_path, labeler, sample, workbench_path):
    mo.md(
        f"""
        # Judge calibration · `{db_path.name}`
        The continuity judge scores every injected memory; it is the only judge of both the
        predictor and the baseline. Label what **you** think each memory was worth to the
        session (0 = irrelevant … 1 = exactly what was needed). Labels are stored in
        `{workbench_path}` as **{labeler}**, are never used for training, and relabelling a
        memory replaces your earlier label. {sample.height} recent sessions with a confident
        judge (≥ {DEFAULT_CONFIG.calibration_min_confidence:g}) are waiting for labels.
        """
    )


@app.cell
def _(sample):
    mo.stop(
        sample.height == 0,
        mo.callout(
            mo.md(
                "No session to label yet: this needs judged sessions with confidence "
                f"≥ {DEFAULT_CONFIG.calibration_min_confidence:g} that injected memories."
            ),
            kind="info",
        ),
    )
    _options = {
        f"#{r['n']} · {r['project']} · {r['started_at']:%Y-%m-%d %H:%M} · "
        f"confidence {r['confidence']:.2f}": r["session_key"]
        for r in sample.iter_rows(named=True)
    }
    session_picker = mo.ui.dropdown(
        options=_options, value=next(iter(_options)), label="Session to label"
    )
    mo.output.replace(session_picker)
    return (session_picker,)


@app.cell
def _(con, labeler, labels_at_start, session_picker):
    chosen_key = session_picker.value
    items = cal.label_items(con, chosen_key, labels_at_start, labeler)
    excerpt = cal.transcript_excerpt(con, chosen_key)
    return chosen_key, excerpt, items


@app.cell
def _(excerpt, items):
    _prefill = cal.levels_for(items["human_label"].to_list())
    _rows = [
        f"**{i + 1}.** {content}\n\nyour label: {{m{i}}}"
        for i, content in enumerate(items["content"].to_list())
    ]
    _fields = {
        f"m{i}": mo.ui.dropdown(options=LEVEL_TEXTS, value=_prefill[i]) for i in range(items.height)
    }
    label_form = (
        mo.md("\n\n---\n\n".join(_rows))
        .batch(**_fields)
        .form(submit_button_label="Save labels", bordered=True)
    )
    mo.vstack(
        [
            mo.accordion({"Transcript excerpt": mo.md(f"```\n{excerpt}\n```")}),
            mo.md(
                f"### Injected memories ({items.height})\nThe judge's scores stay hidden until "
                "you save, so they cannot anchor your answer."
            ),
            label_form,
        ]
    )
    return (label_form,)


@app.cell
def _(chosen_key, items, label_form, labeler, workbench_path):
    def _waiting(attempt: int) -> None:
        mo.output.replace(
            mo.callout(
                mo.md(f"The workbench is busy (another process is writing it); retry {attempt} …"),
                kind="warn",
            )
        )

    save_status = None
    if label_form.value is None:
        _note = mo.md("_Choose a label per memory (or leave “skip”) and press **Save labels**._")
    else:
        _chosen = {
            items["memory_id"][int(name[1:])]: None if text == SKIP else float(text)
            for name, text in label_form.value.items()
        }
        try:
            _written = cal.save_labels(
                workbench_path, chosen_key, _chosen, items, labeler, on_wait=_waiting
            )
            save_status = {"session": chosen_key, "written": _written}
            _compare = items.with_columns(
                pl.col("memory_id").replace_strict(_chosen, default=None).alias("your label")
            ).filter(pl.col("your label").is_not_null())
            _compare = _compare.select(
                pl.col("content").str.slice(0, 90).alias("memory"),
                "your label",
                pl.col("scorer_label").round(3).alias("judge"),
                (pl.col("your label") - pl.col("scorer_label")).round(3).alias("you − judge"),
            )
            _note = mo.vstack(
                [
                    mo.callout(
                        mo.md(f"Saved {_written} label(s) for this session in the workbench."),
                        kind="success",
                    ),
                    table(_compare),
                ]
            )
        except WorkbenchBusy as _exc:
            _note = mo.callout(
                mo.md(
                    f"**Not saved** — {_exc}. Your choices are still in the form: press "
                    "**Save labels** again."
                ),
                kind="danger",
            )
    mo.output.replace(_note)
    return (save_status,)


@app.cell
def _(save_status, workbench_path):
    _ = save_status  # re-read after every save
    labels = cal.read_labels(workbench_path)
    mae = cal.mae_over_time(labels, DEFAULT_CONFIG)
    return labels, mae


@app.cell
def _(labels, mae):
    _limit = DEFAULT_CONFIG.calibration_mae_threshold
    if mae.height == 0:
        _summary = mo.md("_No labels yet._")
    else:
        _last = mae.row(-1, named=True)
        _flag = _last["flagged"]
        _summary = mo.callout(
            mo.md(
                f"Judge-vs-human MAE over all {labels.height} labels: "
                f"**{_last['running_mae']:.3f}**"
                + (
                    f" — above {_limit:g}: the judge disagrees with people; consider "
                    "refining its prompt."
                    if _flag
                    else f" (within {_limit:g})."
                )
            ),
            kind="danger" if _flag else "success",
        )
    mo.vstack(
        [
            mo.md(
                "## Judge vs human over time\nGrey dots: the mean |human − judge| of each "
                "labelling day; blue line: over every label so far; dashed red line: the "
                f"{_limit:g} threshold above which the judge is flagged."
            ),
            _summary,
            static(mae_chart(mae, _limit)) if mae.height else mo.md(""),
        ]
    )


@app.cell
def _():
    export_button = mo.ui.run_button(label="Export labels to Parquet")
    return (export_button,)


@app.cell
def _(export_button, labels, workbench_path):
    _out = None
    if export_button.value and workbench_path is not None:
        _out = cal.export_labels(
            workbench_path, workbench_path.parent / "calibration_labels.parquet"
        )
    mo.vstack(
        [
            mo.md(f"## All labels ({labels.height})"),
            table(
                labels.sort("labeled_at", descending=True).select(
                    "labeled_at",
                    "labeler",
                    pl.col("session_key").str.slice(0, 8).alias("session"),
                    pl.col("memory_id").str.slice(0, 8).alias("memory"),
                    "human_label",
                    "scorer_label",
                    "delta",
                ),
                page_size=10,
            ),
            mo.hstack(
                [export_button, mo.md(f"written: `{_out}`") if _out else mo.md("")],
                justify="start",
            ),
        ]
    )


if __name__ == "__main__":
    app.run()
