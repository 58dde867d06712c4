"""The embedded demo: a synthetic user whose history shows every state the dashboard can show.

`run_demo` builds (or resumes) it in a cache folder, idempotently:

1. a "drifting" persona (two projects; the user moves from the first to the second half-way);
2. its session loop with the learned scorer, in four stages: cold start exits after a few
   scored sessions and the predictor earns influence;
3. an incident half-way: the served model breaks (its scores inverted, as a sign error would)
   while training is paused. The predictor loses session after session, the success rate falls
   below 0.3, drift detection resets alpha to 1.0 and retrains (from fresh weights, with the
   replay buffer), and the predictor earns its influence back;
4. the accepted model exported to ONNX (`model.onnx` beside `model.sbm`);
5. a few human calibration labels (the planted truth stands in for the human) in
   `workbench.duckdb`;
6. one benchmark report per stage (judge-scored NDCG of both rankers, win rate, alpha, and the
   exported model's in-process scoring latency), as JSON files (docs/specification.md §12) and in
   the workbench.

A second run finds everything done and changes nothing. A build reports its progress on stderr
(`DemoProgress`): a bar on a terminal, lines a log can show elsewhere.
"""

from __future__ import annotations

import functools
import json
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import numpy as np
import polars as pl

from signet_bench.analysis.report import Row, machine_info, percentiles
from signet_bench.config import PredictorConfig
from signet_bench.learn.model.checkpoint import load_checkpoint, save_checkpoint
from signet_bench.replay.lifecycle import SimReport
from signet_bench.replay.loop import SimOptions, Simulator
from signet_bench.replay.loop_store import LoopStore
from signet_bench.replay.trainers import (
    InProcessTrainer,
    TrainingJob,
    TrainOutcome,
    model_dir,
    model_path,
)
from signet_bench.store import sim as sim_tables
from signet_bench.store.read import read_comparisons
from signet_bench.store.timestamps import format_iso, parse_ts
from signet_bench.store.workbench import open_workbench, record_bench, record_calibration
from signet_bench.world.synth.build import build_persona_store
from signet_bench.world.synth.truth import true_relevance
from signet_scorer import ScoreQuery, Scorer
from signet_scorer.workbench import SERVED_MODEL_FILE, WORKBENCH_FILE

__all__ = [
    "DEFAULT_DEMO_DIR",
    "DEMO_BENCH",
    "DEMO_LABELER",
    "DEMO_MEMORIES",
    "DEMO_PERSONA",
    "DEMO_SEED",
    "DEMO_SESSIONS",
    "DemoPaths",
    "DemoProgress",
    "DemoResult",
    "comparison_blocks",
    "demo_paths",
    "demo_store",
    "run_demo",
]

DEMO_PERSONA = "drifting"
DEMO_SEED = 7
DEMO_SESSIONS = 120
DEMO_MEMORIES = 600
DEFAULT_DEMO_DIR = Path("out")
DEMO_BENCH = "demo"
DEMO_LABELER = "demo-human"
_BREAK_MARK = "demo_model_broken"
# every logit term changes sign
_INVERTED = ("q_proj", "gate_proj", "cosine_weight", "signal_weights")
_LABEL_SESSIONS = 3
_LATENCY_SESSIONS = 20
_LATENCY_REPEATS = 5
PROGRESS_EVERY_S = 5.0
"""Off a terminal, a progress line at most this often while sessions run (and at each step)."""


@dataclass(frozen=True, slots=True)
class DemoPaths:
    """Where the demo keeps its files inside its folder."""

    dir: Path
    store: Path
    model_dir: Path
    workbench: Path
    model: Path
    onnx: Path
    bench_dir: Path


def demo_paths(out_dir: str | Path = DEFAULT_DEMO_DIR) -> DemoPaths:
    """The demo's files: the store, the simulated daemon's model folder (model, ONNX export,
    workbench) and the benchmark reports."""
    out = Path(out_dir)
    store = out / "demo.db"
    mdir = model_dir(store)
    return DemoPaths(
        out,
        store,
        mdir,
        mdir / WORKBENCH_FILE,
        model_path(store),
        mdir / SERVED_MODEL_FILE,
        out / "demo-bench",
    )


