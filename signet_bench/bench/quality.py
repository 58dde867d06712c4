"""`signet-bench bench quality`: what ranking does a synthetic user get with the learned scorer,
against the relevance the persona planted, and is it better than the obvious alternatives?

Method (no ranker ever sees the truth):

1. For each persona and each seed (`--personas`, `--seeds`; the seed fixes the store, the
   session plan and the training seeds) build a fresh store and fix a session plan of
   `max(checkpoints) + held_out` sessions.
2. Run the daemon loop (`loop.Simulator`, scorer "model": it trains on its schedule and its
   accepted model takes part in the ranking, as in use) up to each checkpoint N = 10, 25, 50,
   100, 300 (10, 50 with --quick). At N keep: the samples of the sessions so far (`load_samples`:
   labels from the store's rows, as the daemon has them), the loop's accepted model (the one a
   user is *served*) and the alpha its next session would fuse with.
3. Run on through `held_out` sessions past the last checkpoint (each with its real previous
   session: context and session gap) and keep the candidate pools as the loop built them
   (`Simulator.session_inputs`). Checkpoint N is judged on the `held_out` sessions that follow
   it (N .. N + held_out - 1): the sessions a user served the model of N meets next, none of
   which any model of N trained on. Each held-out session is scored by NDCG@10 (bounded,
   `metrics.ndcg_at_k`) against `synth.truth.true_relevance` at its start, for every ranker
   below at every checkpoint N:

   baseline            Signet's effective-score order (`EffectiveScoreRanker`)
   cosine              cosine(context, memory) (`CosineRanker`): the strongest simple ranker
   predictor_served    the loop's own served model at N (`ModelRanker`): the shipped base
                       (`learn.base`, in place from the first session) until a per-user
                       model is shown better (`learn.serving`)
   predictor_live      the model the loop itself had in place at each held-out session: it
                       goes on training every few sessions through them, as in use (those
                       after N learn from the sessions between N and them), so this is what a
                       user meets over the sessions after N, not a model fixed at N
                       (`live_scores`; the baseline order where none scored)
   fused_served        what session start injects from at N: RRF of the baseline and the
                       served model with the loop's alpha (in cold start the baseline weight
                       the shipped base earned, `learn.base.shipped_base_alpha`), then topic
                       diversity (`FusedRanker`)
   predictor_offline   a full retrain on the first N sessions as the loop retrains: fresh
                       weights at the better free ranker (`fresh_start`), EPOCHS epochs, gated
                       (its start when the gate rejects it)
   true_label_ceiling  the same training with the planted relevance as labels: what perfect
                       labels give this architecture and this context

4. Ablations at the last checkpoint (judged on its held-out sessions), on the benchmarked
   personas themselves (`--quick`: one seed): retrain the offline model with one route of information removed from training and
   scoring (`ABLATIONS`: an input zeroed, or a weight block held at its zero start) and report
   the NDCG@10 drop (full - ablated; positive = the model uses that route). Each ablation names
   the planted effects it is a route to; `truth_share_<effect>` rows say how much of the
   truth's within-session variance each effect carries over the last checkpoint's held-out
   pools (`synth.truth.variance_shares`), so a reader can see what there is to learn beyond topic.
   Effect ablations say what learning each planted effect is worth: the true-label ceiling
   against the same training on the planted relevance with that one effect switched off.
   `ablations` (`--ablations NAMES`) runs only the named ones: groups of `ABLATIONS`, and
   `effect_<effect>` for an effect ablation. The "structure" group (the knowledge-graph
   features: entity and aspect slot, is constraint, structural density, is traversal) runs
   only on stores with a knowledge graph; each seed's drop is reported beside the pooled one.

5. Pool recall, on stores with a knowledge graph: what the graph's traversal adds to the
   pre-filter pool a ranker chooses from. A held-out session's truly relevant memories are
   the `RELEVANT_K` (10) live memories (created by its start, not deleted) with the highest
   planted relevance, of those with relevance above 0 (ties: memory id). Pool recall is the
   share of them in the session's pool: the pool the loop built (with the graph), against the
   pool of the same session start (same corpus, time, project, previous session and query
   terms) without the graph (`session_start` walking no graph). A store has a graph when its graph
   tables reach memories (`EntityGraph.has_graph`): the architect persona's full one, or the
   few entities another persona's graph-attribute supersessions write.

6. A choice, not only an order: for every ranker at every checkpoint, the share of each
   held-out session's truly relevant memories (as in 5) in its first K of the pool the loop
   built, K = 10, 15, 25, 50, and the tokens their contents would inject
   (`signet_scorer.budget.estimate_tokens`); and the budget's goal, the truly relevant
   memories in the served choice of 15 (`predictor_served`, `fused_served`) against Signet's
   own 50 in effective-score order (`baseline`), paired per session (`budget_rows`).

Per-session NDCGs are pooled over the seeds of a persona; intervals are 95% bootstrap
intervals over the pooled sessions, paired for differences.

Rows (stable names; with several personas each name is prefixed `<persona>/`):
  <ranker>                  ndcg@10        ndcg  mean over held-out sessions, n = N
  predictor_served-cosine   ndcg@10_delta  ndcg  paired difference, n = N (likewise
                                                 predictor_live-cosine,
                                                 fused_served-cosine, fused_served-baseline,
                                                 predictor_served-predictor_offline,
                                                 predictor_offline-cosine;
                                                 true_label_ceiling-cosine: what the same
                                                 training on the planted relevance gains over
                                                 cosine, about the most that better labels
                                                 could give this model;
                                                 predictor_offline-true_label_ceiling: what
                                                 the store's labels cost against it)
  predictor_offline         train_samples  sessions  trainable sessions learned from, n = N
  seed_<s>/predictor_served-cosine  ndcg@10_delta  one seed's mean and paired interval
                            (likewise predictor_live-cosine, fused_served-cosine)
  predictor_served-cosine   ndcg@10_delta_worst_seed  the lowest seed's mean (its interval)
  predictor_served-cosine   ndcg@10_delta_share_below share of seeds below -0.01 (likewise
                                                 predictor_live-cosine, fused_served-cosine)
  predictor_served-cosine   ndcg@10_delta_familiar / ndcg@10_delta_unfamiliar  the paired
                            difference on the held-out sessions of a project the history up
                            to the checkpoint has at least `FAMILIAR_SESSIONS` sessions of, and
                            on the others (likewise predictor_live-cosine,
                            fused_served-cosine; pooled, n = N)
  held_out                  share_unfamiliar  share  the held-out sessions of the latter
  served_familiar_only-cosine  ndcg@10_delta, _worst_seed, _share_below, seed_<s>/...: a
                            counterfactual that nothing serves (`familiar_only`): the served
                            model on the sessions of familiar projects and cosine on the
                            others, what a scorer falling back to cosine on a project it has
                            seen little of would have given
  ablation_<group>          ndcg@10_full / ndcg@10_ablated / ndcg@10_drop
  seed_<s>/ablation_structure  the same three, one seed's sessions
  ablation_structure_retrains  the same three, each session's NDCG@10 averaged over
                            `GRAPH_ABLATION_RETRAINS` retrains (training seeds) per store
                            (pooled and per seed); true_label_ablation_structure_retrains: the
                            same on the planted relevance (would perfect labels use the inputs?)
  pool_recall_graph         recall_top10  share  mean over held-out sessions, n = N (likewise
                                                 pool_recall_nograph; and each seed's,
                                                 seed_<s>/pool_recall_graph, ...)
  pool_recall_graph-pool_recall_nograph  recall_top10_delta  share  paired difference, n = N
                                                 (pooled and per seed)
  pool_size_graph           candidates     memories  mean pool size, n = N (pool_size_nograph)
  <ranker>                  relevant_recall@K  share  mean over held-out sessions with a
                                                 truly relevant memory, K = 10, 15, 25, 50
  <ranker>                  tokens@K       tokens  mean tokens of its first K
  held_out                  pool_size      memories  mean pool size
  <served>@15-baseline@50   relevant_count_delta  memories  paired difference of the truly
                            relevant memories held (and _worst_seed; seed_<s>/...; the
                            counts themselves: <served>@15, baseline@50 relevant_count;
                            tokens_delta)
  effect_<effect>           ndcg@10_full / ndcg@10_ablated / ndcg@10_drop (true labels)
  truth_share_<effect>      variance_share share  mean over the seeds (interval: min, max)
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
import tempfile
import time
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from signet_bench.analysis.report import Row
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.candidates import SessionInputs
from signet_bench.daemon.context import previous_sessions
from signet_bench.daemon.metrics import bootstrap_interval, ndcg_at_k
from signet_bench.daemon.predictor_state import effective_alpha, on_session_start
from signet_bench.daemon.ranking.baseline import rank_order
from signet_bench.daemon.ranking.prompt_time import PromptLimits
from signet_bench.daemon.ranking.ranker import (
    CosineRanker,
    EffectiveScoreRanker,
    FusedRanker,
    HybridRanker,
    Ranker,
)
from signet_bench.daemon.ranking.session_start import GraphWalk, SessionStartResult, session_start
from signet_bench.learn.base import shipped_base_params
from signet_bench.learn.model.params import query_held
from signet_bench.learn.model.ranker import ModelRanker
from signet_bench.learn.samples import SessionSample, load_samples, scored_sessions
from signet_bench.learn.train import Guard, TrainOptions, run_start, train_model
from signet_bench.replay.lifecycle import PromptTurn
from signet_bench.replay.loop import SimOptions, Simulator
from signet_bench.replay.trainers import Serving
from signet_bench.store.corpus import Corpus
from signet_bench.store.graph import EntityGraph
from signet_bench.store.read import read_session_memories, read_sessions
from signet_bench.world.synth.build import build_persona_store
from signet_bench.world.synth.persona import Persona
from signet_bench.world.synth.plans import SessionContext
from signet_bench.world.synth.truth import (
    EFFECTS,
    prompt_relevance,
    true_relevance,
    variance_shares,
)
from signet_scorer.budget import token_costs
from signet_scorer.contract import SESSION_FEATURES
from signet_scorer.features import feature_index, feature_indices

__all__ = [
    "ABLATIONS",
    "HeldOut",
    "Judging",
    "Offline",
    "PoolRecall",
    "PromptHeld",
    "RunScope",
    "TopK",
    "ablate_inputs",
    "ablate_samples",
    "ablation_frozen",
    "ablation_selection",
    "budget_rows",
    "checkpoint_scores",
    "familiar_masks",
    "familiar_only",
    "familiar_sessions",
    "familiarity_rows",
    "held_out_session",
    "live_scores",
    "pool_recall",
    "pool_recall_rows",
    "prompt_rows",
    "quality_rows",
    "session_relevant",
    "start_pool",
    "top_k",
    "truly_relevant",
    "truth_share_rows",
    "worst_seed_rows",
]

CHECKPOINTS = (10, 25, 50, 100, 300)
QUICK_CHECKPOINTS = (10, 50)
HELD_OUT = 150  # held-out sessions per store: 50 gave intervals of ±0.03-0.06
QUICK_HELD_OUT = 40
EPOCHS = 50  # as `bench train` (the specification's budget: 50 epochs in <= 10 s)
K = 10
EFFECT_MIN_SHARE = 0.02  # effects carrying less of the truth's variance are not ablated
BOOTSTRAP = 2000
TIME_FEATURES = SESSION_FEATURES  # time of day, weekday, month, session gap
SUPERSEDED_FEATURE = feature_index("superseded")
MEMORY_FEATURES = feature_indices(
    "recency",
    "importance",
    "usage",
    "entity_slot",
    "aspect_slot",
    "is_constraint",
    "structural_density",
)
STRUCTURE_FEATURES = feature_indices(
    "entity_slot",
    "aspect_slot",
    "is_constraint",
    "structural_density",
    "is_traversal",
)
ABLATED_FEATURES = {
    "time": TIME_FEATURES,
    "superseded": (SUPERSEDED_FEATURE,),
    "prior": MEMORY_FEATURES,
    "structure": STRUCTURE_FEATURES,
}
GRAPH_ONLY = ("structure",)  # ablations run only on stores with a knowledge graph
# A graph ablation is also averaged over this many retrains per store (training seeds), on the
# store's labels and on the planted relevance: its drop (about 0.01) is below the spread of one
# retrain's (five training seeds of architect seed 1: -0.027 to -0.003 on its labels, -0.046 to
# +0.021 on the planted relevance)
GRAPH_ABLATION_RETRAINS = 5
RELEVANT_K = 10  # a session's truly relevant memories: its top 10 live ones by planted truth
BUDGET_KS = (10, 15, 25, 50)  # the choices `relevant_recall@K` judges, of each ranker's order
# The budget's goal: the served choice of SERVED_CHOICE from the pool holds at least as many
# truly relevant memories as Signet's own SIGNET_CHOICE in effective-score order (baseline).
SERVED_CHOICE, SIGNET_CHOICE = 15, 50
SERVED_RANKERS = ("predictor_served", "fused_served")
RANKERS = (
    "baseline",
    "cosine",
    "predictor_served",
    "predictor_live",
    "fused_served",
    "predictor_offline",
    "true_label_ceiling",
)
DIFFERENCES = (
    ("predictor_served", "cosine"),
    ("predictor_live", "cosine"),
    ("fused_served", "cosine"),
    ("fused_served", "baseline"),
    ("predictor_served", "predictor_offline"),
    ("predictor_offline", "cosine"),
    ("served_familiar_only", "cosine"),
    ("true_label_ceiling", "cosine"),
    ("predictor_offline", "true_label_ceiling"),
)
# The differences whose worst seed is reported: what a user is served against the strongest
# free ranker on these worlds. A seed "costs the user" when its mean is below -WORST_TOLERANCE.
WORST_CASE = (
    ("predictor_served", "cosine"),
    ("predictor_live", "cosine"),
    ("fused_served", "cosine"),
    ("served_familiar_only", "cosine"),
)
WORST_TOLERANCE = 0.01
# A project the history has at least this many sessions of is familiar (`familiar_sessions`):
# a model fixed after a few sessions of a project lost to cosine on the sessions of the projects
# it saw little of (multi-project, seed 185, after 50 sessions: +0.055 NDCG@10 on the familiar
# projects' 95 sessions, -0.087 on the 55 of a project with no session yet)
FAMILIAR_SESSIONS = 5
FAMILIARITY = (
    ("predictor_served", "cosine"),
    ("predictor_live", "cosine"),
    ("fused_served", "cosine"),
)
FAMILIAR_ONLY = "served_familiar_only"  # the counterfactual of `familiar_only`
# Prompt time (`--prompt-time`): the rankers of each prompt's pool, the free ones the served
# model answers to (the strongest of them on the checkpoint's prompts is the bar), and the
# choices `relevant_recall@K` judges (Signet 0.58 injects at most 5 per prompt)
PROMPT_RANKERS = (
    "baseline",
    "cosine",
    "hybrid",
    "learned_base",
    "predictor_served",
    "predictor_live",
)
PROMPT_FREE = ("cosine", "hybrid")
PROMPT_KS = (5, 10)

Params = dict[str, np.ndarray]
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Ablation:
    """What one ablation takes from the model, and the planted effects (`synth.truth.EFFECTS`)
    it is the model's route to."""

    what: str
    effects: tuple[str, ...]


