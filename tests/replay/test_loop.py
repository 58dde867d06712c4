"""The session loop (signet_bench.replay.loop) on small synthetic stores: every scored session gets a
comparison; cold start, alpha, EMA, drift resets, exploration and per-project slices follow the
specification's rules (checked by replaying them from the recorded rows); each session is one
transaction; re-running is idempotent; the signet-0.58 mode reproduces recorded ranks."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.ranking.compat import signet058_session_start
from signet_bench.daemon.session_query import start_query
from signet_bench.learn.samples import load_samples
from signet_bench.replay.loop import SimOptions, Simulator, simulate
from signet_bench.store import sim as store_sim
from signet_bench.store import write as store_write
from signet_bench.store.corpus import Corpus
from signet_bench.store.graph import read_graph
from signet_bench.store.read import open_readonly, read_memories
from signet_bench.store.timestamps import parse_ts
from signet_bench.world.synth.build import build_persona_store
from signet_bench.world.synth.persona import get_persona
from signet_scorer.budget import Budget, token_costs

CFG = DEFAULT_CONFIG
SESSION_TABLES = (
    "session_memories",
    "session_scores",
    "summary_jobs",
    "session_checkpoints",
    "predictor_comparisons",
    "sim_sessions",
)


def _query(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    con = open_readonly(db)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def _dump(db: Path) -> dict[str, list[tuple]]:
    """Every row of every ordinary table (FTS shadow tables left out), sorted."""
    con = open_readonly(db)
    try:
        names = [
            r[0]
            for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                "'sqlite_%' AND name NOT LIKE 'memories_fts%' ORDER BY name"
            )
        ]
        return {n: sorted(con.execute(f'SELECT * FROM "{n}"').fetchall(), key=repr) for n in names}
    finally:
        con.close()


# --- one 240-session run with the random scorer, shared by the rule checks -------------------


@pytest.fixture(scope="module")
def random_run(tmp_path_factory: pytest.TempPathFactory):
    """Four projects (so project slices fill), 300 memories, 240 sessions, scorer random."""
    db = tmp_path_factory.mktemp("loop") / "multi.db"
    build_persona_store("multi-project", db, seed=1, n_memories=300)
    report = simulate(db, 240, SimOptions(scorer="random", seed=1))
    samples, _ = load_samples(db, tz=get_persona("multi-project").tz, seed=1)
    return db, report, {s.session_key for s in samples}


def _sessions(db: Path) -> list[dict]:
    """Per session (plan order): what sim_sessions, session_scores and the comparison hold."""
    rows = _query(
        db,
        "SELECT s.idx, s.session_key, s.project, s.alpha, s.explored_memory_id, "
        "sc.confidence, c.alpha, c.predictor_won, c.ema_updated, c.success_rate, "
        "c.candidate_count FROM sim_sessions s "
        "JOIN session_scores sc ON sc.session_key = s.session_key "
        "JOIN predictor_comparisons c ON c.session_key = s.session_key ORDER BY s.idx",
    )
    keys = [
        "idx",
        "key",
        "project",
        "alpha",
        "explored",
        "confidence",
        "cmp_alpha",
        "won",
        "ema_updated",
        "success_rate",
        "candidate_count",
    ]
    return [dict(zip(keys, r, strict=True)) for r in rows]


def _replay(sessions: list[dict], trainable: set[str]) -> tuple[list[dict], dict]:
    """The state machine of docs/specification.md §7 written out again, driven only by recorded
    rows: cold start exits when trained, >= 10 sessions that yield training data (`trainable`: the
    trainer's samples of the store) and success > 0.4; the EMA moves (0.1) on confident scored
    sessions; drift (Phase 5b) resets when the success rate stayed below 0.3 for 10
    consecutive such sessions; training every 10 comparisons or after a reset (the random
    scorer's trainings are always accepted). Returns per-session facts and the final state."""
    success, exited, trained = CFG.initial_success_rate, False, False
    scored = after = since_training = low = 0
    slices: dict[str, float] = {}
    counts: dict[str, int] = {}
    resets: list[int] = []
    out = []
    for s in sessions:
        if (
            not exited
            and trained
            and scored >= CFG.min_training_sessions
            and success > CFG.cold_start_min_success_rate
        ):
            exited, after = True, 0
        if exited:
            after += 1
        out.append({"cold": not exited, "success": success, "after": after})
        confident = s["confidence"] >= CFG.min_scorer_confidence
        scored += int(s["key"] in trainable)
        since_training += 1
        reset = False
        if confident:  # the random scorer always scores, so confidence alone decides
            win = int(s["won"])
            success = 0.1 * win + 0.9 * success
            p = s["project"]
            counts[p] = counts.get(p, 0) + 1
            slices[p] = 0.1 * win + 0.9 * slices.get(p, 0.5)
            low = low + 1 if success < CFG.drift_reset_threshold else 0
            if low >= CFG.drift_reset_window:
                success, exited, trained, after, low = 0.5, False, False, 0, 0
                resets.append(s["idx"])
                reset = True
        if since_training >= 10 or reset:
            trained, since_training = True, 0
    final = {
        "success_rate": success,
        "cold_start_exited": exited,
        "scored_sessions": scored,
        "drift_resets": len(resets),
        "resets": resets,
        "project_success": slices,
        "project_sessions": counts,
    }
    return out, final


def _expected_alpha(fact: dict) -> float:
    """1.0 in cold start; then max(ramp floor, 1 - success): 0.8 for sessions 1-10 after the
    exit, 0.6 for 11-20, no floor later."""
    if fact["cold"]:
        return 1.0
    floor = 0.8 if fact["after"] <= 10 else 0.6 if fact["after"] <= 20 else 0.0
    return min(1.0, max(floor, 1.0 - fact["success"]))


def test_every_scored_session_has_one_comparison(random_run):
    db, report, _ = random_run
    assert report.sessions_run == report.comparisons == 240
    sim = {r[0] for r in _query(db, "SELECT session_key FROM sim_sessions")}
    scored = {r[0] for r in _query(db, "SELECT session_key FROM session_scores")}
    cmp_rows = _query(db, "SELECT session_key FROM predictor_comparisons")
    assert len(sim) == 240
    assert scored == sim
    assert len(cmp_rows) == 240 and {r[0] for r in cmp_rows} == sim
    # each comparison counts the session's rows; every start candidate was scored
    per_session = {
        r[0]: r[1:]
        for r in _query(
            db,
            "SELECT session_key, COUNT(*), COUNT(*) FILTER (WHERE source <> 'fts_only'), "
            "COUNT(*) FILTER (WHERE source <> 'fts_only' AND predictor_score IS NOT NULL) "
            "FROM session_memories GROUP BY session_key",
        )
    }
    for s in _sessions(db):
        rows, start_rows, scored_rows = per_session[s["key"]]
        # candidate_count is the session-start pool (RRF's N), fts_only rows excluded
        assert start_rows == s["candidate_count"] and rows >= start_rows
        assert start_rows == scored_rows > 0


def test_ema_and_drift_resets_follow_the_rules(random_run):
    db, report, trainable = random_run
    sessions = _sessions(db)
    facts, final = _replay(sessions, trainable)
    for s, f in zip(sessions, facts, strict=True):
        # the comparison row records the success rate in force when the session started
        assert s["success_rate"] == pytest.approx(f["success"], abs=1e-9), s["idx"]
        assert bool(s["ema_updated"]) == (s["confidence"] >= CFG.min_scorer_confidence)
    # the random scorer keeps losing, so drift resets happen, each time the window says so
    resets = [i for i, kind in report.events if kind == "drift_reset"]
    assert len(resets) >= 2
    assert resets == final["resets"]
    after_reset = {r + 1 for r in resets if r + 1 < len(sessions)}
    for s in sessions:
        if s["idx"] in after_reset:
            assert s["success_rate"] == CFG.initial_success_rate
    state = json.loads(_query(db, "SELECT state_json FROM sim_predictor_state")[0][0])
    assert state["drift_resets"] == report.drift_resets == len(resets)
    assert state["success_rate"] == pytest.approx(final["success_rate"], abs=1e-9)
    assert state["scored_sessions"] == final["scored_sessions"]
    assert state["cold_start_exited"] == final["cold_start_exited"]


def test_alpha_is_one_during_cold_start_then_earned(random_run):
    db, report, trainable = random_run
    sessions = _sessions(db)
    facts, _ = _replay(sessions, trainable)
    cold = [s for s, f in zip(sessions, facts, strict=True) if f["cold"]]
    warm = [s for s, f in zip(sessions, facts, strict=True) if not f["cold"]]
    assert len(cold) >= CFG.min_training_sessions and len(warm) >= 100
    assert sessions[0]["idx"] == 0 and facts[0]["cold"]
    assert all(s["alpha"] == 1.0 for s in cold)
    for s, f in zip(sessions, facts, strict=True):
        assert s["alpha"] == pytest.approx(_expected_alpha(f), abs=1e-9), s["idx"]
        assert s["cmp_alpha"] == s["alpha"]
    assert any(s["alpha"] < 0.8 for s in warm)  # past the ramp, alpha follows success
    # the first exit is reported where the replay puts it
    first_warm = next(s["idx"] for s, f in zip(sessions, facts, strict=True) if not f["cold"])
    assert report.cold_start_exit_session == first_warm


def test_exploration_only_after_cold_start_at_about_five_percent(random_run):
    db, report, trainable = random_run
    sessions = _sessions(db)
    facts, _ = _replay(sessions, trainable)
    rows = _query(
        db,
        "SELECT session_key, memory_id, was_injected FROM session_memories "
        "WHERE source = 'exploration'",
    )
    by_session: dict[str, list[tuple]] = {}
    for key, mid, injected in rows:
        by_session.setdefault(key, []).append((mid, injected))
    warm = 0
    for s, f in zip(sessions, facts, strict=True):
        explored = by_session.get(s["key"], [])
        if f["cold"]:
            assert not explored and s["explored"] is None, s["idx"]
            continue
        warm += 1
        if explored:
            assert len(explored) == 1
            assert explored[0] == (s["explored"], 1)  # swapped in, recorded in sim_sessions
        else:
            assert s["explored"] is None
    assert len(by_session) == report.exploration_rows
    share = len(by_session) / warm
    assert 0.015 <= share <= 0.10, (len(by_session), warm)


def test_per_project_slices_filled(random_run):
    db, _, trainable = random_run
    sessions = _sessions(db)
    _, final = _replay(sessions, trainable)
    state = json.loads(_query(db, "SELECT state_json FROM sim_predictor_state")[0][0])
    projects = {s["project"] for s in sessions}
    assert len(projects) == 4
    assert set(state["project_success"]) == projects  # 4 <= max_project_slices (5)
    assert state["project_sessions"] == final["project_sessions"]
    for p, v in final["project_success"].items():
        assert state["project_success"][p] == pytest.approx(v, abs=1e-9), p
        assert v != CFG.initial_success_rate
    # the comparison rows carry the project too, for the dashboard's slices
    cmp_projects = {r[0] for r in _query(db, "SELECT DISTINCT project FROM predictor_comparisons")}
    assert cmp_projects == projects


# --- transactions and idempotency ------------------------------------------------------------


@pytest.fixture
def two_light_stores(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    build_persona_store("light", a, seed=5, n_memories=150)
    build_persona_store("light", b, seed=5, n_memories=150)
    assert _dump(a) == _dump(b)
    return a, b


def test_rerun_is_idempotent(two_light_stores):
    db, _ = two_light_stores
    first = simulate(db, 30, SimOptions(scorer="random", seed=2))
    assert first.sessions_run == 30
    before = _dump(db)
    again = simulate(db, 30, SimOptions(scorer="random", seed=2))
    assert (again.sessions_run, again.sessions_skipped, again.comparisons) == (0, 30, 0)
    assert _dump(db) == before


def test_failed_session_is_not_recorded_and_resume_matches(two_light_stores, monkeypatch):
    straight, crashed = two_light_stores
    opts = SimOptions(scorer="random", seed=2)
    simulate(straight, 30, opts)
    victim = _query(straight, "SELECT session_key FROM sim_sessions WHERE idx = 20")[0][0]

    real = store_write.insert_comparison

    def failing(con, session_key, row):
        if session_key == victim:
            raise RuntimeError("simulated crash at the comparison")
        return real(con, session_key, row)

    monkeypatch.setattr(store_write, "insert_comparison", failing)
    with pytest.raises(RuntimeError, match="simulated crash"):
        simulate(crashed, 30, opts)
    monkeypatch.setattr(store_write, "insert_comparison", real)

    assert [r[0] for r in _query(crashed, "SELECT idx FROM sim_sessions ORDER BY idx")] == list(
        range(20)
    )
    for table in SESSION_TABLES:  # nothing of the failed session, though most was written
        n = _query(crashed, f"SELECT COUNT(*) FROM {table} WHERE session_key = ?", (victim,))
        assert n == [(0,)], table
    resumed = simulate(crashed, 30, opts)
    assert (resumed.sessions_run, resumed.sessions_skipped) == (10, 20)
    assert _dump(crashed) == _dump(straight)


class _Tracer:
    """Every statement the simulator's writer connection runs, with the Python file that ran it
    and whether a transaction was open at the time."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, str, bool]] = []
        self.con: sqlite3.Connection | None = None

    def __call__(self, sql: str) -> None:
        caller = sys._getframe(1).f_code.co_filename
        self.statements.append((sql.strip(), caller, bool(self.con and self.con.in_transaction)))

    @staticmethod
    def is_write(statement: tuple[str, str, bool]) -> bool:
        verbs = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP", "ALTER")
        return statement[0].upper().startswith(verbs)

    def writes(self) -> list[tuple[str, str, bool]]:
        return [s for s in self.statements if self.is_write(s)]


@pytest.fixture
def traced(monkeypatch, tmp_path: Path) -> Iterator[tuple[Path, _Tracer]]:
    import signet_bench.replay.loop as loop_mod

    db = tmp_path / "traced.db"
    build_persona_store("light", db, seed=7, n_memories=150)
    tracer = _Tracer()
    real = loop_mod.connect_writer

    def connect(path):
        con = real(path)
        tracer.con = con
        con.set_trace_callback(tracer)
        return con

    monkeypatch.setattr(loop_mod, "connect_writer", connect)
    yield db, tracer


def test_each_session_is_one_transaction(traced):
    """Check a session's rows are written in one transaction; a training it makes due runs on
    the committed store and writes only its log, the state and the pending mark, in a second
    transaction."""
    db, tracer = traced
    sim = Simulator(db, SimOptions(scorer="random", seed=3))
    try:
        plan = sim.plan(25)
        start = len(tracer.statements)
        from signet_bench.replay.lifecycle import SimReport

        report = SimReport()
        trainings = 0
        for i, ctx in enumerate(plan):
            mark = len(tracer.statements)
            sim.run_session(i, ctx, report)
            mine = tracer.statements[mark:]
            begins = [j for j, s in enumerate(mine) if s[0].upper().startswith("BEGIN")]
            commits = [j for j, s in enumerate(mine) if s[0].upper() == "COMMIT"]
            assert len(begins) == len(commits) in (1, 2), i
            writes = [s for s in mine if tracer.is_write(s)]
            assert writes and all(in_tx for _, _, in_tx in writes), i
            # nothing is written before the session's transaction opens or after it commits
            assert not any(tracer.is_write(s) for s in mine[: begins[0]])
            assert mine[-1] == mine[commits[-1]]
            if len(begins) == 2:
                trainings += 1
                second = [s[0] for s in mine[begins[1] :] if tracer.is_write(s)]
                assert second and all(
                    "sim_predictor_state" in q or "sim_meta" in q or "predictor_training_log" in q
                    for q in second
                ), second
        assert trainings == report.trainings >= 2
        assert len(tracer.statements) > start
    finally:
        sim.close()


def test_every_write_goes_through_the_writer_modules(traced):
    """Signet's tables are written by store/write.py, the simulator's own by store/sim.py."""
    db, tracer = traced
    simulate(db, 20, SimOptions(scorer="random", seed=3))
    writers = {str(Path(m.__file__).resolve()) for m in (store_write, store_sim)}
    outside = sorted(
        {
            (Path(f).name, sql.split("(")[0][:60])
            for sql, f, _ in tracer.writes()
            if f not in writers
        }
    )
    assert not outside, outside
    sim_writes = [sql for sql, f, _ in tracer.writes() if f.endswith("sim.py")]
    assert sim_writes and all(" sim_" in sql for sql in sim_writes)


# --- signet-0.58 mode: the recorded ranks are the real daemon's --------------------------------


def test_compat_mode_reproduces_recorded_ranks(tmp_path: Path):
    db = tmp_path / "compat.db"
    build_persona_store("light", db, seed=11, n_memories=250)
    report = simulate(db, 60, SimOptions(scorer="random", mode="signet-0.58", seed=4))
    assert report.sessions_run == 60

    con = open_readonly(db)
    try:
        mem = read_memories(con)  # live memories, as the daemon's SELECT sees them
        raw_created = dict(con.execute("SELECT id, created_at FROM memories"))
        sessions = con.execute(
            "SELECT idx, session_key, project, started_at FROM sim_sessions ORDER BY idx"
        ).fetchall()
        recorded, terms = {}, {}
        for _, key, proj, started_at in sessions:
            recorded[key] = con.execute(
                "SELECT memory_id, rank, was_injected, effective_score, source"
                " FROM session_memories WHERE session_key = ? AND source <> 'fts_only'"
                " ORDER BY rank",
                (key,),
            ).fetchall()
            terms[key] = start_query(con, proj, parse_ts(started_at)).terms
        other_sources = {
            r[0]
            for r in con.execute(
                "SELECT DISTINCT source FROM session_memories WHERE source <> 'effective'"
            )
        }
        graph = read_graph(con)  # the knowledge graph its supersessions left
    finally:
        con.close()
    assert other_sources <= {"fts_only", "ka_traversal"}  # no exploration, no fusion sources

    f = mem.frame
    # any input order: the daemon's SQL orders rows itself
    perm = np.random.default_rng(0).permutation(f.height)
    ids = np.asarray(f["id"].to_list(), dtype=object)[perm]
    created = (f["created_at"].dt.epoch("us").to_numpy() / 1e6)[perm]
    importance = f["importance"].to_numpy().astype(np.float64)[perm]
    pinned = f["pinned"].to_numpy().astype(bool)[perm]
    project = np.asarray(f["project"].to_list(), dtype=object)[perm]
    contents = [f["content"][int(i)] for i in perm]
    emb = mem.embeddings[perm]
    has = f["has_embedding"].to_numpy().astype(bool)[perm]
    created_text = np.asarray([raw_created[m] for m in ids], dtype=object)
    corpus = dataclasses.replace(
        Corpus.from_arrays(
            ids,
            created,
            importance,
            emb,
            contents=contents,
            has_embedding=has,
            pinned=pinned,
            project=project,
        ),
        created_text=created_text,
    )

    checked = injected_total = 0
    for idx, key, proj, started_at in sessions[::4]:
        start = parse_ts(started_at).timestamp()
        res = signet058_session_start(
            corpus,
            proj,
            start,
            CFG,
            is_deleted=created > start,
            graph=graph,
            query_terms=terms[key],
        )
        rows = recorded[key]
        assert [r[1] for r in rows] == list(range(len(rows))), idx  # ranks 0..N-1
        assert [r[0] for r in rows] == [str(m) for m in res.memory_id], idx
        assert [r[4] for r in rows] == res.source.tolist(), idx
        assert [bool(r[2]) for r in rows] == res.was_injected.tolist(), idx
        np.testing.assert_allclose([r[3] for r in rows], res.effective_score, rtol=1e-9)
        checked += 1
        injected_total += int(res.was_injected.sum())
    assert checked == 15 and injected_total > 0


def test_a_budget_choice_sets_what_each_session_injects(tmp_path: Path):
    """With a choice (K 12 within 600 tokens) every session injects, besides its constraints,
    12 memories within 600 tokens (`signet_scorer.budget`) in place of the character budget's
    choice; the labels read these rows (`daemon.labels`)."""
    db = tmp_path / "light.db"
    build_persona_store("light", db, seed=5, n_memories=150)
    simulate(db, 12, SimOptions(scorer="random", seed=2, choice=Budget(k=12, tokens=600)))
    sql = """SELECT sm.session_key, m.content, sm.is_constraint, sm.was_injected
             FROM session_memories sm JOIN memories m ON m.id = sm.memory_id"""
    rows = _query(db, sql)
    by: dict[str, list[tuple[str, int, int]]] = {}
    for key, content, cons, injected in rows:
        by.setdefault(key, []).append((content, cons, injected))
    assert len(by) == 12
    counts = []
    for got in by.values():
        chosen = [c for c, cons, inj in got if inj and not cons]
        assert len(chosen) <= 12 and sum(token_costs(chosen)) <= 600
        counts.append(len(chosen))
    # K binds here, not the characters: the 2,000-character budget injects 27 of these
    assert counts == [12] * 12
