"""Training, scoring latency and errors: the training curve (with model versions, drift resets
and canary figures), the latency sparkline and the predictor's error feed.

Training runs come from the store's `predictor_training_log` (what Signet 0.58's daemon
records), joined with the workbench's `training_runs` for the per-epoch loss curve and the
gate's verdict when the run was made here; a run the workbench alone records (`signet-bench
train`, or any run on a current store, which keeps no training log) is a run of its own. Runs
the gates rejected are listed apart from errors (`gate_rejections`): a rejection is the gate
doing its work. Scoring latencies come from the benchmark runs recorded in the
workbench (rows named `score_*` in milliseconds): the store does not record them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import polars as pl

from signet_bench.analysis.queries.source import read_workbench, store_has
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.learn.serving import PROMPT_KEY, ServingChoice, hook_choices
from signet_bench.store.duck import ts_expr

__all__ = [
    "HOLDOUT_COLUMNS",
    "bench_rows",
    "error_feed",
    "gate_rejections",
    "latency_series",
    "loss_steps",
    "reset_markers",
    "served_by_hook",
    "served_now",
    "training_runs",
]

_LOG_SQL = """
SELECT id, model_version::BIGINT AS model_version, loss::DOUBLE AS loss,
       sample_count::BIGINT AS sample_count, duration_ms::DOUBLE AS duration_ms,
       canary_ndcg::DOUBLE AS canary_ndcg, canary_ndcg_delta::DOUBLE AS canary_ndcg_delta,
       canary_score_variance::DOUBLE AS canary_score_variance,
       canary_topk_churn::DOUBLE AS canary_topk_churn, {created} AS created_at
FROM store.predictor_training_log
"""
_RUNS_SQL = "SELECT * FROM training_runs"  # by name below: older files lack `holdout`
_RUNS_SCHEMA = {
    "id": pl.String,
    "store_path": pl.String,
    "started_at": pl.Datetime("us"),
    "sample_count": pl.Int64,
    "duration_ms": pl.Float64,
    "canary_ndcg": pl.Float64,
    "canary_ndcg_delta": pl.Float64,
    "canary_score_variance": pl.Float64,
    "canary_topk_overlap": pl.Float64,
    "loss_curve": pl.String,
    "gate_passed": pl.Boolean,
    "gate_reason": pl.String,
    "epochs": pl.Int64,
    "holdout": pl.String,
    "serving": pl.String,
}
# The held-out verdict of a run (`learn.publish.holdout_record`), one column per figure.
HOLDOUT_COLUMNS = {
    "heldout_method": ("method", pl.String),
    "heldout_sessions": ("sessions", pl.Int64),
    "heldout_ndcg": ("candidate", pl.Float64),
    "heldout_served_ndcg": ("served", pl.Float64),
    "heldout_comparator": ("comparator", pl.String),
    "heldout_bar": ("bar", pl.Float64),
    "heldout_lead_se": ("lead_evidence", pl.Float64),
    "heldout_lead_needed": ("evidence_needed", pl.Float64),
    "heldout_demoted_to": ("demoted_to", pl.String),
}

_LOG_SCHEMA = {
    "id": pl.String,
    "model_version": pl.Int64,
    "loss": pl.Float64,
    "sample_count": pl.Int64,
    "duration_ms": pl.Float64,
    "canary_ndcg": pl.Float64,
    "canary_ndcg_delta": pl.Float64,
    "canary_score_variance": pl.Float64,
    "canary_topk_churn": pl.Float64,
    "created_at": pl.Datetime("us"),
}


def training_runs(
    con: duckdb.DuckDBPyConnection, workbench: str | Path | None, store: str | Path | None = None
) -> pl.DataFrame:
    """One row per training run, oldest first: the log's columns (created_at in UTC), `run` (1-
    based), the workbench's loss curve (list of per-epoch losses, empty when unknown), gate
    verdict and reason, and `accepted` (the gate passed; without a workbench record, a run
    whose model version is new). Runs only the workbench records are added (`_own_runs`: of
    `store`, when named), their model version counting the accepted runs."""
    if store_has(con, "predictor_training_log"):
        log = con.sql(_LOG_SQL.format(created=ts_expr("created_at"))).pl()
    else:
        log = pl.DataFrame(schema=_LOG_SCHEMA)
    runs = _workbench_runs(workbench).filter(~_base_put_in_place())
    own = _own_runs(runs.join(log, on="id", how="anti"), store, log)
    frame = (
        pl.concat([log, own])
        .join(runs.select(*_JOINED), on="id", how="left")
        .with_columns(pl.col("created_at").dt.replace_time_zone("UTC"))
        .sort("created_at", "id")
        .with_row_index("run", offset=1)
    )
    new_version = pl.col("model_version") > pl.col("model_version").shift(1).fill_null(0)
    curves = [_curve(t) for t in frame["loss_curve"].to_list()]
    return frame.with_columns(
        pl.Series("loss_curve", curves, dtype=pl.List(pl.Float64)),
        pl.coalesce(pl.col("gate_passed"), new_version).alias("accepted"),
        *_holdout_series(frame["holdout"].to_list()),
        *_serving_series(frame["serving"].to_list()),
    ).drop("holdout", "serving")


_JOINED = ("id", "loss_curve", "gate_passed", "gate_reason", "epochs", "holdout", "serving")


def _of_store(paths: pl.Series, store: str | Path | None) -> pl.Series:
    """Whether each run's `store_path` is `store` (the same file, or a file of its name: a
    store copied with its workbench); every run when `store` is None or a run names none."""
    if store is None:
        return pl.Series([True] * paths.len(), dtype=pl.Boolean)
    target = Path(store)
    try:
        target = target.resolve()
    except OSError:
        pass
    keep = [p is None or Path(p) == target or Path(p).name == target.name for p in paths]
    return pl.Series(keep, dtype=pl.Boolean)


def _own_runs(runs: pl.DataFrame, store: str | Path | None, log: pl.DataFrame) -> pl.DataFrame:
    """The workbench's runs of `store` that the store's log does not hold, in the log's
    columns: the final loss is the curve's last, the model version counts the accepted runs
    after the log's last version."""
    runs = runs.filter(_of_store(runs["store_path"], store)).sort("started_at", "id")
    base = int(log["model_version"].max() or 0) if log.height else 0
    finals = [(_curve(t) or [None])[-1] for t in runs["loss_curve"].to_list()]
    version = base + pl.col("gate_passed").fill_null(False).cast(pl.Int64).cum_sum()
    return runs.with_columns(
        pl.Series("loss", finals, dtype=pl.Float64),
        version.alias("model_version"),
        pl.col("started_at").alias("created_at"),
        (1.0 - pl.col("canary_topk_overlap")).alias("canary_topk_churn"),
    ).select(pl.col(c).cast(t) for c, t in _LOG_SCHEMA.items())


