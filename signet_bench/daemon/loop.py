"""The session lifecycle, replayed on a synthetic store exactly as the daemon runs it:

start (pre-filter -> baseline -> scorer -> RRF(alpha) -> diversity -> exploration -> inject; every
candidate recorded) -> 10-20 prompts (real FTS5 queries, `fts_only` upserts, agent feedback) ->
end (a simulated continuity judge, session score, summary job) -> labels (the trainer's own
sample assembly on the rows just recorded) -> comparison row -> EMA, alpha, drift -> training
every `trainIntervalSessions`.

Each session is one transaction (recorded entirely or not at all) and is keyed by its index in
the store's session plan, so running the same command twice changes nothing. The corpus, the
context rule, the candidate inputs, the labels and the train-and-publish step are the same
functions the trainer (`learn/samples.py`, `learn/train.py`) uses.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from signet_bench.analysis.metrics import ranked_ids
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.candidates import SessionInputs, session_inputs
from signet_bench.daemon.comparison import (
    Comparison,
    ComparisonInput,
    compare_session,
    evaluation_pool,
    judged_ndcg,
)
from signet_bench.daemon.context import PreviousSession, PreviousSessions, SessionContextVector
from signet_bench.daemon.feedback import parse_feedback
from signet_bench.daemon.predictor_state import (
    PredictorState,
    effective_alpha,
    initial_state,
    on_comparison,
    on_session_labelled,
    on_session_start,
    on_training,
    state_from_json,
    state_to_json,
    training_due,
)
from signet_bench.daemon.ranking.baseline import rank_order
from signet_bench.daemon.ranking.compat import signet058_session_start
from signet_bench.daemon.ranking.fts import fts_search, recall_terms
from signet_bench.daemon.ranking.ranker import CosineRanker
from signet_bench.daemon.ranking.session_start import SessionStartResult, session_start
from signet_bench.errors import UserError
from signet_bench.learn.samples import SessionSample, build_sample, scored_sessions
from signet_bench.store import sim as sim_tables
from signet_bench.store import write as w
from signet_bench.store.corpus import Corpus, read_corpus
from signet_bench.store.read import open_readonly, read_session_memories, read_sessions
from signet_bench.store.schema import connect_writer
from signet_bench.store.timestamps import format_iso
from signet_bench.world.synth.judge import (
    AGENT_RATINGS_PER_PROMPT,
    SILENT_NOISE_FACTOR,
    agent_ratings,
    judge_ratings,
    novel_context_count,
)
from signet_bench.world.synth.plans import SessionContext, plan_sessions, prompts_for
from signet_bench.world.synth.truth import load_truth, read_synth_meta, true_relevance

if TYPE_CHECKING:
    from serving.request import TrainingRequest

__all__ = [
    "MODES",
    "SCORERS",
    "SessionRecord",
    "SimOptions",
    "SimReport",
    "Simulator",
    "model_dir",
    "model_path",
    "model_trainer",
    "simulate",
]

SCORERS = ("none", "random", "model", "sidecar")
# The simulator waits for its sidecar longer than the daemon would (Signet: score 120 ms, train
# 30 s): a replay must not fail open because the machine was busy, or it would not reproduce.
SIDECAR_TIMEOUTS_MS = {"score": 30_000.0, "train_from_db": 600_000.0, "status": 30_000.0}
MODES = ("ours", "signet-0.58")


@dataclass(frozen=True, slots=True)
class SimOptions:
    """How the simulated daemon, user, agent and judge behave."""

    scorer: str = "random"  # none | random | model (in-process) | sidecar (python -m serving)
    mode: str = "ours"  # ours | signet-0.58 (the real daemon's pool, for rank replay)
    seed: int = 0
    feedback_share: float = 0.3  # share of sessions whose agent rates injected memories
    judge_noise: float = 0.1  # sd of the judge's per-memory error
    judge_recency_bias: float = 0.0  # added to memories younger than 7 days
    prompts: tuple[int, int] = (10, 20)
    train_epochs: int = DEFAULT_CONFIG.full_training_epochs
    progress: bool = False


@dataclass(slots=True)
class SimReport:
    """What a run did, for the CLI summary."""

    sessions_run: int = 0
    sessions_skipped: int = 0
    comparisons: int = 0
    exploration_rows: int = 0
    trainings: int = 0
    trainings_accepted: int = 0
    drift_resets: int = 0
    cold_start_exit_session: int | None = None
    seconds: float = 0.0
    final_state: PredictorState | None = None
    events: list[tuple[int, str]] = field(default_factory=list)

    def summary(self) -> str:
        st = self.final_state
        lines = [
            (
                f"sessions simulated: {self.sessions_run} (already recorded, skipped: "
                f"{self.sessions_skipped}) in {self.seconds:.1f} s"
            ),
            f"comparisons: {self.comparisons}; exploration rows: {self.exploration_rows}",
            (
                f"trainings: {self.trainings} ({self.trainings_accepted} accepted); "
                f"drift resets: {self.drift_resets}"
            ),
            f"cold start exited at session: {self.cold_start_exit_session}",
        ]
        if st is not None:
            lines.append(
                f"state: success_rate={st.success_rate:.3f} alpha={st.alpha:.3f} "
                f"cold_start_exited={st.cold_start_exited} model_version={st.model_version}"
            )
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """What the loop computed for one session: its inputs at the start (the candidate pool as
    every ranker sees it), the session start's result, and its training sample at the end."""

    plan: SessionContext
    inputs: SessionInputs
    start: SessionStartResult
    sample: SessionSample | None


