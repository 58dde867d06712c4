"""The hook with a model the simulated daemon trained: on a light store after 30 sessions
(scorer "model"), the accepted model exported to ONNX beside the workbench, the daemon's
candidate pool recorded for a new session and Signet's answer holding the first 40 of it.

The hook's inputs for the session (pool, context, features, query terms, sources, track
records) equal those
the trainer assembles for it (`daemon.candidates.session_inputs`, as `learn.samples` builds a
sample), its scores are the numpy model's over the pool, it injects the answer's memories the
model ranks highest within the limit, only memories Signet's budget admitted, keeps the rest
of Signet's text and records what it injected."""

from __future__ import annotations

import json
from datetime import timedelta

import numpy as np
import polars as pl
import pytest

from signet_bench.bench.hook_speed import store_memories
from signet_bench.bench.signet_standin import signet_answer, write_standin
from signet_bench.daemon.context import PreviousSessions, session_context
from signet_bench.daemon.session_query import start_query
from signet_bench.learn.export import convert_model
from signet_bench.learn.model.checkpoint import load_checkpoint
from signet_bench.learn.model.ranker import ModelRanker
from signet_bench.learn.samples import (
    scored_sessions,
    session_graph,
    session_structure,
    track_records,
    track_values,
)
from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.replay.trainers import model_dir, model_path
from signet_bench.store.corpus import read_corpus
from signet_bench.store.hook_log import read_hook_injections, read_hook_invocations
from signet_bench.store.read import open_readonly, read_session_memories, read_sessions
from signet_bench.store.schema import connect_writer
from signet_bench.store.timestamps import format_iso, parse_ts
from signet_bench.store.write import CandidateRow, record_session_candidates
from signet_bench.world.synth.build import build_persona_store
from signet_scorer.features import SessionInfo
from signet_scorer.hook.cli import run_hook
from signet_scorer.hook.inject import SCORER_ORDER, find_block
from signet_scorer.hook.opening import open_scorer
from signet_scorer.hook.rank import HookSession, session_query
from signet_scorer.signals import signal_column
from tests.scorer.hook_support import (
    HARNESS_ARGS,
    PROJECT,
    ServedResident,
    World,
    hook_prints,
    stdin_for,
)
from tests.scorer.hook_support import standin_runner as runner_for

KEY = "new-session-1"
POOL, ANSWER, LIMIT = 60, 40, 20
TZ = "Europe/Berlin"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(world, start of the new session): the trained store, its exported model, the pool
    recorded for KEY and Signet's answer for it."""
    root = tmp_path_factory.mktemp("hook-model")
    db = root / "memories.db"
    build_persona_store("light", db, seed=11, n_memories=120)
    report = simulate(db, 30, SimOptions(scorer="model", seed=11))
    assert report.trainings_accepted >= 1
    model = convert_model(model_path(db), model_dir(db) / "model.onnx")
    con = open_readonly(db)
    last = con.execute("SELECT MAX(created_at) FROM session_memories").fetchone()[0]
    con.close()
    now = parse_ts(last) + timedelta(days=1)
    pool = store_memories(db, PROJECT, now, POOL)
    writer = connect_writer(db)
    rows = [
        CandidateRow(
            m["id"],
            "effective",
            m["effective_score"],
            None,
            m["effective_score"],
            rank,
            rank <= ANSWER,
        )
        for rank, m in enumerate(pool, 1)
    ]
    record_session_candidates(writer, KEY, rows, format_iso(now))
    writer.close()
    answer = root / "answer.json"
    answer.write_text(json.dumps(signet_answer(pool[:ANSWER])), encoding="utf-8")
    return World(db, model, answer, write_standin(root / "bin")), now


def _library_inputs(db, now):
    """The session's inputs as the trainer assembles them (`learn.samples.build_sample`)."""
    corpus = read_corpus(db)
    con = open_readonly(db)
    try:
        cands = read_session_memories(con)
        tracker = PreviousSessions()
        by_key = {k[0]: g for k, g in cands.group_by("session_key")}
        for s in scored_sessions(read_sessions(con), cands).iter_rows(named=True):
            tracker.record(s["session_key"], s["project"], s["start"], by_key[s["session_key"]])
        prev = tracker.before(PROJECT)
        cand = by_key[KEY].sort([pl.col("source") == "fts_only", "rank", "memory_id"])
        rows = corpus.rows(cand["memory_id"].to_list())
        ctx = session_context(
            corpus.embeddings, corpus.has_embedding, corpus.row_of, prev.used, rows
        )
        from signet_bench.daemon.candidates import CandidateOrigin, session_inputs

        return session_inputs(
            corpus,
            rows,
            KEY,
            SessionInfo(now, TZ, PROJECT, prev.start),
            ctx,
            query=start_query(con, PROJECT, now),
            origin=CandidateOrigin(
                graph=session_graph(cand, session_structure(con, cand)),
                track_record=track_values(track_records(con, {"start": now}, cand), cand),
            ),
        )
    finally:
        con.close()


