"""The human spot-check labeler's data (docs/specification.md §9.8): which sessions to label,
what to show for one, the labels so far, judge-vs-human MAE over time, saving and exporting,
and the keyboard labeler's cursor (one memory at a time, a key per label level, skip, back).

Labels live in `workbench.duckdb`'s `predictor_calibration` (session, memory, the human's
label, the judge's relevance, their difference, labeler, time), keyed by (session, memory,
labeler): labelling a memory again updates its row. Each save is one transaction on a
connection opened for it; when another process holds the workbench, the save retries and says
so (`source.write_workbench`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl

from signet_bench.analysis.judge_monitor import calibration_flagged, calibration_mae
from signet_bench.analysis.queries.inspector import sqlite_literal, sqlite_rows
from signet_bench.analysis.queries.source import read_workbench, store_has, write_workbench
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.store.workbench import record_calibration

__all__ = [
    "BACK_KEYS",
    "KEYS",
    "KEY_NAMES",
    "LABEL_KEYS",
    "LABEL_LEVELS",
    "LEVEL_NAMES",
    "SKIP_KEYS",
    "Given",
    "LabelCursor",
    "calibration_sample",
    "export_labels",
    "given_label",
    "label_items",
    "mae_over_time",
    "picker_label",
    "press",
    "progress_text",
    "read_labels",
    "revert_given",
    "save_labels",
    "start_cursor",
    "transcript_excerpt",
]

LABEL_LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The relevance a person picks per memory: not, barely, somewhat, mostly, fully relevant."""
LEVEL_NAMES = ("not relevant", "barely", "somewhat", "mostly", "exactly what was needed")
LABEL_KEYS = {str(i + 1): level for i, level in enumerate(LABEL_LEVELS)}
"""Keys 1-5 give the levels in order, as labelling tools number their choices."""
SKIP_KEYS = ("s", "ArrowRight")
"""Move on without labelling (an earlier label stays)."""
BACK_KEYS = ("b", "Backspace", "ArrowLeft")
"""Show the previous memory again (labelling it again replaces its label)."""
KEYS = (*LABEL_KEYS, *SKIP_KEYS, *BACK_KEYS)
KEY_NAMES = {
    **{k: f"{v:.2f} {name}" for (k, v), name in zip(LABEL_KEYS.items(), LEVEL_NAMES, strict=True)},
    SKIP_KEYS[0]: "skip",
    BACK_KEYS[0]: "back",
}
"""What the labeler's buttons say, by their key; the other keys do the same as one of them."""
EXCERPT_CHARS = 6000

_LABELS_SQL = "SELECT * FROM predictor_calibration ORDER BY labeled_at, session_key, memory_id"
# the judge's relevance was stored as `scorer_label` before the column was renamed
_OLD_NAMES = {"scorer_label": "judge_relevance"}
_LABEL_SCHEMA = {
    "session_key": pl.String,
    "memory_id": pl.String,
    "human_label": pl.Float64,
    "judge_relevance": pl.Float64,
    "delta": pl.Float64,
    "labeler": pl.String,
    "labeled_at": pl.Datetime("us"),
}


def read_labels(workbench: str | Path | None) -> pl.DataFrame:
    """Every calibration label, oldest first (an empty frame of the same columns when none); a
    workbench written before the judge's column was renamed reads the same (it is only read
    here: renaming it in the file is `open_workbench`'s, when it is next written)."""
    frame = read_workbench(workbench, _LABELS_SQL)
    if not frame.height:
        return pl.DataFrame(schema=_LABEL_SCHEMA)
    frame = frame.rename({k: v for k, v in _OLD_NAMES.items() if k in frame.columns})
    return frame.select(list(_LABEL_SCHEMA))


def calibration_sample(
    sessions: pl.DataFrame,
    labels: pl.DataFrame,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    *,
    labeler: str | None = None,
    seed: int = 0,
) -> pl.DataFrame:
    """Sessions to spot-check, each with `labelled`, how many of its `injected` memories
    `labeler` (None: anyone) has labelled: first every session with a confident judge that
    `labeler` started and has not finished (so it can be finished), then
    `calibration_sample_sessions` (20-50) drawn from the twice as many most recent sessions
    whose judge confidence is at least `calibration_min_confidence`, that injected memories
    and that nobody has labelled yet; newest first within each. The draw is fixed by `seed`,
    so re-rendering shows the same sample."""
    mine = (
        labels
        if labeler is None or not labels.height
        else labels.filter(pl.col("labeler") == labeler)
    )
    counts = (
        mine.group_by("session_key").agg(pl.col("memory_id").n_unique().alias("labelled"))
        if mine.height
        else pl.DataFrame(schema={"session_key": pl.String, "labelled": pl.UInt32})
    )
    done = set(labels["session_key"].to_list()) if labels.height else set()
    confident = (
        sessions.filter(
            (pl.col("confidence") >= cfg.calibration_min_confidence) & (pl.col("injected") > 0)
        )
        .join(counts, on="session_key", how="left")
        .with_columns(pl.col("labelled").fill_null(0).cast(pl.Int64))
        .sort("n", descending=True)
    )
    started = confident.filter((pl.col("labelled") > 0) & (pl.col("labelled") < pl.col("injected")))
    eligible = confident.filter(~pl.col("session_key").is_in(list(done))).head(
        2 * cfg.calibration_sample_sessions
    )
    take = min(cfg.calibration_sample_sessions, eligible.height)
    idx = np.sort(np.random.default_rng(seed).choice(eligible.height, take, replace=False))
    return pl.concat([started, eligible[idx.tolist()]])