@dataclass(frozen=True, slots=True)
class _Judged:
    """The simulated judge's session-level outputs."""

    score: float
    confidence: float
    novel_context_count: int
    end: datetime

    @property
    def compared_at(self) -> datetime:
        """When the summary worker compares the session (and a training it triggers starts)."""
        return self.end + timedelta(minutes=2)


def model_dir(store: Path) -> Path:
    """Where the simulated daemon keeps its accepted model and workbench (beside the store)."""
    return store.with_name(store.name + ".predictor")


def model_path(store: Path) -> Path:
    """The simulated daemon's accepted model."""
    return model_dir(store) / "model.sbm"


def _random_predictor(rng: np.random.Generator) -> Callable:
    def random_scores(inputs: SessionInputs) -> np.ndarray:
        z = rng.normal(size=len(inputs))
        e = np.exp(z - z.max())
        return e / e.sum()

    return random_scores


class Simulator:
    """The simulated daemon over one synthetic store (it owns the store's only writer)."""

    def __init__(
        self,
        path: str | Path,
        opts: SimOptions,
        cfg: PredictorConfig = DEFAULT_CONFIG,
        *,
        trainer: Callable[[Simulator], tuple[bool, dict]] | None = None,
    ) -> None:
        if opts.scorer not in SCORERS:
            raise UserError(f"--scorer: {opts.scorer!r} is not one of {', '.join(SCORERS)}")
        if opts.mode not in MODES:
            raise UserError(f"--mode: {opts.mode!r} is not one of {', '.join(MODES)}")
        self.path = Path(path)
        if not self.path.exists():
            raise UserError(f"{self.path}: no such store")
        self.opts, self.cfg = opts, cfg
        _check_synthetic(self.path)
        self.con = connect_writer(self.path)
        self.persona, self.truth = load_truth(self.con)
        self.tz = self.persona.tz
        self.corpus: Corpus = read_corpus(self.con)
        self.truth_rows = np.asarray(self.truth.positions(list(self.corpus.ids)), dtype=np.int64)
        sim_tables.ensure_sim_tables(self.con)
        raw = sim_tables.load_sim_state(self.con)
        self.state = initial_state(cfg) if raw is None else state_from_json(raw)
        self.previous = self._replay_previous()
        self.trainer = trainer
        self.model = self._saved_model()  # the accepted weights (scorer == "model")
        self.sidecar = self._start_sidecar() if opts.scorer == "sidecar" else None
        self.records: dict[int, SessionRecord] = {}
        self.keep: Container[int] = ()

    def _replay_previous(self) -> PreviousSessions:
        """The latest scored session per project, from what the store already holds."""
        tracker = PreviousSessions()
        cands = read_session_memories(self.con)
        if cands.height:
            by_key = {k[0]: g for k, g in cands.group_by("session_key")}
            for s in scored_sessions(read_sessions(self.con), cands).iter_rows(named=True):
                tracker.record(s["session_key"], s["project"], s["start"], by_key[s["session_key"]])
        return tracker

    def _start_sidecar(self):
        """The predictor sidecar serving this store's model file (`python -m serving`), as
        the daemon runs it; it starts untrained until the first accepted training."""
        from serving.client import SidecarClient

        model_dir(self.path).mkdir(parents=True, exist_ok=True)
        args = ("--tz", self.tz)
        return SidecarClient.for_model(
            model_path(self.path), self.corpus.dim, args=args, timeouts_ms=SIDECAR_TIMEOUTS_MS
        )

    def _saved_model(self) -> dict[str, np.ndarray] | None:
        """The accepted model a resumed run continues with (none before the first training)."""
        path = model_path(self.path)
        if self.opts.scorer not in ("model", "sidecar") or not path.exists():
            return None
        from signet_bench.learn.model.checkpoint import load_checkpoint

        return load_checkpoint(path)[0]

    # -- plan -------------------------------------------------------------------------------
    def plan(self, n: int) -> list[SessionContext]:
        """The store's session plan; its length is fixed by the first run (drift depends on it)."""
        if n < 1:
            raise UserError(f"--sessions: expected a whole number >= 1, got {n}")
        saved = sim_tables.get_sim_meta(self.con, "plan")
        if saved is not None:
            horizon, seed = json.loads(saved)
            if n > horizon:
                raise UserError(
                    f"{self.path}: its session plan has {horizon} sessions (fixed by the first "
                    f"simulate run); ask for at most {horizon} or start from a fresh store"
                )
        else:
            horizon, seed = n, self.opts.seed
            sim_tables.set_sim_meta(self.con, "plan", json.dumps([n, seed]))
        return plan_sessions(self.persona, horizon, start=self.truth.now, seed=seed)[:n]

    def done(self) -> set[int]:
        return sim_tables.done_sessions(self.con)

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
        truth = true_relevance(self.truth, rec.plan)
        return truth[self.truth_rows[rec.inputs.rows]]

    # -- one session -------------------------------------------------------------------------
    def _inputs(
        self,
        plan: SessionContext,
        prev: PreviousSession | None,
        rows: np.ndarray,
        context: SessionContextVector,
    ) -> SessionInputs:
        return session_inputs(
            self.corpus,
            rows,
            session_key=plan.session_key,
            start=plan.start,
            tz=self.tz,
            project=plan.project,
            previous_start=prev.start if prev else None,
            context=context.vector,
            context_rule=context.rule,
            cfg=self.cfg,
        )

    def _scorer(self, rng: np.random.Generator) -> Callable[[SessionInputs], np.ndarray] | None:
        """The scorer as session start calls it (None: offline, or not trained yet)."""
        if self.opts.scorer == "random":
            return _random_predictor(rng)
        if self.opts.scorer == "none" or self.model is None:
            return None
        if self.sidecar is not None:
            return self._sidecar_scores
        from signet_bench.learn.model.ranker import ModelRanker

        return ModelRanker(self.model, self.cfg).score

    def _sidecar_scores(self, inputs: SessionInputs) -> np.ndarray | None:
        """The sidecar's scores for the candidates, as Signet's daemon asks for them (null
        embeddings on the text path); None when it fails open."""
        has = inputs.has_embedding
        emb = [row if h else None for row, h in zip(inputs.embeddings, has, strict=True)]
        got = self.sidecar.score(
            inputs.context,
            inputs.memory_ids.tolist(),
            candidate_embeddings=emb,
            candidate_texts=list(inputs.contents),
            candidate_features=inputs.features,
            project_slot=inputs.project_slot,
        )
        if got is None:
            return None
        by_id = dict(got)
        return np.array([by_id.get(m, np.nan) for m in inputs.memory_ids], dtype=np.float64)

    def _start(
        self, plan: SessionContext, prev: PreviousSession | None, rng, alpha: float
    ) -> tuple[SessionStartResult, SessionInputs]:
        """Session start in the chosen mode, and the pool's inputs as the scorer saw them."""
        start_s = plan.start.timestamp()
        seen: list[SessionInputs] = []
        scorer = self._scorer(rng)

        def predictor(rows: np.ndarray, context: SessionContextVector) -> np.ndarray | None:
            seen.append(self._inputs(plan, prev, rows, context))
            return None if scorer is None else scorer(seen[-1])

        if self.opts.mode == "ours":
            res = session_start(
                self.corpus,
                start_s,
                project=plan.project,
                previous_used=prev.used if prev else (),
                predictor=predictor,
                alpha=alpha,
                cold_start_exited=self.state.cold_start_exited,
                rng=rng,
                cfg=self.cfg,
            )
        else:  # Signet 0.58's cold start never exits by default: its pool is replayed unfused.
            c = self.corpus
            res = signet058_session_start(
                c.ids,
                c.created_at,
                c.importance,
                c.pinned,
                c.project,
                c.contents,
                c.embeddings,
                c.has_embedding,
                plan.project,
                start_s,
                self.cfg,
                is_deleted=c.absent_at(start_s),
                created_at_text=c.created_text,
            )
        if not seen:
            seen.append(self._inputs(plan, prev, np.asarray(res.index), res.context_vector))
        return res, seen[0]

    def run_session(self, idx: int, plan: SessionContext, report: SimReport) -> None:
        cfg, opts = self.cfg, self.opts
        rng = np.random.default_rng([opts.seed, idx])
        step = on_session_start(self.state, cfg)
        self.state = step.state
        for ev in step.events:
            report.events.append((idx, ev.kind))
            if ev.kind == "cold_start_exit" and report.cold_start_exit_session is None:
                report.cold_start_exit_session = idx
        alpha = effective_alpha(self.state, cfg)
        prev = self.previous.before(plan.project)
        res, inputs = self._start(plan, prev, rng, alpha)
        at = format_iso(plan.start)
        self.con.execute("BEGIN IMMEDIATE")
        try:
            rows = _candidate_rows(res, inputs)
            w.record_session_candidates(self.con, plan.session_key, rows, at)
            injected = set(res.injected_ids)
            self._prompts(plan, rng, injected)
            cosine = CosineRanker().score(inputs)
            cos_top = inputs.memory_ids[rank_order(cosine, inputs.memory_ids)][
                : self.cfg.comparison_k
            ]
            judged = self._judge(plan, rng, injected, cos_top.tolist())
            cand = read_session_memories(self.con, [plan.session_key])
            sample = self._sample(plan, prev, cand, judged)
            comp, due = self._compare(idx, plan, cand, judged, alpha, sample is not None, report)
            rated = cand.filter(pl.col("relevance_score").is_not_null())
            ratings = dict(zip(rated["memory_id"], rated["relevance_score"], strict=True))
            cos_ndcg = judged_ndcg(comp, cosine, inputs.memory_ids, self.cfg, ratings)
            self._record(idx, plan, res, inputs, alpha, judged.end, cos_ndcg)
            if due:
                sim_tables.set_sim_meta(self.con, "train_pending", "1")
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.previous.record(plan.session_key, plan.project, plan.start, cand)
        if idx in self.keep:
            self.records[idx] = SessionRecord(plan, inputs, res, sample)
        report.sessions_run += 1
        report.exploration_rows += int(res.explored_id is not None)
        if due:  # on the committed store, as the daemon's trainer reads it
            self._train(report, judged.compared_at)

    def _record(
        self,
        idx: int,
        plan: SessionContext,
        res: SessionStartResult,
        inputs: SessionInputs,
        alpha: float,
        end: datetime,
        cosine_ndcg: float,
    ) -> None:
        """The simulator's row of a finished session (with the NDCG@10 the plain
        cosine(context, memory) ranking gets on the session's judged labels: the obvious
        alternative to the predictor) and the predictor state."""
        sim_tables.insert_sim_session(
            self.con,
            session_key=plan.session_key,
            idx=idx,
            project=plan.project,
            focus_topic=plan.focus_topic,
            tz=self.tz,
            started_at=format_iso(plan.start),
            ended_at=format_iso(end),
            scorer=self.opts.scorer,
            alpha=alpha,
            context_rule=inputs.context_rule,
            explored_memory_id=res.explored_id,
            cosine_ndcg=cosine_ndcg,
        )
        sim_tables.save_sim_state(self.con, state_to_json(self.state), format_iso(end))

    def _prompts(self, plan: SessionContext, rng: np.random.Generator, injected: set[str]) -> None:
        """10-20 prompts: their FTS hits, and on some sessions the agent's ratings of up to
        `AGENT_RATINGS_PER_PROMPT` injected memories a prompt (`synth.judge`)."""
        lo, hi = self.opts.prompts
        n = int(rng.integers(lo, hi + 1))
        rate = rng.random() < self.opts.feedback_share
        truth = true_relevance(self.truth, plan) if rate else None
        inj_rows = self.corpus.rows(sorted(injected))
        for j, text in enumerate(prompts_for(plan, n, rng)):
            at = format_iso(plan.start + timedelta(minutes=2 * (j + 1)))
            hits = fts_search(self.con, recall_terms(text), limit=20)[:10]
            if hits:
                w.track_fts_hits(self.con, plan.session_key, [m for m, _ in hits], at)
            if truth is not None and len(inj_rows):
                k = min(len(inj_rows), AGENT_RATINGS_PER_PROMPT)
                pick = rng.choice(inj_rows, size=k, replace=False)
                scores = agent_ratings(truth[self.truth_rows[pick]], rng)
                ratings = {
                    self.corpus.ids[r]: round(float(s), 3)
                    for r, s in zip(pick, scores, strict=True)
                }
                fb = parse_feedback(json.dumps({"memory_feedback": ratings}), injected)
                w.record_agent_feedback(self.con, plan.session_key, fb.scores)

    def _judge(
        self, plan: SessionContext, rng, injected: set[str], also: Sequence[str] = ()
    ) -> _Judged:
        """The simulated continuity judge (`synth.judge`: what it sees and how it errs): it
        rates what the transcript shows (the injected memories and those the prompts
        recalled) and, in seed 000's second pass, the rest of the comparison's evaluation pool
        (the top 10 of the baseline's and the predictor's rankings, from the recorded rows as
        `compare_session` ranks them); it counts the re-explanations it notices; then the end
        rows. Without the second pass, the ranking that decides the injection would be judged
        and the other would not, and its unrated picks would count as 0. `also` are more
        memories the second pass rates: the cosine ranking's top 10, so that the recorded
        `sim_sessions.cosine_ndcg` judges the obvious alternative as fairly as the two."""
        opts, corpus, cfg = self.opts, self.corpus, self.cfg
        rows_df = read_session_memories(self.con, [plan.session_key])
        ids = np.asarray(rows_df["memory_id"].to_list(), dtype=str)
        rows = corpus.rows(ids)
        truth = true_relevance(self.truth, plan)[self.truth_rows[rows]]
        inj = np.isin(ids, sorted(injected))
        recalled = rows_df["fts_hit_count"].to_numpy() > 0
        pool = evaluation_pool(
            ranked_ids(rows_df["effective_score"].fill_null(np.nan).to_numpy(), ids),
            ranked_ids(rows_df["predictor_score"].fill_null(np.nan).to_numpy(), ids),
            [*ids[inj].tolist(), *also],
            cfg.comparison_k,
        )
        age_s = plan.start.timestamp() - corpus.created_at[rows]
        rel = judge_ratings(
            truth, inj, recalled, rng, noise=opts.judge_noise, pool=np.isin(ids, pool),
            recency_bias=opts.judge_recency_bias, young=age_s < cfg.drift_recent_days * 86400,
        )  # fmt: skip
        rated = ~np.isnan(rel)
        w.write_relevance_scores(
            self.con, plan.session_key, dict(zip(ids[rated], rel[rated].tolist(), strict=True))
        )
        inj_rel = rel[inj]
        score = float(np.clip(inj_rel.mean() + rng.normal(0, 0.05), 0, 1)) if len(inj_rel) else 0.0
        judged = _Judged(
            score=score,
            confidence=float(np.clip(rng.normal(0.75, 0.15), 0.2, 1.0)),
            novel_context_count=novel_context_count(truth, inj, recalled, rng),
            end=plan.start + timedelta(minutes=2 * (opts.prompts[1] + 2)),
        )
        used = int(np.count_nonzero(inj_rel >= 0.5))
        self._end_rows(plan, judged, int(inj.sum()), used, int(rated.sum()))
        return judged

    def _end_rows(
        self, plan: SessionContext, judged: _Judged, n_injected: int, used: int, n_rated: int
    ) -> None:
        """session_scores, summary_jobs and session_checkpoints rows of a finished session."""
        opts = self.opts
        end_at = format_iso(judged.end)
        w.insert_session_score(
            self.con,
            plan.session_key,
            project=plan.project,
            harness="simulated",
            score=judged.score,
            memories_recalled=n_injected,
            memories_used=used,
            novel_context_count=judged.novel_context_count,
            reasoning=f"simulated judge: {used}/{n_injected} injected memories were relevant",
            created_at=end_at,
            confidence=judged.confidence,
            continuity_reasoning=f"rated {n_rated} memories (injected, recalled by a prompt, "
            f"or in the evaluation pool); noise sd {opts.judge_noise}, {SILENT_NOISE_FACTOR:g}x "
            f"for those no prompt recalled; recency bias {opts.judge_recency_bias}",
        )
        w.insert_summary_job(
            self.con,
            plan.session_key,
            harness="simulated",
            project=plan.project,
            transcript=f"[{plan.project}/{plan.focus_topic}] simulated session",
            status="completed",
            attempts=1,
            created_at=end_at,
            completed_at=end_at,
        )
        w.insert_session_checkpoint(
            self.con, plan.session_key, "session_end", project=plan.project, created_at=end_at
        )

    def _sample(
        self, plan: SessionContext, prev: PreviousSession | None, cand: pl.DataFrame, j: _Judged
    ) -> SessionSample | None:
        """The session's training sample, by the trainer's own assembly (None: not trainable)."""
        if j.confidence < self.cfg.min_scorer_confidence:
            return None
        session = {
            "session_key": plan.session_key,
            "project": plan.project,
            "start": plan.start,
            "end": j.end,
            "score": j.score,
            "confidence": j.confidence,
            "novel_context_count": j.novel_context_count,
        }
        return build_sample(
            self.corpus, session, cand, prev, tz=self.tz, cfg=self.cfg, seed=self.opts.seed
        )

    def _compare(
        self,
        idx: int,
        plan: SessionContext,
        cand: pl.DataFrame,
        judged: _Judged,
        alpha: float,
        trainable: bool,
        report: SimReport,
    ) -> tuple[Comparison, bool]:
        """The comparison row and the state's update; True when a training is due."""
        cfg = self.cfg
        inp = ComparisonInput.build(
            plan.session_key,
            np.asarray(cand["memory_id"].to_list(), dtype=str),
            effective_score=cand["effective_score"].fill_null(np.nan).to_numpy(),
            predictor_score=cand["predictor_score"].fill_null(np.nan).to_numpy(),
            was_injected=cand["was_injected"].to_numpy(),
            fts_hit_count=cand["fts_hit_count"].to_numpy(),
            relevance=cand["relevance_score"].fill_null(np.nan).to_numpy(),
            has_entity_slot=cand["entity_slot"].is_not_null().to_numpy(),
            is_constraint=cand["is_constraint"].to_numpy(),
            is_fts_only=(cand["source"] == "fts_only").to_numpy(),
            scorer_confidence=judged.confidence,
            project=plan.project,
        )
        comp = compare_session(inp, alpha=alpha, success_rate=self.state.success_rate, cfg=cfg)
        row = comp.to_row()
        row["created_at"] = format_iso(judged.compared_at)
        w.insert_comparison(self.con, plan.session_key, row)
        report.comparisons += 1
        self.state = on_session_labelled(self.state, trainable=trainable).state
        rule = "signet-0.58" if self.opts.mode == "signet-0.58" else "seed"
        step = on_comparison(self.state, comp, cfg, drift_rule=rule)
        self.state = step.state
        for ev in step.events:
            report.events.append((idx, ev.kind))
            if ev.kind == "drift_reset":
                report.drift_resets += 1
        return comp, training_due(self.state, cfg) or step.retrain_with_replay

    def _train(self, report: SimReport, at: datetime) -> None:
        """A training the last session made due, then its log row, the state and the cleared
        `train_pending` mark in one transaction (a run resumed after a crash in between
        trains first)."""
        accepted, log = True, {}
        if self.opts.scorer not in ("none", "random") and self.trainer is not None:
            accepted, log = self.trainer(self)
        with w.transaction(self.con):
            if self.opts.scorer != "none":
                report.trainings += 1
                report.trainings_accepted += int(accepted)
                self.state = on_training(self.state, accepted).state
            if log:
                log.setdefault("created_at", format_iso(at))  # the session's simulated time
                w.insert_training_log(
                    self.con, log.pop("id"), model_version=self.state.model_version, **log
                )
            sim_tables.save_sim_state(self.con, state_to_json(self.state), format_iso(at))
            sim_tables.set_sim_meta(self.con, "train_pending", "0")

    # -- the run ----------------------------------------------------------------------------
    def run(self, n: int, *, keep: Container[int] = ()) -> SimReport:
        """Run (or resume) the first `n` sessions of the plan; the `SessionRecord`s of the
        plan indices in `keep` stay in `records` (for benches and tests)."""
        t0 = time.perf_counter()
        self.keep = keep
        report = SimReport()
        plan = self.plan(n)
        done = self.done()
        todo = [(i, c) for i, c in enumerate(plan) if i not in done]
        report.sessions_skipped = len(plan) - len(todo)
        if sim_tables.get_sim_meta(self.con, "train_pending") == "1":
            self._train(report, self.truth.now)
        bar = None
        if self.opts.progress and todo:
            from tqdm import tqdm

            bar = tqdm(total=len(todo), desc="sessions", unit="session", leave=False)
        for i, plan_i in todo:
            self.run_session(i, plan_i, report)
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        report.seconds = time.perf_counter() - t0
        report.final_state = self.state
        return report

    def close(self) -> None:
        if self.sidecar is not None:
            self.sidecar.close()
        self.con.close()