# Run on the benchmarked personas themselves, at the last checkpoint. A memory's project and
# whether it is a global preference show only in its text, so the model learns them through
# the embedding: "query" (the learned match with the context) and "prior" (a memory's own
# worth: the gate's value weights, with the memory features that can stand in for them).
ABLATIONS: dict[str, Ablation] = {
    "query": Ablation(
        "the learned query held at 0 (q_proj): only cosine matches the context",
        ("topic", "project"),
    ),
    "prior": Ablation(
        "the memory's own worth, apart from its match to the session: the gate's "
        "value weights held at 0 and the memory features zeroed",
        ("global", "recency", "importance"),
    ),
    "context": Ablation(
        "the context embedding zeroed: no cosine, no context in the query", ("topic", "project")
    ),
    "project": Ablation("the session's project slot set to 0", ("project",)),
    "time": Ablation("the session features zeroed (time of day, weekday, month, gap)", ("time",)),
    "superseded": Ablation("the superseded feature zeroed", ("stale",)),
    "structure": Ablation(
        "the knowledge-graph features zeroed (entity slot, aspect slot, is "
        "constraint, structural density, is traversal) and their gate weights "
        "held at 0",
        ("graph",),
    ),
}


def ablation_frozen(group: str | None, params: Params) -> dict[str, np.ndarray]:
    """The parameter entries a component ablation holds at their (zero) initial values."""
    if group == "query":
        return query_held(params)
    if group in ("prior", "structure"):
        v_dim = params["v_proj"].shape[0]
        mask = np.zeros(params["gate_proj"].shape, dtype=bool)
        if group == "prior":
            mask[..., :v_dim] = True
        else:  # the gate's weights on the graph's feature columns
            mask[..., [v_dim + c for c in STRUCTURE_FEATURES]] = True
        return {"gate_proj": mask}
    return {}


