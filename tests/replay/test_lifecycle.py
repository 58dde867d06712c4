"""The daemon's session lifecycle alone, in a scripted world: it records exactly what the world
said (prompts' FTS hits, the agent's feedback, the judge's ratings, score and transcript),
shows the judge what the session showed, hands due trainings to its trainer and logs what the
trainer reports, and a second run over the same store changes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.ranking.fts import fts_search
from signet_bench.replay.lifecycle import (
    COMPARE_DELAY,
    Lifecycle,
    LoopOptions,
    SimReport,
)
from signet_bench.replay.loop_store import LoopStore
from signet_bench.replay.trainers import RandomScorer, TrainingJob, TrainOutcome
from signet_bench.store.corpus import read_corpus
from signet_bench.store.read import open_readonly
from signet_bench.store.schema import connect_writer
from signet_bench.store.timestamps import format_iso, parse_ts
from signet_bench.world.interface import Judgement, Prompt, SessionView
from signet_bench.world.synth.build import build_persona_store
from signet_bench.world.synth.persona import get_persona
from signet_bench.world.synth.plans import SessionContext, make_context
from signet_bench.world.synth.truth import read_synth_meta
from signet_scorer.terms import recall_terms

SESSIONS = 7
CFG = DEFAULT_CONFIG.replace(train_interval_sessions=3)
SCORE, CONFIDENCE, NOVEL = 0.7, 0.95, 1
FIRST_RATING, SECOND_RATING = 0.8, -0.4
SIX = timedelta(hours=6)


class ScriptedWorld:
    """A world that says what the test scripted: a session every six hours in one project, two
    prompts (the text of two memories), the agent rating the first injected memory after each,
    and a judge that rates injected 0.9, recalled 0.6, the rest of its pool 0.1."""

    tz = "UTC"

    def __init__(self, now: datetime, project: str, texts: tuple[str, str]) -> None:
        self.now, self.project, self.texts = now, project, texts
        self.views: dict[str, SessionView] = {}
        self.injected: dict[str, list[str]] = {}

    def plan(self, n: int, seed: int) -> list[SessionContext]:
        return [
            make_context(
                f"scripted-{seed}-{i}", self.project, "scripted", self.now + i * SIX, "UTC"
            )
            for i in range(n)
        ]

    def prompts(
        self, plan: SessionContext, injected: Sequence[str], rng: np.random.Generator
    ) -> list[Prompt]:
        self.injected[plan.session_key] = list(injected)
        first = {injected[0]: FIRST_RATING} if injected else {}
        second = {injected[0]: SECOND_RATING} if injected else {}
        return [
            Prompt(self.texts[0], plan.start + timedelta(minutes=1), first),
            Prompt(self.texts[1], plan.start + timedelta(minutes=2), second),
        ]

    def judge(self, plan: SessionContext, view: SessionView, rng: np.random.Generator) -> Judgement:
        self.views[plan.session_key] = view
        rel = np.where(view.injected, 0.9, np.where(view.recalled, 0.6, 0.1))
        rel = np.where(view.injected | view.recalled | view.pool, rel, np.nan)
        n = int(view.injected.sum())
        return Judgement(
            relevance=rel,
            score=SCORE,
            confidence=CONFIDENCE,
            novel_context_count=NOVEL,
            memories_used=n,
            end=plan.start + timedelta(minutes=30),
            reasoning=f"scripted: {n} used",
            continuity_reasoning="scripted continuity",
            transcript=f"transcript of {plan.session_key}",
        )


class LoggingTrainer(RandomScorer):
    """Random scores; every due training is accepted and logged, and its job kept."""

    name = "scripted"

    def __init__(self) -> None:
        self.jobs: list[TrainingJob] = []

    def train(self, job: TrainingJob) -> TrainOutcome | None:
        self.jobs.append(job)
        log = {"id": job.run_id, "loss": 0.25, "sample_count": 3, "duration_ms": 1}
        return TrainOutcome(accepted=True, log=log)


def _texts(db: Path) -> tuple[str, str]:
    """The contents of two live memories that an FTS query can find (important enough)."""
    con = open_readonly(db)
    try:
        rows = con.execute(
            "SELECT content FROM memories WHERE COALESCE(is_deleted, 0) = 0 AND importance >= 0.5"
            " ORDER BY id LIMIT 2"
        ).fetchall()
    finally:
        con.close()
    return rows[0][0], rows[1][0]


def _run(db: Path, world: ScriptedWorld, trainer: LoggingTrainer) -> SimReport:
    """The first SESSIONS sessions of `world`'s plan, on the store's own writer connection."""
    con = connect_writer(db)
    try:
        loop = Lifecycle(
            LoopStore(db, con, read_corpus(con)), world, trainer, LoopOptions(seed=4), CFG
        )
        return loop.run(SESSIONS)
    finally:
        con.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    db = tmp_path_factory.mktemp("lifecycle") / "memories.db"
    build_persona_store("light", db, seed=11, n_memories=150)
    now = parse_ts(read_synth_meta(db)["now"])
    world = ScriptedWorld(now, get_persona("light").projects[0].name, _texts(db))
    trainer = LoggingTrainer()
    return db, world, trainer, _run(db, world, trainer)


def _rows(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    con = open_readonly(db)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def _memories(db: Path, key: str, columns: str, where: str = "") -> list[tuple]:
    """`columns` of a session's `session_memories` rows (those meeting `where`, if given)."""
    return _rows(db, f"SELECT {columns} FROM session_memories WHERE session_key = ?{where}", (key,))