def test_the_hooks_inputs_are_the_trainers(trained):
    world, now = trained
    expected = _library_inputs(world.db, now)
    scorer, why = open_scorer(world.model)
    assert scorer is not None, why
    con = open_readonly(world.db)
    try:
        session = HookSession(now, TZ, PROJECT, KEY, "default")
        answer = json.loads(world.answer.read_text())
        query, rule = session_query(
            con,
            session,
            [m["id"] for m in answer["memories"]],
            dim=scorer.info.native_dim,
            slots=scorer.info.project_slots,
        )
    finally:
        con.close()
    assert list(query.candidate_ids) == expected.memory_ids.tolist()
    assert rule == expected.context_rule == "previous-session"
    np.testing.assert_allclose(query.context_embedding, expected.context, rtol=0, atol=1e-7)
    np.testing.assert_array_equal(query.candidate_features, expected.features)
    assert list(query.query_terms) == list(expected.query.terms) and expected.query.terms
    assert [e is not None for e in query.candidate_embeddings] == expected.has_embedding.tolist()
    assert list(query.candidate_texts) == list(expected.contents)
    assert query.project_slot == expected.project_slot
    sources = [None] * len(expected) if query.candidate_sources is None else query.candidate_sources
    assert list(sources) == expected.sources.tolist()
    np.testing.assert_array_equal(query.candidate_created_at, expected.created_at)
    track = np.asarray(query.candidate_track_record)
    np.testing.assert_array_equal(track, expected.signals[:, signal_column("track_record")])
    assert np.unique(track).size > 1  # 30 sessions of history tell the memories apart


def test_the_hook_injects_the_models_choice_within_signets_budget(trained):
    world, now = trained
    env = world.env()
    argv = [*world.options(limit=str(LIMIT)), "session-start", *HARNESS_ARGS["plain"]]
    run = run_hook(argv, stdin_for(KEY), env=env, runner=runner_for(env), now=now)
    assert run.invocation["outcome"] == "scorer", run.invocation["reason"]
    assert (run.invocation["pool"], run.invocation["injected"], run.code) == (POOL, LIMIT, 0)
    answer = json.loads(world.answer.read_text())
    ids = [m["id"] for m in answer["memories"]]
    # the numpy model over the trainer's inputs: the same probabilities, the same choice
    expected = _library_inputs(world.db, now)
    params, _ = load_checkpoint(model_path(world.db))
    probs = dict(
        zip(expected.memory_ids.tolist(), ModelRanker(params).score(expected), strict=True)
    )
    chosen = [r["memory_id"] for r in run.injections]
    got = [r["score"] for r in run.injections]
    np.testing.assert_allclose(got, [probs[m] for m in chosen], rtol=1e-4, atol=1e-6)
    best = sorted(ids, key=lambda m: (-probs[m], m))[:LIMIT]
    assert chosen == best or np.allclose(
        [probs[m] for m in chosen], [probs[m] for m in best], atol=1e-6
    )
    assert chosen != ids[:LIMIT]  # the model's order is not Signet's
    # only memories of Signet's answer (its token budget admitted them), Signet's own lines
    assert set(chosen) <= set(ids) and len(set(chosen)) == LIMIT
    block = find_block(answer["inject"], [m["content"] for m in answer["memories"]])
    assert block is not None
    assert run.stdout.decode() == block.text([ids.index(m) for m in chosen]) + "\n"
    assert len(run.stdout) < len(answer["inject"])


def test_the_console_hook_reorders_and_records(trained):
    world, _ = trained
    env = world.env()
    hook = hook_prints(
        world, HARNESS_ARGS["codex"], stdin_for("console-run"), env, limit=str(LIMIT)
    )
    assert hook.code == 0 and hook.stderr == b""
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    runs = read_hook_invocations(world.workbench).filter(session_key="console-run")
    assert runs["outcome"].to_list() == ["scorer"] and runs["pool"].to_list() == [ANSWER]
    rows = read_hook_injections(world.workbench).filter(session_key="console-run").sort("rank")
    answer = json.loads(world.answer.read_text())
    contents = {m["id"]: m["content"] for m in answer["memories"]}
    block = find_block(context, [contents[m] for m in rows["memory_id"]], SCORER_ORDER)
    assert block is not None and rows.height == LIMIT
    assert rows["memory_id"].to_list() != [m["id"] for m in answer["memories"]][:LIMIT]
    assert rows["model_version"].unique().to_list() == [runs["model_version"][0]]


@pytest.mark.parametrize("fmt", list(HARNESS_ARGS))
def test_the_resident_scorer_ranks_the_trained_model_as_the_hook_does_itself(trained, fmt):
    """With a model whose features and time terms count, the resident's ranking (the store
    read while Signet works, the rest once it answers) is the in-process one, to the bit."""
    world, now = trained
    env = world.env()
    argv = ["--limit", str(LIMIT), "session-start", *HARNESS_ARGS[fmt]]
    served = ServedResident(world)
    try:
        got = run_hook(
            [*world.options(resident="auto"), *argv],
            stdin_for(KEY),
            env=env,
            runner=runner_for(env),
            now=now,
        )
    finally:
        assert served.close() == 0
    own = run_hook(
        [*world.options(), *argv], stdin_for(KEY), env=env, runner=runner_for(env), now=now
    )
    assert got.invocation["outcome"] == "scorer" and not got.start_resident  # it answered
    assert (got.stdout, got.stderr, got.code) == (own.stdout, own.stderr, own.code)
    assert got.injections == own.injections and len(own.injections) == LIMIT
    assert got.invocation == {**own.invocation, "duration_ms": got.invocation["duration_ms"]}