def ablation_selection(ablations: bool | Sequence[str]) -> frozenset[str]:
    """The ablations to run: every group of `ABLATIONS` and every `effect_<effect>` (True),
    none (False), or the ones named; ValueError naming an unknown one."""
    every = [*ABLATIONS, *(f"effect_{e}" for e in EFFECTS)]
    if isinstance(ablations, bool):
        return frozenset(every if ablations else ())
    unknown = [a for a in ablations if a not in every]
    if unknown:
        raise ValueError(f"unknown ablations {unknown}; valid: {', '.join(every)}")
    return frozenset(ablations)


@dataclass(frozen=True, slots=True)
class PromptHeld:
    """One prompt of a held-out session: its pool as the loop built it, the relevance the
    persona planted for the prompt (`truth.prompt_relevance`), the corpus rows of its truly
    relevant memories (`truly_relevant` of that relevance, over the memories live then and not
    injected in the session before it) and what the loop's scorer in place then scored (the
    pool's own order where nothing scored)."""

    inputs: SessionInputs
    relevance: np.ndarray
    relevant: np.ndarray
    live: np.ndarray


@dataclass(frozen=True, slots=True)
class HeldOut:
    """One held-out session's candidate pool, as the loop built it at the session start, with
    the relevance the persona planted; with prompt time, its prompts' pools and what session
    start and the prompts injected."""

    inputs: SessionInputs
    relevance: np.ndarray  # true relevance at the session start
    plan: SessionContext  # the planned session (its focus topic, project and start)
    truth_rows: np.ndarray  # the candidates' rows in the store's truth
    live: np.ndarray  # what the loop's own model in place then scored (`live_scores`)
    prompts: tuple[PromptHeld, ...] = ()
    start_injected: tuple[str, ...] = ()
    prompt_injected: tuple[str, ...] = ()


def _ablated(item: SessionSample | SessionInputs, group: str | None) -> dict[str, Any]:
    """The fields of a sample or a session's inputs that an input ablation replaces."""
    if group == "project":
        return {"project_slot": 0}
    if group == "context":
        return {"context": np.zeros_like(item.context)}
    cols = ABLATED_FEATURES.get(group or "")
    if not cols:
        return {}
    f = np.array(item.features, copy=True)
    f[:, list(cols)] = 0.0
    return {"features": f}


def ablate_samples(samples: list[SessionSample], group: str | None) -> list[SessionSample]:
    """Training samples with an input group removed (None or a component ablation:
    unchanged)."""
    if not samples or not _ablated(samples[0], group):
        return samples
    return [dataclasses.replace(s, **_ablated(s, group)) for s in samples]


def ablate_inputs(inputs: SessionInputs, group: str | None) -> SessionInputs:
    """A session's inputs with an input group removed, as in training."""
    changes = _ablated(inputs, group)
    return dataclasses.replace(inputs, **changes) if changes else inputs


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
    prompt_served: Params | None = None  # what it served at the prompts (None: `served`)


@dataclass(frozen=True, slots=True)
class Offline:
    """A fresh model a checkpoint retrains: on the first `n` sessions, with the information route
    `group` removed (None: none), on the store's labels (`truth` None) or on the planted
    relevance with the effects in `truth` switched off; `retrain` k > 0 trains with another seed
    (`retrain_seed`)."""

    n: int
    group: str | None
    truth: tuple[str, ...] | None
    retrain: int = 0


@dataclass
class Run:
    """One simulated store: its checkpoints, its held-out pools and the trained models' NDCGs."""

    persona: str
    seed: int
    sim: Simulator
    checkpoints: dict[int, Checkpoint]
    pools: dict[int, list[HeldOut]]  # checkpoint -> the held-out sessions that follow it
    scores: dict[Offline, np.ndarray] = field(default_factory=dict)
    recalls: dict[str, PoolRecall] = field(default_factory=dict)  # session key -> pool recall
    trained: dict[Offline, Ranker] = field(default_factory=dict)  # the offline retrains
    relevant: dict[str, np.ndarray] = field(default_factory=dict)  # session key -> corpus rows

    @property
    def held(self) -> list[HeldOut]:
        """The last checkpoint's held-out sessions (ablations, truth shares)."""
        return self.pools[max(self.pools)]

    @property
    def has_graph(self) -> bool:
        """Whether the store's knowledge graph can reach memories (the loop's own read)."""
        return self.sim.loop.graph.has_graph

    def true_labels(self, n: int, without: Sequence[str] = ()) -> list[SessionSample]:
        """The first `n` sessions' samples with every label replaced by the planted relevance
        at the session start (with the effects in `without` switched off)."""
        plan = {c.session_key: c for c in self.sim.plan(len(self.sim.done()))}
        out = []
        for s in self.checkpoints[n].samples:
            rel = true_relevance(self.sim.truth, plan[s.session_key], without=without)
            rows = self.sim.truth.positions(s.memory_ids.astype(str))
            # judged on the truth too, not on the store's ratings
            out.append(dataclasses.replace(s, labels=rel[rows].astype(s.labels.dtype), rated=None))
        return out

    def offline(self, model: Offline, cfg: PredictorConfig) -> np.ndarray:
        """Per-held-out-session NDCG@10 (against the full truth, on checkpoint `model.n`'s pool)
        of the fresh `model`; the baseline order when there is too little data."""
        if model not in self.scores:
            ranker = self.offline_ranker(model, cfg)
            self.scores[model] = ndcgs(ranker, self.pools[model.n], model.group)
        return self.scores[model]

    def offline_ranker(self, model: Offline, cfg: PredictorConfig) -> Ranker:
        """The fresh model `offline` judges (trained once per `model`)."""
        if model not in self.trained:
            n, truth = model.n, model.truth
            samples = self.checkpoints[n].samples if truth is None else self.true_labels(n, truth)
            seed = retrain_seed(self.seed, model.retrain)
            params = _train(ablate_samples(samples, model.group), seed, cfg, model.group)
            self.trained[model] = (
                EffectiveScoreRanker() if params is None else ModelRanker(params, cfg)
            )
        return self.trained[model]

    def offline_mean(self, model: Offline, cfg: PredictorConfig, retrains: int) -> np.ndarray:
        """`offline`, each held-out session's NDCG@10 averaged over `retrains` retrains."""
        runs = [self.offline(dataclasses.replace(model, retrain=k), cfg) for k in range(retrains)]
        return np.mean(runs, axis=0)


def retrain_seed(seed: int, retrain: int) -> int:
    """The training seed of a store's `retrain`-th retrain: the store's seed for the first
    (the one every other row trains with), distinct seeds for the others."""
    return seed if retrain == 0 else seed * 1_000 + retrain


def _train(
    samples: list[SessionSample], seed: int, cfg: PredictorConfig, group: str | None = None
) -> Params | None:
    """A retrain as the loop runs one with no model served: from the loop's start (the shipped
    base, `train.run_start`), gated; its start when the gate rejects it (the loop keeps serving
    its start)."""
    if len(samples) < 2:
        return None
    start = run_start(samples, None, int(samples[0].context.shape[0]), cfg).params
    res = train_model(
        samples,
        None,
        cfg=cfg,
        epochs=EPOCHS,
        seed=seed,
        guard=Guard(previous_is_trained=False),
        options=TrainOptions(frozen=ablation_frozen(group, start)),
    )
    if not res.accepted:
        _log.info(f"    training (seed {seed}) rejected by gate {res.gate_reason}; its start")
    return res.params if res.accepted else start


@dataclass(frozen=True, slots=True)
class Judging:
    """When a run is judged: after each of its first `checkpoints` sessions, on the `held_out`
    sessions that follow; with `prompt_time`, the loop ranks and injects at every prompt too
    and the prompts are judged as well (`prompt_rows`)."""

    checkpoints: Sequence[int]
    held_out: int
    prompt_time: bool = False