class DemoProgress:
    """How a demo build reports progress on `stream` (stderr by default): on a terminal, its
    steps and a bar over the sessions; elsewhere (a log, a pipe), one line per step and, while
    it works, one at least every `every_s` seconds ("demo: simulating sessions 60/120 (50%) ·
    31 s", "demo: training the model after 60 of 120 sessions · 36 s"), so a log shows what
    the build is doing. `clock`: seconds, monotonic; `beat_s`: how often a background thread checks that a
    line is due (None: no thread, `tick` is called by hand)."""

    def __init__(
        self,
        stream=None,
        *,
        tty: bool | None = None,
        every_s: float = PROGRESS_EVERY_S,
        clock=time.monotonic,
        beat_s: float | None = 1.0,
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.tty = bool(self.stream.isatty()) if tty is None else tty
        self.every_s, self.clock = every_s, clock
        self.started = clock()
        self._last, self._status = clock(), "starting"
        self._done = self._total = 0
        self._bar = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        if beat_s is not None and not self.tty:
            beat = threading.Thread(target=self._beat, args=(beat_s,), daemon=True)
            beat.start()

    def _write(self, text: str) -> None:
        line = f"demo: {text}"
        if self._bar is not None:
            self._bar.write(line, file=self.stream)
        else:
            print(line, file=self.stream, flush=True)
        self._last = self.clock()

    def step(self, text: str) -> None:
        """One step of the build, as a line ("demo: building the store ...")."""
        with self._lock:
            self._status = text
            self._write(text)

    def sessions(self, done: int, total: int) -> None:
        """`done` of the plan's `total` sessions are recorded."""
        with self._lock:
            share = 100 * done // max(total, 1)
            self._done, self._total = done, total
            self._status = f"simulating sessions {done}/{total} ({share}%)"
            if self.tty:
                self._draw_bar(done, total)
            elif done == total or self.clock() - self._last >= self.every_s:
                self._write(f"{self._status} · {self.elapsed()}")

    def training(self) -> None:
        """A training started, made due by the session after the last one reported (its count
        comes once the training is done): the next line says so."""
        with self._lock:
            after = min(self._done + 1, self._total)
            self._status = f"training the model after {after} of {self._total} sessions"
            if self._bar is not None:
                self._bar.set_postfix_str("training", refresh=True)

    def _draw_bar(self, done: int, total: int) -> None:
        if self._bar is None:
            # here: tqdm loads only when a bar is drawn (start-up time)
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                initial=done,
                desc="demo: sessions",
                unit="session",
                file=self.stream,
                leave=False,
            )
        else:
            self._bar.set_postfix_str("", refresh=False)
            self._bar.update(done - self._bar.n)

    def tick(self) -> None:
        """Off a terminal, the last status again once `every_s` seconds passed without a line."""
        with self._lock:
            if not self.tty and self.clock() - self._last >= self.every_s:
                self._write(f"{self._status} · {self.elapsed()}")

    def _beat(self, beat_s: float) -> None:
        while not self._stop.wait(beat_s):
            self.tick()

    def elapsed(self) -> str:
        """Seconds since the build started, as the lines show them."""
        return f"{self.clock() - self.started:.0f} s"

    def close(self) -> None:
        """Stop the background checks and end the bar."""
        self._stop.set()
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None


@dataclass(frozen=True, slots=True)
class DemoResult:
    """The demo store, what this run did, and the judge-scored comparisons per block."""

    store: Path
    report: SimReport
    blocks: pl.DataFrame
    paths: DemoPaths | None = None
    labels_written: int = 0
    bench_reports: tuple[Path, ...] = field(default=())


def demo_store(out_dir: str | Path, *, memories: int = DEMO_MEMORIES) -> Path:
    """The demo store in `out_dir` (built once, deterministic)."""
    path = demo_paths(out_dir).store
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        build_persona_store(DEMO_PERSONA, path, seed=DEMO_SEED, n_memories=memories)
    return path


