"""Prompt time in the replayed loop: each prompt's pool is ranked by the session's scorer with the
prompt as its query, injects within Signet's prompt-time budget, never repeats a memory of the
session nor injects a deleted or superseded one, is recorded in the hook log as the
user-prompt-submit wrapper records it, and its injections count as shown in the labels while
session start's stay as they were. Off by default; each hook serves what its own held-out rankings chose."""

from __future__ import annotations

import json
import shutil
import sqlite3

import numpy as np
import polars as pl
import pytest

from signet_bench.analysis.queries.training import served_by_hook
from signet_bench.daemon.ranking.prompt_time import (
    PromptLimits,
    choose,
    named_entity_rows,
    prompt_pool,
)
from signet_bench.daemon.session_query import prompt_query
from signet_bench.learn.explain import run_summary
from signet_bench.learn.model.checkpoint import load_checkpoint
from signet_bench.learn.model.ranker import ModelRanker
from signet_bench.learn.publish import scheduled_request, train_store
from signet_bench.learn.samples import (
    PROMPT_SOURCE,
    Selection,
    later_hits,
    load_samples,
    read_label_signals,
    shown_candidates,
    signals_frame,
)
from signet_bench.learn.serving import PROMPT_KEY, hook_choices
from signet_bench.replay.loop import SimOptions, Simulator
from signet_bench.replay.trainers import TrainingJob, model_dir
from signet_bench.store.corpus import read_corpus
from signet_bench.store.graph import read_graph
from signet_bench.store.hook_log import (
    PROMPT_RANKING_SCHEMA,
    hook_log_path,
    hook_record,
    hook_sessions,
    prompt_injections,
    prompt_rankings,
    read_hook_invocations,
)
from signet_bench.store.workbench import open_workbench
from signet_bench.world.synth.build import build_persona_store
from signet_scorer.hook.config import USER_PROMPT_SUBMIT
from signet_scorer.workbench import CHECKPOINT_FILE, WORKBENCH_FILE, prompt_model_file

SESSIONS = 5
LIMITS = PromptLimits()


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """A light user's first sessions with prompt time on, every record kept; the agent rates
    what it was shown in every session."""
    path = tmp_path_factory.mktemp("prompt") / "light.db"
    build_persona_store("light", path, seed=5, n_memories=150, embedder="topic")
    opts = SimOptions(
        scorer="model", seed=5, prompts=(4, 6), prompt_time=LIMITS, feedback_share=1.0
    )
    sim = Simulator(path, opts)
    sim.loop.run(SESSIONS, keep=range(SESSIONS))
    yield sim
    sim.close()


def _workbench(sim: Simulator):
    return model_dir(sim.path) / WORKBENCH_FILE


def test_each_prompt_injects_within_the_budget_and_never_twice(ran):
    corpus = ran.corpus
    turns = 0
    for rec in ran.records.values():
        seen = {str(m) for m in rec.start.injected_ids}
        for turn in rec.prompts:
            turns += 1
            assert len(turn.injected) <= LIMITS.max_memories
            rows = corpus.rows(list(turn.injected))
            assert sum(len(corpus.contents[int(r)]) for r in rows) <= LIMITS.chars
            assert not seen & set(turn.injected), "a memory injected twice in one session"
            at = turn.at.timestamp()
            assert not (corpus.absent_at(at)[rows] | corpus.superseded_by(at)[rows]).any()
            if turn.inputs is not None:  # nothing the session showed is even a candidate
                assert not seen & set(turn.inputs.memory_ids.tolist())
            seen |= set(turn.injected)
    assert turns >= 4 * SESSIONS
    assert sum(len(t.injected) for r in ran.records.values() for t in r.prompts) > 0


def test_the_scorer_ranks_the_prompt_pool_with_the_prompt_as_its_query(ran):
    turn = next(t for r in ran.records.values() for t in r.prompts if t.inputs is not None)
    inputs = turn.inputs
    assert inputs.query == prompt_query(turn.text)
    vector = ran.world.embed_query(turn.text)
    assert inputs.context_rule == "prompt"
    np.testing.assert_allclose(inputs.context, vector / np.linalg.norm(vector), atol=1e-6)
    assert inputs.start == turn.at
    # the model the loop served scored it, and what was injected is its best within the budget
    model = ModelRanker(ran.model, ran.cfg).score(inputs)
    np.testing.assert_allclose(turn.scores, model, rtol=1e-6)
    picked = choose(model, inputs.memory_ids, inputs.contents, LIMITS)
    assert turn.injected == tuple(inputs.memory_ids[picked].tolist())