def picker_label(row: Mapping[str, Any]) -> str:
    """How the session picker names a `calibration_sample` row: its number, project, start,
    judge confidence and labelling progress ("#12 · api · 2026-03-14 09:30 · confidence 0.84
    · 4 of 26 labelled")."""
    project = row.get("project") or "(no project)"
    return (
        f"#{row['n']} · {project} · {row['started_at']:%Y-%m-%d %H:%M} · "
        f"confidence {row['confidence']:.2f} · {row['labelled']} of {row['injected']} labelled"
    )


def label_items(
    con: duckdb.DuckDBPyConnection, session_key: str, labels: pl.DataFrame, labeler: str
) -> pl.DataFrame:
    """One session's injected memories as the labeler shows them: memory id, text, the judge's
    relevance (`judge_relevance`) and this labeler's earlier label (null when none), by rank."""
    sql = (
        "SELECT sm.memory_id, m.content, sm.relevance_score, sm.rank FROM session_memories sm"
        " LEFT JOIN memories m ON m.id = sm.memory_id"
        f" WHERE sm.session_key = {sqlite_literal(session_key)} AND sm.was_injected = 1"
    )
    select = (
        "memory_id::VARCHAR AS memory_id, content::VARCHAR AS content,"
        " TRY_CAST(relevance_score AS DOUBLE) AS judge_relevance, TRY_CAST(rank AS BIGINT) AS rank"
    )
    items = sqlite_rows(con, sql, select).sort("rank")
    mine = labels.filter(
        (pl.col("session_key") == session_key) & (pl.col("labeler") == labeler)
    ).select("memory_id", "human_label")
    return items.join(mine, on="memory_id", how="left").with_columns(
        pl.col("content").fill_null("(memory not in the store)")
    )


def transcript_excerpt(con: duckdb.DuckDBPyConnection, session_key: str) -> str:
    """The start of the session's transcript, or a note: the lossless one of
    `session_transcripts` where the store has it (current Signet's; a simulated session's
    conversation), else the summary job's (`summary_jobs.transcript`)."""
    key = sqlite_literal(session_key)
    sources = {
        "session_transcripts": "SELECT content AS transcript FROM session_transcripts"
        f" WHERE session_key = {key} LIMIT 1",
        "summary_jobs": "SELECT transcript FROM summary_jobs"
        f" WHERE session_key = {key} ORDER BY created_at DESC LIMIT 1",
    }
    for table, sql in sources.items():
        if not store_has(con, table):
            continue
        rows = sqlite_rows(con, sql, "transcript::VARCHAR AS transcript")
        if rows.height and rows["transcript"][0]:
            text = rows["transcript"][0]
            return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + " …"
    return "(no transcript recorded for this session)"


def save_labels(
    workbench: str | Path,
    session_key: str,
    chosen: Mapping[str, float | None],
    items: pl.DataFrame,
    labeler: str,
    *,
    on_wait: Callable[[int], None] | None = None,
) -> int:
    """Record this labeler's labels for the memories with a chosen level (None: skipped) in
    one transaction; returns how many rows were written (new or updated)."""
    judge = dict(zip(items["memory_id"].to_list(), items["judge_relevance"].to_list(), strict=True))
    unknown = sorted(set(chosen) - set(judge))
    if unknown:
        raise ValueError(f"session {session_key}: memories not injected there: {unknown}")
    rows = [
        {
            "session_key": session_key,
            "memory_id": memory_id,
            "human_label": float(level),
            "judge_relevance": judge[memory_id],
            "labeler": labeler,
        }
        for memory_id, level in chosen.items()
        if level is not None
    ]
    if not rows:
        return 0
    return write_workbench(workbench, lambda con: record_calibration(con, rows), on_wait=on_wait)


