"""The model the workbench serves, scored offline on the store's judged sessions beside the free
rankers it must beat: the verdict's evidence on any store, whether or not its Signet ran a
predictor.

Per judged session (a training sample: the judge's confidence passed the gate), NDCG@10 against
its ratings (`learn.holdout.session_ndcgs`, the measure that gates a training) of four orders:
the served model (`model.sbm` beside the workbench), plain cosine and its hybrid with BM25 of
the session's query terms (`learn.holdout.heuristic_scores`; the hybrid equals cosine where a
session has no query terms), and Signet's baseline order at session start. A session the model
learned from is marked (`learned_from`): judged on it, a model is judged in sample. A model
that ranks exactly as a free ranker (`learn.holdout.free_ranker_name`, e.g. the start a
training serves while the held-out sessions do not let it learn) learned from none.

The store is read with the library's reader, so this runs in `derived`'s child process (see
there); only the newest `SERVED_WINDOW` judged sessions are scored.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_scorer.workbench import CHECKPOINT_FILE

__all__ = ["SERVED_SCHEMA", "SERVED_WINDOW", "served_frame", "served_model_path"]

SERVED_WINDOW = 200  # the newest judged sessions the served model is scored on
SERVED_SCHEMA: dict[str, pl.DataType] = {
    "session_key": pl.String(),
    "started_at": pl.Datetime("us", "UTC"),
    "model_ndcg": pl.Float64(),
    "cosine_ndcg": pl.Float64(),
    "hybrid_ndcg": pl.Float64(),
    "baseline_ndcg": pl.Float64(),
    "learned_from": pl.Boolean(),  # the served model trained on this session
    "hook_served": pl.Boolean(),  # the session-start wrapper injected the scorer's choice
    "model": pl.String(),  # "cosine" | "hybrid": a free ranker as it is; "learned"
    "trained_until": pl.Datetime("us", "UTC"),  # the newest session it learned from
}


def served_model_path(workbench: str | Path | None) -> Path | None:
    """The model a training beside `workbench` saved (`model.sbm`), or None."""
    if workbench is None:
        return None
    path = Path(workbench).parent / CHECKPOINT_FILE
    return path if path.exists() else None


def _utc(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text)


def served_frame(
    db: str | Path, workbench: str | Path | None, cfg: PredictorConfig = DEFAULT_CONFIG
) -> pl.DataFrame:
    """One row per judged session of the store (the newest `SERVED_WINDOW`), in `SERVED_SCHEMA`:
    the four orders' NDCG@10 (module docstring); empty without a served model or a judged
    session."""
    # here: the dashboard's first render does without the trainer's modules (start-up time)
    from signet_bench.learn.holdout import free_ranker_name, heuristic_ndcgs, session_ndcgs
    from signet_bench.learn.model.checkpoint import load_checkpoint
    from signet_bench.learn.samples import Selection, load_samples
    from signet_bench.learn.train import session_probs
    from signet_bench.store.hook_log import hook_record, hook_sessions

    empty = pl.DataFrame(schema=SERVED_SCHEMA)
    path = served_model_path(workbench)
    if path is None:
        return empty
    params, meta = load_checkpoint(path)
    mcfg = meta.config(cfg)
    samples, _ = load_samples(
        db, cfg=mcfg, workbench=workbench, select=Selection(window=SERVED_WINDOW)
    )
    if not samples:
        return empty
    free = free_ranker_name(params, mcfg)
    until = None if free else _utc(meta.last_session_at)
    served = hook_sessions(hook_record(workbench, None)).filter(pl.col("served"))
    served_keys = set(served["session_key"].to_list())
    free_ndcgs = heuristic_ndcgs(samples, mcfg)
    baseline = [-s.baseline_rank.astype(np.float64) for s in samples]
    starts = [s.start for s in samples]
    frame = pl.DataFrame(
        {
            "session_key": [s.session_key for s in samples],
            "started_at": starts,
            "model_ndcg": session_ndcgs(samples, session_probs(params, samples, mcfg), mcfg),
            "cosine_ndcg": free_ndcgs["cosine"],
            "hybrid_ndcg": free_ndcgs["hybrid"],
            "baseline_ndcg": session_ndcgs(samples, baseline, mcfg),
            "learned_from": [until is not None and t <= until for t in starts],
            "hook_served": [s.session_key in served_keys for s in samples],
            "model": [free or "learned"] * len(samples),
            "trained_until": [until] * len(samples),
        }
    )
    return frame.select(pl.col(c).cast(t) for c, t in SERVED_SCHEMA.items())
