"""`signet-bench bench train`, over a growing history: what one scheduled training costs as a
heavy user's history grows, and what the model it serves is worth.

Method:

1. Build the heavy persona's store (wordllama embeddings) and fix a session plan of
   `max(sizes) + held_out` sessions.
2. Run the daemon's loop with no scorer (`SimOptions(scorer="none")`: nothing scores and
   nothing trains, so thousands of sessions take minutes instead of a training every 10
   sessions) up to each size N (250, 1,000, 3,000, 5,000).
3. At N run the training the daemon's scheduler makes due then, as the sidecar runs it: the
   loop's request (`TrainingJob.request`: a retrain from fresh weights with the daemon's
   config, the model served so far as the gates' reference and protected, as in a daemon past
   cold start, which this loop never leaves having no scorer) handed to `signet-bench train
   --request FILE` in a fresh child process with one BLAS thread (`signet_scorer.library`'s
   environment; its priority is not lowered, so other load on the machine does not stretch
   it). Wall time is the child's, process start to exit (reading the store, assembling the
   samples, training, gates, saving); peak memory is its `ru_maxrss`.
4. Run the loop on through the next `held_out` sessions, keep their candidate pools, and
   score the model the daemon would serve (the one this training saved, else the one served
   before it, else the baseline order), cosine, and the model served after the smallest
   size's training by NDCG@10 against the persona's planted relevance.

Rows (name `scheduled_training`, n = sessions of history):
  wall_s           s         the child process, start to exit (goal <= 10 s at 5,000)
  peak_mb          MB        its peak resident memory (goal <= 500 MB at 5,000)
  train_s          s         of which the training and its gates (`training_runs.duration_ms`)
  epochs           epochs    epochs run (each over at most `epochSessionBudget` sessions)
  train_sessions   sessions  the sessions it trained on
  gate_sessions    sessions  the held-out sessions its gate judged it on
  gate_ndcg@10     ndcg      its NDCG@10 there against the store's ratings (`judged_relevance`)
  gate_bar@10      ndcg      the bar: the best of the served model and the free rankers
  accepted         0/1       whether the gate let it be served
  heldout_ndcg@10  ndcg      the served model on the next `held_out` sessions, against the
                             planted relevance (95% bootstrap interval)
  cosine_ndcg@10   ndcg      cosine on the same sessions
  first_ndcg@10    ndcg      the model served after the smallest size's training, on the same
                             sessions: whether more history made the served model better or
                             worse, on sessions that are equally hard for both (the sessions
                             after 1,000 are harder for every ranker than those after 250)
  heldout-cosine   ndcg@10_delta  served - cosine, paired
  heldout-first    ndcg@10_delta  served - the smallest size's model, paired
"""

from __future__ import annotations

import itertools
import json
import logging
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from signet_bench.analysis.report import Row
from signet_bench.bench.quality import HeldOut, held_out_session, ndcgs
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig, load_config
from signet_bench.daemon.metrics import bootstrap_interval
from signet_bench.daemon.ranking.ranker import CosineRanker, EffectiveScoreRanker, Ranker
from signet_bench.learn.model.checkpoint import load_checkpoint
from signet_bench.learn.model.ranker import ModelRanker
from signet_bench.replay.loop import SimOptions, Simulator
from signet_bench.replay.trainers import TrainingJob, model_dir, model_path
from signet_bench.store.workbench import open_workbench
from signet_bench.world.synth.build import build_persona_store
from signet_scorer.library import TrainerOptions
from signet_scorer.workbench import WORKBENCH_FILE

__all__ = ["HISTORY", "QUICK_HISTORY", "ChildRun", "history_rows", "run_child"]

NAME = "scheduled_training"
HISTORY = (250, 1000, 3000, 5000)
QUICK_HISTORY = (30, 80)
HELD_OUT = 150  # as `bench quality`
QUICK_HELD_OUT = 20
BOOTSTRAP = 2000
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ChildRun:
    """A finished child process: exit code, output, wall time and peak resident memory."""

    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    peak_mb: float


