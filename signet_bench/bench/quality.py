"""`signet-bench bench quality`: what ranking does a synthetic user get with the learned scorer,
against the relevance the persona planted, and is it better than the obvious alternatives?

Method (no ranker ever sees the truth):

1. For each persona and each seed (`--personas`, `--seeds`; the seed fixes the store, the
   session plan and the training seeds) build a fresh store and fix a session plan of
   `max(checkpoints) + held_out` sessions.
2. Run the daemon loop (`loop.Simulator`, scorer "model": it trains on its schedule and its
   accepted model takes part in the ranking, as in use) up to each checkpoint N = 10, 50, 100,
   300 (10, 50 with --quick). At N keep: the samples of the sessions so far (`load_samples`:
   labels from the store's rows, as the daemon has them), the loop's accepted model (the one a
   user is *served*) and the alpha its next session would fuse with.
3. Run on through the held-out sessions after the last checkpoint (each with its real
   previous session: context and session gap) and keep their candidate pools as the loop built
   them (`Simulator.session_inputs`); no model here trains on them. Each held-out session is
   scored by NDCG@10 (bounded, `metrics.ndcg_at_k`) against `synth.truth.true_relevance` at its
   start, for every ranker below at every checkpoint N:

   baseline            the seed's effective-score order (`EffectiveScoreRanker`)
   cosine              cosine(context, memory) (`CosineRanker`): the strongest simple ranker
   predictor_served    the loop's own accepted model at N (`ModelRanker`); the baseline order
                       while it has none (what a user then gets)
   fused_served        what session start injects from at N: RRF of the baseline and the
                       served model with the loop's alpha, then topic diversity (`FusedRanker`)
   predictor_offline   a full retrain from fresh weights on the first N sessions (EPOCHS
                       epochs, gated; the baseline order when a gate rejects it)
   true_label_ceiling  the same training with the planted relevance as labels: what perfect
                       labels give this architecture and this context

4. Ablations at the last checkpoint (`--quick`: one seed): retrain the offline model with a
   feature group removed from training and scoring (project slot 0; the session features;
   the `superseded` feature) on personas that plant the pattern (`ABLATIONS`) and report the
   NDCG@10 drop (full - ablated; positive = the group helps).

Per-session NDCGs are pooled over the seeds of a persona; intervals are 95% bootstrap
intervals over the pooled sessions, paired for differences.

Rows (stable names; with several personas each name is prefixed `<persona>/`):
  <ranker>                  ndcg@10        ndcg  mean over held-out sessions, n = N
  predictor_served-cosine   ndcg@10_delta  ndcg  paired difference, n = N (likewise
                                                 fused_served-cosine, fused_served-baseline,
                                                 predictor_served-predictor_offline,
                                                 predictor_offline-cosine)
  predictor_offline         train_samples  sessions  trainable sessions learned from, n = N
  ablation_<group>          ndcg@10_full / ndcg@10_ablated / ndcg@10_drop
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from signet_bench.bench.report import Row
from signet_bench.candidates import SessionInputs
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.features import SESSION_FEATURES, feature_index
from signet_bench.loop import SimOptions, Simulator, model_trainer
from signet_bench.metrics import bootstrap_interval, ndcg_at_k
from signet_bench.model.ranker import ModelRanker
from signet_bench.predictor_state import effective_alpha, on_session_start
from signet_bench.ranking.ranker import CosineRanker, EffectiveScoreRanker, FusedRanker, Ranker
from signet_bench.samples import SessionSample, load_samples
from signet_bench.synth.build import build_persona_store
from signet_bench.synth.persona import Persona, Project, get_persona
from signet_bench.synth.truth import true_relevance
from signet_bench.train import train_model

__all__ = [
    "ABLATIONS",
    "HeldOut",
    "ablate_inputs",
    "ablate_samples",
    "ablation_persona",
    "quality_rows",
    "shared_stack",
]

CHECKPOINTS = (10, 50, 100, 300)
QUICK_CHECKPOINTS = (10, 50)
HELD_OUT = 150  # held-out sessions per store: 50 gave intervals of ±0.03-0.06
QUICK_HELD_OUT = 40
EPOCHS = 50  # as `bench train` (the seed's budget: 50 epochs in <= 10 s)
K = 10
BOOTSTRAP = 2000
TIME_FEATURES = SESSION_FEATURES  # time of day, weekday, month, session gap
SUPERSEDED_FEATURE = feature_index("superseded")
RANKERS = (
    "baseline",
    "cosine",
    "predictor_served",
    "fused_served",
    "predictor_offline",
    "true_label_ceiling",
)
DIFFERENCES = (
    ("predictor_served", "cosine"),
    ("fused_served", "cosine"),
    ("fused_served", "baseline"),
    ("predictor_served", "predictor_offline"),
    ("predictor_offline", "cosine"),
)

Params = dict[str, np.ndarray]
_log = logging.getLogger(__name__)


def shared_stack(name: str) -> tuple[Project, ...]:
    """The persona's projects, all working on its first project's topics: a memory's topic no
    longer tells its project, only the project's name in its text does (and the session's
    project slot)."""
    projects = get_persona(name).projects
    first = projects[0]
    return tuple(
        dataclasses.replace(p, topics=first.topics, topic_weights=first.topic_weights)
        for p in projects
    )


# group -> (persona, overrides): a persona that plants the group's pattern often enough for its
# removal to be measurable. With distinct topics per project, the context (the previous session
# of the same project) already says which project a session is in, so the project ablation
# runs on a persona whose projects share their topics.
ABLATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "project": ("multi-project", {"projects": shared_stack("multi-project")}),
    "time": ("heavy", {"time_pattern_share": 0.3}),
    "superseded": ("heavy", {"supersede_share": 0.25, "supersede_modes": (("attribute", 1.0),)}),
}


def ablation_persona(group: str) -> tuple[str, Persona]:
    """The label and persona a group's ablation runs on."""
    name, overrides = ABLATIONS[group]
    persona = dataclasses.replace(get_persona(name), **overrides)
    return (f"{name}+{group}" if overrides else name), persona


