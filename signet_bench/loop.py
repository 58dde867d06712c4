"""The session lifecycle, replayed on a synthetic store exactly as the daemon runs it:

start (pre-filter -> baseline -> scorer -> RRF(alpha) -> diversity -> exploration -> inject; every
candidate recorded) -> 10-20 prompts (real FTS5 queries, `fts_only` upserts, agent feedback) ->
end (a simulated continuity judge, session score, summary job) -> comparison row -> EMA, alpha,
drift -> training every `trainIntervalSessions`.

Each session is one transaction (recorded entirely or not at all) and is keyed by its index in
the store's session plan, so running the same command twice changes nothing.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.context import mean_unit
from signet_bench.errors import UserError
from signet_bench.evaluate import ComparisonInput, compare_session
from signet_bench.features import CandidateInfo, SessionInfo, candidate_features
from signet_bench.feedback import parse_feedback
from signet_bench.model.tokenizer import project_slot, token_buckets
from signet_bench.predictor_state import (
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
from signet_bench.ranking.bm25 import fts_search, recall_terms
from signet_bench.ranking.compat import signet058_session_start
from signet_bench.ranking.session_start import session_start
from signet_bench.samples import superseded_at
from signet_bench.store import write as w
from signet_bench.store.read import open_readonly, read_memories
from signet_bench.store.schema import connect_writer
from signet_bench.synth.sessions import SessionContext, plan_sessions, prompts_for
from signet_bench.synth.truth import load_truth, read_synth_meta, true_relevance
from signet_bench.timestamps import format_iso, parse_ts

__all__ = ["MODES", "SCORERS", "SimOptions", "SimReport", "Simulator", "model_trainer", "simulate"]

SCORERS = ("none", "random", "model")
INCREMENTAL_EPOCHS = 5
# Incremental runs fine-tune the accepted model at a tenth of the seed's learning rate: at the
# full rate a fresh Adam moves every weight by ~lr per step and one run's canary top-5 churn
# breaks the 0.6 stability gate (overlap 0.41-0.58 on the heavy persona, 0.72-0.74 at lr/10).
INCREMENTAL_LR_SCALE = 0.1
MODES = ("ours", "signet-0.58")


@dataclass(frozen=True, slots=True)
class SimOptions:
    """How the simulated daemon, user, agent and judge behave."""

    scorer: str = "random"  # none | random | model
    mode: str = "ours"  # ours | signet-0.58 (the real daemon's pool, for rank replay)
    seed: int = 0
    feedback_share: float = 0.3  # share of sessions whose agent rates injected memories
    judge_noise: float = 0.1  # sd of the judge's per-memory error
    judge_recency_bias: float = 0.0  # added to memories younger than 7 days
    prompts: tuple[int, int] = (10, 20)
    train_epochs: int = 20
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


def _floats(values) -> np.ndarray:
    """SQL values -> float64 with NULL as NaN."""
    return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)


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
        # Validate read-only first: a file that is not a Signet store is reported (missing tables
        # named) and never opened for writing (the writer would switch it to WAL, or write a
        # header into an empty file).
        ro = open_readonly(self.path)
        try:
            meta = read_synth_meta(ro)
        except UserError:
            meta = {}
        finally:
            ro.close()
        if not meta:
            raise UserError(
                f"{self.path}: not a synthetic store (no synth_persona table); "
                "create one with `signet-bench synth`"
            )
        self.con = connect_writer(self.path)
        self.persona, self.truth = load_truth(self.con)
        self.tz = self.persona.tz
        mem = read_memories(self.con, include_deleted=True)
        self.mem = mem
        f = mem.frame
        self.ids = np.asarray(f["id"].to_list(), dtype=object)
        self.row_of = {m: i for i, m in enumerate(self.ids)}
        self.created = f["created_at"].dt.epoch("us").to_numpy() / 1e6
        self.created_text = np.asarray(
            [format_iso(x) for x in f["created_at"].to_list()], dtype=object
        )
        self.importance = f["importance"].to_numpy().astype(np.float64)
        self.pinned = f["pinned"].to_numpy().astype(bool)
        self.is_deleted = f["is_deleted"].to_numpy().astype(bool)
        self.is_constraint = f["is_constraint"].to_numpy().astype(bool)
        self.access = f["access_count"].to_numpy().astype(np.float64)
        self.project = np.asarray(f["project"].to_list(), dtype=object)
        self.contents = f["content"].to_list()
        self.emb = mem.embeddings
        self.has = f["has_embedding"].to_numpy().astype(bool)
        self.sup_at = superseded_at(self.con, mem)
        self._tokens: dict[int, np.ndarray] = {}
        self._scope: dict[str | None, np.ndarray] = {}
        self.truth_rows = np.asarray(self.truth.positions(list(self.ids)), dtype=np.int64)
        w.ensure_sim_tables(self.con)
        raw = w.load_sim_state(self.con)
        self.state = initial_state(cfg) if raw is None else state_from_json(raw)
        self.trainer = trainer
        self.model = None  # current accepted weights (scorer == "model")

    # -- plan -------------------------------------------------------------------------------
    def plan(self, n: int) -> list[SessionContext]:
        """The store's session plan; its length is fixed by the first run (drift depends on it)."""
        if n < 1:
            raise UserError(f"--sessions: expected a whole number >= 1, got {n}")
        saved = w.get_sim_meta(self.con, "plan")
        if saved is not None:
            horizon, seed = json.loads(saved)
            if n > horizon:
                raise UserError(
                    f"{self.path}: its session plan has {horizon} sessions (fixed by the first "
                    f"simulate run); ask for at most {horizon} or start from a fresh store"
                )
        else:
            horizon, seed = n, self.opts.seed
            w.set_sim_meta(self.con, "plan", json.dumps([n, seed]))
        return plan_sessions(self.persona, horizon, start=self.truth.now, seed=seed)[:n]

    def done(self) -> set[int]:
        return {r[0] for r in self.con.execute("SELECT idx FROM sim_sessions")}

    # -- helpers ----------------------------------------------------------------------------
    def in_scope(self, project: str | None) -> np.ndarray:
        """Memories of the session's project or of no project: the constraints Signet's
        focal-entity traversal would surface."""
        mask = self._scope.get(project)
        if mask is None:
            mask = np.array([p is None or p == project for p in self.project], dtype=bool)
            self._scope[project] = mask
        return mask

    def tokens(self, row: int) -> np.ndarray:
        t = self._tokens.get(row)
        if t is None:
            t = self._tokens[row] = token_buckets(self.contents[row], self.cfg.hash_buckets)
        return t

    def previous(self, ctx: SessionContext) -> tuple[list[int], datetime | None]:
        """The previous session of the same project: memories it used, and its start."""
        row = self.con.execute(
            "SELECT session_key, started_at FROM sim_sessions WHERE project = ? "
            "AND started_at < ? ORDER BY started_at DESC LIMIT 1",
            (ctx.project, format_iso(ctx.start)),
        ).fetchone()
        if row is None:
            return [], None
        used = self.con.execute(
            "SELECT memory_id FROM session_memories WHERE session_key = ? AND "
            "(fts_hit_count > 0 OR COALESCE(agent_relevance_score, 0) > 0)",
            (row[0],),
        ).fetchall()
        rows = [self.row_of[m] for (m,) in used if m in self.row_of]
        return rows, parse_ts(row[1])

    def features(self, rows: np.ndarray, ctx: SessionContext, prev_start) -> np.ndarray:
        info = CandidateInfo(
            created_at=self.created[rows],
            importance=self.importance[rows],
            access_count=self.access[rows],
            has_embedding=self.has[rows],
            superseded_at=self.sup_at[rows],
            is_constraint=self.is_constraint[rows],
        )
        return candidate_features(info, SessionInfo(ctx.start, self.tz, ctx.project, prev_start))

    def predictor_for(self, ctx: SessionContext, rng: np.random.Generator, prev_start):
        """The scorer as session start calls it: (candidate rows, context) -> scores | None."""
        kind = self.opts.scorer
        if kind == "none":
            return None
        if kind == "random":

            def random_scores(rows: np.ndarray, _context: np.ndarray) -> np.ndarray:
                z = rng.normal(size=len(rows))
                e = np.exp(z - z.max())
                return e / e.sum()

            return random_scores
        if self.model is None:  # not trained yet: the sidecar answers trained=false
            return None
        from signet_bench.model.scorer import score_session

        params = self.model

        def model_scores(rows: np.ndarray, context: np.ndarray) -> np.ndarray:
            return score_session(
                params,
                context,
                self.emb[rows],
                self.has[rows],
                [self.tokens(r) for r in rows],
                self.features(rows, ctx, prev_start),
                project_slot(ctx.project, self.cfg.project_slots),
                self.cfg,
            )

        return model_scores

    # -- one session -------------------------------------------------------------------------
    def run_session(self, idx: int, ctx: SessionContext, report: SimReport) -> None:
        cfg, opts = self.cfg, self.opts
        rng = np.random.default_rng([opts.seed, idx])
        key = ctx.session_key
        start_s = ctx.start.timestamp()
        step = on_session_start(self.state, cfg)
        self.state = step.state
        for ev in step.events:
            report.events.append((idx, ev.kind))
            if ev.kind == "cold_start_exit" and report.cold_start_exit_session is None:
                report.cold_start_exit_session = idx
        alpha = effective_alpha(self.state, cfg)
        prev_rows, prev_start = self.previous(ctx)
        context = mean_unit(self.emb[[r for r in prev_rows if self.has[r]]])
        live_deleted = self.is_deleted | (self.created > start_s)
        predictor = self.predictor_for(ctx, rng, prev_start)
        if opts.mode == "ours":
            res = session_start(
                self.ids,
                self.created,
                self.importance,
                self.pinned,
                self.contents,
                self.emb,
                self.has,
                start_s,
                is_constraint=self.is_constraint & self.in_scope(ctx.project),
                is_deleted=live_deleted,
                context=context,
                predictor=predictor,
                alpha=alpha,
                cold_start_exited=self.state.cold_start_exited,
                rng=rng,
                cfg=cfg,
            )
            sources = res.source
        else:
            # Signet 0.58's cold start never exits by default: its pool is replayed unfused.
            res = signet058_session_start(
                self.ids,
                self.created,
                self.importance,
                self.pinned,
                self.project,
                self.contents,
                self.emb,
                self.has,
                ctx.project,
                start_s,
                cfg,
                is_deleted=live_deleted,
                created_at_text=self.created_text,
            )
            sources = np.full(len(res.index), "effective", dtype=object)
        at = format_iso(ctx.start)
        rows = [
            w.CandidateRow(
                memory_id=str(res.memory_id[i]),
                source=str(sources[i]),
                effective_score=float(res.effective_score[i]),
                predictor_score=None
                if not np.isfinite(res.predictor_score[i])
                else float(res.predictor_score[i]),
                final_score=float(res.final_score[i]),
                rank=int(res.rank[i]),
                was_injected=bool(res.was_injected[i]),
                predictor_rank=None if res.predictor_rank[i] < 0 else int(res.predictor_rank[i]),
                is_constraint=bool(self.is_constraint[res.index[i]]),
            )
            for i in range(len(res.index))
        ]
        explored = getattr(res, "explored_id", None)
        self.con.execute("BEGIN IMMEDIATE")
        try:
            w.record_session_candidates(self.con, key, rows, at)
            injected = set(res.injected_ids)
            self._prompts(ctx, rng, injected)
            end = self._judge_and_end(ctx, rng, res, injected)
            self._compare(idx, ctx, alpha, report)
            w.insert_sim_session(
                self.con,
                session_key=key,
                idx=idx,
                project=ctx.project,
                focus_topic=ctx.focus_topic,
                tz=self.tz,
                started_at=at,
                ended_at=format_iso(end),
                scorer=opts.scorer,
                alpha=alpha,
                context_rule="previous-session" if context is not None else "baseline-top10",
                explored_memory_id=explored,
            )
            w.save_sim_state(self.con, state_to_json(self.state), format_iso(end))
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        report.sessions_run += 1
        report.exploration_rows += int(explored is not None)

    def _prompts(self, ctx: SessionContext, rng: np.random.Generator, injected: set[str]) -> None:
        lo, hi = self.opts.prompts
        n = int(rng.integers(lo, hi + 1))
        rate = rng.random() < self.opts.feedback_share
        truth = true_relevance(self.truth, ctx) if rate else None
        inj_rows = [self.row_of[m] for m in sorted(injected)]
        for j, text in enumerate(prompts_for(ctx, n, rng)):
            at = format_iso(ctx.start + timedelta(minutes=2 * (j + 1)))
            hits = fts_search(self.con, recall_terms(text), limit=20)[:10]
            if hits:
                w.track_fts_hits(self.con, ctx.session_key, [m for m, _ in hits], at)
            if truth is not None and inj_rows:
                pick = rng.choice(inj_rows, size=min(len(inj_rows), 5), replace=False)
                noisy = truth[self.truth_rows[pick]] + rng.normal(0, 0.2, len(pick))
                payload = json.dumps(
                    {
                        "memory_feedback": {
                            self.ids[r]: round(float(s), 3)
                            for r, s in zip(pick, np.clip(noisy, -1, 1), strict=True)
                        }
                    }
                )
                fb = parse_feedback(payload, injected)
                w.record_agent_feedback(self.con, ctx.session_key, fb.scores)

    def _judge_and_end(self, ctx, rng, res, injected: set[str]) -> datetime:
        """The simulated continuity judge: noisy truth over the evaluation pool."""
        opts, cfg = self.opts, self.cfg
        truth = true_relevance(self.truth, ctx)
        cand_rows = np.asarray(res.index)
        ids = res.memory_id
        pscore = np.asarray(res.predictor_score, dtype=np.float64)
        base_top = list(ids[:10])
        pool = set(base_top) | injected
        if np.isfinite(pscore).any():
            order = np.lexsort((ids.astype(str), -np.nan_to_num(pscore, nan=-np.inf)))
            pool |= set(ids[order[:10]])
        pool_rows = np.array([self.row_of[m] for m in sorted(pool)])
        rel = truth[self.truth_rows[pool_rows]] + rng.normal(0, opts.judge_noise, len(pool_rows))
        young = (ctx.start.timestamp() - self.created[pool_rows]) < cfg.drift_recent_days * 86400
        rel = np.clip(rel + opts.judge_recency_bias * young, 0.0, 1.0)
        relevance = {self.ids[r]: float(v) for r, v in zip(pool_rows, rel, strict=True)}
        w.write_relevance_scores(self.con, ctx.session_key, relevance)
        inj_rel = [relevance[m] for m in injected if m in relevance]
        score = float(np.clip(np.mean(inj_rel) + rng.normal(0, 0.05), 0, 1)) if inj_rel else 0.0
        confidence = float(np.clip(rng.normal(0.75, 0.15), 0.2, 1.0))
        in_pool = set(cand_rows.tolist())
        missing = [
            r
            for r in np.argsort(-truth[self.truth_rows])[:20]
            if truth[self.truth_rows[r]] > 0.7 and self.ids[r] not in injected
        ]
        novel = int(min(5, len(missing)))
        end = ctx.start + timedelta(minutes=2 * (opts.prompts[1] + 2))
        end_at = format_iso(end)
        used = sum(1 for v in inj_rel if v >= 0.5)
        w.insert_session_score(
            self.con,
            ctx.session_key,
            project=ctx.project,
            harness="simulated",
            score=score,
            memories_recalled=len(injected),
            memories_used=used,
            novel_context_count=novel,
            reasoning=f"simulated judge: {used}/{len(injected)} injected memories were relevant",
            created_at=end_at,
            confidence=confidence,
            continuity_reasoning=f"noise sd {opts.judge_noise}, recency bias "
            f"{opts.judge_recency_bias}; {len(in_pool)} candidates",
        )
        w.insert_summary_job(
            self.con,
            ctx.session_key,
            harness="simulated",
            project=ctx.project,
            transcript=f"[{ctx.project}/{ctx.focus_topic}] simulated session",
            status="completed",
            attempts=1,
            created_at=end_at,
            completed_at=end_at,
        )
        w.insert_session_checkpoint(
            self.con, ctx.session_key, "session_end", project=ctx.project, created_at=end_at
        )
        return end

    def _compare(self, idx: int, ctx: SessionContext, alpha: float, report: SimReport) -> None:
        cfg = self.cfg
        rows = self.con.execute(
            "SELECT memory_id, effective_score, predictor_score, was_injected, fts_hit_count, "
            "relevance_score, entity_slot IS NOT NULL, is_constraint FROM session_memories "
            "WHERE session_key = ?",
            (ctx.session_key,),
        ).fetchall()
        conf = self.con.execute(
            "SELECT confidence FROM session_scores WHERE session_key = ?", (ctx.session_key,)
        ).fetchone()[0]
        cols = list(zip(*rows, strict=True))
        inp = ComparisonInput.build(
            ctx.session_key,
            np.asarray(cols[0], dtype=str),
            effective_score=_floats(cols[1]),
            predictor_score=_floats(cols[2]),
            was_injected=np.asarray(cols[3], dtype=bool),
            fts_hit_count=np.asarray(cols[4], dtype=np.int64),
            relevance=_floats(cols[5]),
            has_entity_slot=np.asarray(cols[6], dtype=bool),
            is_constraint=np.asarray(cols[7], dtype=bool),
            scorer_confidence=float(conf),
            project=ctx.project,
        )
        comp = compare_session(inp, alpha=alpha, success_rate=self.state.success_rate, cfg=cfg)
        row = comp.to_row()
        row["created_at"] = format_iso(
            ctx.start + timedelta(minutes=2 * (self.opts.prompts[1] + 3))
        )
        w.insert_comparison(self.con, ctx.session_key, row)
        report.comparisons += 1
        self.state = on_session_labelled(
            self.state, trainable=float(conf) >= cfg.min_scorer_confidence
        ).state
        step = on_comparison(self.state, comp, cfg)
        self.state = step.state
        for ev in step.events:
            report.events.append((idx, ev.kind))
            if ev.kind == "drift_reset":
                report.drift_resets += 1
        if training_due(self.state, cfg) or step.retrain_with_replay:
            self._train(idx, report)

    def _train(self, idx: int, report: SimReport) -> None:
        if self.opts.scorer == "none":
            return
        if self.opts.scorer == "random" or self.trainer is None:
            accepted, log = True, {}
        else:
            accepted, log = self.trainer(self)
        report.trainings += 1
        report.trainings_accepted += int(accepted)
        self.state = on_training(self.state, accepted).state
        if log:
            w.insert_training_log(
                self.con,
                log.pop("id"),
                model_version=self.state.model_version,
                **log,
            )

    # -- the run ----------------------------------------------------------------------------
    def run(self, n: int) -> SimReport:
        t0 = time.perf_counter()
        report = SimReport()
        plan = self.plan(n)
        done = self.done()
        todo = [(i, c) for i, c in enumerate(plan) if i not in done]
        report.sessions_skipped = len(plan) - len(todo)
        bar = None
        if self.opts.progress and todo:
            from tqdm import tqdm

            bar = tqdm(total=len(todo), desc="sessions", unit="session", leave=False)
        for i, ctx in todo:
            self.run_session(i, ctx, report)
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        report.seconds = time.perf_counter() - t0
        report.final_state = self.state
        return report

    def close(self) -> None:
        self.con.close()