def test_the_judges_verdict_is_recorded_as_it_gave_it(run):
    db, world, _, report = run
    assert report.sessions_run == SESSIONS == len(world.views)
    for key, view in world.views.items():
        (row,) = _rows(
            db,
            "SELECT score, confidence, novel_context_count, memories_recalled, memories_used,"
            " reasoning, continuity_reasoning, harness, created_at FROM session_scores"
            " WHERE session_key = ?",
            (key,),
        )
        n = int(view.injected.sum())
        end = parse_ts(row[8])
        assert row[:8] == (
            SCORE,
            CONFIDENCE,
            NOVEL,
            n,
            n,
            f"scripted: {n} used",
            "scripted continuity",
            "simulated",
        )
        (transcript,) = _rows(
            db, "SELECT transcript FROM summary_jobs WHERE session_key = ?", (key,)
        )
        assert transcript == (f"transcript of {key}",)
        (cmp_at,) = _rows(
            db, "SELECT created_at FROM predictor_comparisons WHERE session_key = ?", (key,)
        )
        assert parse_ts(cmp_at[0]) == end + COMPARE_DELAY


def test_the_judge_is_shown_what_the_session_showed_and_its_ratings_are_stored(run):
    db, world, _, _ = run
    for key, view in world.views.items():
        rows = _memories(db, key, "memory_id, was_injected, fts_hit_count, relevance_score")
        by_id = {r[0]: r[1:] for r in rows}
        assert sorted(view.memory_ids.tolist()) == sorted(by_id)
        for i, m in enumerate(view.memory_ids):
            injected, hits, rel = by_id[m]
            assert bool(view.injected[i]) == bool(injected)
            assert bool(view.recalled[i]) == (hits > 0)
            shown = view.injected[i] or view.recalled[i] or view.pool[i]
            expected = 0.9 if injected else 0.6 if hits else 0.1
            assert rel == (pytest.approx(expected) if shown else None), m
        assert sorted(world.injected[key]) == sorted(m for m, (inj, _, _) in by_id.items() if inj)