@dataclass(frozen=True, slots=True)
class HeldOut:
    """One held-out session's candidate pool, as the loop built it at the session start, with
    the relevance the persona planted."""

    inputs: SessionInputs
    relevance: np.ndarray  # true relevance at the session start


def _zeroed(features: np.ndarray, group: str | None) -> np.ndarray:
    cols = {"time": list(TIME_FEATURES), "superseded": [SUPERSEDED_FEATURE]}.get(group or "")
    if not cols:
        return features
    f = np.array(features, copy=True)
    f[:, cols] = 0.0
    return f


def ablate_samples(samples: list[SessionSample], group: str | None) -> list[SessionSample]:
    """Training samples with a feature group removed (None = unchanged)."""
    if group is None:
        return samples
    if group == "project":
        return [dataclasses.replace(s, project_slot=0) for s in samples]
    return [dataclasses.replace(s, features=_zeroed(s.features, group)) for s in samples]


def ablate_inputs(inputs: SessionInputs, group: str | None) -> SessionInputs:
    """A session's inputs with a feature group removed (None = unchanged), as in training."""
    if group is None:
        return inputs
    if group == "project":
        return dataclasses.replace(inputs, project_slot=0)
    return dataclasses.replace(inputs, features=_zeroed(inputs.features, group))


def ndcgs(ranker: Ranker, held: list[HeldOut], group: str | None = None) -> np.ndarray:
    """NDCG@10 against the planted relevance per held-out session."""
    return np.array(
        [
            ndcg_at_k(
                h.relevance, ranker.score(ablate_inputs(h.inputs, group)), h.inputs.memory_ids, k=K
            )
            for h in held
        ]
    )


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """What the loop had after its first N sessions."""

    samples: list[SessionSample]
    served: Params | None  # the loop's accepted model
    alpha: float  # the baseline weight its next session fuses with