def _workbench_runs(workbench: str | Path | None) -> pl.DataFrame:
    """The workbench's training runs with the columns the curve, the verdicts and a run of
    its own need (NULL where an older workbench file lacks one)."""
    runs = read_workbench(workbench, _RUNS_SQL)
    if runs.height == 0:
        return pl.DataFrame(schema=_RUNS_SCHEMA)
    runs = runs.rename({"run_id": "id"})
    return runs.select(
        pl.col(c).cast(t) if c in runs.columns else pl.lit(None, dtype=t).alias(c)
        for c, t in _RUNS_SCHEMA.items()
    )


def _holdout_series(texts: list[str | None]) -> list[pl.Series]:
    """The held-out verdicts as columns (`HOLDOUT_COLUMNS`), NULL for a run without one."""
    parsed = []
    for text in texts:
        try:
            parsed.append(json.loads(text) if text else {})
        except ValueError:
            parsed.append({})
    return [
        pl.Series(name, [d.get(key) for d in parsed], dtype=dtype)
        for name, (key, dtype) in HOLDOUT_COLUMNS.items()
    ]


def _serving_series(texts: list[str | None]) -> list[pl.Series]:
    """Which model each run serves at session start ("base", "per-user" or "free",
    `served_model`) and why, one sentence with the figures (`served_why`), and the same at the
    user's prompts (`prompt_served_model`, `prompt_served_why`: where the run judged prompts on
    their own, `learn.serving`); NULL for a run that recorded no choice."""
    hooks: list[dict[str, ServingChoice]] = []
    for text in texts:
        try:
            hooks.append(hook_choices(json.loads(text)) if text else {})
        except (ValueError, KeyError, TypeError, AttributeError):
            hooks.append({})
    start = [h.get("session_start") for h in hooks]
    prompt = [h.get(PROMPT_KEY) for h in hooks]
    return [
        pl.Series("served_model", [c and c.served for c in start], dtype=pl.String),
        pl.Series("served_why", [c and c.sentence() for c in start], dtype=pl.String),
        pl.Series("prompt_served_model", [c and c.served for c in prompt], dtype=pl.String),
        pl.Series("prompt_served_why", [c and c.sentence() for c in prompt], dtype=pl.String),
    ]