def simulate_run(
    persona: str | Persona,
    seed: int,
    judging: Judging,
    tmp: Path,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    embedder: str = "topic",
    label: str | None = None,
    n_memories: int | None = None,
) -> Run:
    """Build the store (`n_memories`: the persona resized), run the loop to each checkpoint,
    then on through the held-out sessions of the last; each checkpoint's pool is the
    `held_out` sessions after it."""
    checkpoints, held_out = judging.checkpoints, judging.held_out
    label = label or (persona if isinstance(persona, str) else persona.name)
    path = tmp / f"{label}-{seed}.db"
    t0 = time.perf_counter()
    build_persona_store(persona, path, seed=seed, embedder=embedder, n_memories=n_memories)
    _log.info(f"  [{label} seed {seed}] store built in {time.perf_counter() - t0:.1f} s")
    limits = PromptLimits() if judging.prompt_time else None
    sim = Simulator(path, SimOptions(scorer="model", seed=seed, prompt_time=limits), cfg)
    last = max(checkpoints)
    horizon = len(sim.plan(last + held_out))
    judged = range(min(checkpoints), horizon)  # every checkpoint's held-out sessions
    kept: dict[int, Checkpoint] = {}
    for n in checkpoints:
        t0 = time.perf_counter()
        rep = sim.loop.run(n, keep=judged)
        got, skipped = load_samples(sim.con, corpus=sim.corpus, tz=sim.tz, cfg=cfg, seed=seed)
        alpha = effective_alpha(on_session_start(sim.state, cfg).state, cfg)
        kept[n] = Checkpoint(got, sim.model, alpha, sim.prompt_model)
        _log.info(
            f"  [{label} seed {seed}] sessions 0..{n - 1} (+{rep.sessions_run} in "
            f"{time.perf_counter() - t0:.1f} s; trainings {rep.trainings}, accepted "
            f"{rep.trainings_accepted}); {len(got)} trainable, {skipped} skipped; alpha {alpha:.2f}"
            + _serving_note(sim.trainer.serving)
        )
    sim.loop.run(horizon, keep=judged)
    sessions = {i: held_out_session(sim, i) for i in judged}
    pools = {
        n: [h for i in range(n, min(n + held_out, horizon)) if (h := sessions[i]) is not None]
        for n in checkpoints
    }
    return Run(label, seed, sim, kept, pools)


def _serving_note(serving: Serving) -> str:
    """What the newest training serves at each hook and why, for the run's log."""
    hooks = zip(("session start", "prompts"), serving, strict=True)
    return "".join(f"; {h}: {c.served} ({c.reason})" for h, c in hooks if c is not None)


def held_out_session(sim: Simulator, i: int) -> HeldOut | None:
    """Session `i`'s pool with its planted relevance; None when it cannot be ranked (no
    context, or fewer than two candidates)."""
    inputs = sim.session_inputs(i)
    if inputs.context is None or len(inputs) < 2:
        return None
    rec = sim.records[i]
    live = live_scores(rec.start, inputs)
    start = tuple(str(m) for m in rec.start.injected_ids)
    prompts, shown = [], set(start)
    for turn in rec.prompts:
        held = prompt_held(sim, rec.plan, turn, shown)
        if held is not None:
            prompts.append(held)
        shown.update(turn.injected)
    asked = tuple(m for turn in rec.prompts for m in turn.injected)
    rows = sim.truth_rows[rec.inputs.rows]
    return HeldOut(
        inputs, sim.true_relevance(i), rec.plan, rows, live, tuple(prompts), start, asked
    )


def prompt_held(
    sim: Simulator, plan: SessionContext, turn: PromptTurn, shown: Collection[str]
) -> PromptHeld | None:
    """A prompt's `PromptHeld` (`shown`: the memories the session injected before it); None
    when it cannot be ranked (no context, fewer than two candidates, or no planted topic)."""
    inputs = turn.inputs
    if inputs is None or inputs.context is None or len(inputs) < 2 or turn.about is None:
        return None
    rel = prompt_relevance(sim.truth, plan, turn.about)[sim.truth_rows]
    corpus = sim.corpus
    live = ~corpus.absent_at(turn.at.timestamp()) & ~np.isin(corpus.id_text, list(shown))
    relevant = truly_relevant(rel, corpus.ids, live)
    scores = turn.scores
    if scores is None or not np.isfinite(scores).any():
        scores = -np.arange(len(inputs), dtype=np.float64)  # the pool's own order chose
    return PromptHeld(inputs, rel[inputs.rows], relevant, np.asarray(scores, dtype=np.float64))


def live_scores(start: SessionStartResult, inputs: SessionInputs) -> np.ndarray:
    """What the loop's model in place at a session start (retrained every few sessions, as in
    use) scored each of `inputs`' candidates, in `inputs`' order; the baseline's scores when
    no model scored that start, and below every scored candidate those it did not score."""
    if not start.predictor_used:
        return EffectiveScoreRanker().score(inputs)
    by_id = dict(zip(start.memory_id.tolist(), start.predictor_score.tolist(), strict=True))
    scores = np.array([by_id.get(m, np.nan) for m in inputs.memory_ids.tolist()], dtype=float)
    scored = np.isfinite(scores)
    floor = scores[scored].min() - 1.0 if scored.any() else 0.0
    return np.where(scored, scores, floor)


def checkpoint_rankers(run: Run, n: int, cfg: PredictorConfig) -> dict[str, Ranker]:
    """The rankers fixed at checkpoint `n` of a run that score a session's pool as it is:
    baseline, cosine, the served model and the fusion that injects from it."""
    cp = run.checkpoints[n]
    served = EffectiveScoreRanker() if cp.served is None else ModelRanker(cp.served, cfg)
    return {
        "baseline": EffectiveScoreRanker(),
        "cosine": CosineRanker(),
        "predictor_served": served,
        "fused_served": FusedRanker(served, cp.alpha, cfg),
    }


def checkpoint_ndcgs(run: Run, n: int, cfg: PredictorConfig) -> dict[str, np.ndarray]:
    """Every ranker's per-held-out-session NDCG@10 at checkpoint `n` of a run."""
    pool = run.pools[n]
    fixed = {name: ndcgs(r, pool) for name, r in checkpoint_rankers(run, n, cfg).items()}
    live = np.array([ndcg_at_k(h.relevance, h.live, h.inputs.memory_ids, k=K) for h in pool])
    return {
        **fixed,
        "predictor_live": live,
        "predictor_offline": run.offline(Offline(n, None, None), cfg),
        "true_label_ceiling": run.offline(Offline(n, None, ()), cfg),
    }


def checkpoint_scores(run: Run, n: int, cfg: PredictorConfig) -> dict[str, list[np.ndarray]]:
    """Every ranker of `RANKERS` scoring each held-out session of checkpoint `n` (aligned with
    its pool): the fixed rankers, the live model's recorded scores and the offline retrains."""
    pool = run.pools[n]
    rankers = {
        **checkpoint_rankers(run, n, cfg),
        "predictor_offline": run.offline_ranker(Offline(n, None, None), cfg),
        "true_label_ceiling": run.offline_ranker(Offline(n, None, ()), cfg),
    }
    out = {name: [r.score(h.inputs) for h in pool] for name, r in rankers.items()}
    out["predictor_live"] = [h.live for h in pool]
    return {name: out[name] for name in RANKERS}


def _row(name: str, metric: str, values: np.ndarray, n: int, seed: int, unit: str = "ndcg") -> Row:
    lo, hi = bootstrap_interval(values, seed, draws=BOOTSTRAP)
    return Row(name, metric, float(np.mean(values)), unit, lo, hi, n=n)