def mae_over_time(labels: pl.DataFrame, cfg: PredictorConfig = DEFAULT_CONFIG) -> pl.DataFrame:
    """Judge-vs-human mean absolute error per labelling day and labeler, with the running MAE
    over all labels so far and whether it is flagged (MAE > `calibration_mae_threshold`).
    Columns: day, labeler, labels, mae, running_mae, flagged."""
    schema = {
        "day": pl.Date,
        "labeler": pl.String,
        "labels": pl.Int64,
        "mae": pl.Float64,
        "running_mae": pl.Float64,
        "flagged": pl.Boolean,
    }
    judged = labels.filter(
        pl.col("human_label").is_not_null() & pl.col("judge_relevance").is_not_null()
    )
    if judged.height == 0:
        return pl.DataFrame(schema=schema)
    judged = judged.with_columns(pl.col("labeled_at").dt.date().alias("day")).sort("labeled_at")
    rows = []
    for (day, labeler), g in judged.group_by(["day", "labeler"], maintain_order=True):
        upto = judged.filter(pl.col("day") <= day)
        running = calibration_mae(
            upto["human_label"].to_numpy(), upto["judge_relevance"].to_numpy()
        )
        mae = calibration_mae(g["human_label"].to_numpy(), g["judge_relevance"].to_numpy())
        rows.append((day, labeler, g.height, mae, running, calibration_flagged(running, cfg)))
    return pl.DataFrame(rows, schema=schema, orient="row").sort("day", "labeler")


def export_labels(workbench: str | Path | None, out: str | Path) -> Path:
    """Write every calibration label to a Parquet file; returns its path."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    read_labels(workbench).write_parquet(path)
    return path


@dataclass(frozen=True)
class Given:
    """The label the last key gave: the item, its level and the label it replaced (to undo)."""

    index: int
    level: float
    before: float | None


@dataclass(frozen=True)
class LabelCursor:
    """Where the labeler is in one session: the memories in rank order, each one's label so far
    (stored earlier or given here; None when none), the item shown (`position` equals the
    number of items once past the last), the label the last key gave, for the page to save, and
    the label whose save failed and was taken back, for the page to say so."""

    memory_ids: tuple[str, ...]
    labels: tuple[float | None, ...]
    position: int
    given: Given | None = None
    unsaved: Given | None = None

    @property
    def done(self) -> bool:
        """Whether every item has been passed (the page shows the summary)."""
        return self.position >= len(self.memory_ids)


def start_cursor(memory_ids: Sequence[str], labels: Sequence[float | None]) -> LabelCursor:
    """A cursor on the first memory without a label (past the last when all have one)."""
    if len(memory_ids) != len(labels):
        raise ValueError(f"{len(memory_ids)} memories but {len(labels)} labels")
    first = next((i for i, v in enumerate(labels) if v is None), len(labels))
    return LabelCursor(tuple(memory_ids), tuple(labels), first)


def press(cursor: LabelCursor, key: str) -> LabelCursor:
    """The cursor after one key: a level key labels the memory shown and moves to the next, a
    skip key moves on without labelling, a back key shows the previous memory. Keys past the
    last memory other than back change nothing."""
    n = len(cursor.memory_ids)
    if key in LABEL_KEYS:
        if cursor.done:
            return replace(cursor, given=None, unsaved=None)
        i, level = cursor.position, LABEL_KEYS[key]
        labels = (*cursor.labels[:i], level, *cursor.labels[i + 1 :])
        return LabelCursor(cursor.memory_ids, labels, i + 1, Given(i, level, cursor.labels[i]))
    if key in SKIP_KEYS:
        return replace(cursor, position=min(cursor.position + 1, n), given=None, unsaved=None)
    if key in BACK_KEYS:
        back = max(min(cursor.position, n) - 1, 0)
        return replace(cursor, position=back, given=None, unsaved=None)
    raise ValueError(f"no labeler action for key {key!r}; the keys are {', '.join(KEYS)}")


def given_label(cursor: LabelCursor) -> dict[str, float]:
    """The label to save after the last key ({memory id: level}; empty when it gave none)."""
    g = cursor.given
    return {} if g is None else {cursor.memory_ids[g.index]: g.level}


def revert_given(cursor: LabelCursor) -> LabelCursor:
    """Take back the label the last key gave (its save failed): that memory shows again with
    its label as before, and `unsaved` holds what was not saved."""
    g = cursor.given
    if g is None:
        return cursor
    labels = (*cursor.labels[: g.index], g.before, *cursor.labels[g.index + 1 :])
    return LabelCursor(cursor.memory_ids, labels, g.index, None, g)


def progress_text(cursor: LabelCursor) -> str:
    """'7 of 28 · 6 labelled' while labelling; a summary once past the last memory."""
    n = len(cursor.memory_ids)
    labelled = sum(v is not None for v in cursor.labels)
    if cursor.done:
        return f"All {n} seen · {labelled} labelled, {n - labelled} without a label"
    return f"{cursor.position + 1} of {n} · {labelled} labelled"
