import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="Judge calibration")

with app.setup:
    import html

    import altair as alt
    import marimo as mo
    import polars as pl

    from signet_bench.analysis.queries import calibration as cal
    from signet_bench.analysis.queries.sessions import session_frame
    from signet_bench.analysis.queries.source import WorkbenchBusy, open_store
    from signet_bench.analysis.wording import plural, rank_text
    from signet_bench.app.launch import notebook_args
    from signet_bench.app.ui import static, table
    from signet_bench.config import DEFAULT_CONFIG


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
def _(db_path, labeler, workbench_path):
    con = open_store(db_path)
    sessions = session_frame(con, DEFAULT_CONFIG)
    sample = cal.calibration_sample(
        sessions, cal.read_labels(workbench_path), DEFAULT_CONFIG, labeler=labeler
    )
    return con, sample


@app.cell
def _(db_path, labeler, sample, workbench_path):
    mo.md(
        f"""
        # Judge calibration · `{db_path.name}`
        The continuity judge scores every injected memory; it is the only judge of both the
        predictor and the baseline. Label what **you** think each memory was worth to the
        session, one memory at a time, by key. Each label is stored in `{workbench_path}` as
        **{labeler}** the moment you give it, is never used for training, and labelling a
        memory again replaces your earlier label. {plural(sample.height, "recent session")}
        with a confident judge (≥ {DEFAULT_CONFIG.calibration_min_confidence:g})
        {"is" if sample.height == 1 else "are"} waiting for labels; a session you started
        stays here, with how many of its memories you have labelled (as of opening this page),
        until you have labelled them all.
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
    _options = {cal.picker_label(r): r["session_key"] for r in sample.iter_rows(named=True)}
    session_picker = mo.ui.dropdown(
        options=_options, value=next(iter(_options)), label="Session to label"
    )
    mo.output.replace(session_picker)
    return (session_picker,)


@app.cell
def _(con, labeler, session_picker, workbench_path):
    chosen_key = session_picker.value
    try:
        _labels = cal.read_labels(workbench_path)
    except WorkbenchBusy as _exc:
        mo.stop(True, mo.callout(mo.md(f"{_exc}: pick the session again."), kind="warn"))
    items = cal.label_items(con, chosen_key, _labels, labeler)
    excerpt = cal.transcript_excerpt(con, chosen_key)
    return chosen_key, excerpt, items


@app.cell
def _(items):
    get_cursor, set_cursor = mo.state(
        cal.start_cursor(items["memory_id"].to_list(), items["human_label"].to_list())
    )
    return get_cursor, set_cursor


@app.cell
def _(excerpt, get_cursor, items):
    cursor = get_cursor()
    if cursor.done:
        _card = mo.callout(
            mo.md(
                f"**{cal.progress_text(cursor)}**. Press **B** (or ←) to go back to a memory, "
                "or pick another session above."
            ),
            kind="success",
        )
    else:
        _row = items.row(cursor.position, named=True)
        _mine = cursor.labels[cursor.position]
        _card = mo.vstack(
            [
                mo.md(
                    f"**{cal.progress_text(cursor)}** · Signet ranked it {rank_text(_row['rank'])}"
                ),
                mo.callout(mo.md(_row["content"]), kind="neutral"),
                mo.md("_not labelled yet_" if _mine is None else f"your label: **{_mine:.2f}**"),
            ]
        )
    _transcript = mo.Html(
        f'<pre style="white-space: pre-wrap; margin: 0">{html.escape(excerpt)}</pre>'
    ).style(max_height="28rem", overflow="auto")
    mo.hstack(
        [_card, mo.vstack([mo.md("**Transcript** (what the session was about)"), _transcript])],
        widths=[1, 1],
        align="start",
    )
    return (cursor,)


@app.cell
def _(set_cursor):
    def _button(key: str, label: str) -> mo.ui.button:
        """The button `key` presses: it moves the cursor (the save cell writes any label)."""
        return mo.ui.button(
            label=label,
            keyboard_shortcut=key,
            on_change=lambda _: set_cursor(lambda cursor: cal.press(cursor, key)),
        )

    # Shown once per session, never re-rendered while labelling, so every keystroke finds its
    # button however fast the keys come.
    key_buttons = [_button(k, f"**{k.upper()}** · {t}") for k, t in cal.KEY_NAMES.items()]
    alias_buttons = [_button(k, k) for k in cal.KEYS if k not in cal.KEY_NAMES]
    mo.vstack(
        [
            mo.hstack(key_buttons, justify="start", wrap=True),
            mo.md(
                "Keys: **1**–**5** give the labels above; **S** or → skips; **B**, Backspace "
                "or ← goes back. Keys act while no field or button has the focus: after "
                "picking a session or clicking a button, click an empty spot of the page. "
                "The judge's score shows only once you have labelled a memory, so it cannot "
                "anchor your answer."
            ),
            mo.hstack(alias_buttons).style(display="none"),
        ]
    )
    return alias_buttons, key_buttons


@app.cell
def _(chosen_key, cursor, items, labeler, set_cursor, workbench_path):
    def _waiting(attempt: int) -> None:
        mo.output.replace(
            mo.callout(
                mo.md(f"The workbench is busy (another process is writing it); retry {attempt} …"),
                kind="warn",
            )
        )

    save_status = None
    _label = cal.given_label(cursor)
    _note = mo.md("")
    if _label:
        ((_memory, _level),) = _label.items()
        try:
            _written = cal.save_labels(
                workbench_path, chosen_key, _label, items, labeler, on_wait=_waiting
            )
        except WorkbenchBusy:
            set_cursor(cal.revert_given)  # this cell runs again and says so
        else:
            save_status = {"session": chosen_key, "memory": _memory, "written": _written}
            _judge = items["judge_relevance"][cursor.given.index]
            _versus = "no judge score" if _judge is None else f"judge {_judge:.2f}"
            _note = mo.callout(
                mo.md(f"Saved memory {cursor.given.index + 1}: you {_level:.2f} · {_versus}."),
                kind="success",
            )
    elif cursor.unsaved is not None:
        _note = mo.callout(
            mo.md(
                f"**Not saved** — the workbench stayed busy (another process is writing it), "
                f"so your {cursor.unsaved.level:.2f} for memory {cursor.unsaved.index + 1} was "
                "taken back. It is shown again: press its key once more."
            ),
            kind="danger",
        )
    mo.output.replace(_note)
    return (save_status,)


@app.cell
def _(save_status, workbench_path):
    _ = save_status  # re-read after every save
    try:
        labels = cal.read_labels(workbench_path)
    except WorkbenchBusy as _exc:
        mo.stop(
            True, mo.callout(mo.md(f"{_exc}; the labels show after your next one."), kind="warn")
        )
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
                f"Judge-vs-human MAE over {plural(labels.height, 'label')}: "
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
                    "judge_relevance",
                    "delta",
                ),
                page_size=10,
            )
            if labels.height
            else mo.md("_None yet: the labels you give above are listed here._"),
            mo.hstack(
                [export_button, mo.md(f"written: `{_out}`") if _out else mo.md("")],
                justify="start",
            ),
        ]
    )


if __name__ == "__main__":
    app.run()