def _check_synthetic(path: Path) -> None:
    """A file that is not a synthetic store is reported (missing tables named) and never opened
    for writing (the writer would switch it to WAL, or write a header into an empty file)."""
    ro = open_readonly(path)
    try:
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


def _candidate_rows(res: SessionStartResult, inputs: SessionInputs) -> list[w.CandidateRow]:
    """The session start's candidates as `session_memories` rows (ranks: `rank` 0-based
    baseline position, `predictor_rank` 1-based, NULL when the predictor did not score;
    `is_constraint`: a constraint of the session's scope, the ones that are forced in)."""
    return [
        w.CandidateRow(
            memory_id=str(res.memory_id[i]),
            source=str(res.source[i]),
            effective_score=float(res.effective_score[i]),
            predictor_score=None
            if not np.isfinite(res.predictor_score[i])
            else float(res.predictor_score[i]),
            final_score=float(res.final_score[i]),
            rank=int(res.rank[i]),
            was_injected=bool(res.was_injected[i]),
            predictor_rank=None if res.predictor_rank[i] < 0 else int(res.predictor_rank[i]),
            is_constraint=bool(inputs.is_constraint[i]),
        )
        for i in range(len(res.index))
    ]


def _training_log(run_id: str, result) -> dict:
    """A run as Signet's `predictor_training_log` row. SQLite turns NaN into NULL in the
    `loss REAL NOT NULL` column, so a diverged run is logged as +inf (the workbench keeps the
    full curve)."""
    last = result.loss_curve[-1] if result.loss_curve else float("inf")
    return {
        "id": run_id,
        "loss": last if math.isfinite(last) else float("inf"),
        "sample_count": result.sample_count,
        "duration_ms": result.duration_ms,
        "canary_ndcg": result.canary_ndcg,
        "canary_ndcg_delta": result.canary_ndcg_delta,
        "canary_score_variance": result.canary_score_variance,
        "canary_topk_churn": None
        if result.canary_topk_overlap is None
        else 1.0 - result.canary_topk_overlap,
    }