def _base_put_in_place() -> pl.Expr:
    """The workbench rows that put the shipped base in place before any session was trained
    on (`learn.publish.publish_base`): a record of the served model, not a training."""
    return (pl.col("gate_reason") == "base") & (pl.col("sample_count") == 0)


def served_now(workbench: str | Path | None) -> str | None:
    """Which model serves at session start now and why, in one sentence
    (`ServingChoice.sentence`): the choice of the newest accepted run of the workbench that
    recorded one; None when none did."""
    return served_by_hook(workbench).get("session_start")


def served_by_hook(workbench: str | Path | None) -> dict[str, str]:
    """Which model serves at each hook now and why, one sentence each: "session_start" and,
    where the newest accepted run judged the prompts on their own, `PROMPT_KEY` (before that,
    the prompts are served session start's model); empty when no run recorded a choice."""
    runs = _workbench_runs(workbench)
    chosen = runs.filter(pl.col("gate_passed").fill_null(False) & pl.col("serving").is_not_null())
    if chosen.height == 0:
        return {}
    newest = chosen.sort("started_at", "id")["serving"][-1:].to_list()
    series = _serving_series(newest)
    out = {"session_start": series[1][0], PROMPT_KEY: series[3][0]}
    return {hook: why for hook, why in out.items() if why is not None}


def _curve(text: str | None) -> list[float]:
    if not text:
        return []
    try:
        values = json.loads(text)
    except ValueError:
        return []
    return [float(v) if v is not None else math.nan for v in values]