def test_the_hook_log_records_each_prompt_as_the_wrapper_does(ran):
    wb = _workbench(ran)
    invocations = read_hook_invocations(wb)
    n_prompts = sum(len(r.prompts) for r in ran.records.values())
    assert invocations.height == n_prompts
    assert set(invocations["hook"].to_list()) == {USER_PROMPT_SUBMIT}
    record = hook_record(wb)
    logged = prompt_injections(record)
    for rec in ran.records.values():
        mine = logged.filter(pl.col("session_key") == rec.plan.session_key)
        want = [m for t in rec.prompts for m in t.injected]
        assert sorted(mine["memory_id"].to_list()) == sorted(want)
    # session start's record is untouched: no session counts as served by a wrapper
    assert hook_sessions(record).height == 0


def test_each_prompt_is_recorded_as_its_ranking_saw_it(ran):
    wb = _workbench(ran)
    asked = prompt_rankings(wb, hook_record(wb))
    turns = [t for r in ran.records.values() for t in r.prompts if t.inputs is not None]
    assert asked.height == len(turns) > 0
    for row, turn in zip(asked.iter_rows(named=True), turns, strict=True):
        assert row["prompt"] == turn.text and row["at"] == turn.at
        assert row["pool"] == turn.inputs.memory_ids.tolist()
        assert row["hits"] == list(turn.hits) and row["injected"] == list(turn.injected)
        np.testing.assert_array_equal(np.frombuffer(row["context"], "<f4"), turn.inputs.context)


def test_each_prompt_trains_on_the_inputs_its_ranking_saw(ran):
    """The trainer's sample of a prompt (`load_samples`, from the store and the hook log) holds
    the candidates its ranking scored with the very inputs it scored them with."""
    wb = _workbench(ran)
    samples, _ = load_samples(
        ran.path, tz=ran.world.tz, workbench=wb, select=Selection(prompts=True)
    )
    starts, _ = load_samples(ran.path, tz=ran.world.tz, workbench=wb)
    assert [s.session_key for s in starts] == [
        s.session_key for s in samples if "#" not in s.session_key
    ]
    turns = {
        (r.plan.session_key, t.at): t
        for r in ran.records.values()
        for t in r.prompts
        if t.inputs is not None
    }
    prompted = [s for s in samples if "#prompt-" in s.session_key]
    assert len(prompted) >= len(turns) // 2 and len(samples) > len(prompted)
    for sample in prompted:
        turn = turns[(sample.session_key.split("#prompt-")[0], sample.start)]
        at = {m: i for i, m in enumerate(turn.inputs.memory_ids.tolist())}
        idx = [at[m] for m in sample.memory_ids]
        np.testing.assert_array_equal(sample.context, turn.inputs.context)
        np.testing.assert_array_equal(sample.features, turn.inputs.features[idx])
        np.testing.assert_array_equal(sample.signals, turn.inputs.signals[idx])


def test_a_prompt_is_labelled_by_the_keyword_hits_of_the_prompts_after_it():
    t = pl.datetime(2026, 1, 1, time_zone="UTC")
    asked = pl.DataFrame(
        {
            "session_key": ["a", "b", "a", "a"],
            "invocation_id": [1, 2, 3, 4],
            "hits": [["m1", "m2"], ["m1"], ["m2", "m3"], ["m2"]],
        }
    ).with_columns(t.alias("at"))
    assert later_hits(asked) == [{"m2": 2, "m3": 1}, {}, {"m2": 1}, {}]
    assert PROMPT_RANKING_SCHEMA["hits"] == pl.List(pl.String())


def test_prompt_injections_count_as_shown_and_session_start_keeps_its_own(ran):
    signals = read_label_signals(ran.con, workbench=_workbench(ran))
    assert signals.prompted.height > 0 and signals.hook.height == 0
    frame = signals_frame(signals)
    keys = ["session_key", "memory_id"]
    asked = signals.prompted.select(keys).unique()
    shown = frame.join(asked, on=keys, how="semi")
    assert shown.height == asked.height and shown["was_injected"].all()
    rest = frame.join(asked, on=keys, how="anti").sort(keys)
    before = signals.candidates.join(asked, on=keys, how="anti").sort(keys)
    assert rest["was_injected"].to_list() == before["was_injected"].to_list()
    added = frame.filter(pl.col("source") == PROMPT_SOURCE)
    assert added.height == asked.join(signals.candidates, on=keys, how="anti").height