def comparison_blocks(comparisons: pl.DataFrame, size: int = 20) -> pl.DataFrame:
    """Mean baseline and predictor NDCG@10, win rate and alpha per block of `size` sessions."""
    if comparisons.height == 0:
        return pl.DataFrame()
    return (
        comparisons.with_row_index("i")
        .with_columns((pl.col("i") // size).alias("block"))
        .group_by("block", maintain_order=True)
        .agg(
            pl.len().alias("sessions"),
            pl.col("baseline_ndcg").mean().round(3).alias("baseline_ndcg"),
            pl.col("predictor_ndcg").mean().round(3).alias("predictor_ndcg"),
            pl.col("predictor_won").mean().round(2).alias("win_rate"),
            pl.col("alpha").mean().round(2).alias("alpha"),
        )
    )


class _IncidentTrainer(InProcessTrainer):
    """The loop's in-process trainer, with the demo's incident: from the model's breakage until
    drift detection fires, training is paused (the run is not accepted and nothing is logged);
    the drift reset's retrain starts from fresh weights. Each training it runs is reported to
    `progress`."""

    def __init__(
        self, store: LoopStore, cfg: PredictorConfig, progress: DemoProgress | None = None
    ) -> None:
        super().__init__(store, cfg)
        self.progress = progress

    def train(self, job: TrainingJob) -> TrainOutcome | None:
        mark = sim_tables.get_sim_meta(self.store.con, _BREAK_MARK)
        if mark is not None:
            resets_at_break = json.loads(mark)["drift_resets"]
            if job.state.drift_resets <= resets_at_break:
                return TrainOutcome(accepted=False)
            if not job.state.trained:
                self.model = None  # the drift reset's retrain: start again from fresh weights
        if self.progress is not None:
            self.progress.training()
        return super().train(job)


def _simulator(store: Path, progress: DemoProgress | None = None) -> Simulator:
    opts = SimOptions(scorer="model", seed=DEMO_SEED)
    return Simulator(store, opts, trainer=functools.partial(_IncidentTrainer, progress=progress))


def _horizon(store: Path, requested: int | None) -> int:
    """The demo's session plan length: fixed by its first run (`requested` or DEMO_SESSIONS)."""
    sim = _simulator(store)
    try:
        saved = sim_tables.get_sim_meta(sim.con, "plan")
        n = json.loads(saved)[0] if saved is not None else requested or DEMO_SESSIONS
        sim.plan(int(requested or n))  # fixes the plan on a new store; checks a request
        return int(n)
    finally:
        sim.close()


def _break_model(store: Path, at: int) -> None:
    """Once, at session `at`: invert the served model's scores (its query projection, gate and
    cosine weight change sign, so every logit does and the most relevant memory ranks last) and
    pause training; the mark in the store's bookkeeping records when and how many drift resets
    had happened before."""
    sim = _simulator(store)
    try:
        if sim_tables.get_sim_meta(sim.con, _BREAK_MARK) is not None:
            return
        path = model_path(store)
        if path.exists():
            params, meta = load_checkpoint(path)
            broken = {n: -v if n in _INVERTED else v for n, v in params.items()}
            save_checkpoint(path, broken, meta)
        mark = {"session": at, "drift_resets": sim.state.drift_resets}
        sim_tables.set_sim_meta(sim.con, _BREAK_MARK, json.dumps(mark))
    finally:
        sim.close()


def _merge(reports: Iterable[SimReport], horizon: int) -> SimReport:
    """One report for the stages of a run."""
    out = SimReport()
    for r in reports:
        out.sessions_run += r.sessions_run
        out.comparisons += r.comparisons
        out.exploration_rows += r.exploration_rows
        out.trainings += r.trainings
        out.trainings_accepted += r.trainings_accepted
        out.drift_resets += r.drift_resets
        out.seconds += r.seconds
        out.events += r.events
        out.final_state = r.final_state or out.final_state
        if out.cold_start_exit_session is None:
            out.cold_start_exit_session = r.cold_start_exit_session
    out.sessions_skipped = horizon - out.sessions_run
    return out


def _stage_rows(comparisons: pl.DataFrame, latencies_ms: list[float]) -> list[Row]:
    """One stage's benchmark rows: judge-scored NDCG@10 of both rankers on the sessions the
    predictor scored with a confident judge, its win rate, mean alpha, scoring latency."""
    counted = comparisons.filter(pl.col("ema_updated") == 1)
    rows: list[Row] = []
    if counted.height:
        n = counted.height
        rows += [
            Row("predictor", "ndcg@10", float(counted["predictor_ndcg"].mean()), "ndcg", n=n),
            Row("baseline", "ndcg@10", float(counted["baseline_ndcg"].mean()), "ndcg", n=n),
            Row("predictor", "win_rate", float(counted["predictor_won"].mean()), "share", n=n),
        ]
    if comparisons.height:
        alpha = float(comparisons["alpha"].mean())
        rows.append(Row("baseline", "alpha", alpha, "weight", n=comparisons.height))
    if latencies_ms:
        for metric, value in percentiles(latencies_ms).items():
            rows.append(Row("score_inprocess_onnx", metric, value, "ms", n=len(latencies_ms)))
    return rows


def _scoring_latencies(onnx: Path, sim: Simulator) -> list[float]:
    """Milliseconds per `signet_scorer.Scorer.score` call of the exported model on the candidate
    pools of the sessions this stage ran and kept (after one warm-up call); calls that gave no
    scores are not counted."""
    scorer = Scorer.open(onnx)
    pools = [
        ScoreQuery(
            x.context,
            [str(m) for m in x.memory_ids],
            x.embeddings,
            list(x.contents),
            x.features,
            x.project_slot,
        )
        for x in (sim.records[i].inputs for i in sorted(sim.records))
        if x.context is not None
    ]
    if not scorer.ready or not pools:
        return []
    scorer.score(pools[0])
    out = []
    for _ in range(_LATENCY_REPEATS):
        for query in pools:
            t0 = time.perf_counter()
            ok = scorer.score(query).ok
            if ok:
                out.append((time.perf_counter() - t0) * 1000.0)
    return out


def _record_stage(paths: DemoPaths, n: int, rows: list[Row]) -> Path:
    """A stage's report as a JSON file (docs/specification.md §12) and a workbench bench run."""
    doc = {
        "bench": DEMO_BENCH,
        "machine": machine_info(),
        "label": f"after {n} sessions",
        "results": [r.to_json() for r in rows],
    }
    paths.bench_dir.mkdir(parents=True, exist_ok=True)
    out = paths.bench_dir / f"{DEMO_BENCH}-{n:04d}.json"
    out.write_text(json.dumps(doc, indent=2) + "\n")
    with open_workbench(paths.workbench) as wb:
        record_bench(wb, DEMO_BENCH, doc)
    return out


def _run_stage(
    paths: DemoPaths, n: int, horizon: int, progress: DemoProgress | None
) -> tuple[SimReport, Path | None]:
    """Run (or resume) the plan up to session `n` of `horizon`; a stage that ran exports the
    model and records its benchmark report."""
    # here: onnx loads only where a model file is written or read (start-up time)
    from signet_bench.learn.export import export_model

    done_before = 0
    sim = _simulator(paths.store, progress)
    on_session = None if progress is None else lambda done: progress.sessions(done, horizon)
    try:
        done_before = len(sim.done())
        keep = range(max(done_before, n - _LATENCY_SESSIONS), n)
        report = sim.loop.run(n, keep=keep, on_session=on_session)
        if report.sessions_run == 0 or not paths.model.exists():
            return report, None
        export_model(paths.model, paths.onnx)
        latencies = _scoring_latencies(paths.onnx, sim)
    finally:
        sim.close()
    comps = read_comparisons(paths.store).sort("created_at").slice(done_before, n - done_before)
    return report, _record_stage(paths, n, _stage_rows(comps, latencies))


def _label_rows(sim: Simulator, horizon: int) -> list[dict]:
    """Human labels for the injected memories of a few confident sessions, one per stretch of
    the history: the planted truth (rounded to a quarter, as a person would answer) stands in
    for the human; the judge's label is the store's relevance score."""
    plan = sim.plan(horizon)
    sessions = sim.con.execute(
        "SELECT s.session_key, s.created_at FROM session_scores s"
        " WHERE s.confidence >= 0.8 ORDER BY s.created_at"
    ).fetchall()
    if not sessions:
        return []
    picks = [sessions[int(i)] for i in np.linspace(0, len(sessions) - 1, _LABEL_SESSIONS)]
    by_key = {c.session_key: c for c in plan}
    rows = []
    for key, ended in dict(picks).items():
        cand = sim.con.execute(
            "SELECT memory_id, relevance_score FROM session_memories"
            " WHERE session_key = ? AND was_injected = 1 ORDER BY rank",
            (key,),
        ).fetchall()
        truth = true_relevance(sim.truth, by_key[key])
        labeled_at = parse_ts(ended) + timedelta(days=1)
        for memory_id, judge in cand:
            planted = truth[sim.truth.positions([memory_id])[0]]
            human = float(np.clip(np.round(planted * 4) / 4, 0.0, 1.0))
            rows.append(
                {
                    "session_key": key,
                    "memory_id": memory_id,
                    "human_label": human,
                    "judge_relevance": judge,
                    "labeler": DEMO_LABELER,
                    "labeled_at": format_iso(labeled_at),
                }
            )
    return rows


def _write_labels(paths: DemoPaths, horizon: int) -> int:
    """The demo's calibration labels (keyed rows: writing them again changes nothing)."""
    sim = _simulator(paths.store)
    try:
        rows = _label_rows(sim, horizon)
    finally:
        sim.close()
    with open_workbench(paths.workbench) as wb:
        return record_calibration(wb, rows)


def run_demo(
    out_dir: str | Path = DEFAULT_DEMO_DIR,
    sessions: int | None = None,
    *,
    progress: DemoProgress | None = None,
    memories: int = DEMO_MEMORIES,
) -> DemoResult:
    """Build (or resume) the embedded demo in `out_dir` (see the module docstring). `sessions`
    fixes the plan's length on the first run (default DEMO_SESSIONS); later runs resume it.
    `progress` (None: silent) is told each step and each session."""
    say = progress.step if progress is not None else lambda _text: None
    paths = demo_paths(out_dir)
    if not paths.store.exists():
        say(f"building the synthetic store ({memories} memories) in {paths.dir}")
    demo_store(out_dir, memories=memories)
    horizon = _horizon(paths.store, sessions)
    stops = sorted({max(1, horizon * q // 4) for q in (1, 2, 3, 4)})
    break_at = max(1, horizon // 2)
    reports, written = [], []
    try:
        for n in stops:
            if n > break_at:
                _break_model(paths.store, break_at)
            report, doc = _run_stage(paths, n, horizon, progress)
            reports.append(report)
            if doc:
                written.append(doc)
                say(f"{n} of {horizon} sessions: model exported, report {doc.name}")
        if paths.model.exists() and not paths.onnx.exists():
            # here: onnx loads only where a model file is written or read (start-up time)
            from signet_bench.learn.export import export_model

            export_model(paths.model, paths.onnx)
        labels = _write_labels(paths, horizon)
    finally:
        if progress is not None:
            progress.close()
    report = _merge(reports, horizon)
    if progress is not None:
        ran = report.sessions_run
        done = f"{ran} sessions simulated · {progress.elapsed()}" if ran else "up to date"
        progress.step(f"{paths.dir}: {horizon} sessions, {done}")
    blocks = comparison_blocks(read_comparisons(paths.store).sort("created_at"))
    return DemoResult(paths.store, report, blocks, paths, labels, tuple(written))