def model_path(store: Path) -> Path:
    """Where the simulated daemon keeps its accepted model (beside the store)."""
    return store.with_name(store.name + ".predictor") / "model.sbm"


def model_trainer(sim: Simulator) -> tuple[bool, dict]:
    """Train on the store's scored sessions (the loop's training trigger) and gate the result;
    an accepted model is saved beside the store and used from the next session on.

    Seed 000's schedule: a full retrain the first time and after a drift reset; otherwise an
    incremental run on the sessions scored since the last accepted training, mixed ~20% with
    the replay buffer, judged on the canary of the whole history. The stability and NDCG-drop
    gates protect a model that has influence: they apply once cold start has exited (before,
    the predictor changes no injection, so there is nothing to protect yet)."""
    from signet_bench.features import FEATURE_SPEC
    from signet_bench.model.checkpoint import CheckpointMeta, save_checkpoint
    from signet_bench.model.params import feature_spec_hash
    from signet_bench.samples import load_samples
    from signet_bench.train import incremental_split, train_model

    samples, _skipped = load_samples(sim.con, tz=sim.tz, cfg=sim.cfg, seed=sim.opts.seed)
    run_id = f"train-{sim.state.model_version + 1}-" + (
        samples[-1].session_key if samples else "none"
    )
    if len(samples) < 2:
        return False, {}
    trained_through = w.get_sim_meta(sim.con, "trained_through")
    full = sim.model is None or not sim.state.trained or trained_through is None
    kwargs: dict = {}
    run_cfg = sim.cfg
    train_on = samples
    epochs = sim.opts.train_epochs
    if not full:
        new_keys = {s.session_key for s in samples if format_iso(s.start) > trained_through}
        train_on, canary, replay = incremental_split(samples, new_keys, sim.cfg)
        if not train_on:
            return False, {}
        kwargs = {"canary": canary, "replay": replay}
        epochs = INCREMENTAL_EPOCHS
        run_cfg = dataclasses.replace(
            sim.cfg, learning_rate=sim.cfg.learning_rate * INCREMENTAL_LR_SCALE
        )
    result = train_model(
        train_on,
        sim.model,
        cfg=run_cfg,
        epochs=epochs,
        seed=sim.opts.seed + sim.state.model_version,
        previous_is_trained=sim.model is not None and sim.state.cold_start_exited,
        **kwargs,
    )
    if result.accepted:
        sim.model = result.params
        w.set_sim_meta(sim.con, "trained_through", format_iso(samples[-1].start))
        meta = CheckpointMeta.from_config(
            sim.cfg,
            int(samples[0].context.shape[0]),
            feature_spec_hash=feature_spec_hash(FEATURE_SPEC),
            first_session_at=format_iso(samples[0].start),
            last_session_at=format_iso(samples[-1].start),
            metrics={"canary_ndcg": result.canary_ndcg},
        )
        out = model_path(sim.path)
        out.parent.mkdir(parents=True, exist_ok=True)
        save_checkpoint(out, result.params, meta)
    _record_workbench(sim, run_id, result)
    log = {
        "id": run_id,
        "loss": _loggable_loss(result.loss_curve),
        "sample_count": result.sample_count,
        "duration_ms": result.duration_ms,
        "canary_ndcg": result.canary_ndcg,
        "canary_ndcg_delta": result.canary_ndcg_delta,
        "canary_score_variance": result.canary_score_variance,
        "canary_topk_churn": None
        if result.canary_topk_overlap is None
        else 1.0 - result.canary_topk_overlap,
    }
    return result.accepted, log