@dataclass
class Run:
    """One simulated store: its checkpoints, its held-out pools and the trained models' NDCGs."""

    persona: str
    seed: int
    sim: Simulator
    checkpoints: dict[int, Checkpoint]
    held: list[HeldOut]
    scores: dict[tuple, np.ndarray] = field(default_factory=dict)

    def true_labels(self, n: int) -> list[SessionSample]:
        """The first `n` sessions' samples with every label replaced by the planted relevance
        at the session start."""
        plan = {c.session_key: c for c in self.sim.plan(len(self.sim.done()))}
        out = []
        for s in self.checkpoints[n].samples:
            rel = true_relevance(self.sim.truth, plan[s.session_key])
            rows = self.sim.truth.positions(s.memory_ids.astype(str))
            out.append(dataclasses.replace(s, labels=rel[rows].astype(s.labels.dtype)))
        return out

    def offline(self, n: int, group: str | None, truth: bool, cfg: PredictorConfig) -> np.ndarray:
        """Per-held-out-session NDCG@10 of a fresh model trained on the first `n` sessions
        (with `group` removed; on planted labels with `truth`); the baseline order when there
        is too little data or a gate rejects it."""
        key = (n, group, truth)
        if key not in self.scores:
            samples = self.true_labels(n) if truth else self.checkpoints[n].samples
            params = _train(ablate_samples(samples, group), self.seed, cfg)
            ranker = EffectiveScoreRanker() if params is None else ModelRanker(params, cfg)
            self.scores[key] = ndcgs(ranker, self.held, group)
        return self.scores[key]


def _train(samples: list[SessionSample], seed: int, cfg: PredictorConfig) -> Params | None:
    if len(samples) < 2:
        return None
    res = train_model(samples, None, cfg=cfg, epochs=EPOCHS, seed=seed)
    if not res.accepted:
        _log.info(f"    training (seed {seed}) rejected by gate {res.gate_reason}")
    return res.params


def simulate_run(
    persona: str | Persona,
    seed: int,
    checkpoints: Sequence[int],
    held_out: int,
    tmp: Path,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    embedder: str = "topic",
    label: str | None = None,
) -> Run:
    """Build the store, run the loop to each checkpoint, then through the held-out sessions."""
    label = label or (persona if isinstance(persona, str) else persona.name)
    path = tmp / f"{label}-{seed}.db"
    t0 = time.perf_counter()
    build_persona_store(persona, path, seed=seed, embedder=embedder)
    _log.info(f"  [{label} seed {seed}] store built in {time.perf_counter() - t0:.1f} s")
    sim = Simulator(path, SimOptions(scorer="model", seed=seed), cfg, trainer=model_trainer)
    last = max(checkpoints)
    horizon = len(sim.plan(last + held_out))
    kept: dict[int, Checkpoint] = {}
    for n in checkpoints:
        t0 = time.perf_counter()
        rep = sim.run(n)
        got, skipped = load_samples(sim.con, corpus=sim.corpus, tz=sim.tz, cfg=cfg, seed=seed)
        alpha = effective_alpha(on_session_start(sim.state, cfg).state, cfg)
        kept[n] = Checkpoint(got, sim.model, alpha)
        _log.info(
            f"  [{label} seed {seed}] sessions 0..{n - 1} (+{rep.sessions_run} in "
            f"{time.perf_counter() - t0:.1f} s; trainings {rep.trainings}, accepted "
            f"{rep.trainings_accepted}); {len(got)} trainable, {skipped} skipped; alpha {alpha:.2f}"
        )
    sim.run(horizon, keep=range(last, horizon))
    held = []
    for i in range(last, horizon):
        inputs = sim.session_inputs(i)
        if inputs.context is not None and len(inputs) >= 2:
            held.append(HeldOut(inputs, sim.true_relevance(i)))
    return Run(label, seed, sim, kept, held)


def checkpoint_ndcgs(run: Run, n: int, cfg: PredictorConfig) -> dict[str, np.ndarray]:
    """Every ranker's per-held-out-session NDCG@10 at checkpoint `n` of a run."""
    cp = run.checkpoints[n]
    served = EffectiveScoreRanker() if cp.served is None else ModelRanker(cp.served, cfg)
    return {
        "baseline": ndcgs(EffectiveScoreRanker(), run.held),
        "cosine": ndcgs(CosineRanker(), run.held),
        "predictor_served": ndcgs(served, run.held),
        "fused_served": ndcgs(FusedRanker(served, cp.alpha, cfg), run.held),
        "predictor_offline": run.offline(n, None, False, cfg),
        "true_label_ceiling": run.offline(n, None, True, cfg),
    }


def _row(name: str, metric: str, values: np.ndarray, n: int, seed: int) -> Row:
    lo, hi = bootstrap_interval(values, seed, draws=BOOTSTRAP)
    return Row(name, metric, float(np.mean(values)), "ndcg", lo, hi, n=n)


