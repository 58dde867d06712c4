"""The simulated daemon over one synthetic store: the session lifecycle (`replay.lifecycle`)
run in the store's synthetic world (`world.synth.world`), scoring and training through the
strategy `--scorer` names (`replay.trainers`).

`Simulator` wires the three together on the store's only writer connection and keeps what the
benches read of a run (the kept sessions' candidate pools and their planted relevance);
`simulate` is the `signet-bench simulate` command. Running the same sessions twice changes
nothing: each session is one transaction keyed by its index in the store's session plan.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.candidates import SessionInputs
from signet_bench.daemon.predictor_state import PredictorState
from signet_bench.daemon.ranking.prompt_time import PromptLimits
from signet_bench.errors import UserError
from signet_bench.replay.lifecycle import (
    Lifecycle,
    LoopOptions,
    SessionRecord,
    SimReport,
    check_mode,
)
from signet_bench.replay.loop_store import LoopStore
from signet_bench.replay.trainers import TrainerFactory, check_scorer, make_trainer
from signet_bench.store.corpus import Corpus, read_corpus
from signet_bench.store.read import open_readonly, release_line
from signet_bench.store.schema import check_release_line, connect_writer
from signet_bench.world.synth.plans import SessionContext
from signet_bench.world.synth.truth import read_synth_meta
from signet_bench.world.synth.world import SyntheticWorld, WorldOptions
from signet_scorer.budget import Budget

__all__ = ["SimOptions", "Simulator", "simulate"]


@dataclass(frozen=True, slots=True)
class SimOptions:
    """How the simulated daemon, user, agent and judge behave (the `simulate` command's
    options): the daemon's part goes to the lifecycle, the rest to the world."""

    scorer: str = "random"  # none | random | model (in-process) | sidecar (python -m signet_scorer)
    mode: str = "ours"  # ours | signet-0.58 (the real daemon's pool, for rank replay)
    seed: int = 0
    feedback_share: float = 0.3  # share of sessions whose agent rates injected memories
    judge_noise: float = 0.1  # sd of the judge's per-memory error
    judge_recency_bias: float = 0.0  # added to memories younger than 7 days
    prompts: tuple[int, int] = (10, 20)
    train_epochs: int = DEFAULT_CONFIG.full_training_epochs
    progress: bool = False
    schema: str | None = None  # the release line the store must be (None: whichever it is)
    choice: Budget | None = None  # inject the best K within tokens (None: the char budget)
    prompt_time: PromptLimits | None = None  # rank and inject at each prompt (None: off)

    def loop(self) -> LoopOptions:
        """The daemon's own options."""
        return LoopOptions(
            mode=self.mode,
            seed=self.seed,
            train_epochs=self.train_epochs,
            progress=self.progress,
            choice=self.choice,
            prompt_time=self.prompt_time,
        )

    def world(self, cfg: PredictorConfig) -> WorldOptions:
        """The user's, agent's and judge's options (young: inside the drift's recent window)."""
        return WorldOptions(
            feedback_share=self.feedback_share,
            judge_noise=self.judge_noise,
            judge_recency_bias=self.judge_recency_bias,
            prompts=self.prompts,
            young_days=cfg.drift_recent_days,
        )


class Simulator:
    """The simulated daemon over one synthetic store (it owns the store's only writer).
    `trainer` builds the trainer on the open store (default: the one `opts.scorer` names)."""

    def __init__(
        self,
        path: str | Path,
        opts: SimOptions,
        cfg: PredictorConfig = DEFAULT_CONFIG,
        *,
        trainer: TrainerFactory | None = None,
    ) -> None:
        check_scorer(opts.scorer)
        check_mode(opts.mode)
        self.path = Path(path)
        if not self.path.exists():
            raise UserError(f"{self.path}: no such store")
        self.opts, self.cfg = opts, cfg
        _check_synthetic(self.path, opts.schema)
        con = connect_writer(self.path)
        self.world = SyntheticWorld.load(con, opts.world(cfg))
        store = LoopStore(self.path, con, read_corpus(con))
        self.truth = self.world.truth
        self.truth_rows = self.world.positions(store.corpus.ids)
        if trainer is None:
            self.trainer = make_trainer(
                opts.scorer, store, cfg, self.world.tz, progress=opts.progress
            )
        else:
            self.trainer = trainer(store, cfg)
        self.loop = Lifecycle(store, self.world, self.trainer, opts.loop(), cfg)

    # -- the lifecycle's, for the benches and the demo ----------------------------------------
    @property
    def con(self) -> sqlite3.Connection:
        return self.loop.con

    @property
    def corpus(self) -> Corpus:
        return self.loop.corpus

    @property
    def tz(self) -> str:
        return self.world.tz

    @property
    def state(self) -> PredictorState:
        return self.loop.state

    @property
    def model(self) -> dict[str, np.ndarray] | None:
        """The accepted weights the trainer serves (None before the first accepted one)."""
        return self.trainer.model

    @property
    def prompt_model(self) -> dict[str, np.ndarray] | None:
        """The weights the trainer serves at the user's prompts: the prompt hook's own where a
        training chose one (`learn.serving`), else session start's."""
        own = self.trainer.prompt_model
        return self.trainer.model if own is None else own

    @property
    def records(self) -> dict[int, SessionRecord]:
        return self.loop.records

    def plan(self, n: int) -> list[SessionContext]:
        return self.loop.plan(n)

    def done(self) -> set[int]:
        return self.loop.done()

    def run_session(self, idx: int, plan: SessionContext, report: SimReport) -> None:
        self.loop.run_session(idx, plan, report)

    # -- what the benches read ----------------------------------------------------------------
    def session_inputs(self, idx: int) -> SessionInputs:
        """The candidate pool of plan session `idx` as the loop built it at its start (kept for
        the sessions a run was asked to keep)."""
        rec = self.records.get(idx)
        if rec is None:
            raise KeyError(f"session {idx} was not run with keep= including it")
        return rec.inputs

    def true_relevance(self, idx: int) -> np.ndarray:
        """The planted relevance of session `idx`'s candidates at its start."""
        rec = self.records[idx]
        return self.world.relevance(rec.plan, rec.inputs.memory_ids)

    def close(self) -> None:
        self.trainer.close()
        self.loop.con.close()


def _check_synthetic(path: Path, schema: str | None = None) -> None:
    """A file that is not a synthetic store, or not of the release line `schema` asks for, is
    reported (missing tables named) and never opened for writing (the writer would switch it to
    WAL, or write a header into an empty file)."""
    ro = open_readonly(path)
    try:
        line = release_line(ro)
        meta = read_synth_meta(ro)
    except UserError:
        meta = {}
    finally:
        ro.close()
    if not meta:
        raise UserError(
            f"{path}: not a synthetic store (no synth_persona table); "
            "create one with `signet-bench synth`"
        )
    if schema is not None and line != check_release_line(schema):
        raise UserError(
            f"{path}: a store of release line {line}, not {schema} (--schema); the loop writes "
            f"rows in the store's own shape, so leave --schema out or make a {schema} store "
            f"with `signet-bench synth --schema {schema}`"
        )


def simulate(
    path: str | Path,
    n_sessions: int,
    opts: SimOptions = SimOptions(),
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> SimReport:
    """Run (or resume) the first `n_sessions` sessions of a synthetic store's plan."""
    sim = Simulator(path, opts, cfg)
    try:
        return sim.loop.run(n_sessions)
    finally:
        sim.close()