def test_each_prompts_fts_hits_are_counted(run):
    db, world, _, _ = run
    con = open_readonly(db)
    try:
        per_prompt = [
            {m for m, _ in fts_search(con, recall_terms(t), limit=20)[:10]} for t in world.texts
        ]
    finally:
        con.close()
    assert per_prompt[0] and per_prompt[1]
    for key in world.views:
        hits = dict(_memories(db, key, "memory_id, fts_hit_count", " AND fts_hit_count > 0"))
        expected = {m: sum(m in p for p in per_prompt) for m in per_prompt[0] | per_prompt[1]}
        assert hits == expected


def test_the_agents_feedback_is_averaged_on_the_memory_it_rated(run):
    db, world, _, _ = run
    for key, injected in world.injected.items():
        columns = "memory_id, agent_relevance_score, agent_feedback_count"
        rated = _memories(db, key, columns, " AND agent_feedback_count > 0")
        assert [(m, c) for m, _, c in rated] == [(injected[0], 2)]
        assert rated[0][1] == pytest.approx((FIRST_RATING + SECOND_RATING) / 2)


def test_due_trainings_go_to_the_trainer_and_its_log_is_recorded(run):
    db, _, trainer, report = run
    assert report.trainings == report.trainings_accepted == len(trainer.jobs) >= 2
    logged = _rows(
        db, "SELECT id, model_version, loss, sample_count FROM predictor_training_log ORDER BY id"
    )
    expected = [(j.run_id, j.state.model_version + 1, 0.25, 3) for j in trainer.jobs]
    assert logged == sorted(expected)
    assert all(j.store == db and j.tz == "UTC" and j.seed == 4 for j in trainer.jobs)
    assert {r[0] for r in _rows(db, "SELECT DISTINCT scorer FROM sim_sessions")} == {"scripted"}
    assert report.final_state is not None
    assert report.final_state.model_version == len(trainer.jobs)


def test_a_second_run_changes_nothing(run):
    db, world, _, _ = run
    before = _rows(db, "SELECT COUNT(*), MAX(created_at) FROM session_scores")
    again = ScriptedWorld(world.now, world.project, world.texts)
    trainer = LoggingTrainer()
    report = _run(db, again, trainer)
    assert (report.sessions_run, report.sessions_skipped) == (0, SESSIONS)
    assert not again.views and not trainer.jobs
    assert _rows(db, "SELECT COUNT(*), MAX(created_at) FROM session_scores") == before
    assert before[0][1] == format_iso(world.now + (SESSIONS - 1) * SIX + timedelta(minutes=30))


def test_a_learning_loop_serves_the_shipped_base_from_the_first_session(tmp_path):
    """Before any training the loop puts the shipped base in place and fuses it from the
    first session with the baseline weight the base earned; nothing scores with no scorer."""
    from signet_bench.learn.base import shipped_base_alpha, shipped_base_params
    from signet_bench.learn.model.checkpoint import load_checkpoint
    from signet_bench.replay.loop import SimOptions, simulate
    from signet_bench.replay.trainers import model_path

    path = tmp_path / "memories.db"
    build_persona_store("light", path, seed=4, n_memories=80)
    report = simulate(path, 2, SimOptions(scorer="model", seed=4))
    assert report.trainings == 0 and report.final_state.alpha == shipped_base_alpha() < 1.0
    saved, meta = load_checkpoint(model_path(path))
    base = shipped_base_params(meta.native_dim)
    assert meta.is_pretrained_base and all(np.array_equal(saved[k], base[k]) for k in base)
    con = open_readonly(path)
    try:
        scored = con.execute(
            "SELECT COUNT(*) FROM session_memories WHERE predictor_score IS NOT NULL"
        ).fetchone()[0]
    finally:
        con.close()
    assert scored > 0
    offline = tmp_path / "offline.db"
    build_persona_store("light", offline, seed=4, n_memories=80)
    assert simulate(offline, 1, SimOptions(scorer="none", seed=4)).final_state.alpha == 1.0
    assert not model_path(offline).exists()