# A small process that starts the measured one and reports its wall time and peak RSS: a
# process started straight from this one would inherit this one's peak (Linux keeps the
# high-water mark of the memory a process had before it ran `exec`, and a freshly started
# child has this process's memory until then), so the measure would be this process's.
LAUNCHER = """import json, os, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
wall = time.perf_counter() - t0
code = os.waitstatus_to_exitcode(status)
with open(sys.argv[1], "w") as f:
    json.dump({"returncode": code, "wall_s": wall, "maxrss_kib": usage.ru_maxrss}, f)
"""


def run_child(cmd: Sequence[str], env: dict[str, str], workdir: Path) -> ChildRun:
    """Run `cmd` to its end through `LAUNCHER`: its exit code, output, wall time and peak
    resident memory (`wait4`'s high-water mark of that process alone)."""
    out, err, report = (workdir / f"child.{x}" for x in ("out", "err", "json"))
    launcher = [sys.executable, "-c", LAUNCHER, str(report), *cmd]
    with out.open("w") as fo, err.open("w") as fe:
        done = subprocess.run(
            launcher, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe, env=env, check=False
        )
    if done.returncode != 0 or not report.exists():
        raise RuntimeError(f"the launcher of {cmd[:3]} failed:\n{err.read_text()[-2000:]}")
    m = json.loads(report.read_text())
    peak_mb = m["maxrss_kib"] * 1024 / 1e6  # Linux reports KiB
    return ChildRun(m["returncode"], out.read_text(), err.read_text(), m["wall_s"], peak_mb)


def _scheduled_training(
    sim: Simulator, n: int, cfg: PredictorConfig, config: str | None
) -> tuple[ChildRun, tuple]:
    """The training the scheduler makes due after `n` sessions, run as the sidecar runs it:
    (the child run, its `training_runs` row: epochs, duration_ms, sample_count, gate_passed,
    holdout)."""
    served = model_path(sim.path).exists()
    job = TrainingJob(
        sim.path, f"scheduled-{n}", sim.state, cfg, sim.opts.seed, cfg.full_training_epochs, sim.tz
    )
    # the run this child records is the workbench's newest (the runs here are sequential)
    request = job.request(served).replace(protect=served)
    out = model_dir(sim.path)
    out.mkdir(parents=True, exist_ok=True)
    request_file = out / "request.json"
    request_file.write_text(request.to_json())
    opts = TrainerOptions(python=sys.executable, config=config, nice=0)
    args = ["train", "--request", str(request_file)] + (["--config", config] if config else [])
    child = run_child(opts.command(*args), opts.env(), out)
    if child.returncode not in (0, 1):  # 1: a gate rejected the model
        raise RuntimeError(f"the scheduled training at {n} sessions failed:\n{child.stderr}")
    with open_workbench(out / WORKBENCH_FILE) as wb:
        row = wb.execute(
            "SELECT epochs, duration_ms, sample_count, gate_passed, holdout FROM training_runs"
            " ORDER BY started_at DESC LIMIT 1"
        ).fetchone()
    if row is None:
        raise RuntimeError(f"the training at {n} sessions recorded no run:\n{child.stdout}")
    return child, row


def _served(sim: Simulator, cfg: PredictorConfig) -> Ranker:
    """What session start would rank with now: the saved model, else the baseline order."""
    path = model_path(sim.path)
    return ModelRanker(load_checkpoint(path)[0], cfg) if path.exists() else EffectiveScoreRanker()


def _next_sessions(sim: Simulator, n: int, held_out: int) -> list[HeldOut]:
    """Run the loop through sessions n .. n + held_out - 1, keeping their pools and truth."""
    sim.loop.run(n + held_out, keep=range(n, n + held_out))
    sessions = (held_out_session(sim, i) for i in range(n, n + held_out))
    return [h for h in sessions if h is not None]


def _ndcg_row(metric: str, values: np.ndarray, n: int, seed: int, unit: str = "ndcg") -> Row:
    lo, hi = bootstrap_interval(values, seed, draws=BOOTSTRAP)
    return Row(NAME, metric, float(np.mean(values)), unit, lo, hi, n=n)