def loss_steps(runs: pl.DataFrame) -> pl.DataFrame:
    """The training curve: one point per epoch of every run (`step` counts epochs over all
    runs), or per run (its final loss) when the per-epoch curve is unknown. Columns: step, run,
    model_version, loss, accepted, created_at."""
    rows = []
    step = 0
    for r in runs.iter_rows(named=True):
        curve = r["loss_curve"] or ([r["loss"]] if r["loss"] is not None else [])
        for loss in curve:
            step += 1
            rows.append((step, r["run"], r["model_version"], loss, r["accepted"], r["created_at"]))
    schema = {
        "step": pl.Int64,
        "run": pl.Int64,
        "model_version": pl.Int64,
        "loss": pl.Float64,
        "accepted": pl.Boolean,
        "created_at": pl.Datetime("us", "UTC"),
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def reset_markers(steps: pl.DataFrame, resets: pl.DataFrame) -> pl.DataFrame:
    """Where each drift reset falls on the training curve: the first step of the first run
    made at or after the reset's comparison (the reset's retrain). Columns: step, n, at."""
    if steps.height == 0 or resets.height == 0:
        return pl.DataFrame(
            schema={"step": pl.Int64, "n": pl.UInt32, "at": pl.Datetime("us", "UTC")}
        )
    firsts = steps.group_by("run").agg(pl.col("step").min(), pl.col("created_at").first())
    firsts = firsts.sort("created_at")
    marks = resets.select("n", pl.col("compared_at").alias("at")).sort("at")
    return (
        marks.join_asof(firsts, left_on="at", right_on="created_at", strategy="forward")
        .filter(pl.col("step").is_not_null())
        .select("step", "n", "at")
    )


def bench_rows(workbench: str | Path | None, bench_dir: str | Path | None = None) -> pl.DataFrame:
    """Every benchmark result recorded in the workbench (`bench_runs`) and in the benchmark
    JSON files of `bench_dir`, one row per result: source, bench, run (label or file name),
    created_at, name, metric, value, unit, n. A report found in both counts once."""
    docs: list[tuple[str, str, object, dict]] = []
    recorded = read_workbench(workbench, "SELECT id, bench, created_at, json FROM bench_runs")
    seen = set()
    for r in recorded.iter_rows(named=True):
        doc = json.loads(r["json"])
        seen.add(json.dumps(doc, sort_keys=True))
        docs.append(("workbench", doc.get("label") or r["id"][:8], r["created_at"], doc))
    for path in sorted(Path(bench_dir).glob("*.json")) if bench_dir else ():
        doc = json.loads(path.read_text())
        if json.dumps(doc, sort_keys=True) in seen or not isinstance(doc, dict):
            continue
        docs.append((str(path), doc.get("label") or path.stem, None, doc))
    rows = [
        {
            "source": source,
            "bench": str(doc.get("bench", "?")),
            "run": str(label),
            "created_at": created,
            "name": str(res.get("name")),
            "metric": str(res.get("metric")),
            "value": float(res.get("value", math.nan)),
            "unit": str(res.get("unit", "")),
            "n": res.get("n"),
        }
        for source, label, created, doc in docs
        for res in doc.get("results", [])
    ]
    schema = {
        "source": pl.String,
        "bench": pl.String,
        "run": pl.String,
        "created_at": pl.Datetime("us"),
        "name": pl.String,
        "metric": pl.String,
        "value": pl.Float64,
        "unit": pl.String,
        "n": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema)


def latency_series(bench: pl.DataFrame, cfg: PredictorConfig = DEFAULT_CONFIG) -> pl.DataFrame:
    """Scoring latency per recorded benchmark run (rows named `score_*` in ms), oldest first,
    with a colour per run: red over `score_timeout_ms`, yellow above `latency_warning_share`
    of it, else green (docs/specification.md §9.5). Columns: run, name, metric, ms, color."""
    timeout = cfg.score_timeout_ms
    lat = bench.filter(pl.col("name").str.starts_with("score_") & (pl.col("unit") == "ms"))
    return lat.select(
        "run",
        "created_at",
        "name",
        "metric",
        pl.col("value").alias("ms"),
        pl.when(pl.col("value") > timeout)
        .then(pl.lit("red"))
        .when(pl.col("value") > timeout * cfg.latency_warning_share)
        .then(pl.lit("yellow"))
        .otherwise(pl.lit("green"))
        .alias("color"),
    )


def error_feed(runs: pl.DataFrame) -> pl.DataFrame:
    """The predictor's recent errors the store and workbench record (docs/specification.md §9.3):
    training runs whose loss diverged (`predictor_train_failure`), newest first. A run the gates
    rejected is no error (`gate_rejections`); sidecar timeouts and crashes live in the daemon's
    error ring, not in the store."""
    if runs.height == 0:
        return pl.DataFrame(
            schema={"at": pl.Datetime("us", "UTC"), "kind": pl.String, "detail": pl.String}
        )
    return (
        runs.filter(~pl.col("loss").is_finite())
        .select(
            pl.col("created_at").alias("at"),
            pl.lit("predictor_train_failure").alias("kind"),
            pl.format(
                "run {} (model v{}): loss diverged (non-finite)", "run", "model_version"
            ).alias("detail"),
        )
        .sort("at", descending=True)
    )


def gate_rejections(runs: pl.DataFrame) -> pl.DataFrame:
    """The training runs the gates rejected (their model was not served), newest first: `run`,
    `at`, `served` (the model version served after it), `reason` (the gate that failed)."""
    schema = {
        "run": pl.UInt32,
        "at": pl.Datetime("us", "UTC"),
        "served": pl.String,
        "reason": pl.String,
    }
    if runs.height == 0:
        return pl.DataFrame(schema=schema)
    rejected = ~pl.col("accepted").fill_null(True) & pl.col("loss").is_finite().fill_null(True)
    return (
        runs.filter(rejected)
        .select(
            pl.col("run").cast(pl.UInt32),
            pl.col("created_at").alias("at"),
            pl.format("v{}", "model_version").alias("served"),
            pl.Series("reason", _rejection_reasons(runs.filter(rejected)), dtype=pl.String),
        )
        .sort("at", descending=True)
    )


def _rejection_reasons(rejected: pl.DataFrame) -> list[str]:
    """Why each rejected run was not served: the held-out figures where the held-out gate
    judged it, else the gate's own reason."""
    out = []
    for r in rejected.iter_rows(named=True):
        reason = r.get("gate_reason") or "rejected by the gates"
        if r.get("heldout_ndcg") is not None and r.get("heldout_bar") is not None:
            reason = (
                f"held out ({r['heldout_sessions']} sessions): NDCG@10 {r['heldout_ndcg']:.3f} "
                f"against the bar {r['heldout_bar']:.3f} ({r['heldout_comparator']})"
            )
            if r.get("heldout_lead_needed"):
                reason += (
                    f", lead {r['heldout_lead_se'] or 0:.2f} standard errors where "
                    f"{r['heldout_lead_needed']:g} are needed"
                )
        out.append(reason)
    return out
