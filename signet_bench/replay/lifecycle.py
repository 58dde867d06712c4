"""The daemon's session lifecycle over one store, step by step as Signet runs it:

start (pre-filter -> baseline -> scorer -> RRF(alpha) -> diversity -> exploration -> inject; every
candidate recorded) -> the prompts (real FTS5 queries, `fts_only` upserts, agent feedback; with
`LoopOptions.prompt_time`, each prompt's own ranking: `_prompt_turn`) ->
end (the continuity judge's ratings, session score, summary job) -> labels (the trainer's own
sample assembly on the rows just recorded) -> comparison row -> EMA, alpha, drift -> training
every `trainIntervalSessions`.

It does only what the daemon does. Two collaborators do the rest: a `World` says what happens
outside the daemon (the session plan, the user's prompts, the agent's and the judge's ratings;
`world.synth.world.SyntheticWorld` is the synthetic one), and a `Trainer`
(`replay.trainers`) serves the scores and runs a due training.

Each session is one transaction (recorded entirely or not at all) and is keyed by its index in
the store's session plan, so running the same sessions twice changes nothing. Rows are written
in the store's own shape (`store.read.release_line`): on a current store (release 0.145.7) the
session rows carry the agent, and the comparison and training log, which current Signet has no
tables for, stay in the loop's state (`daemon.comparison_log` recomputes the comparisons from
the store). The corpus, the
context rule, the candidate inputs, the labels and the training are the same functions the
trainer (`learn/samples.py`, `learn/train.py`) uses.

Prompt time (opt-in, `LoopOptions.prompt_time`): at each prompt the pool of
`daemon.ranking.prompt_time` (the release line's prompt-time rule and the prompt's hybrid
recall, the session's injected memories left out) is ranked by the session's scorer with the
prompt as its query (its embedding the context, its terms and names the query); what it injects
is recorded as the user-prompt-submit wrapper records it on a real install: in the hook log
beside the loop's workbench (`store.hook_log`, hook `user-prompt-submit`), written after the
session's transaction commits. The judge is shown those memories as the transcript shows them
(rated like recalled ones; the session's score stays session start's), and the labels count them
as shown (`learn.samples.shown_candidates`). The agent's feedback still rates session start's
memories only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.candidates import CandidateOrigin, SessionInputs, session_inputs
from signet_bench.daemon.comparison import (
    Comparison,
    ComparisonInput,
    compare_session,
    evaluation_pool,
    judged_ndcg,
)
from signet_bench.daemon.context import PreviousSession, PreviousSessions
from signet_bench.daemon.feedback import parse_feedback
from signet_bench.daemon.metrics import ranked_ids
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
from signet_bench.daemon.ranking.fts import fts_search
from signet_bench.daemon.ranking.prompt_time import (
    PROMPT_CONTEXT_RULE,
    PromptLimits,
    choose,
    prompt_pool,
)
from signet_bench.daemon.ranking.ranker import CosineRanker
from signet_bench.daemon.ranking.session_start import (
    GraphWalk,
    InjectionLimits,
    Learned,
    SessionStartResult,
    session_start,
)
from signet_bench.daemon.ranking.traversal import Traversal, TraversalFlags
from signet_bench.daemon.session_query import SessionQuery, prompt_query, start_query
from signet_bench.errors import UserError
from signet_bench.learn.samples import (
    SampleRules,
    SessionSample,
    build_sample,
    scored_sessions,
    shown_candidates,
)
from signet_bench.replay.loop_store import LoopStore
from signet_bench.replay.trainers import ScoreFn, Trainer, TrainingJob, model_dir
from signet_bench.store import sim as sim_tables
from signet_bench.store import write as w
from signet_bench.store.graph import read_graph
from signet_bench.store.hook_log import SERVED, hook_log_path
from signet_bench.store.read import (
    read_session_memories,
    read_sessions,
    release_line,
)
from signet_bench.store.timestamps import format_iso
from signet_bench.world.interface import Judgement, Prompt, SessionView, World
from signet_scorer.budget import Budget
from signet_scorer.context import SessionContextVector, mean_unit
from signet_scorer.features import SessionInfo
from signet_scorer.hook.config import USER_PROMPT_SUBMIT
from signet_scorer.hook.log import InjectionLog
from signet_scorer.structure import GraphColumns
from signet_scorer.terms import recall_terms
from signet_scorer.track_record import TrackHistory, read_track_history, read_track_record
from signet_scorer.workbench import DEFAULT_AGENT, WORKBENCH_FILE

if TYPE_CHECKING:
    from signet_bench.world.synth.plans import PromptTopic, SessionContext

__all__ = [
    "COMPARE_DELAY",
    "MODES",
    "Lifecycle",
    "LoopOptions",
    "PromptTurn",
    "SessionRecord",
    "SimReport",
    "check_mode",
]

MODES = ("ours", "signet-0.58")
HARNESS = "simulated"
_PROMPT_STREAM = 0x9A0B  # seeds a session's prompt-time scorer apart from its start's
_RATING_STREAM = 0x9A0C  # seeds the agent's ratings of prompt-injected memories
COMPARE_DELAY = timedelta(minutes=2)
"""How long after a session's end the summary worker compares it (and a training it makes due
starts)."""


def check_mode(mode: str) -> None:
    """A `--mode` value the loop knows (else a clear error naming the choices)."""
    if mode not in MODES:
        raise UserError(f"--mode: {mode!r} is not one of {', '.join(MODES)}")


# -- what the loop runs on and reports -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LoopOptions:
    """How the daemon itself runs: the session start's mode, the seed of every session's random
    stream (and of the plan and the trainings), the epochs of a full training, and the choice
    that injects (`choice`: the best K of the pool within a token budget; None: the config's
    character budget, as the specification's session start)."""

    mode: str = "ours"  # ours | signet-0.58 (the real daemon's pool, for rank replay)
    seed: int = 0
    train_epochs: int = DEFAULT_CONFIG.full_training_epochs
    progress: bool = False
    choice: Budget | None = None  # ours only: Signet 0.58's replay injects as it did
    prompt_time: PromptLimits | None = None  # rank and inject at each prompt (None: off)


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


@dataclass(frozen=True, eq=False)
class PromptTurn:
    """One prompt's ranking: the prompt (its text, time and what it is about), its pool's
    inputs as the scorer saw them (None: an empty pool), the scorer's scores (None: nothing
    scored; the pool's own order chose), the memories it injected, best first, and those its
    own keyword search found (the labels of earlier prompts' samples)."""

    text: str
    at: datetime
    about: PromptTopic | None
    inputs: SessionInputs | None
    scores: np.ndarray | None
    injected: tuple[str, ...]
    hits: tuple[str, ...] = ()  # what the prompt's own keyword search found, best first


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """What the loop computed for one session: its inputs at the start (the candidate pool as
    every ranker sees it), the session start's result, its training sample at the end, and
    each prompt's ranking (with `LoopOptions.prompt_time`)."""

    plan: SessionContext
    inputs: SessionInputs
    start: SessionStartResult
    sample: SessionSample | None
    prompts: tuple[PromptTurn, ...] = ()


# -- the loop ---------------------------------------------------------------------------------


class Lifecycle:
    """The daemon's session loop over one store, in a `World`, scoring and training through a
    `Trainer`. It writes through the store's connection (the only writer) and resumes from what
    the store already holds: the predictor state, the plan, the previous session per project."""

    def __init__(
        self,
        store: LoopStore,
        world: World,
        trainer: Trainer,
        opts: LoopOptions = LoopOptions(),
        cfg: PredictorConfig = DEFAULT_CONFIG,
    ) -> None:
        check_mode(opts.mode)
        self.store, self.world, self.trainer, self.opts, self.cfg = store, world, trainer, opts, cfg
        self.con, self.corpus = store.con, store.corpus
        self.graph = store.graph if store.graph is not None else read_graph(self.con)
        self.line = release_line(self.con)  # the shape the loop's rows take
        sim_tables.ensure_sim_tables(self.con)
        raw = sim_tables.load_sim_state(self.con)
        self.state = (
            initial_state(cfg, trainer.start_alpha) if raw is None else state_from_json(raw)
        )
        self.previous = self._replay_previous()
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
                    f"{self.store.path}: its session plan has {horizon} sessions (fixed by the "
                    f"first simulate run); ask for at most {horizon} or start from a fresh store"
                )
        else:
            horizon, seed = n, self.opts.seed
            sim_tables.set_sim_meta(self.con, "plan", json.dumps([n, seed]))
        return self.world.plan(horizon, seed)[:n]

    def done(self) -> set[int]:
        """The plan indices of the sessions the store already holds."""
        return sim_tables.done_sessions(self.con)

    # -- session start ------------------------------------------------------------------------
    def _inputs(
        self,
        plan: SessionContext,
        prev: PreviousSession | None,
        rows: np.ndarray,
        context: SessionContextVector,
        query: SessionQuery,
        flags: TraversalFlags | None = None,
    ) -> SessionInputs:
        return session_inputs(
            self.corpus,
            rows,
            plan.session_key,
            SessionInfo(plan.start, self.world.tz, plan.project, prev.start if prev else None),
            context,
            cfg=self.cfg,
            query=query,
            origin=CandidateOrigin(
                graph=_graph_columns(flags),
                store=self.con,
                track_record=read_track_record(self.con, self.corpus.ids[rows], plan.start).values,
            ),
        )

    def _start(
        self, plan: SessionContext, prev: PreviousSession | None, rng, alpha: float
    ) -> tuple[SessionStartResult, SessionInputs]:
        """Session start in the chosen mode, and the pool's inputs as the scorer saw them."""
        start_s = plan.start.timestamp()
        seen: list[SessionInputs] = []
        scorer = self.trainer.scorer(rng)
        query = start_query(self.con, plan.project, plan.start)

        def predictor(
            rows: np.ndarray, context: SessionContextVector, flags: TraversalFlags | None = None
        ) -> np.ndarray | None:
            seen.append(self._inputs(plan, prev, rows, context, query, flags))
            return None if scorer is None else scorer(seen[-1])

        if self.opts.mode == "ours":
            res = session_start(
                self.corpus,
                start_s,
                project=plan.project,
                previous_used=prev.used if prev else (),
                learned=Learned(predictor, alpha, self.state.cold_start_exited, rng),
                cfg=self.cfg,
                walk=GraphWalk(self.graph, query.terms),
                limits=InjectionLimits(choice=self.opts.choice),
            )
        else:  # Signet 0.58's cold start never exits by default: its pool is replayed unfused.
            res = signet058_session_start(
                self.corpus,
                plan.project,
                start_s,
                self.cfg,
                is_deleted=self.corpus.absent_at(start_s),
                graph=self.graph,
                query_terms=query.terms,
            )
        if not seen:
            rows = np.asarray(res.index)
            seen.append(self._inputs(plan, prev, rows, res.context_vector, query, res.flags))
        return res, seen[0]

    # -- one session --------------------------------------------------------------------------
    def run_session(self, idx: int, plan: SessionContext, report: SimReport) -> None:
        """Plan session `idx`, start to end, in one transaction; then a training it made due."""
        cfg = self.cfg
        rng = np.random.default_rng([self.opts.seed, idx])
        step = on_session_start(self.state, cfg)
        self.state = step.state
        for ev in step.events:
            report.events.append((idx, ev.kind))
            if ev.kind == "cold_start_exit" and report.cold_start_exit_session is None:
                report.cold_start_exit_session = idx
        alpha = effective_alpha(self.state, cfg)
        prev = self.previous.before(plan.project)
        res, inputs = self._start(plan, prev, rng, alpha)
        focal = _focal_record(res.traversal)
        at = format_iso(plan.start)
        self.con.execute("BEGIN IMMEDIATE")
        try:
            rows = _candidate_rows(res, inputs)
            w.record_session_candidates(self.con, plan.session_key, rows, at)
            injected = set(res.injected_ids)
            said, turns = self._prompts(idx, plan, rng, injected, prev)
            prompted = [m for t in turns for m in t.injected]
            cosine = CosineRanker().score(inputs)
            cos_top = inputs.memory_ids[rank_order(cosine, inputs.memory_ids)][: cfg.comparison_k]
            also = _Shown(cos_top.tolist(), said, prompted)
            judged = self._judge(plan, rng, injected, also, focal)
            cand = read_session_memories(self.con, [plan.session_key])
            sample = self._sample(plan, prev, cand, judged, prompted)
            trainable = sample is not None
            comp, due = self._compare(idx, plan, cand, judged, alpha, trainable, report, focal)
            rated = cand.filter(pl.col("relevance_score").is_not_null())
            ratings = dict(zip(rated["memory_id"], rated["relevance_score"], strict=True))
            cos_ndcg = judged_ndcg(comp, cosine, inputs.memory_ids, cfg, ratings)
            self._record(idx, plan, res, inputs, alpha, judged.end, cos_ndcg)
            if due:
                sim_tables.set_sim_meta(self.con, "train_pending", "1")
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self._log_prompts(plan, turns)
        self.previous.record(plan.session_key, plan.project, plan.start, cand)
        if idx in self.keep:
            self.records[idx] = SessionRecord(plan, inputs, res, sample, tuple(turns))
        report.sessions_run += 1
        report.exploration_rows += int(res.explored_id is not None)
        if due:  # on the committed store, as the daemon's trainer reads it
            self._train(report, judged.end + COMPARE_DELAY)

    def _prompts(
        self,
        idx: int,
        plan: SessionContext,
        rng: np.random.Generator,
        injected: set[str],
        prev: PreviousSession | None,
    ) -> tuple[tuple[str, ...], list[PromptTurn]]:
        """The world's prompts as the daemon's hooks record them: each one's FTS hits, and the
        agent's feedback on the injected memories where it gave any (after a prompt, on session
        start's and, `World.rate`, on those the session's prompts injected so far, recorded
        alike); with prompt time on, each one's own ranking (`_prompt_turn`, from a random
        stream of its own, so the session's other draws do not move). Returns their texts and
        the prompts' rankings."""
        prompts = self.world.prompts(plan, sorted(injected), rng)
        turns: list[PromptTurn] = []
        scorer, history = None, None
        if self.opts.prompt_time is not None:
            stream = np.random.default_rng([self.opts.seed, idx, _PROMPT_STREAM])
            scorer = self.trainer.prompt_scorer(stream)
            history = read_track_history(self.con, plan.start)  # as session start read it
        rating = np.random.default_rng([self.opts.seed, idx, _RATING_STREAM])
        shown, prompted = set(injected), set[str]()
        for prompt in prompts:
            hits = fts_search(self.con, recall_terms(prompt.text), limit=20)[:10]
            if hits:
                at = format_iso(prompt.at)
                w.track_fts_hits(self.con, plan.session_key, [m for m, _ in hits], at)
            if history is not None:
                turn = self._prompt_turn(plan, prev, prompt, (scorer, history), shown)
                turns.append(replace(turn, hits=tuple(m for m, _ in hits)))
                shown.update(turn.injected)
                prompted.update(turn.injected)
            said = dict(prompt.feedback)
            if prompt.rates and prompted:
                said |= self.world.rate(plan, sorted(prompted), rating)
            if said:
                block = json.dumps({"memory_feedback": said})
                fb = parse_feedback(block, shown)
                w.record_agent_feedback(self.con, plan.session_key, fb.scores)
        return tuple(p.text for p in prompts), turns

    def _prompt_turn(
        self,
        plan: SessionContext,
        prev: PreviousSession | None,
        prompt: Prompt,
        scoring: tuple[ScoreFn | None, TrackHistory],
        shown: set[str],
    ) -> PromptTurn:
        """One prompt's ranking: its pool (`prompt_time.prompt_pool`, the memories `shown` in
        the session left out), the inputs the scorer sees (the prompt's embedding as the
        context, its terms and names as the query, the time of the prompt; the candidates'
        track records before the session, from the `scoring` history read at its start), the
        scorer's scores and what it injects within the limits (the pool's order where nothing
        scored)."""
        scorer, history = scoring
        limits = self.opts.prompt_time or PromptLimits()
        vector = self.world.embed_query(prompt.text)
        at_s = prompt.at.timestamp()
        pool = prompt_pool(
            self.corpus, self.con, self.graph, (prompt.text, vector, at_s), self.line, shown, limits
        )
        if not len(pool):
            return PromptTurn(prompt.text, prompt.at, prompt.about, None, None, ())
        ctx = None if vector is None else mean_unit(np.asarray(vector, np.float32)[None, :])
        ids = self.corpus.ids[pool.rows]
        inputs = session_inputs(
            self.corpus,
            pool.rows,
            plan.session_key,
            SessionInfo(prompt.at, self.world.tz, plan.project, prev.start if prev else None),
            SessionContextVector(ctx, PROMPT_CONTEXT_RULE if ctx is not None else "none"),
            cfg=self.cfg,
            query=prompt_query(prompt.text),
            origin=CandidateOrigin(
                store=self.con,
                track_record=read_track_record(self.con, ids, plan.start, history=history).values,
            ),
        )
        scores = None if scorer is None or ctx is None else scorer(inputs)
        picked = choose(scores, inputs.memory_ids, inputs.contents, limits)
        chosen = tuple(str(m) for m in inputs.memory_ids[picked])
        return PromptTurn(prompt.text, prompt.at, prompt.about, inputs, scores, chosen)

    def _log_prompts(self, plan: SessionContext, turns: Sequence[PromptTurn]) -> None:
        """The prompts' rankings in the hook log beside the loop's workbench, one
        user-prompt-submit invocation per prompt, as the wrapper records them (the scorer's
        choice where it scored, else the pool's own order, recorded as Signet's)."""
        if not turns:
            return
        folder = model_dir(self.store.path)
        folder.mkdir(parents=True, exist_ok=True)
        log = InjectionLog(hook_log_path(folder / WORKBENCH_FILE))
        try:
            for turn in turns:
                invocation, rows = _prompt_rows(plan, turn, str(self.state.model_version))
                log.record(invocation, rows, _prompt_record(turn))
        finally:
            log.close()

    def _judge(
        self,
        plan: SessionContext,
        rng,
        injected: set[str],
        shown: _Shown | None = None,
        focal: w.FocalEntityRecord = w.NO_FOCAL_ENTITIES,
    ) -> Judgement:
        """The continuity judge's verdict and its rows. The judge is shown what the transcript
        shows (the injected memories, those the prompts recalled and those they injected) and,
        in its second pass, the rest of the comparison's evaluation pool (the top 10 of the
        baseline's and the predictor's rankings, from the recorded rows as `compare_session`
        ranks them). Without the second pass, the ranking that decides the injection would be
        judged and the other would not, and its unrated picks would count as 0. `shown.also`
        are more memories the second pass rates: the cosine ranking's top 10, so that the
        recorded `sim_sessions.cosine_ndcg` judges the obvious alternative as fairly as the
        two. The session's score is its start's injected memories' (prompt time's are rated as
        recalled ones)."""
        shown = shown or _Shown()
        rows_df = read_session_memories(self.con, [plan.session_key])
        ids = np.asarray(rows_df["memory_id"].to_list(), dtype=str)
        inj = np.isin(ids, sorted(injected))
        pool = evaluation_pool(
            ranked_ids(rows_df["effective_score"].fill_null(np.nan).to_numpy(), ids),
            ranked_ids(rows_df["predictor_score"].fill_null(np.nan).to_numpy(), ids),
            [*ids[inj].tolist(), *shown.also],
            self.cfg.comparison_k,
        )
        recalled = rows_df["fts_hit_count"].to_numpy() > 0
        view = SessionView(
            memory_ids=ids,
            injected=inj,
            recalled=recalled | np.isin(ids, list(shown.prompted)),
            pool=np.isin(ids, pool),
            created_s=self.corpus.created_at[self.corpus.rows(ids)],
            contents=tuple(self.corpus.contents[int(r)] for r in self.corpus.rows(ids)),
            prompts=tuple(shown.prompts),
        )
        judged = self.world.judge(plan, view, rng)
        rel = np.asarray(judged.relevance, dtype=np.float64)
        rated = ~np.isnan(rel)
        w.write_relevance_scores(
            self.con, plan.session_key, dict(zip(ids[rated], rel[rated].tolist(), strict=True))
        )
        self._end_rows(plan, judged, int(inj.sum()), len(shown.prompts), focal)
        return judged

    def _end_rows(
        self,
        plan: SessionContext,
        judged: Judgement,
        n_injected: int,
        n_prompts: int,
        focal: w.FocalEntityRecord = w.NO_FOCAL_ENTITIES,
    ) -> None:
        """session_scores, summary_jobs, session_transcripts and session_checkpoints rows of a
        finished session (a current store's checkpoint requires its harness, digest and prompt
        count; the checkpoint names the session's focal entities)."""
        end_at = format_iso(judged.end)
        w.insert_session_score(
            self.con,
            plan.session_key,
            project=plan.project,
            harness=HARNESS,
            score=judged.score,
            memories_recalled=n_injected,
            memories_used=judged.memories_used,
            novel_context_count=judged.novel_context_count,
            reasoning=judged.reasoning,
            created_at=end_at,
            confidence=judged.confidence,
            continuity_reasoning=judged.continuity_reasoning,
        )
        w.insert_summary_job(
            self.con,
            plan.session_key,
            harness=HARNESS,
            project=plan.project,
            transcript=judged.transcript,
            status="completed",
            attempts=1,
            created_at=end_at,
            completed_at=end_at,
        )
        if judged.conversation:
            w.insert_session_transcript(
                self.con,
                plan.session_key,
                judged.conversation,
                harness=HARNESS,
                project=plan.project,
                created_at=end_at,
            )
        required = (
            {"harness": HARNESS, "digest": judged.reasoning, "prompt_count": n_prompts}
            if self.line == "current"
            else {}
        )
        w.insert_session_checkpoint(
            self.con,
            plan.session_key,
            "session_end",
            project=plan.project,
            created_at=end_at,
            **required,
            **focal.checkpoint_columns(),
        )

    def _sample(
        self,
        plan: SessionContext,
        prev: PreviousSession | None,
        cand: pl.DataFrame,
        j: Judgement,
        prompted: Sequence[str] = (),
    ) -> SessionSample | None:
        """The session's training sample, by the trainer's own assembly (None: not trainable);
        the memories its prompts injected count as shown, as the trainer reads them from the
        hook log (`shown_candidates`)."""
        if j.confidence < self.cfg.min_scorer_confidence:
            return None
        if prompted:
            asked = pl.DataFrame(
                {
                    "session_key": [plan.session_key] * len(prompted),
                    "memory_id": list(prompted),
                    "rank": list(range(1, len(prompted) + 1)),
                },
                schema={"session_key": pl.String, "memory_id": pl.String, "rank": pl.Int64},
            )
            none = asked.clear().rename({"rank": "signet_rank"})
            cand = shown_candidates(cand, none, asked)
        session = {
            "session_key": plan.session_key,
            "project": plan.project,
            "start": plan.start,
            "end": j.end,
            "score": j.score,
            "confidence": j.confidence,
            "novel_context_count": j.novel_context_count,
        }
        # the session-start query again: the transcripts done before the start are unchanged
        query = start_query(self.con, plan.project, plan.start)
        return build_sample(
            self.corpus,
            session,
            cand,
            prev,
            SampleRules(self.world.tz, self.cfg, self.opts.seed),
            query=query,
        )

    def _compare(
        self,
        idx: int,
        plan: SessionContext,
        cand: pl.DataFrame,
        judged: Judgement,
        alpha: float,
        trainable: bool,
        report: SimReport,
        focal: w.FocalEntityRecord = w.NO_FOCAL_ENTITIES,
    ) -> tuple[Comparison, bool]:
        """The comparison row (naming the session's primary focal entity) and the state's
        update; True when a training is due."""
        cfg = self.cfg
        inp = ComparisonInput.from_candidates(
            plan.session_key, cand, scorer_confidence=judged.confidence, project=plan.project
        )
        comp = compare_session(inp, alpha=alpha, success_rate=self.state.success_rate, cfg=cfg)
        if self.line == "0.58":  # current Signet has no predictor_comparisons
            row = comp.to_row()
            row["created_at"] = format_iso(judged.end + COMPARE_DELAY)
            row |= focal.comparison_columns()
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
            tz=self.world.tz,
            started_at=format_iso(plan.start),
            ended_at=format_iso(end),
            scorer=self.trainer.name,
            alpha=alpha,
            context_rule=inputs.context_rule,
            explored_memory_id=res.explored_id,
            cosine_ndcg=cosine_ndcg,
        )
        sim_tables.save_sim_state(self.con, state_to_json(self.state), format_iso(end))

    # -- training -----------------------------------------------------------------------------
    def _job(self) -> TrainingJob:
        """The due training as the trainer gets it; its run id names the model version it would
        become and the newest session."""
        newest = sim_tables.newest_session_key(self.con) or "none"
        return TrainingJob(
            store=self.store.path,
            run_id=f"train-{self.state.model_version + 1}-{newest}",
            state=self.state,
            cfg=self.cfg,
            seed=self.opts.seed,
            epochs=self.opts.train_epochs,
            tz=self.world.tz,
        )

    def _train(self, report: SimReport, at: datetime) -> None:
        """A training the last session made due, then its log row, the state and the cleared
        `train_pending` mark in one transaction (a run resumed after a crash in between
        trains first)."""
        outcome = self.trainer.train(self._job())
        with w.transaction(self.con):
            if outcome is not None:
                report.trainings += 1
                report.trainings_accepted += int(outcome.accepted)
                self.state = on_training(self.state, outcome.accepted).state
            if outcome is not None and outcome.log and self.line == "0.58":
                log = dict(outcome.log)
                log.setdefault("created_at", format_iso(at))  # the session's simulated time
                w.insert_training_log(
                    self.con, log.pop("id"), model_version=self.state.model_version, **log
                )
            sim_tables.save_sim_state(self.con, state_to_json(self.state), format_iso(at))
            sim_tables.set_sim_meta(self.con, "train_pending", "0")

    # -- the run ------------------------------------------------------------------------------
    def run(
        self,
        n: int,
        *,
        keep: Container[int] = (),
        on_session: Callable[[int], None] | None = None,
    ) -> SimReport:
        """Run (or resume) the first `n` sessions of the plan; the `SessionRecord`s of the
        plan indices in `keep` stay in `records` (for benches and tests). `on_session` is
        called after each session (and the training it made due) with how many of the `n`
        are recorded, for a caller's own progress report."""
        t0 = time.perf_counter()
        self.keep = keep
        report = SimReport()
        plan = self.plan(n)
        done = self.done()
        todo = [(i, c) for i, c in enumerate(plan) if i not in done]
        report.sessions_skipped = len(plan) - len(todo)
        if sim_tables.get_sim_meta(self.con, "train_pending") == "1":
            self._train(report, self.world.now)
        bar = None
        if self.opts.progress and todo:
            # here: tqdm loads only when a bar is drawn (start-up time)
            from tqdm import tqdm

            bar = tqdm(total=len(todo), desc="sessions", unit="session", leave=False)
        for k, (i, plan_i) in enumerate(todo, 1):
            self.run_session(i, plan_i, report)
            if bar is not None:
                bar.update(1)
            if on_session is not None:
                on_session(report.sessions_skipped + k)
        if bar is not None:
            bar.close()
        report.seconds = time.perf_counter() - t0
        report.final_state = self.state
        return report


