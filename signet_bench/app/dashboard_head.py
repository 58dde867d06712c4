"""The dashboard's head: its title and first chart, the judge's sessions per week. Kept apart
from `app.dashboard_panels`, whose imports (every query module of the page) the first chart
would otherwise wait for: the notebook imports them after the head is drawn.
"""

from __future__ import annotations

import marimo as mo
import polars as pl

from signet_bench.app.dashboard_charts import weekly_chart
from signet_bench.app.ui import static
from signet_bench.config import DEFAULT_CONFIG

__all__ = ["first_chart"]


def first_chart(store_name: str, weekly: pl.DataFrame) -> mo.Html:
    """The page's title and its first chart: the judge's sessions per week
    (`analysis.queries.sessions.weekly_sessions`)."""
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