def curve_rows(runs: list[Run], checkpoints: Sequence[int], prefix: str, cfg) -> list[Row]:
    """The rankers and their paired differences at every checkpoint, pooled over `runs`."""
    rows: list[Row] = []
    seed = runs[0].seed
    for n in checkpoints:
        t0 = time.perf_counter()
        per_run = [checkpoint_ndcgs(r, n, cfg) for r in runs]
        pooled = {k: np.concatenate([p[k] for p in per_run]) for k in RANKERS}
        rows += [_row(prefix + k, "ndcg@10", pooled[k], n, seed) for k in RANKERS]
        for a, b in DIFFERENCES:
            rows.append(_row(f"{prefix}{a}-{b}", "ndcg@10_delta", pooled[a] - pooled[b], n, seed))
        trained = sum(len(r.checkpoints[n].samples) for r in runs)
        rows.append(Row(prefix + "predictor_offline", "train_samples", trained, "sessions", n=n))
        _log.info(
            f"  after {n}: "
            + ", ".join(f"{k} {pooled[k].mean():.4f}" for k in RANKERS)
            + f" ({time.perf_counter() - t0:.1f} s)"
        )
    return rows


def ablation_rows(runs: dict[str, list[Run]], last: int, cfg: PredictorConfig) -> list[Row]:
    """The NDCG@10 drop of each feature group's removal at the last checkpoint."""
    rows: list[Row] = []
    for group in ABLATIONS:
        label, _ = ablation_persona(group)
        group_runs = runs[label]
        full = np.concatenate([r.offline(last, None, False, cfg) for r in group_runs])
        ablated = np.concatenate([r.offline(last, group, False, cfg) for r in group_runs])
        name, seed = f"ablation_{group}", group_runs[0].seed
        rows.append(_row(name, "ndcg@10_full", full, last, seed))
        rows.append(_row(name, "ndcg@10_ablated", ablated, last, seed))
        rows.append(_row(name, "ndcg@10_drop", full - ablated, last, seed))
        _log.info(
            f"  ablation {group} ({label}): full {full.mean():.4f}, ablated "
            f"{ablated.mean():.4f}, drop {full.mean() - ablated.mean():+.4f}"
        )
    return rows


def quality_rows(
    personas: Sequence[str] = ("heavy",),
    *,
    seeds: Sequence[int] = (0,),
    quick: bool = False,
    embedder: str = "topic",
    ablations: bool = True,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> list[Row]:
    """Simulate every persona on every seed, evaluate each checkpoint's rankers on the
    held-out sessions (pooled per persona), ablate; the rows. `cfg` is the predictor's
    configuration (a training schedule to try, say)."""
    checkpoints = QUICK_CHECKPOINTS if quick else CHECKPOINTS
    held_out = QUICK_HELD_OUT if quick else HELD_OUT
    t_all = time.perf_counter()
    _log.info(
        f"bench quality: personas {list(personas)}, seeds {list(seeds)}, checkpoints "
        f"{list(checkpoints)}, {held_out} held-out sessions each, {embedder} embeddings"
    )
    runs: dict[str, list[Run]] = {}
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="signet-bench-quality-") as tmp_name:
        tmp = Path(tmp_name)
        try:
            for persona in personas:
                runs[persona] = [
                    simulate_run(persona, s, checkpoints, held_out, tmp, cfg, embedder)
                    for s in seeds
                ]
                prefix = f"{persona}/" if len(personas) > 1 else ""
                rows += curve_rows(runs[persona], checkpoints, prefix, cfg)
            if ablations:
                ablation_seeds = seeds[:1] if quick else seeds
                last = (max(checkpoints),)
                for group in ABLATIONS:
                    label, spec = ablation_persona(group)
                    if label not in runs:
                        runs[label] = [
                            simulate_run(spec, s, last, held_out, tmp, cfg, embedder, label)
                            for s in ablation_seeds
                        ]
                rows += ablation_rows(runs, max(checkpoints), cfg)
        finally:
            for group_runs in runs.values():
                for r in group_runs:
                    r.sim.close()
    _log.info(f"bench quality done in {time.perf_counter() - t_all:.0f} s")
    return rows
