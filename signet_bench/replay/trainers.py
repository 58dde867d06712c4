"""What serves the scores the session start fuses, and what runs a training the loop made due.

The lifecycle (`replay.lifecycle`) asks its `Trainer` for a scorer at every session start and
hands it a `TrainingJob` when a training is due; four strategies answer, one per `--scorer`:

- `NoScorer` (none): the predictor is offline; nothing scores, nothing trains.
- `RandomScorer` (random): random scores; a due training is counted as accepted (the state moves
  on as the daemon's would) but nothing learns.
- `InProcessTrainer` (model): the accepted weights scored in process (`ModelRanker`), trained by
  `train.train_store`, the same path as `signet-bench train`.
- `SidecarTrainer` (sidecar): the predictor sidecar (`python -m signet_scorer`) as the daemon runs
  it, scoring over JSON-RPC and training through its `train_from_db` on the committed store.

The loop's training policy (fresh, incremental or fine-tune; what to protect) is one typed
`signet_scorer.request.TrainingRequest`, built by `TrainingJob.request` for both trainers alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from signet_bench.config import PredictorConfig
from signet_bench.daemon.candidates import SessionInputs
from signet_bench.daemon.predictor_state import PredictorState
from signet_bench.errors import UserError
from signet_bench.learn.base import shipped_base_alpha
from signet_bench.learn.model.checkpoint import load_checkpoint
from signet_bench.learn.model.ranker import ModelRanker
from signet_bench.learn.publish import NothingToTrain, TooLittleData, scheduled_request, train_store
from signet_bench.learn.serving import ServingChoice
from signet_bench.replay.loop_store import LoopStore
from signet_scorer.client import SidecarClient
from signet_scorer.query import ScoreQuery
from signet_scorer.signals import signal_column
from signet_scorer.workbench import CHECKPOINT_FILE, MODEL_DIR_SUFFIX, prompt_model_file

if TYPE_CHECKING:
    from signet_scorer.request import TrainingRequest

__all__ = [
    "BASE_RUN_ID",
    "SCORERS",
    "SIDECAR_TIMEOUTS_MS",
    "InProcessTrainer",
    "NoScorer",
    "RandomScorer",
    "ScoreFn",
    "SidecarTrainer",
    "TrainOutcome",
    "Trainer",
    "TrainerFactory",
    "TrainingJob",
    "check_scorer",
    "make_trainer",
    "model_dir",
    "model_path",
]

SCORERS = ("none", "random", "model", "sidecar")
# The simulator waits for its sidecar longer than the daemon would (Signet: score 120 ms, train
# 30 s): a replay must not fail open because the machine was busy, or it would not reproduce.
SIDECAR_TIMEOUTS_MS = {"score": 30_000.0, "train_from_db": 600_000.0, "status": 30_000.0}

Params = dict[str, np.ndarray]
BASE_RUN_ID = "shipped-base"  # the workbench run that put the shipped base in place
ScoreFn = Callable[[SessionInputs], np.ndarray | None]
"""Scores of a session's candidates as session start asks for them (None: it failed open)."""


def model_dir(store: Path) -> Path:
    """Where the simulated daemon keeps its accepted model and workbench (beside the store)."""
    return store.with_name(store.name + MODEL_DIR_SUFFIX)


def model_path(store: Path) -> Path:
    """The simulated daemon's accepted model."""
    return model_dir(store) / CHECKPOINT_FILE


def check_scorer(scorer: str) -> None:
    """A `--scorer` value the loop knows (else a clear error naming the choices)."""
    if scorer not in SCORERS:
        raise UserError(f"--scorer: {scorer!r} is not one of {', '.join(SCORERS)}")


@dataclass(frozen=True, slots=True)
class TrainingJob:
    """A training the loop made due: its run id, the predictor state it was due in, and what the
    loop's policy needs to build the request."""

    store: Path
    run_id: str  # the model version it would become and the newest session
    state: PredictorState
    cfg: PredictorConfig
    seed: int
    epochs: int  # per full training
    tz: str

    def request(self, served: bool) -> TrainingRequest:
        """The loop's training policy as one request (`served`: an accepted model is being
        served): retrain from fresh weights when the schedule's full retrain is due, else
        fine-tune the accepted model (incrementally once it has passed the gates since the
        last drift reset, else on every session), and protect its canary behaviour once cold
        start has exited (before, the predictor changes no injection, so there is nothing to
        protect yet)."""
        st, every = self.state, self.cfg.full_retrain_every
        fresh = every > 0 and (st.model_version + 1) % every == 0
        mode = "fresh" if fresh else "incremental" if st.trained else "finetune"
        request = scheduled_request(
            self.store, model_dir(self.store), self.cfg, mode=mode, full_epochs=self.epochs
        )
        return request.replace(
            base_weights=model_path(self.store) if served else None,
            protect=served and st.cold_start_exited,
            seed=self.seed + st.model_version,
            sample_seed=self.seed,
            tz=self.tz,
        )