def _loggable_loss(curve: Sequence[float]) -> float:
    """The last epoch's loss for Signet's `loss REAL NOT NULL` column: SQLite turns NaN into
    NULL, so a diverged run is logged as +inf (the workbench keeps the full curve)."""
    last = curve[-1] if curve else float("inf")
    return last if math.isfinite(last) else float("inf")


def _record_workbench(sim: Simulator, run_id: str, result) -> None:
    """The run in the workbench's own DuckDB file beside the store (loss curve, gates)."""
    from datetime import UTC

    from signet_bench.store.workbench import open_workbench, record_training_run
    from signet_bench.train import run_record

    path = model_path(sim.path).parent / "workbench.duckdb"
    with open_workbench(path) as wb:
        record_training_run(
            wb,
            run_record(
                result,
                run_id=run_id,
                store_path=str(sim.path.resolve()),
                started_at=datetime.now(UTC),
                model_path=str(model_path(sim.path)),
            ),
        )


def simulate(
    path: str | Path,
    n_sessions: int,
    opts: SimOptions = SimOptions(),
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> SimReport:
    """Run (or resume) the first `n_sessions` sessions of a synthetic store's plan."""
    trainer = model_trainer if opts.scorer == "model" else None
    sim = Simulator(path, opts, cfg, trainer=trainer)
    try:
        return sim.run(n_sessions)
    finally:
        sim.close()