@dataclass(frozen=True, slots=True)
class _Shown:
    """What the judge is shown beyond session start's injection: `also` (more memories its
    second pass rates), the session's prompts and the memories they injected."""

    also: Sequence[str] = ()
    prompts: Sequence[str] = ()
    prompted: Sequence[str] = ()


def _prompt_rows(
    plan: SessionContext, turn: PromptTurn, model_version: str
) -> tuple[dict[str, object], list[dict[str, object]]]:
    """A prompt's ranking as the hook log's invocation and injection rows."""
    at = format_iso(turn.at)
    scored = turn.scores is not None and bool(np.isfinite(turn.scores).any())
    chosen_by = SERVED if scored else "signet"
    invocation = {
        "at": at,
        "session_key": plan.session_key,
        "agent_id": DEFAULT_AGENT,
        "harness": HARNESS,
        "project": plan.project,
        "output": "plain",
        "outcome": chosen_by,
        "reason": None if scored else "no-scores",
        "model_version": model_version,
        "pool": 0 if turn.inputs is None else len(turn.inputs),
        "injected": len(turn.injected),
        "context_rule": None if turn.inputs is None else turn.inputs.context_rule,
        "signet_exit": 0,
        "hook": USER_PROMPT_SUBMIT,
    }
    if turn.inputs is None:
        return invocation, []
    pos = {m: i for i, m in enumerate(turn.inputs.memory_ids.tolist())}
    rows = [
        {
            "session_key": plan.session_key,
            "agent_id": DEFAULT_AGENT,
            "memory_id": m,
            "rank": r,
            "signet_rank": pos[m] + 1,
            "score": float(turn.scores[pos[m]]) if scored and turn.scores is not None else None,
            "chosen_by": chosen_by,
            "model_version": model_version,
            "injected_at": at,
        }
        for r, m in enumerate(turn.injected, 1)
    ]
    return invocation, rows


