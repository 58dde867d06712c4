import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="Benchmark explorer")

with app.setup:
    import altair as alt
    import marimo as mo
    import polars as pl

    from signet_bench.analysis.queries.training import bench_rows
    from signet_bench.analysis.wording import plural
    from signet_bench.app.launch import notebook_args
    from signet_bench.app.ui import static, table


@app.function
def runs_chart(rows: pl.DataFrame) -> alt.Chart:
    """One small chart per result (name · metric), its value in each run side by side."""
    frame = rows.with_columns(
        pl.format("{} · {} ({})", "name", "metric", "unit").alias("result"),
        pl.format("{}: {}", "bench", "run").alias("bench run"),
    )
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("bench run:N", sort=None, title=None, axis=alt.Axis(labelAngle=-30)),
            y=alt.Y("value:Q", title=None),
            color=alt.Color("bench:N", legend=alt.Legend(orient="top")),
            tooltip=[
                "bench",
                "run",
                "name",
                "metric",
                alt.Tooltip("value:Q", format=".4g"),
                "unit",
                "n",
            ],
        )
        .properties(width=220, height=120)
        .facet(facet=alt.Facet("result:N", title=None), columns=3)
        .resolve_scale(y="independent")
    )


@app.cell
def _():
    _args = notebook_args(mo.cli_args())
    workbench_path, bench_dir = _args.workbench, _args.bench_dir
    return bench_dir, workbench_path


@app.cell
def _(bench_dir, workbench_path):
    results = bench_rows(workbench_path, bench_dir)
    return (results,)


@app.cell
def _(bench_dir, results, workbench_path):
    _benches = sorted(results["bench"].unique().to_list())
    bench_filter = mo.ui.multiselect(options=_benches, value=_benches, label="Benchmarks")
    mo.output.replace(
        mo.vstack(
            [
                mo.md(
                    f"""
                    # Benchmark explorer
                    The results of `signet-bench bench` runs (their `--json` reports) side by side:
                    the reports recorded in `{workbench_path}` and the JSON files in
                    `{bench_dir or "(no folder given: --bench-dir DIR)"}`. Each report is one
                    run; the same result name and metric line up across runs.
                    """
                ),
                bench_filter,
            ]
        )
    )
    return (bench_filter,)


@app.cell
def _(bench_filter, results):
    chosen = results.filter(pl.col("bench").is_in(bench_filter.value))
    mo.stop(
        chosen.height == 0,
        mo.md("_No benchmark results yet: run `signet-bench bench NAME --json FILE`._"),
    )
    side_by_side = chosen.with_columns(
        pl.format("{}: {}", "bench", "run").alias("run_label")
    ).pivot(
        on="run_label",
        index=["bench", "name", "metric", "unit"],
        values="value",
        aggregate_function="first",
    )
    mo.output.replace(
        mo.vstack(
            [
                mo.md(
                    f"## {plural(chosen.select('bench', 'run').n_unique(), 'run')}, "
                    f"{plural(chosen.height, 'result')}"
                ),
                static(runs_chart(chosen)),
                mo.md("**Side by side** (one column per run)"),
                table(side_by_side, page_size=20),
            ]
        )
    )
    return (side_by_side,)


if __name__ == "__main__":
    app.run()