@dataclass(frozen=True, slots=True)
class TrainOutcome:
    """A training that ran: accepted or not, and its `predictor_training_log` row (None: nothing
    is logged, as when there was nothing to train on)."""

    accepted: bool
    log: Mapping[str, object] | None = None


Serving = tuple[ServingChoice | None, ServingChoice | None]
"""What a training chose to serve at session start and at the prompts (`learn.serving`)."""


class Trainer(Protocol):
    """The scorer a session start fuses and the training a due session triggers."""

    name: str  # the `--scorer` it answers to (recorded in `sim_sessions.scorer`)
    model: Params | None  # the weights it serves (None: nothing scores)
    prompt_model: Params | None  # the prompt hook's own weights (None: the prompts get `model`)
    start_alpha: float  # the baseline's weight in cold start (`PredictorState.start_alpha`)
    serving: Serving  # what the newest training chose at each hook (None: not known here)

    def scorer(self, rng: np.random.Generator) -> ScoreFn | None:
        """The scorer this session start calls (None: offline, or not trained yet)."""
        ...

    def prompt_scorer(self, rng: np.random.Generator) -> ScoreFn | None:
        """The scorer a prompt's ranking calls: the model the prompt hook's own held-out
        rankings chose (`learn.serving`), else session start's."""
        ...

    def train(self, job: TrainingJob) -> TrainOutcome | None:
        """Run a due training (None: this scorer does not train, nothing is counted)."""
        ...

    def close(self) -> None: ...


TrainerFactory = Callable[["LoopStore", PredictorConfig], Trainer]
"""Builds a trainer for an open store (the in-process trainer's constructor is one)."""


class NoScorer:
    """The predictor offline: session start ranks by the baseline alone; nothing trains."""

    name = "none"
    model: Params | None = None
    prompt_model: Params | None = None
    start_alpha = 1.0  # the baseline alone
    serving: Serving = (None, None)

    def scorer(self, rng: np.random.Generator) -> ScoreFn | None:
        return None

    def prompt_scorer(self, rng: np.random.Generator) -> ScoreFn | None:
        return self.scorer(rng)

    def train(self, job: TrainingJob) -> TrainOutcome | None:
        return None

    def close(self) -> None:
        return None


class RandomScorer(NoScorer):
    """Random scores (a softmax of normal draws from the session's stream); a due training is
    accepted without learning anything, so the state moves on as the daemon's would."""

    name = "random"

    def scorer(self, rng: np.random.Generator) -> ScoreFn | None:
        def random_scores(inputs: SessionInputs) -> np.ndarray:
            z = rng.normal(size=len(inputs))
            e = np.exp(z - z.max())
            return e / e.sum()

        return random_scores

    def train(self, job: TrainingJob) -> TrainOutcome | None:
        return TrainOutcome(accepted=True)


def _saved_model(store: Path, *, prompt: bool = False) -> Params | None:
    """The accepted model a resumed run continues with (none before the first training;
    `prompt`: the prompt hook's own, none where no training chose one)."""
    path = prompt_model_file(model_path(store)) if prompt else model_path(store)
    if not path.exists():
        return None

    return load_checkpoint(path)[0]


def _served_model(store: LoopStore, cfg: PredictorConfig) -> Params:
    """The model a learning loop serves from its first session: the saved one, else the
    shipped base, put in place now (`publish.publish_base`) as the daemon's first start does."""
    saved = _saved_model(store.path)
    if saved is not None:
        return saved
    from signet_bench.learn.publish import publish_base, scheduled_request

    request = scheduled_request(store.path, model_dir(store.path), cfg)
    params = publish_base(request, store.corpus.dim, cfg, run_id=BASE_RUN_ID).result.params
    assert params is not None  # publishing the base always serves it
    return params


def _finite_loss(loss: object) -> float:
    """SQLite turns NaN into NULL in the `loss REAL NOT NULL` column: a diverged (or unknown)
    loss is logged as +inf (the workbench keeps the full curve)."""
    return loss if isinstance(loss, float) and math.isfinite(loss) else float("inf")