def _prompt_record(turn: PromptTurn) -> dict[str, object] | None:
    """What a prompt's ranking saw, as the hook log keeps it for the trainer's prompt samples
    (`learn.samples.prompt_samples`); None where it had no pool or no context."""
    if turn.inputs is None or turn.inputs.context is None:
        return None
    return {
        "prompt": turn.text,
        "pool": [str(m) for m in turn.inputs.memory_ids.tolist()],
        "hits": list(turn.hits),
        "context": np.asarray(turn.inputs.context, dtype="<f4").tobytes(),
    }


def _graph_columns(flags: TraversalFlags | None) -> GraphColumns | None:
    """The graph's flags as the candidates' knowledge-graph columns (no slots or density: the
    recorded rows carry none), so that the loop's inputs equal those the trainer reads back."""
    if flags is None:
        return None
    n = len(flags.is_traversal)
    return GraphColumns(
        entity_slot=np.full(n, -1.0),
        aspect_slot=np.full(n, -1.0),
        structural_density=np.zeros(n),
        is_traversal=flags.is_traversal,
        is_constraint=flags.is_constraint,
    )


def _focal_record(walked: Traversal | None) -> w.FocalEntityRecord:
    """The focal entities of the session start's graph walk, as its checkpoint and comparison
    record them. The primary one is the first the project (or else the query terms) names: the
    pinned entities are focal in every session and say nothing of this one, so one of them is
    primary only when nothing else is focal. The others follow in the walk's order."""
    if walked is None:
        return w.NO_FOCAL_ENTITIES
    g, ents = walked.graph, walked.focal_entities.entities.tolist()
    named = [e for e in ents if not g.entity_pinned[e]]
    order = named[:1] + [e for e in ents if e not in named[:1]]
    return w.FocalEntityRecord(
        tuple(str(g.entity_id[e]) for e in order), tuple(str(g.entity_name[e]) for e in order)
    )


def _candidate_rows(res: SessionStartResult, inputs: SessionInputs) -> list[w.CandidateRow]:
    """The session start's candidates as `session_memories` rows (ranks: `rank` 0-based
    baseline position, `predictor_rank` 1-based, NULL when the predictor did not score;
    `is_constraint`: a constraint of the session's scope or of a focal entity, the ones that
    are forced in; `path_json`: the traversal path of a memory the graph reached)."""
    paths = res.path_json
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
            path_json=paths[i],
            **inputs.graph.recorded(i),
        )
        for i in range(len(res.index))
    ]
