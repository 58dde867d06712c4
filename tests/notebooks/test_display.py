"""The pages' words and charts without a browser: plurals and rank origin (`analysis.wording`),
blank cells (`app.ui`), and chart specs whose domains hold their data (`app.dashboard_charts`):
no non-finite value reaches Vega, no layer is left without data, counts have whole-number
axes."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import polars as pl
import pytest

from signet_bench.analysis.wording import plural, rank_text
from signet_bench.app.dashboard_charts import project_chart, training_chart, win_loss_chart
from signet_bench.app.ui import blank_if_missing, table, three_decimals


@pytest.mark.parametrize(
    ("n", "noun", "many", "text"),
    [
        (1, "session", None, "1 session"),
        (0, "session", None, "0 sessions"),
        (2, "memory", None, "2 memories"),
        (1, "memory", None, "1 memory"),
        (3, "day", None, "3 days"),
        (1122, "pick", None, "1,122 picks"),
        (2, "stretch", "stretches", "2 stretches"),
    ],
)
def test_plural(n, noun, many, text):
    assert plural(n, noun, many) == text


def test_ranks_count_from_one():
    assert rank_text(0) == "1" and rank_text(9) == "10" and rank_text(None) == "-"


def test_missing_cells_are_blank():
    assert three_decimals(None) == "" and three_decimals(math.nan) == ""
    assert three_decimals(0.12345) == "0.123"
    assert blank_if_missing(None) == "" and blank_if_missing("x") == "x"
    assert blank_if_missing(4013) == "4,013" and blank_if_missing(True) == "True"


def test_a_table_with_missing_values_of_every_type_shows_them_blank():
    """marimo rebuilds each formatted column as one Series: every cell of a column with a
    missing value is text, the missing ones blank."""
    at = datetime(2026, 3, 1, tzinfo=UTC)
    frame = pl.DataFrame(
        {
            "n": [1, None],
            "ok": [True, None],
            "name": ["a", None],
            "at": [at, None],
            "x": [0.5, None],
            "none": [None, None],
            "full": [3, 4],
        }
    )
    shown = table(frame)
    rows = shown._manager.apply_formatting(shown._format_mapping).collect()  # as marimo sends it
    assert rows.row(1) == ("", "", "", "", "", "", 4)
    assert rows.row(0)[:3] == ("1", "True", "a") and rows.row(0)[4] == "0.500"


def _datasets(spec: dict) -> list[list[dict]]:
    return list(spec.get("datasets", {}).values())


def _layers(spec: dict) -> list[dict]:
    """Every leaf layer of a (nested) layer spec."""
    out = []
    for layer in spec.get("layer", []):
        out += _layers(layer) if "layer" in layer else [layer]
    return out


def _steps(losses: list[float]) -> pl.DataFrame:
    at = datetime(2026, 3, 1, tzinfo=UTC)
    return pl.DataFrame(
        {
            "step": list(range(1, len(losses) + 1)),
            "run": [1, 2] + [3] * (len(losses) - 2),
            "model_version": [1, 2] + [3] * (len(losses) - 2),
            "loss": losses,
            "accepted": [True] * len(losses),
            "created_at": [at] * len(losses),
        }
    )


def test_the_loss_chart_holds_only_finite_losses():
    """A run that trained nothing logs +inf: it is left off the curve, so the y-domain is the
    finite losses' and Vega has no infinite extent to warn about; steps read as integers."""
    markers = pl.DataFrame(schema={"step": pl.Int64, "n": pl.UInt32})
    spec = training_chart(_steps([math.inf, math.inf, 0.9, 0.7, 0.5]), markers).to_dict()
    losses = [row["loss"] for data in _datasets(spec) for row in data if "loss" in row]
    assert losses and all(math.isfinite(v) for v in losses) and max(losses) == 0.9
    layers = _layers(spec)
    assert all(layer["mark"]["type"] != "rule" for layer in layers)  # no resets: no rule layer
    x = layers[0]["encoding"]["x"]
    assert x["axis"]["format"] == "d" and x["axis"]["tickMinStep"] == 1


def _sessions(resets: bool) -> tuple[pl.DataFrame, pl.DataFrame]:
    at = datetime(2026, 3, 1, tzinfo=UTC)
    sessions = pl.DataFrame(
        {
            "n": [1, 2],
            "started_at": [at, at],
            "project": ["p", "p"],
            "outcome": ["predictor won", "tie"],
            "counted": [True, False],
            "margin": [0.0, 0.0],
            "predictor_ndcg": [0.5, 0.5],
            "baseline_ndcg": [0.5, 0.5],
            "cosine_ndcg": [None, None],
            "confidence": [0.9, 0.9],
            "success_rate": [0.5, 0.5],
        },
        schema_overrides={"n": pl.UInt32, "cosine_ndcg": pl.Float64},
    )
    return sessions, pl.DataFrame({"n": [2] if resets else []}, schema={"n": pl.UInt32})


@pytest.mark.parametrize("resets", [False, True])
def test_the_timeline_draws_reset_layers_only_with_resets(resets):
    """Without a drift reset the timeline has no reset layer (an empty one has an infinite
    domain); its session axis is whole numbers and its margin axis never reads 0.000000."""
    spec = win_loss_chart(*_sessions(resets)).to_dict()
    layers = _layers(spec)
    rules = [layer for layer in layers if layer["mark"]["type"] == "rule"]
    assert len(rules) == (2 if resets else 1)  # the zero line, and the resets' rule
    dots = next(layer for layer in layers if layer["mark"]["type"] == "point")
    assert dots["encoding"]["x"]["axis"]["format"] == "d"
    assert dots["encoding"]["y"]["axis"]["format"] == ".2~f"


def test_the_project_chart_sorts_its_layers_alike():
    """Both layers name the same explicit order, highest win rate first."""
    projects = pl.DataFrame(
        {
            "project": ["a", "b", "c"],
            "sessions": [3, 3, 3],
            "counted": [2, 2, 0],
            "win_rate": [0.25, 0.75, None],
        }
    )
    layers = _layers(project_chart(projects).to_dict())
    sorts = [layer["encoding"]["y"]["sort"] for layer in layers if "y" in layer["encoding"]]
    assert sorts == [["b", "a"], ["b", "a"]]