def test_a_prompt_row_goes_after_the_session_rows_and_a_start_row_is_only_marked():
    t = pl.datetime(2026, 1, 1, time_zone="UTC")
    cand = pl.DataFrame(
        {
            "session_key": ["s", "s", "s"],
            "memory_id": ["a", "b", "c"],
            "source": ["effective", "effective", "fts_only"],
            "rank": [0, 1, 0],
            "was_injected": [True, False, False],
            "fts_hit_count": [0, 0, 2],
            "is_constraint": [False, False, False],
            "agent_feedback_count": [0, 0, 0],
        }
    ).with_columns(created_at=t)
    hook = pl.DataFrame(
        schema={"session_key": pl.String, "memory_id": pl.String, "signet_rank": pl.Int64}
    )
    prompted = pl.DataFrame(
        {"session_key": ["s", "s", "x"], "memory_id": ["b", "d", "e"], "rank": [1, 2, 1]}
    )
    out = shown_candidates(cand, hook, prompted)
    got = dict(zip(out["memory_id"].to_list(), out["was_injected"].to_list(), strict=True))
    assert got == {"a": True, "b": True, "c": False, "d": True}  # "e": a session without rows
    d = out.filter(pl.col("memory_id") == "d").row(0, named=True)
    assert d["source"] == PROMPT_SOURCE and d["rank"] == 2 and d["fts_hit_count"] == 0


def test_prompt_time_is_off_by_default(tmp_path):
    path = tmp_path / "light.db"
    build_persona_store("light", path, seed=6, n_memories=100, embedder="topic")
    sim = Simulator(path, SimOptions(scorer="random", seed=6, prompts=(2, 3)))
    try:
        sim.loop.run(2, keep=range(2))
        assert all(rec.prompts == () for rec in sim.records.values())
    finally:
        sim.close()
    assert not hook_log_path(model_dir(path) / WORKBENCH_FILE).exists()


def test_current_signet_rule_is_the_named_people_and_projects_attributes(tmp_path):
    path = tmp_path / "architect.db"
    build_persona_store(
        "architect", path, seed=3, n_memories=200, embedder="topic", schema="current"
    )
    con = sqlite3.connect(path)
    try:
        graph, corpus = read_graph(con), read_corpus(con)
        at = float(np.nanmax(corpus.created_at)) + 1.0
        ok = ~corpus.absent_at(at) & ~corpus.superseded_by(at)
        person = next(
            e
            for e in np.flatnonzero(graph.entity_type == "person")
            if any(
                str(m) in corpus.row_of and ok[corpus.row_of[str(m)]]
                for m in graph.attr_memory[graph.attr_entity == e]
            )
        )
        name = str(graph.entity_name[person])
        rows = named_entity_rows(graph, corpus, f"what did {name} say about it?", at, ok)
        want = {corpus.row_of[str(m)] for m in graph.attr_memory[graph.attr_entity == person]}
        assert set(rows.tolist()) == {r for r in want if ok[r]} and len(rows) > 0
        # a system entity named in the prompt is no entity context of current Signet
        system = next(iter(np.flatnonzero(graph.entity_type == "system")))
        text = f"how does {graph.entity_name[system]} work?"
        assert len(named_entity_rows(graph, corpus, text, at, ok)) == 0
        pool = prompt_pool(corpus, con, graph, (f"{name}: the deploy", None, at), "current")
        assert pool.rule[: len(rows)].all() and set(pool.rows[pool.rule].tolist()) == set(
            rows.tolist()
        )
        first = str(corpus.ids[rows[0]])
        again = prompt_pool(
            corpus, con, graph, (f"{name}: the deploy", None, at), "current", {first}
        )
        assert first not in set(corpus.ids[again.rows].tolist())
    finally:
        con.close()


def test_each_hook_serves_what_its_own_held_out_rankings_chose(ran, tmp_path):
    """A training on session starts and prompts judges each hook on its own held-out samples
    only: session start's choice counts the held-out sessions' starts, the prompt hook's their
    prompts (against the prompt's own cosine and hybrid), and both are recorded with the run;
    the prompt hook's model is written beside session start's and read back by the loop."""
    request = scheduled_request(ran.path, tmp_path, ran.cfg, mode="fresh")
    run = train_store(request.replace(tz=ran.world.tz), cfg=ran.cfg.replace(prompt_samples=True))
    r = run.result
    assert r.serving is not None and r.prompt_serving is not None and r.holdout is not None
    assert r.serving.unit == "sessions" and r.prompt_serving.unit == "prompts"
    # the prompts are judged on their own held-out prompts (some held-out samples are starts);
    # session start keeps the base below the minimum's sessions
    assert 0 < r.prompt_serving.sessions < r.holdout.sessions
    assert r.serving.reason == "too-few"
    assert 0 < r.serving.sessions < ran.cfg.holdout_min_sessions == r.serving.needed
    saved = prompt_model_file(tmp_path / CHECKPOINT_FILE)
    assert saved.exists() and r.prompt_params is not None
    for k, v in load_checkpoint(saved)[0].items():
        np.testing.assert_array_equal(v, r.prompt_params[k])
    with open_workbench(tmp_path / WORKBENCH_FILE) as wb:
        text = wb.execute("SELECT serving FROM training_runs").fetchone()[0]
    hooks = hook_choices(json.loads(text))
    assert hooks["session_start"] == r.serving and hooks[PROMPT_KEY] == r.prompt_serving
    if r.prompt_serving.over_base is not None:  # judged: the sentence says on what
        assert f"on {r.prompt_serving.sessions} held-out prompts" in hooks[PROMPT_KEY].sentence()
    # `signet-bench train` says it too, and the dashboard, what serves at each hook and why
    assert f"at prompts: {r.prompt_serving.sentence()}" in run_summary(run, request, ran.cfg)
    assert served_by_hook(tmp_path / WORKBENCH_FILE) == {
        "session_start": r.serving.sentence(),
        PROMPT_KEY: r.prompt_serving.sentence(),
    }
    # without prompt samples the prompts are served session start's model: the file goes
    off = train_store(request.replace(tz=ran.world.tz), cfg=ran.cfg.replace(prompt_samples=False))
    assert off.result.prompt_serving is None and not saved.exists()