def _run_id(sim: Simulator) -> str:
    """The training run's id: the model version it would become and the newest session."""
    newest = sim_tables.newest_session_key(sim.con) or "none"
    return f"train-{sim.state.model_version + 1}-{newest}"


def _training_request(sim: Simulator) -> TrainingRequest:
    """The loop's training policy as one request: retrain from fresh weights when the
    schedule's full retrain is due, else fine-tune the accepted model (incrementally once it
    has passed the gates since the last drift reset, else on every session), and protect its
    canary behaviour once cold start has exited (before, the predictor changes no injection,
    so there is nothing to protect yet)."""
    from signet_bench.learn.train import scheduled_request

    every = sim.cfg.full_retrain_every
    fresh = every > 0 and (sim.state.model_version + 1) % every == 0
    mode = "fresh" if fresh else "incremental" if sim.state.trained else "finetune"
    request = scheduled_request(
        sim.path, model_dir(sim.path), sim.cfg, mode=mode, full_epochs=sim.opts.train_epochs
    )
    return request.replace(
        base_weights=model_path(sim.path) if sim.model is not None else None,
        protect=sim.model is not None and sim.state.cold_start_exited,
        seed=sim.opts.seed + sim.state.model_version,
        sample_seed=sim.opts.seed,
        tz=sim.tz,
    )