def _size_rows(
    n: int,
    child: ChildRun,
    run: tuple,
    scores: dict[str, np.ndarray],
    seed: int,
) -> list[Row]:
    """The rows of one size: the training's cost, its gate, and what it serves (`scores`:
    per-session NDCG@10 of "served", "cosine" and "first" on the next sessions)."""
    served = scores["served"]
    epochs, duration_ms, trained_on, accepted, holdout = run
    gate = json.loads(holdout) if holdout else {}
    full = n == max(HISTORY)
    return [
        Row(NAME, "wall_s", child.wall_s, "s", n=n, goal="<= 10 s" if full else None),
        Row(NAME, "peak_mb", child.peak_mb, "MB", n=n, goal="<= 500 MB" if full else None),
        Row(NAME, "train_s", duration_ms / 1000.0, "s", n=n),
        Row(NAME, "epochs", float(epochs), "epochs", n=n),
        Row(NAME, "train_sessions", float(trained_on), "sessions", n=n),
        Row(NAME, "gate_sessions", float(gate.get("sessions", 0)), "sessions", n=n),
        Row(NAME, "gate_ndcg@10", float(gate.get("candidate", np.nan)), "ndcg", n=n),
        Row(NAME, "gate_bar@10", float(gate.get("bar", np.nan)), "ndcg", n=n),
        Row(NAME, "accepted", float(bool(accepted)), "0/1", n=n),
        _ndcg_row("heldout_ndcg@10", served, n, seed),
        _ndcg_row("cosine_ndcg@10", scores["cosine"], n, seed),
        _ndcg_row("first_ndcg@10", scores["first"], n, seed),
        _ndcg_row("heldout-cosine", served - scores["cosine"], n, seed, "ndcg@10_delta"),
        _ndcg_row("heldout-first", served - scores["first"], n, seed, "ndcg@10_delta"),
    ]


def history_rows(
    *,
    quick: bool = False,
    seed: int = 0,
    sizes: Sequence[int] | None = None,
    held_out: int | None = None,
    persona: str = "heavy",
    embedder: str = "wordllama",
    config: str | None = None,
) -> list[Row]:
    """One scheduled training at each history size, measured and judged (module doc).
    `config`: an agent.yaml whose `predictor:` block both the training and the judge use."""
    cfg = load_config(config) if config else DEFAULT_CONFIG
    sizes = sorted(set(sizes or (QUICK_HISTORY if quick else HISTORY)))
    held_out = held_out or (QUICK_HELD_OUT if quick else HELD_OUT)
    if sizes[0] < 1 or held_out < 1:
        raise ValueError(f"sizes and held-out sessions must be positive: {sizes}, {held_out}")
    if any(b - a < held_out for a, b in itertools.pairwise(sizes)):
        raise ValueError(
            f"sizes {sizes}: each must exceed the one before by the {held_out} "
            "sessions judged after it"
        )
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="signet-bench-train-history-") as tmp:
        path = Path(tmp) / f"{persona}-{seed}.db"
        build_persona_store(persona, path, seed=seed, embedder=embedder)
        sim = Simulator(path, SimOptions(scorer="none", seed=seed), cfg)
        first: Ranker | None = None  # the model served after the smallest size's training
        try:
            sim.plan(sizes[-1] + held_out)
            for n in sizes:
                t0 = time.perf_counter()
                sim.loop.run(n)
                _log.info(f"  loop to {n} sessions ({time.perf_counter() - t0:.0f} s)")
                child, run = _scheduled_training(sim, n, cfg, config)
                held = _next_sessions(sim, n, held_out)
                served = _served(sim, cfg)
                first = served if first is None else first
                scores = {
                    "served": ndcgs(served, held),
                    "cosine": ndcgs(CosineRanker(), held),
                    "first": ndcgs(first, held),
                }
                rows += _size_rows(n, child, run, scores, seed)
                _log.info(
                    f"  {n} sessions: {child.wall_s:.1f} s, {child.peak_mb:.0f} MB, "
                    f"{run[0]} epochs, accepted {bool(run[3])}; next {len(held)} sessions: "
                    + ", ".join(f"{k} {v.mean():.4f}" for k, v in scores.items())
                )
        finally:
            sim.close()
    return rows