def test_the_loops_prompts_rank_with_the_prompt_hooks_model(ran):
    """The loop's trainer hands the prompt turn the prompt hook's own model where a training
    chose one, and session start's otherwise."""
    trainer = ran.trainer
    inputs = next(t.inputs for r in ran.records.values() for t in r.prompts if t.inputs is not None)
    rng = np.random.default_rng(0)
    want = trainer.prompt_model if trainer.prompt_model is not None else trainer.model
    np.testing.assert_allclose(
        trainer.prompt_scorer(rng)(inputs), ModelRanker(want, ran.cfg).score(inputs), rtol=1e-6
    )
    trainer.prompt_model, kept = None, trainer.prompt_model
    try:
        np.testing.assert_allclose(
            trainer.prompt_scorer(rng)(inputs), trainer.scorer(rng)(inputs), rtol=1e-6
        )
    finally:
        trainer.prompt_model = kept


def test_the_loops_trainer_says_what_its_accepted_training_serves_at_each_hook(ran, tmp_path):
    """After an accepted training the loop's trainer says what serves at each hook, as the run
    recorded it (`training_runs.serving`), so `bench quality` can log it. The training writes
    beside a copy of the store's model folder, and the trainer's weights are put back."""
    trainer, copy = ran.trainer, tmp_path / "light.db"
    shutil.copytree(model_dir(ran.path), model_dir(copy))
    job = TrainingJob(copy, "serving-test", ran.state, ran.cfg, 5, 4, ran.world.tz)
    kept = (trainer.model, trainer.prompt_model, trainer.serving)
    try:
        outcome = trainer.train(job)
        assert outcome is not None and outcome.accepted
        with open_workbench(model_dir(copy) / WORKBENCH_FILE) as wb:
            text = wb.execute(
                "SELECT serving FROM training_runs WHERE run_id = 'serving-test'"
            ).fetchone()[0]
        hooks = hook_choices(json.loads(text))
        assert trainer.serving == (hooks["session_start"], hooks[PROMPT_KEY])
    finally:
        trainer.model, trainer.prompt_model, trainer.serving = kept


def test_the_agent_rates_what_the_prompts_injected_as_it_rates_session_starts(ran):
    """After a prompt the agent rates memories the session's prompts injected too, written as
    its ratings of session start's are (Signet's running mean on the session's rows), so the
    label function reads them alike; none is rated that the session never showed."""
    rated = pl.DataFrame(
        ran.con.execute(
            "SELECT session_key, memory_id FROM session_memories WHERE agent_feedback_count > 0"
        ).fetchall(),
        schema=["session_key", "memory_id"],
        orient="row",
    )
    by_prompt, by_start = 0, 0
    for rec in ran.records.values():
        start = {str(m) for m in rec.start.injected_ids}
        prompted = {m for t in rec.prompts for m in t.injected}
        mine = set(rated.filter(pl.col("session_key") == rec.plan.session_key)["memory_id"])
        assert mine <= start | prompted
        by_prompt += len(mine & prompted)
        by_start += len(mine & start)
    assert by_prompt > 0 and by_start > 0
    signals = read_label_signals(ran.con, workbench=_workbench(ran))
    frame = signals_frame(signals).filter(pl.col("agent_relevance_score").is_not_null())
    keys = ["session_key", "memory_id"]
    asked = signals.prompted.select(keys).unique()
    assert frame.join(asked, on=keys, how="semi").height == by_prompt