def curve_rows(runs: list[Run], checkpoints: Sequence[int], prefix: str, cfg) -> list[Row]:
    """The rankers and their paired differences at every checkpoint, pooled over `runs`."""
    rows: list[Row] = []
    seed = runs[0].seed
    for n in checkpoints:
        t0 = time.perf_counter()
        per_run = [checkpoint_ndcgs(r, n, cfg) for r in runs]
        masks = familiar_masks(runs, n)
        for p, familiar in zip(per_run, masks, strict=True):
            p[FAMILIAR_ONLY] = familiar_only(p, familiar)
        pooled = {k: np.concatenate([p[k] for p in per_run]) for k in (*RANKERS, FAMILIAR_ONLY)}
        rows += [_row(prefix + k, "ndcg@10", pooled[k], n, seed) for k in RANKERS]
        for a, b in DIFFERENCES:
            rows.append(_row(f"{prefix}{a}-{b}", "ndcg@10_delta", pooled[a] - pooled[b], n, seed))
        rows += worst_seed_rows(runs, per_run, n, prefix)
        rows += familiarity_rows(runs, per_run, masks, n, prefix)
        trained = sum(len(r.checkpoints[n].samples) for r in runs)
        rows.append(Row(prefix + "predictor_offline", "train_samples", trained, "sessions", n=n))
        _log.info(
            f"  after {n}: "
            + ", ".join(f"{k} {pooled[k].mean():.4f}" for k in RANKERS)
            + f" ({time.perf_counter() - t0:.1f} s)"
        )
    return rows


def worst_seed_rows(
    runs: list[Run], per_run: list[dict[str, np.ndarray]], n: int, prefix: str
) -> list[Row]:
    """Per seed, and the worst of them, for each `WORST_CASE` difference at checkpoint `n`:
    `<prefix>seed_<s>/<a>-<b>` (the seed's mean with its paired interval), `<a>-<b>` with
    metric `ndcg@10_delta_worst_seed` (the lowest seed mean, its interval) and
    `ndcg@10_delta_share_below` (the share of seeds below -WORST_TOLERANCE)."""
    rows: list[Row] = []
    for a, b in WORST_CASE:
        per_seed = [
            _row(f"{prefix}seed_{r.seed}/{a}-{b}", "ndcg@10_delta", p[a] - p[b], n, r.seed)
            for r, p in zip(runs, per_run, strict=True)
        ]
        worst = min(per_seed, key=lambda row: row.value)
        below = sum(row.value < -WORST_TOLERANCE for row in per_seed) / len(per_seed)
        rows += per_seed + [
            dataclasses.replace(worst, name=f"{prefix}{a}-{b}", metric="ndcg@10_delta_worst_seed"),
            Row(f"{prefix}{a}-{b}", "ndcg@10_delta_share_below", below, "share", n=n),
        ]
    return rows


def familiar_sessions(
    history: Sequence[str], held: Sequence[str], min_sessions: int = FAMILIAR_SESSIONS
) -> np.ndarray:
    """Which `held` sessions (their projects) are of a project `history` (the projects of the
    sessions before them) has at least `min_sessions` sessions of."""
    counts = Counter(history)
    return np.array([counts[p] >= min_sessions for p in held], dtype=bool)


def familiar_masks(runs: list[Run], n: int) -> list[np.ndarray]:
    """Per run, which of checkpoint `n`'s held-out sessions are of a familiar project
    (`familiar_sessions` over the projects of its first `n` sessions)."""
    return [
        familiar_sessions(
            [c.project for c in r.sim.plan(n)[:n]], [h.plan.project for h in r.pools[n]]
        )
        for r in runs
    ]


def familiar_only(ndcgs_by_ranker: dict[str, np.ndarray], familiar: np.ndarray) -> np.ndarray:
    """Per held-out session, the NDCG@10 of the served model on the sessions of a familiar
    project and of cosine on the others: a scorer that serves its start (cosine) on a project
    it has seen little of, judged on the same sessions without training anything."""
    return np.where(familiar, ndcgs_by_ranker["predictor_served"], ndcgs_by_ranker["cosine"])


def familiarity_rows(
    runs: list[Run],
    per_run: list[dict[str, np.ndarray]],
    masks: list[np.ndarray],
    n: int,
    prefix: str,
) -> list[Row]:
    """Each `FAMILIARITY` difference at checkpoint `n` on the held-out sessions of familiar
    projects and on the others (`masks`: `familiar_masks`, pooled over `runs`), and the share
    of the others: where a model fixed at `n` gains or loses."""
    familiar = np.concatenate(masks)
    rows = [Row(f"{prefix}held_out", "share_unfamiliar", float(np.mean(~familiar)), "share", n=n)]
    for a, b in FAMILIARITY:
        delta = np.concatenate([p[a] - p[b] for p in per_run])
        for which, mask in (("familiar", familiar), ("unfamiliar", ~familiar)):
            if mask.any():
                rows.append(
                    _row(f"{prefix}{a}-{b}", f"ndcg@10_delta_{which}", delta[mask], n, runs[0].seed)
                )
    return rows


def truth_share_rows(runs: list[Run], prefix: str) -> list[Row]:
    """How much of the planted truth's within-session variance each effect carries over the
    held-out candidate pools (`synth.truth.variance_shares`), the mean over the seeds (the
    interval: the lowest and highest seed)."""
    per_run = [
        variance_shares(r.sim.truth, [h.plan for h in r.held], [h.truth_rows for h in r.held])
        for r in runs
        if r.held
    ]
    rows = []
    for effect in EFFECTS:
        vals = [s[effect] for s in per_run]
        rows.append(
            Row(
                f"{prefix}truth_share_{effect}",
                "variance_share",
                float(np.mean(vals)),
                "share",
                float(min(vals)),
                float(max(vals)),
            )
        )
    _log.info(
        "  truth variance shares: "
        + ", ".join(f"{r.name.split('_')[-1]} {r.value:.3f}" for r in rows)
    )
    return rows


def _drop_rows(name: str, full: np.ndarray, ablated: np.ndarray, n: int, seed: int) -> list[Row]:
    """An ablation's three rows: the full model, the ablated one and the paired drop."""
    _log.info(
        f"  {name}: full {full.mean():.4f}, ablated {ablated.mean():.4f}, "
        f"drop {full.mean() - ablated.mean():+.4f}"
    )
    return [
        _row(name, "ndcg@10_full", full, n, seed),
        _row(name, "ndcg@10_ablated", ablated, n, seed),
        _row(name, "ndcg@10_drop", full - ablated, n, seed),
    ]


def ablation_rows(
    runs: list[Run],
    last: int,
    prefix: str,
    cfg: PredictorConfig,
    selected: Collection[str] = tuple(ABLATIONS),
) -> list[Row]:
    """The NDCG@10 drop of each ablation in `selected` at the last checkpoint (offline
    retrains, pooled over `runs`); positive = the model uses what the ablation takes away."""
    rows: list[Row] = []
    for group in (g for g in ABLATIONS if g in selected):
        if group in GRAPH_ONLY:
            rows += _graph_ablation_rows(runs, group, last, prefix, cfg)
            continue
        full = np.concatenate([r.offline(Offline(last, None, None), cfg) for r in runs])
        ablated = np.concatenate([r.offline(Offline(last, group, None), cfg) for r in runs])
        rows += _drop_rows(f"{prefix}ablation_{group}", full, ablated, last, runs[0].seed)
    return rows


def _graph_ablation_rows(
    runs: list[Run], group: str, last: int, prefix: str, cfg: PredictorConfig
) -> list[Row]:
    """An ablation of the knowledge graph's inputs, on the runs whose store has a graph: the
    pooled drop and each seed's (none, with a log line, when no store has a graph); then the
    same averaged over `GRAPH_ABLATION_RETRAINS` retrains per store, on the store's labels
    (`ablation_<group>_retrains`) and on the planted relevance
    (`true_label_ablation_<group>_retrains`: whether perfect labels would use the inputs)."""
    graphed = [r for r in runs if r.has_graph]
    if not graphed:
        _log.info(f"  ablation_{group}: skipped, no store of {prefix or 'the persona'} has a graph")
        return []
    full = {r.seed: r.offline(Offline(last, None, None), cfg) for r in graphed}
    ablated = {r.seed: r.offline(Offline(last, group, None), cfg) for r in graphed}
    rows = _seeded_drop_rows(f"ablation_{group}", full, ablated, last, prefix)
    k = GRAPH_ABLATION_RETRAINS
    for label, truth in (("", None), ("true_label_", ())):
        full = {r.seed: r.offline_mean(Offline(last, None, truth), cfg, k) for r in graphed}
        ablated = {r.seed: r.offline_mean(Offline(last, group, truth), cfg, k) for r in graphed}
        rows += _seeded_drop_rows(f"{label}ablation_{group}_retrains", full, ablated, last, prefix)
    return rows


