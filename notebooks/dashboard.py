import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full", app_title="Signet predictor")

with app.setup:
    import marimo as mo

    from signet_bench.analysis.queries import dashboard as dash
    from signet_bench.analysis.queries import inspector
    from signet_bench.analysis.queries.sessions import weekly_sessions
    from signet_bench.analysis.queries.source import open_store
    from signet_bench.app import dashboard_panels as panels
    from signet_bench.app.launch import notebook_args
    from signet_bench.app.priority import yield_to_interface
    from signet_bench.config import DEFAULT_CONFIG


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
    panels.first_chart(db_path.name, weekly_sessions(con, DEFAULT_CONFIG))


@app.cell
def _(bench_dir, con, db_path, workbench_path):
    # The first chart is sent: the session's reads from here on yield to the browser drawing it.
    yield_to_interface(con, mo.app_meta().mode)
    pending_details = dash.start_details(db_path, workbench_path)
    data = dash.load_dashboard(con, db_path, workbench_path, DEFAULT_CONFIG, bench_dir)
    return data, pending_details


@app.cell
def _(data):
    project_filter, date_filter = panels.filters(data.sessions)
    return date_filter, project_filter


@app.cell
def _(data, date_filter, project_filter):
    _since, _until = date_filter.value if date_filter is not None else (None, None)
    view = dash.dashboard_view(data, project_filter.value, _since, _until, DEFAULT_CONFIG)
    return (view,)


@app.cell
def _(data, date_filter, project_filter, view):
    _shown = [project_filter] + ([date_filter] if date_filter is not None else [])
    panels.overview(data, view, _shown)


@app.cell
def _(details):
    panels.label_sources_line(details)


@app.cell
def _(data, view):
    mo.stop(view.status.comparing)
    panels.cold_start(data, view)


@app.cell
def _(data, view):
    mo.stop(not view.status.comparing)
    panels.status(data, view)


@app.cell
def _(view):
    mo.stop(not view.status.comparing)
    timeline, session_table = panels.timeline_widgets(view)
    return session_table, timeline


@app.cell
def _(session_table, timeline):
    panels.timeline(timeline, session_table)


@app.cell
def _(session_table, timeline, view):
    mo.stop(not view.status.comparing)
    chosen_session = panels.chosen_session(view, timeline, session_table)
    return (chosen_session,)


@app.cell
def _(chosen_session, con, data, view):
    mo.stop(chosen_session is None)
    detail = inspector.session_detail(con, chosen_session, DEFAULT_CONFIG)
    events = inspector.session_events(con, detail, data.runs, view.resets)
    return detail, events


@app.cell
def _(detail, events):
    panels.inspector(detail, events)


@app.cell
def _(view):
    mo.stop(not view.status.comparing)
    panels.training(view)


@app.cell
def _(lower, view):
    mo.stop(not view.status.comparing)
    panels.injections(lower)


@app.cell
def _(details, lower, view):
    panels.slices(details, lower, view)


@app.cell
def _(details):
    panels.label_sources(details)


@app.cell
def _(view):
    panels.errors(view)


@app.cell
def _(pending_details):
    # Last in the file: every panel above is drawn while these reads finish apart.
    details = pending_details.result()
    return (details,)


@app.cell
def _(details, view):
    lower = dash.details_view(details, view)
    return (lower,)


if __name__ == "__main__":
    app.run()
