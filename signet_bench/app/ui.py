"""The notebooks' shared display helpers: compact tables and selection-free charts.

marimo ships a chart's data to the browser as a CSV file when the chart is wrapped in
`mo.ui.altair_chart` (plain Altair output inlines it as JSON and refuses more than 5,000 rows
outside the browser), so every chart a notebook shows goes through `static` or carries its
own selection.
"""

from __future__ import annotations

import math
from typing import Any

import altair as alt
import marimo as mo
import polars as pl

__all__ = ["blank_if_missing", "count_axis", "static", "table", "three_decimals"]


def three_decimals(value: float | None) -> str:
    """A table cell's number: three decimals, blank when missing (null or NaN)."""
    return "" if value is None or math.isnan(value) else f"{value:.3f}"


def count_axis(**kw: Any) -> alt.Axis:
    """An axis of counts (sessions, session numbers, steps): whole-number ticks only, so a
    small store's axis reads 0, 1 and not 0.0, 0.5, 1.0."""
    return alt.Axis(format="d", tickMinStep=1, **kw)


def blank_if_missing(value: Any) -> str:
    """A table cell as text, blank when missing (marimo would print `None`); text for every
    cell, as marimo rebuilds the formatted column as one Series of one type."""
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def table(frame: pl.DataFrame, selection: str | None = None, **kw: Any) -> mo.ui.table:
    """A compact table: floats to three decimals, missing values blank (never `None` or
    `nan`), no column summaries."""
    formats = {
        c: three_decimals if t.is_float() else blank_if_missing
        for c, t in frame.schema.items()
        if t.is_float() or frame[c].null_count()
    }
    return mo.ui.table(
        frame, selection=selection, format_mapping=formats, show_column_summaries=False, **kw
    )


def static(chart: Any) -> mo.ui.altair_chart:
    """An Altair chart without selections."""
    return mo.ui.altair_chart(chart, chart_selection=False, legend_selection=False)