def model_trainer(sim: Simulator) -> tuple[bool, dict]:
    """Train on the store's scored sessions (the loop's training trigger) through
    `train.train_store`, the same path as `signet-bench train`; an accepted model is used from
    the next session on."""
    from signet_bench.learn.train import NothingToTrain, TooLittleData, train_store

    run_id = _run_id(sim)
    request = _training_request(sim)
    try:
        run = train_store(request, cfg=sim.cfg, db=sim.con, corpus=sim.corpus, run_id=run_id)
    except (NothingToTrain, TooLittleData):
        return False, {}
    if run.result.accepted:
        sim.model = run.result.params
    return run.result.accepted, _training_log(run_id, run.result)


def sidecar_trainer(sim: Simulator) -> tuple[bool, dict]:
    """The loop's training through the sidecar's `train_from_db` (the trainer runs in its child
    process on the committed store; the sidecar swaps the new model in), with the same request
    as `model_trainer` (the sidecar trains the model it serves, the same file)."""
    res = sim.sidecar.train_from_db(_training_request(sim))
    if not res:
        return False, {}
    accepted = bool(res.get("accepted"))
    if accepted:
        from signet_bench.learn.model.checkpoint import load_checkpoint

        sim.model = load_checkpoint(model_path(sim.path))[0]
    loss = res.get("loss")
    log = {
        "id": _run_id(sim),
        "loss": loss if isinstance(loss, float) and math.isfinite(loss) else float("inf"),
        "sample_count": res.get("samples_used"),
        "duration_ms": res.get("duration_ms"),
        "canary_score_variance": res.get("canary_score_variance"),
    }
    return accepted, log


def simulate(
    path: str | Path,
    n_sessions: int,
    opts: SimOptions = SimOptions(),
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> SimReport:
    """Run (or resume) the first `n_sessions` sessions of a synthetic store's plan."""
    trainer = {"model": model_trainer, "sidecar": sidecar_trainer}.get(opts.scorer)
    sim = Simulator(path, opts, cfg, trainer=trainer)
    try:
        return sim.run(n_sessions)
    finally:
        sim.close()
