"""The notebooks' shared display helpers: compact tables and selection-free charts.

marimo ships a chart's data to the browser as a CSV file when the chart is wrapped in
`mo.ui.altair_chart` (plain Altair output inlines it as JSON and refuses more than 5,000 rows
outside the browser), so every chart a notebook shows goes through `static` or carries its
own selection.
"""

from __future__ import annotations

from typing import Any

import marimo as mo
import polars as pl

__all__ = ["static", "table", "three_decimals"]


def three_decimals(value: float | None) -> str:
    """A table cell's number: three decimals, blank when missing."""
    return "" if value is None else f"{value:.3f}"


def table(frame: pl.DataFrame, selection: str | None = None, **kw: Any) -> mo.ui.table:
    """A compact table: floats to three decimals, no column summaries."""
    floats = {c: three_decimals for c, t in frame.schema.items() if t.is_float()}
    return mo.ui.table(
        frame, selection=selection, format_mapping=floats, show_column_summaries=False, **kw
    )


def static(chart: Any) -> mo.ui.altair_chart:
    """An Altair chart without selections."""
    return mo.ui.altair_chart(chart, chart_selection=False, legend_selection=False)