def _seeded_drop_rows(
    name: str,
    full: dict[int, np.ndarray],
    ablated: dict[int, np.ndarray],
    last: int,
    prefix: str,
) -> list[Row]:
    """`_drop_rows` of the sessions of every seed pooled, then of each seed's."""
    first = next(iter(full))
    rows = _drop_rows(
        f"{prefix}{name}",
        np.concatenate(list(full.values())),
        np.concatenate(list(ablated.values())),
        last,
        first,
    )
    for s, values in full.items():
        rows += _drop_rows(f"{prefix}seed_{s}/{name}", values, ablated[s], last, s)
    return rows


def effect_rows(
    runs: list[Run],
    last: int,
    prefix: str,
    shares: dict[str, float],
    cfg: PredictorConfig,
    selected: Collection[str] | None = None,
) -> list[Row]:
    """What learning each planted effect is worth: the true-label ceiling at the last
    checkpoint against the same training on the planted relevance with that effect switched
    off (`true_relevance(without=...)`), both scored against the full truth; for every
    non-topic effect carrying at least `EFFECT_MIN_SHARE` of the truth's variance (and, with
    `selected`, named there as `effect_<effect>`)."""
    full = np.concatenate([r.offline(Offline(last, None, ()), cfg) for r in runs])
    rows: list[Row] = []
    for effect, share in shares.items():
        if selected is not None and f"effect_{effect}" not in selected:
            continue
        if effect != "topic" and share >= EFFECT_MIN_SHARE:
            ablated = np.concatenate([r.offline(Offline(last, None, (effect,)), cfg) for r in runs])
            rows += _drop_rows(f"{prefix}effect_{effect}", full, ablated, last, runs[0].seed)
    return rows


@dataclass(frozen=True, slots=True)
class PoolRecall:
    """One held-out session's recall of its truly relevant memories in the pool the loop built
    (with the graph) and in the same session start's pool without it, and the pools' sizes."""

    graph: float
    nograph: float
    size_graph: int
    size_nograph: int


def truly_relevant(
    relevance: np.ndarray, ids: np.ndarray, live: np.ndarray, k: int = RELEVANT_K
) -> np.ndarray:
    """The rows of the `k` live memories with the highest planted relevance, of those above 0
    (ties: memory id ascending); fewer when fewer are relevant."""
    rows = np.flatnonzero(np.asarray(live, dtype=bool) & (np.asarray(relevance) > 0))
    return rows[rank_order(relevance[rows], ids[rows])[:k]]


def pool_recall(relevant: np.ndarray, pool: np.ndarray) -> float:
    """The share of the `relevant` rows that are in `pool` (NaN when none is relevant)."""
    return float(np.isin(relevant, pool).mean()) if len(relevant) else float("nan")


def start_pool(
    corpus: Corpus,
    start_s: float,
    *,
    project: str | None,
    previous_used: Sequence[str],
    query_terms: Sequence[str],
    graph: EntityGraph | None,
    cfg: PredictorConfig,
) -> np.ndarray:
    """The pre-filter pool (corpus rows, baseline order) of our session start at `start_s`,
    with the graph's traversal candidates or (`graph` None) without them."""
    res = session_start(
        corpus,
        start_s,
        project=project,
        previous_used=previous_used,
        cfg=cfg,
        walk=GraphWalk(graph, query_terms),
    )
    return res.index


