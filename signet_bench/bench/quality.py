"""`signet-bench bench quality`: does the learned scorer rank a synthetic user's memories better
than the heuristic baseline, against the relevance the persona planted?

Method (the predictor never sees the truth):

1. Build a fresh synthetic store for `--persona` (default heavy) and fix a session plan of
   `max(checkpoints) + HELD_OUT` sessions.
2. Run the daemon loop (`loop.Simulator`, scorer "model": it trains every 10 sessions and its
   accepted model takes part in the ranking, as it would in use) up to each checkpoint
   N = 10, 50, 100, 300 (10, 50 with --quick). At each checkpoint, take the samples of the
   sessions seen so far (`load_samples` on the store: labels from the store's session rows, as
   the daemon has them) and train predictors on them: full `train_model` runs (50 epochs, fresh
   weights, gated), one per training seed (SEEDS; one with --quick), whose per-session NDCG is
   averaged. The loop's own model at N (incremental, gated training) is evaluated too
   (`loop_model_after_<N>`).
3. The loop then runs on through the HELD_OUT sessions after the last checkpoint, so that each
   has its real previous session (the context embedding and the session gap come from it);
   the offline predictors never train on them. For each held-out session: the session-start
   pre-filter's candidate pool as the loop built it (`Simulator.session_inputs`), ranked by
   each ranker of the ranker contract (`EffectiveScoreRanker`, the baseline; `ModelRanker`,
   the loop's serving path; `CosineRanker`); NDCG@10 (bounded, `metrics.ndcg_at_k`)
   against `synth.truth.true_relevance` at the session's start. Every ranker sees the same
   pools.
4. Ablations at the last checkpoint: retrain (same samples, same seeds) with a feature group
   removed from training and scoring — project (every project slot set to 0, Signet's "no
   project"), time (the session features, time of day to session gap, zeroed), superseded
   (the `superseded` feature zeroed) — on personas that
   plant those patterns (`ABLATIONS`: multi-project with every project on the same topics, so
   that a memory's topic no longer tells its project; heavy with 30% of project memories
   time-patterned; heavy with 25% of memories superseded and left live, as a superseded
   knowledge-graph attribute leaves them) and report the NDCG@10 drop (full - ablated;
   positive = the group helps). The drops are small next to the spread between sessions, so
   the ablations use more held-out sessions (ABLATION_HELD_OUT) and training seeds
   (ABLATION_SEEDS) than the curve.
5. References: the pool ranked by cosine(context, memory) alone, and the model trained on the
   last checkpoint's sessions with the planted relevance as labels (what perfect labels would
   give this architecture and this context).

Intervals are 95% bootstrap intervals over the held-out sessions (paired for deltas and drops).

Rows (stable names):
  baseline                      ndcg@10        ndcg   effective-score order of the pool
  random                        ndcg@10        ndcg   a random order of the pool (reference)
  predictor_after_<N>           ndcg@10        ndcg   offline full retrain on the first N sessions
  predictor_after_<N>           train_samples  sessions  trainable sessions it learned from
  predictor_after_<N>           ndcg@10_seed_sd  ndcg  sd over training seeds (not with --quick)
  delta_after_<N>               ndcg@10_delta  ndcg   predictor - baseline (goal +0.10 at 50,
                                                      +0.20 at 300)
  loop_model_after_<N>          ndcg@10        ndcg   the loop's own accepted model at N
  context_cosine                ndcg@10        ndcg   cosine(context, memory) order (reference)
  true_labels_after_<N>         ndcg@10        ndcg   trained on planted relevance (ceiling)
  ablation_<group>              ndcg@10_full / ndcg@10_ablated / ndcg@10_drop   ndcg
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from signet_bench.bench.report import Row
from signet_bench.candidates import SessionInputs
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.features import FEATURE_NAMES, SESSION_FEATURES
from signet_bench.loop import SimOptions, Simulator, model_trainer
from signet_bench.metrics import ndcg_at_k
from signet_bench.model.ranker import ModelRanker
from signet_bench.ranking.ranker import CosineRanker, EffectiveScoreRanker
from signet_bench.samples import SessionSample, load_samples
from signet_bench.synth.build import build_persona_store
from signet_bench.synth.persona import Persona, Project, get_persona
from signet_bench.synth.truth import true_relevance
from signet_bench.train import train_model

__all__ = ["ABLATIONS", "HeldOut", "ablate_samples", "evaluate", "quality_rows"]

CHECKPOINTS = (10, 50, 100, 300)
QUICK_CHECKPOINTS = (10, 50)
HELD_OUT = 50
ABLATION_HELD_OUT = 150
EPOCHS = 50  # as `bench train` (the seed's budget: 50 epochs in <= 10 s)
K = 10
SEEDS = (0, 1, 2)  # training seeds averaged per predictor (per-session NDCG)
QUICK_SEEDS = (0,)
ABLATION_SEEDS = (0, 1, 2, 3, 4)
BOOTSTRAP = 2000
TIME_FEATURES = SESSION_FEATURES  # time of day, weekday, month, session gap
SUPERSEDED_FEATURE = FEATURE_NAMES.index("superseded")


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
# removal to be measurable. With the heavy persona's defaults, live superseded memories are 0.2%
# of held-out pools (soft-deleted ones never reach the pool) and time-patterned ones 5%. With
# distinct topics per project, the context (the previous session of the same project) already
# says which project a session is in, so the project slot has nothing left to add.
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


Params = dict[str, np.ndarray]
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class HeldOut:
    """One held-out session's candidate pool, as the loop built it at the session start, with
    the relevance the persona planted."""

    inputs: SessionInputs
    relevance: np.ndarray  # true relevance at the session start


def held_out_sessions(sim: Simulator, indices: range) -> list[HeldOut]:
    """The kept pools of the plan sessions `indices` (run with `keep=indices`), those with a
    context and at least two candidates."""
    out = []
    for i in indices:
        inputs = sim.session_inputs(i)
        if inputs.context is None or len(inputs) < 2:
            continue
        out.append(HeldOut(inputs, sim.true_relevance(i)))
    return out


def _zeroed(features: np.ndarray, group: str | None) -> np.ndarray:
    if group == "time":
        cols = list(TIME_FEATURES)
    elif group == "superseded":
        cols = [SUPERSEDED_FEATURE]
    else:
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


def evaluate(
    params: Params | None,
    held: list[HeldOut],
    *,
    group: str | None = None,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> np.ndarray:
    """NDCG@10 per held-out session: the baseline when `params` is None, else the model
    (with `group` removed from its inputs, as in its training)."""
    ranker = EffectiveScoreRanker() if params is None else ModelRanker(params, cfg)
    return np.array(
        [
            ndcg_at_k(
                h.relevance, ranker.score(ablate_inputs(h.inputs, group)), h.inputs.memory_ids, k=K
            )
            for h in held
        ]
    )


def _random_order(held: list[HeldOut], seed: int, draws: int = 20) -> np.ndarray:
    rng = np.random.default_rng([seed, 0xAB])
    return np.array(
        [
            np.mean(
                [
                    ndcg_at_k(h.relevance, rng.random(len(h.inputs)), h.inputs.memory_ids, k=K)
                    for _ in range(draws)
                ]
            )
            for h in held
        ]
    )


def _ci(values: np.ndarray, seed: int) -> tuple[float, float]:
    """95% bootstrap interval of the mean (paired when `values` are per-session differences)."""
    v = np.asarray(values, dtype=np.float64)
    if len(v) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng([seed, 0xB007])
    means = v[rng.integers(0, len(v), size=(BOOTSTRAP, len(v)))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def _row(name: str, metric: str, values: np.ndarray, seed: int, goal: str | None = None) -> Row:
    lo, hi = _ci(values, seed)
    return Row(name, metric, float(np.mean(values)), "ndcg", lo, hi, n=len(values), goal=goal)


def _train(samples: list[SessionSample], seed: int, cfg: PredictorConfig) -> Params | None:
    res = train_model(samples, None, cfg=cfg, epochs=EPOCHS, seed=seed)
    if not res.accepted:
        _log.info(f"    training (seed {seed}) rejected by gate {res.gate_reason}")
    return res.params


@dataclass
class _Prepared:
    """A simulated store: its simulator, the held-out pools, the samples and the loop's model
    per checkpoint, and the per-session NDCG of every model trained so far."""

    persona: str
    sim: Simulator
    held: list[HeldOut]
    samples: dict[int, list[SessionSample]]
    loop_models: dict[int, Params | None]
    scores: dict[tuple[int, str | None, int], np.ndarray | None] = dataclasses.field(
        default_factory=dict
    )

    def with_true_labels(self, n: int) -> list[SessionSample]:
        """The first `n` sessions' samples with every label replaced by the planted relevance
        at the session start: what the model reaches if the labels were perfect."""
        plan = {c.session_key: c for c in self.sim.plan(len(self.sim.done()))}
        out = []
        for s in self.samples[n]:
            rel = true_relevance(self.sim.truth, plan[s.session_key])
            rows = self.sim.truth.positions(s.memory_ids.astype(str))
            out.append(dataclasses.replace(s, labels=rel[rows].astype(s.labels.dtype)))
        return out

    def trained(
        self, n: int, group: str | None, seed: int, cfg: PredictorConfig
    ) -> np.ndarray | None:
        """Per-held-out-session NDCG@10 of a model trained on the first `n` sessions with
        `group` removed (None when there is too little data or a gate rejects it)."""
        key = (n, group, seed)
        if key not in self.scores:
            samples = self.samples[n]
            params = (
                _train(ablate_samples(samples, group), seed, cfg) if len(samples) >= 2 else None
            )
            self.scores[key] = (
                None if params is None else evaluate(params, self.held, group=group, cfg=cfg)
            )
        return self.scores[key]


def _prepare(
    persona: str,
    tmp: Path,
    checkpoints: tuple[int, ...],
    seed: int,
    cfg: PredictorConfig,
    spec: Persona | None = None,
    held_out: int = HELD_OUT,
) -> _Prepared:
    """Build the store, run the loop to each checkpoint (keeping that checkpoint's samples),
    then through the held-out sessions, whose pools are built from the store afterwards so
    that each has its own previous session (context, session gap) as in use."""
    path = tmp / f"{persona}.db"
    t0 = time.perf_counter()
    build_persona_store(spec or persona, path, seed=seed)
    _log.info(f"  [{persona}] store built in {time.perf_counter() - t0:.1f} s")
    sim = Simulator(path, SimOptions(scorer="model", seed=seed), cfg, trainer=model_trainer)
    last = max(checkpoints)
    horizon = len(sim.plan(last + held_out))
    samples: dict[int, list[SessionSample]] = {}
    loop_models: dict[int, Params | None] = {}
    for n in checkpoints:
        t0 = time.perf_counter()
        rep = sim.run(n)
        got, skipped = load_samples(sim.con, corpus=sim.corpus, tz=sim.tz, cfg=cfg, seed=seed)
        samples[n] = got
        loop_models[n] = sim.model
        _log.info(
            f"  [{persona}] sessions 0..{n - 1} simulated (+{rep.sessions_run} in "
            f"{time.perf_counter() - t0:.1f} s; loop trainings {rep.trainings}, accepted "
            f"{rep.trainings_accepted}); {len(got)} trainable sessions, {skipped} skipped"
        )
    t0 = time.perf_counter()
    sim.run(horizon, keep=range(last, horizon))
    held = held_out_sessions(sim, range(last, horizon))
    _log.info(
        f"  [{persona}] held-out sessions {last}..{horizon - 1} simulated (never trained on "
        f"here) and {len(held)} pools built in {time.perf_counter() - t0:.1f} s"
    )
    return _Prepared(persona, sim, held, samples, loop_models)


def _mean_over_seeds(runs: list[np.ndarray | None]) -> tuple[np.ndarray | None, float]:
    """Per-session mean over the seeds that produced a model, and the sd of the seed means."""
    ok = [r for r in runs if r is not None]
    if not ok:
        return None, float("nan")
    means = [float(r.mean()) for r in ok]
    return np.mean(ok, axis=0), float(np.std(means, ddof=1)) if len(ok) > 1 else 0.0


def _curve(prep: _Prepared, seeds: tuple[int, ...], cfg: PredictorConfig) -> list[Row]:
    held = prep.held
    s0 = seeds[0]
    base = evaluate(None, held, cfg=cfg)
    rows = [
        _row("baseline", "ndcg@10", base, s0),
        _row("random", "ndcg@10", _random_order(held, s0), s0),
    ]
    cos = CosineRanker()
    cosine = np.array(
        [ndcg_at_k(h.relevance, cos.score(h.inputs), h.inputs.memory_ids, k=K) for h in held]
    )
    rows.append(_row("context_cosine", "ndcg@10", cosine, s0))
    _log.info(
        f"  baseline ndcg@10 {base.mean():.4f}, context cosine {cosine.mean():.4f} over "
        f"{len(held)} held-out sessions"
    )
    for n, samples in prep.samples.items():
        t0 = time.perf_counter()
        pred, sd = _mean_over_seeds([prep.trained(n, None, s, cfg) for s in seeds])
        rows.append(
            Row(f"predictor_after_{n}", "train_samples", float(len(samples)), "sessions", n=1)
        )
        if pred is None:
            _log.info(f"  after {n}: no predictor ({len(samples)} trainable sessions)")
        else:
            goal = {50: ">= +0.10", 300: ">= +0.20"}.get(n)
            rows.append(_row(f"predictor_after_{n}", "ndcg@10", pred, s0))
            if len(seeds) > 1:
                rows.append(
                    Row(f"predictor_after_{n}", "ndcg@10_seed_sd", sd, "ndcg", n=len(seeds))
                )
            rows.append(_row(f"delta_after_{n}", "ndcg@10_delta", pred - base, s0, goal=goal))
            _log.info(
                f"  after {n}: predictor ndcg@10 {pred.mean():.4f} (delta "
                f"{pred.mean() - base.mean():+.4f}, seed sd {sd:.4f}); {len(samples)} trainable "
                f"sessions, {len(seeds)} seeds in {time.perf_counter() - t0:.1f} s"
            )
        loop = prep.loop_models.get(n)
        if loop is not None:
            lm = evaluate(loop, held, cfg=cfg)
            rows.append(_row(f"loop_model_after_{n}", "ndcg@10", lm, s0))
            _log.info(f"  after {n}: the loop's own model ndcg@10 {lm.mean():.4f}")
    last = max(prep.samples)
    truth_samples = prep.with_true_labels(last)
    if len(truth_samples) >= 2:
        params = _train(truth_samples, s0, cfg)
        if params is not None:
            ceiling = evaluate(params, held, cfg=cfg)
            rows.append(_row(f"true_labels_after_{last}", "ndcg@10", ceiling, s0))
            _log.info(
                f"  after {last}: the model trained on true labels ndcg@10 {ceiling.mean():.4f}"
            )
    return rows


def _ablations(
    preps: dict[str, _Prepared], last: int, seeds: tuple[int, ...], cfg: PredictorConfig
) -> list[Row]:
    rows: list[Row] = []
    for group in ABLATIONS:
        persona, _ = ablation_persona(group)
        prep = preps[persona]
        t0 = time.perf_counter()
        full, _ = _mean_over_seeds([prep.trained(last, None, s, cfg) for s in seeds])
        ablated, _ = _mean_over_seeds([prep.trained(last, group, s, cfg) for s in seeds])
        if full is None or ablated is None:
            _log.info(f"  ablation {group} ({persona}): no model")
            continue
        name = f"ablation_{group}"
        rows.append(_row(name, "ndcg@10_full", full, seeds[0]))
        rows.append(_row(name, "ndcg@10_ablated", ablated, seeds[0]))
        rows.append(_row(name, "ndcg@10_drop", full - ablated, seeds[0]))
        _log.info(
            f"  ablation {group} ({persona}, {len(prep.samples[last])} sessions, {len(seeds)} "
            f"seeds): full {full.mean():.4f}, ablated {ablated.mean():.4f}, drop "
            f"{full.mean() - ablated.mean():+.4f} ({time.perf_counter() - t0:.1f} s)"
        )
    return rows


def quality_rows(persona: str = "heavy", *, seed: int = 0, quick: bool = False) -> list[Row]:
    """Simulate, train at each checkpoint, evaluate on held-out sessions, ablate; the rows."""
    checkpoints = QUICK_CHECKPOINTS if quick else CHECKPOINTS
    seeds = tuple(seed + s for s in (QUICK_SEEDS if quick else SEEDS))
    ablation_seeds = tuple(seed + s for s in (QUICK_SEEDS if quick else ABLATION_SEEDS))
    ablation_held_out = HELD_OUT if quick else ABLATION_HELD_OUT
    cfg = DEFAULT_CONFIG
    t_all = time.perf_counter()
    _log.info(
        f"bench quality: persona {persona}, checkpoints {list(checkpoints)}, {HELD_OUT} "
        f"held-out sessions, {EPOCHS} epochs per training"
    )
    preps: dict[str, _Prepared] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="signet-bench-quality-") as tmp_name:
            tmp = Path(tmp_name)
            preps[persona] = _prepare(persona, tmp, checkpoints, seed, cfg)
            rows = _curve(preps[persona], seeds, cfg)
            for group in ABLATIONS:
                label, spec = ablation_persona(group)
                if label not in preps:
                    _log.info(f"ablation persona {label}:")
                    preps[label] = _prepare(
                        label, tmp, (max(checkpoints),), seed, cfg, spec, ablation_held_out
                    )
            _log.info(f"ablations at {max(checkpoints)} sessions:")
            rows += _ablations(preps, max(checkpoints), ablation_seeds, cfg)
            for p in preps.values():
                p.sim.close()
            preps.clear()
    finally:
        for p in preps.values():
            p.sim.close()
    _log.info(f"bench quality done in {time.perf_counter() - t_all:.0f} s")
    return rows