class InProcessTrainer:
    """The accepted weights scored in process; a due training runs `train.train_store` on the
    loop's connection (the store is only read), the same path as `signet-bench train`; an
    accepted model is used from the next session on. `progress`: the training's own bars
    (sample assembly, epochs) show under the loop's."""

    name = "model"

    def __init__(self, store: LoopStore, cfg: PredictorConfig, *, progress: bool = False) -> None:
        self.store, self.cfg, self.progress = store, cfg, progress
        self.model: Params | None = _served_model(store, cfg)
        self.prompt_model: Params | None = _saved_model(store.path, prompt=True)
        self.start_alpha = shipped_base_alpha()
        self.serving: Serving = (None, None)

    def scorer(self, rng: np.random.Generator) -> ScoreFn | None:
        if self.model is None:
            return None

        return ModelRanker(self.model, self.cfg).score

    def prompt_scorer(self, rng: np.random.Generator) -> ScoreFn | None:
        if self.prompt_model is None:
            return self.scorer(rng)
        return ModelRanker(self.prompt_model, self.cfg).score

    def train(self, job: TrainingJob) -> TrainOutcome | None:

        request = job.request(served=self.model is not None)
        store = self.store
        try:
            run = train_store(
                request,
                cfg=self.cfg,
                db=store.con,
                corpus=store.corpus,
                run_id=job.run_id,
                progress=self.progress,
            )
        except (NothingToTrain, TooLittleData):
            return TrainOutcome(accepted=False)
        result = run.result
        if result.accepted:
            self.model, self.prompt_model = result.params, result.prompt_params
            self.serving = (result.serving, result.prompt_serving)
        last = result.loss_curve[-1] if result.loss_curve else float("inf")
        log = {
            "id": job.run_id,
            "loss": _finite_loss(last),
            "sample_count": result.sample_count,
            "duration_ms": result.duration_ms,
            "canary_ndcg": result.canary_ndcg,
            "canary_ndcg_delta": result.canary_ndcg_delta,
            "canary_score_variance": result.canary_score_variance,
            "canary_topk_churn": None
            if result.canary_topk_overlap is None
            else 1.0 - result.canary_topk_overlap,
        }
        return TrainOutcome(result.accepted, log)

    def close(self) -> None:
        return None  # the connection is the loop's


class SidecarTrainer:
    """The predictor sidecar serving the store's model file (`python -m signet_scorer`), as the
    daemon runs it: it starts untrained until the first accepted training, scores with null
    embeddings on the text path, and trains through `train_from_db` (the trainer runs in its
    child process on the committed store; the sidecar swaps the new model in), with the same
    request as the in-process trainer (it trains the model it serves, the same file)."""

    name = "sidecar"

    def __init__(self, store: LoopStore, cfg: PredictorConfig, tz: str) -> None:

        self.path, self.cfg = store.path, cfg
        self.model: Params | None = _served_model(store, cfg)
        self.prompt_model: Params | None = _saved_model(store.path, prompt=True)
        self.start_alpha = shipped_base_alpha()
        self.serving: Serving = (None, None)  # the sidecar's trainings choose out of sight
        self.client = SidecarClient.for_model(
            model_path(self.path),
            store.corpus.dim,
            args=("--tz", tz),
            timeouts_ms=SIDECAR_TIMEOUTS_MS,
        )

    def scorer(self, rng: np.random.Generator) -> ScoreFn | None:
        return None if self.model is None else self._scores

    def prompt_scorer(self, rng: np.random.Generator) -> ScoreFn | None:
        """The sidecar serves session start's model; the prompt hook's own, where a training
        chose one, scores in process (`InProcessTrainer.prompt_scorer`)."""
        if self.prompt_model is None:
            return self.scorer(rng)
        return ModelRanker(self.prompt_model, self.cfg).score

    def _scores(self, inputs: SessionInputs) -> np.ndarray | None:
        """The sidecar's scores for the candidates (None when it fails open)."""
        has = inputs.has_embedding
        emb = [row if h else None for row, h in zip(inputs.embeddings, has, strict=True)]
        got = self.client.score(
            ScoreQuery(
                inputs.context,
                inputs.memory_ids.tolist(),
                candidate_embeddings=emb,
                candidate_texts=list(inputs.contents),
                candidate_features=inputs.features,
                project_slot=inputs.project_slot,
                # the signals' inputs, so the sidecar scores with the session-start query
                query_terms=list(inputs.query.terms),
                query_entities=list(inputs.query.entities),
                candidate_sources=inputs.sources.tolist(),
                candidate_created_at=inputs.created_at,
                candidate_track_record=inputs.signals[:, signal_column("track_record")],
            )
        )
        if got is None:
            return None
        by_id = dict(got)
        return np.array([by_id.get(m, np.nan) for m in inputs.memory_ids], dtype=np.float64)

    def train(self, job: TrainingJob) -> TrainOutcome | None:
        res = self.client.train_from_db(job.request(served=self.model is not None))
        if not res:
            return TrainOutcome(accepted=False)
        accepted = bool(res.get("accepted"))
        if accepted:
            self.model = _saved_model(self.path)
            self.prompt_model = _saved_model(self.path, prompt=True)
        log = {
            "id": job.run_id,
            "loss": _finite_loss(res.get("loss")),
            "sample_count": res.get("samples_used"),
            "duration_ms": res.get("duration_ms"),
            "canary_score_variance": res.get("canary_score_variance"),
        }
        return TrainOutcome(accepted, log)

    def close(self) -> None:
        self.client.close()


def make_trainer(
    scorer: str, store: LoopStore, cfg: PredictorConfig, tz: str, *, progress: bool = False
) -> Trainer:
    """The strategy `--scorer` names, on an open store (`tz`: the user's time zone, which the
    sidecar's trainer reads its sessions in; `progress`: the in-process trainer draws its
    own bars under the loop's, so a training does not stall the loop's progress)."""
    check_scorer(scorer)
    if scorer == "model":
        return InProcessTrainer(store, cfg, progress=progress)
    if scorer == "sidecar":
        return SidecarTrainer(store, cfg, tz)
    return RandomScorer() if scorer == "random" else NoScorer()