def previous_used(con: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    """Per session key, the memories its previous scored session of the project used, replayed
    from the store as the trainer replays it (sessions without one are left out)."""
    cands = read_session_memories(con)
    by_key = {k[0]: g for k, g in cands.group_by("session_key")}
    prev = previous_sessions(scored_sessions(read_sessions(con), cands), by_key)
    return {k: p.used for k, p in prev.items() if p is not None}


def session_relevant(run: Run, h: HeldOut) -> np.ndarray:
    """The corpus rows of a held-out session's truly relevant memories (`truly_relevant` over
    the live corpus at its start; computed once per session)."""
    key = h.plan.session_key
    if key not in run.relevant:
        sim = run.sim
        rel = true_relevance(sim.truth, h.plan)[sim.truth_rows]
        live = ~sim.corpus.absent_at(h.plan.start.timestamp())
        run.relevant[key] = truly_relevant(rel, sim.corpus.ids, live)
    return run.relevant[key]


def run_pool_recalls(run: Run) -> dict[str, PoolRecall]:
    """Every held-out session's `PoolRecall` (computed once per run): the truly relevant
    memories (`truly_relevant` over the live corpus at the session start) in the recorded pool,
    and in the pool of the same session start with `graph=None`."""
    sim = run.sim
    held = {h.plan.session_key: h for pool in run.pools.values() for h in pool}
    todo = [k for k in held if k not in run.recalls]
    used = previous_used(sim.con) if todo else {}
    for key in todo:
        h = held[key]
        start_s = h.plan.start.timestamp()
        relevant = session_relevant(run, h)
        plain = start_pool(
            sim.corpus,
            start_s,
            project=h.plan.project,
            previous_used=used.get(key, ()),
            query_terms=h.inputs.query.terms,
            graph=None,
            cfg=sim.cfg,
        )
        run.recalls[key] = PoolRecall(
            pool_recall(relevant, h.inputs.rows),
            pool_recall(relevant, plain),
            len(h.inputs.rows),
            len(plain),
        )
    return run.recalls


def _recall_rows(name: str, recalls: list[PoolRecall], n: int, seed: int) -> list[Row]:
    """Pool recall with and without the graph and their paired difference, as rows."""
    got = [x for x in recalls if np.isfinite(x.graph)]
    graph, plain = np.array([x.graph for x in got]), np.array([x.nograph for x in got])
    return [
        _row(f"{name}pool_recall_graph", "recall_top10", graph, n, seed, "share"),
        _row(f"{name}pool_recall_nograph", "recall_top10", plain, n, seed, "share"),
        _row(
            f"{name}pool_recall_graph-pool_recall_nograph",
            "recall_top10_delta",
            graph - plain,
            n,
            seed,
            "share",
        ),
    ]


def pool_recall_rows(runs: list[Run], checkpoints: Sequence[int], prefix: str) -> list[Row]:
    """Per checkpoint, the pool recall of its held-out sessions with and without the graph,
    pooled over the runs whose store has a knowledge graph and per seed, with the mean pool
    sizes; none (with a log line) when no store has a graph."""
    graphed = [r for r in runs if r.has_graph]
    if not graphed:
        _log.info(f"  pool recall: skipped, no store of {prefix or 'the persona'} has a graph")
        return []
    rows: list[Row] = []
    for n in checkpoints:
        per_run = {
            r.seed: [run_pool_recalls(r)[h.plan.session_key] for h in r.pools[n]] for r in graphed
        }
        pooled = [x for got in per_run.values() for x in got]
        if not pooled:
            continue
        both = _recall_rows(prefix, pooled, n, graphed[0].seed)
        rows += both
        for size in ("graph", "nograph"):
            mean = float(np.mean([getattr(x, f"size_{size}") for x in pooled]))
            rows.append(Row(f"{prefix}pool_size_{size}", "candidates", mean, "memories", n=n))
        for s, got in per_run.items():
            rows += _recall_rows(f"{prefix}seed_{s}/", got, n, s) if got else []
        _log.info(
            f"  pool recall after {n}: with the graph {both[0].value:.3f}, without "
            f"{both[1].value:.3f}, difference {both[2].value:+.3f}"
        )
    return rows


@dataclass(frozen=True, slots=True)
class TopK:
    """Per held-out session, what a ranker's first K of the pool hold: how many of the
    session's truly relevant memories (`count`), that as a share of them (`recall`, NaN when
    none is relevant) and the tokens their contents would inject (`tokens`,
    `signet_scorer.budget.estimate_tokens`; a line's `- ` and date are not counted)."""

    count: np.ndarray
    recall: np.ndarray
    tokens: np.ndarray


def top_k(
    scores: Sequence[np.ndarray], held: Sequence[HeldOut], relevant: Sequence[np.ndarray], k: int
) -> TopK:
    """`TopK` of a ranker's `scores` of the `held` sessions (`relevant`: their truly relevant
    corpus rows), its first `k` by score (ties: memory id, as every ranking here)."""
    count, recall, tokens = [], [], []
    for sc, h, rel in zip(scores, held, relevant, strict=True):
        first = rank_order(sc, h.inputs.memory_ids)[:k]
        hits = int(np.isin(rel, h.inputs.rows[first]).sum())
        count.append(hits)
        recall.append(hits / len(rel) if len(rel) else np.nan)
        tokens.append(sum(token_costs(h.inputs.contents[i] for i in first.tolist())))
    return TopK(np.array(count, float), np.array(recall), np.array(tokens, float))


def budget_rows(
    runs: list[Run], checkpoints: Sequence[int], prefix: str, cfg: PredictorConfig
) -> list[Row]:
    """Per checkpoint, pooled over `runs`: every ranker's `relevant_recall@K` and `tokens@K`
    for K in `BUDGET_KS` (the mean pool size beside them), and the budget's goal, the count
    of truly relevant memories in each served ranker's first `SERVED_CHOICE` against the
    baseline's first `SIGNET_CHOICE` (`<ranker>@15-baseline@50`: `relevant_count_delta`,
    paired, with its worst seed, and `tokens_delta`)."""
    rows: list[Row] = []
    seed = runs[0].seed
    for n in checkpoints:
        held = [list(r.pools[n]) for r in runs]
        rel = [[session_relevant(r, h) for h in hs] for r, hs in zip(runs, held, strict=True)]
        scores = [checkpoint_scores(r, n, cfg) for r in runs]
        ks = {*BUDGET_KS, SERVED_CHOICE, SIGNET_CHOICE}
        per_run = [
            {(name, k): top_k(sc[name], hs, rs, k) for name in RANKERS for k in ks}
            for sc, hs, rs in zip(scores, held, rel, strict=True)
        ]
        pooled = {
            key: TopK(
                *(
                    np.concatenate([getattr(p[key], f) for p in per_run])
                    for f in ("count", "recall", "tokens")
                )
            )
            for key in per_run[0]
        }
        size = np.concatenate([[len(h.inputs) for h in hs] for hs in held]).astype(float)
        rows.append(Row(f"{prefix}held_out", "pool_size", float(size.mean()), "memories", n=n))
        for name in RANKERS:
            for k in BUDGET_KS:
                got = pooled[(name, k)]
                known = np.isfinite(got.recall)
                if known.any():
                    rows.append(
                        _row(
                            prefix + name,
                            f"relevant_recall@{k}",
                            got.recall[known],
                            n,
                            seed,
                            "share",
                        )
                    )
                rows.append(
                    Row(prefix + name, f"tokens@{k}", float(got.tokens.mean()), "tokens", n=n)
                )
        rows += _choice_rows(runs, per_run, pooled, n, prefix)
    return rows


def _choice_rows(
    runs: list[Run],
    per_run: list[dict[tuple[str, int], TopK]],
    pooled: dict[tuple[str, int], TopK],
    n: int,
    prefix: str,
) -> list[Row]:
    """The budget goal's rows at checkpoint `n` (`budget_rows`)."""
    signet = ("baseline", SIGNET_CHOICE)
    name_b = f"baseline@{SIGNET_CHOICE}"
    rows = [
        _row(prefix + name_b, "relevant_count", pooled[signet].count, n, runs[0].seed, "memories")
    ]
    for a in SERVED_RANKERS:
        served = (a, SERVED_CHOICE)
        name = f"{prefix}{a}@{SERVED_CHOICE}-{name_b}"
        delta = pooled[served].count - pooled[signet].count
        rows += [
            _row(
                f"{prefix}{a}@{SERVED_CHOICE}",
                "relevant_count",
                pooled[served].count,
                n,
                runs[0].seed,
                "memories",
            ),
            _row(name, "relevant_count_delta", delta, n, runs[0].seed, "memories"),
            _row(
                name,
                "tokens_delta",
                pooled[served].tokens - pooled[signet].tokens,
                n,
                runs[0].seed,
                "tokens",
            ),
        ]
        per_seed = [
            _row(
                f"{prefix}seed_{r.seed}/{a}@{SERVED_CHOICE}-{name_b}",
                "relevant_count_delta",
                p[served].count - p[signet].count,
                n,
                r.seed,
                "memories",
            )
            for r, p in zip(runs, per_run, strict=True)
        ]
        worst = min(per_seed, key=lambda row: row.value)
        rows += [
            *per_seed,
            dataclasses.replace(worst, name=name, metric="relevant_count_delta_worst_seed"),
        ]
        _log.info(
            f"  budget after {n}: {a}@{SERVED_CHOICE} {pooled[served].count.mean():.2f} truly "
            f"relevant vs baseline@{SIGNET_CHOICE} {pooled[signet].count.mean():.2f} "
            f"(delta {delta.mean():+.2f}, worst seed {worst.value:+.2f}); tokens "
            f"{pooled[served].tokens.mean():.0f} vs {pooled[signet].tokens.mean():.0f}"
        )
    return rows


def _pool_order(inputs: SessionInputs) -> np.ndarray:
    """The prompt pool's own order as scores (the release line's rule, then the recall)."""
    return -np.arange(len(inputs), dtype=np.float64)


def prompt_scores(run: Run, n: int, cfg: PredictorConfig) -> list[dict[str, list[np.ndarray]]]:
    """Per held-out session of checkpoint `n` (in pool order), every `PROMPT_RANKERS` ranker's
    scores of each of its prompts' pools: the pool's own order, cosine and the hybrid of the
    prompt, the shipped base (what serves until a per-user model is shown better), the model
    served at the prompts at `n` and the loop's own scorer at the time."""
    cp = run.checkpoints[n]
    served = cp.served if cp.prompt_served is None else cp.prompt_served
    model = None if served is None else ModelRanker(served, cfg)
    base = ModelRanker(shipped_base_params(run.sim.corpus.dim, cfg), cfg)
    fixed: dict[str, Ranker] = {
        "cosine": CosineRanker(),
        "hybrid": HybridRanker(),
        "learned_base": base,
    }
    out = []
    for h in run.pools[n]:
        per: dict[str, list[np.ndarray]] = {name: [] for name in PROMPT_RANKERS}
        for p in h.prompts:
            per["baseline"].append(_pool_order(p.inputs))
            for name, r in fixed.items():
                per[name].append(r.score(p.inputs))
            served_scores = _pool_order(p.inputs) if model is None else model.score(p.inputs)
            per["predictor_served"].append(served_scores)
            per["predictor_live"].append(p.live)
        out.append(per)
    return out


def _prompt_means(
    held: Sequence[HeldOut], scores: Sequence[dict[str, list[np.ndarray]]], k: int | None
) -> dict[str, np.ndarray]:
    """Per ranker, each session's mean over its prompts of NDCG@10 (`k` None) or of
    `relevant_recall@k` (prompts with a truly relevant memory only); NaN for a session with
    none; sessions without prompts are left out."""
    out: dict[str, list[float]] = {name: [] for name in PROMPT_RANKERS}
    for h, per in zip(held, scores, strict=True):
        if not h.prompts:
            continue
        for name in PROMPT_RANKERS:
            vals = []
            for p, sc in zip(h.prompts, per[name], strict=True):
                ids = p.inputs.memory_ids
                if k is None:
                    vals.append(ndcg_at_k(p.relevance, sc, ids, k=K))
                elif len(p.relevant):
                    first = p.inputs.rows[rank_order(sc, ids)[:k]]
                    vals.append(float(np.isin(p.relevant, first).mean()))
            out[name].append(float(np.mean(vals)) if vals else np.nan)
    return {name: np.array(v, dtype=np.float64) for name, v in out.items()}


def reached(h: HeldOut, relevant: np.ndarray, corpus: Corpus) -> tuple[float, float]:
    """The share of a session's truly relevant memories (`relevant`: corpus rows) that its
    start injected, and that its start and its prompts injected together (NaN, NaN: none)."""
    if not len(relevant):
        return np.nan, np.nan
    start = corpus.rows(list(h.start_injected))
    both = corpus.rows(list(h.start_injected) + list(h.prompt_injected))
    return float(np.isin(relevant, start).mean()), float(np.isin(relevant, both).mean())


def _delta_seed_rows(
    name: str, metric: str, per_seed: list[tuple[int, np.ndarray]], n: int, unit: str
) -> list[Row]:
    """Each seed's mean of a paired difference (`<seed_s>/name`) and the worst of them
    (`name`, metric `<metric>_worst_seed`), as `worst_seed_rows` reports them."""
    prefix, _, base = name.rpartition("/") if "/" in name else ("", "", name)
    prefix = f"{prefix}/" if prefix else ""
    rows = [_row(f"{prefix}seed_{s}/{base}", metric, d, n, s, unit) for s, d in per_seed if d.size]
    if not rows:
        return []
    worst = min(rows, key=lambda row: row.value)
    return [*rows, dataclasses.replace(worst, name=name, metric=f"{metric}_worst_seed")]


def prompt_rows(
    runs: list[Run], checkpoints: Sequence[int], prefix: str, cfg: PredictorConfig
) -> list[Row]:
    """Prompt time per checkpoint N, pooled over `runs` (one value per held-out session: the
    mean over its prompts, against each prompt's planted truth): `prompt_<ranker>` NDCG@10 and
    `relevant_recall@K` (K in `PROMPT_KS`); the served model against the strongest free ranker
    of the prompt on these prompts (`prompt_predictor_served-prompt_<free>`, and the loop's
    own, `prompt_predictor_live-prompt_<free>`, and the shipped base's,
    `prompt_learned_base-prompt_<free>`: `ndcg@10_delta`, per seed and the worst); and
    the truly relevant memories of each session (`session_relevant`) that session start
    injected (`session_start`) against those it and the prompts injected together
    (`session_start+prompt`), `relevant_reached` and their paired difference. No rows when the
    runs ranked no prompt."""
    if not any(h.prompts for r in runs for h in r.held):
        return []
    rows: list[Row] = []
    seed = runs[0].seed
    for n in checkpoints:
        held = [list(r.pools[n]) for r in runs]
        scores = [prompt_scores(r, n, cfg) for r in runs]
        ndcg = [_prompt_means(hs, sc, None) for hs, sc in zip(held, scores, strict=True)]
        pooled = {k: np.concatenate([p[k] for p in ndcg]) for k in PROMPT_RANKERS}
        rows += [_row(f"{prefix}prompt_{k}", "ndcg@10", pooled[k], n, seed) for k in PROMPT_RANKERS]
        free = max(PROMPT_FREE, key=lambda k: (float(np.mean(pooled[k])), k))
        for a in ("predictor_served", "predictor_live", "learned_base"):
            name = f"{prefix}prompt_{a}-prompt_{free}"
            rows.append(_row(name, "ndcg@10_delta", pooled[a] - pooled[free], n, seed))
            per_seed = [(r.seed, p[a] - p[free]) for r, p in zip(runs, ndcg, strict=True)]
            rows += _delta_seed_rows(name, "ndcg@10_delta", per_seed, n, "ndcg")
        for k in PROMPT_KS:
            recall = [_prompt_means(hs, sc, k) for hs, sc in zip(held, scores, strict=True)]
            for name in PROMPT_RANKERS:
                got = np.concatenate([p[name] for p in recall])
                got = got[np.isfinite(got)]
                if got.size:
                    rows.append(
                        _row(
                            f"{prefix}prompt_{name}", f"relevant_recall@{k}", got, n, seed, "share"
                        )
                    )
        rows += _reached_rows(runs, held, n, prefix)
        _log.info(
            f"  prompts after {n}: "
            + ", ".join(f"{k} {pooled[k].mean():.4f}" for k in PROMPT_RANKERS)
            + f" (strongest free: {free})"
        )
    return rows


def _reached_rows(runs: list[Run], held: list[list[HeldOut]], n: int, prefix: str) -> list[Row]:
    """`session_start`, `session_start+prompt` and their difference: `relevant_reached`."""
    per_seed: list[tuple[int, np.ndarray]] = []
    alone, both = [], []
    for r, hs in zip(runs, held, strict=True):
        got = np.array([reached(h, session_relevant(r, h), r.sim.corpus) for h in hs if h.prompts])
        got = got[np.isfinite(got).all(axis=1)] if got.size else np.zeros((0, 2))
        alone.append(got[:, 0])
        both.append(got[:, 1])
        per_seed.append((r.seed, got[:, 1] - got[:, 0]))
    a, b = np.concatenate(alone), np.concatenate(both)
    if not a.size:
        return []
    seed = runs[0].seed
    name = f"{prefix}session_start+prompt-session_start"
    rows = [
        _row(f"{prefix}session_start", "relevant_reached", a, n, seed, "share"),
        _row(f"{prefix}session_start+prompt", "relevant_reached", b, n, seed, "share"),
        _row(name, "relevant_reached_delta", b - a, n, seed, "share"),
        *_delta_seed_rows(name, "relevant_reached_delta", per_seed, n, "share"),
    ]
    _log.info(
        f"  reached after {n}: session start {a.mean():.3f}, with the prompts {b.mean():.3f} "
        f"({(b - a).mean():+.3f})"
    )
    return rows


UNCAPPED_TRAINING_S = 1e6


@dataclass(frozen=True, slots=True)
class RunScope:
    """How each store of a quality run is made and run beyond its persona and seed:
    `n_memories` resizes the persona (None: its own size); `prompt_time` makes the loop rank
    and inject at every prompt too, and judges the prompts (`prompt_rows`)."""

    n_memories: int | None = None
    prompt_time: bool = False


def persona_rows(
    runs: list[Run],
    checkpoints: Sequence[int],
    prefix: str,
    cfg: PredictorConfig,
    selected: Collection[str] = frozenset(),
    quick: bool = False,
) -> list[Row]:
    """One persona's rows over its runs: the truth's variance shares, the rankers per
    checkpoint, the pool recall with and without the graph, and the `selected` ablations
    (`--quick`: on the first seed only)."""
    share_rows = truth_share_rows(runs, prefix)
    rows = share_rows + curve_rows(runs, checkpoints, prefix, cfg)
    rows += budget_rows(runs, checkpoints, prefix, cfg)
    rows += prompt_rows(runs, checkpoints, prefix, cfg)
    rows += pool_recall_rows(runs, checkpoints, prefix)
    if selected:
        ablated = runs[:1] if quick else runs
        last = max(checkpoints)
        rows += ablation_rows(ablated, last, prefix, cfg, selected)
        shares = {r.name.rsplit("truth_share_", 1)[1]: r.value for r in share_rows}
        rows += effect_rows(ablated, last, prefix, shares, cfg, selected)
    return rows


def quality_rows(
    personas: Sequence[str] = ("heavy",),
    *,
    seeds: Sequence[int] = (0,),
    quick: bool = False,
    embedder: str = "wordllama",
    ablations: bool | Sequence[str] = True,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    checkpoints: Sequence[int] | None = None,
    scope: RunScope = RunScope(),
) -> list[Row]:
    """Simulate every persona on every seed, evaluate each checkpoint's rankers on the
    held-out sessions (pooled per persona), ablate; the rows. `cfg` is the predictor's
    configuration (a training schedule to try, say); `checkpoints` replaces the default
    session counts (a shorter horizon for many seeds); `ablations` names the ones to run
    (`ablation_selection`); `scope` how each store is made and run (`RunScope`)."""
    if checkpoints is None:
        checkpoints = QUICK_CHECKPOINTS if quick else CHECKPOINTS
    if not checkpoints or min(checkpoints) < 1:
        raise ValueError(f"checkpoints must be positive session counts, got {list(checkpoints)}")
    checkpoints = tuple(sorted(set(checkpoints)))
    selected = ablation_selection(ablations)
    # the quality of a model must not depend on how busy the machine is: every training runs
    # to its epoch budget (the daemon's time cap would cut it short on a loaded machine, and
    # the same seed gave models 0.08 NDCG@10 apart under load)
    cfg = cfg.replace(max_training_seconds=UNCAPPED_TRAINING_S)
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
                    simulate_run(
                        persona,
                        s,
                        Judging(checkpoints, held_out, scope.prompt_time),
                        tmp,
                        cfg,
                        embedder,
                        n_memories=scope.n_memories,
                    )
                    for s in seeds
                ]
                prefix = f"{persona}/" if len(personas) > 1 else ""
                rows += persona_rows(runs[persona], checkpoints, prefix, cfg, selected, quick)
        finally:
            for group_runs in runs.values():
                for r in group_runs:
                    r.sim.close()
    _log.info(f"bench quality done in {time.perf_counter() - t_all:.0f} s")
    return rows
