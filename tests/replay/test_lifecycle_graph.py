"""The session lifecycle on a store with a knowledge graph: it reads the graph once, walks it at
every session start, records the rows the graph brought with source 'ka_traversal' and their
path, injects the focal entities' constraints every session, hands the scorer the traversal
flags, and the trainer reads back from the store exactly the inputs the loop computed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from signet_bench.daemon.ranking.traversal import pool_quota
from signet_bench.learn.samples import load_samples
from signet_bench.replay.lifecycle import Lifecycle, LoopOptions
from signet_bench.replay.loop_store import LoopStore
from signet_bench.store.corpus import read_corpus
from signet_bench.store.graph import read_graph
from signet_bench.store.read import open_readonly
from signet_bench.store.schema import connect_writer
from signet_bench.store.timestamps import parse_ts
from signet_bench.world.synth.build import build_persona_store
from signet_bench.world.synth.persona import get_persona
from signet_bench.world.synth.truth import read_synth_meta
from signet_scorer.features import FEATURE_INDEX
from tests.replay.test_lifecycle import CFG, LoggingTrainer, ScriptedWorld, _texts

SESSIONS = 5
CONSTRAINT = "the rule"


def _add_graph(db: Path) -> tuple[str, list[str]]:
    """A pinned entity over the 120 oldest live memories (importance 0.99), one of them a
    constraint of a project the sessions do not work in; returns that memory's id and the
    pinned entity's memories."""
    con = connect_writer(db)
    try:
        ids = [
            r[0]
            for r in con.execute(
                "SELECT id FROM memories WHERE is_deleted = 0 AND id NOT IN"
                " (SELECT memory_id FROM memories_cold) AND id NOT IN (SELECT memory_id"
                " FROM entity_attributes WHERE memory_id IS NOT NULL) ORDER BY created_at, id"
            )
        ]  # live, never superseded, in no graph yet
        con.execute(
            "INSERT INTO entities (id, name, entity_type, created_at, updated_at, pinned)"
            " VALUES ('hog', 'Everything', 'concept', '2020-01-01', '2020-01-01', 1)"
        )
        for a in range(6):
            con.execute(
                "INSERT INTO entity_aspects (id, entity_id, name, canonical_name, weight)"
                " VALUES (?, 'hog', ?, ?, ?)",
                (f"asp{a}", f"asp{a}", f"asp{a}", 1.0 - a / 10),
            )
        hog = ids[:120]
        for i, mid in enumerate(hog):
            kind = "constraint" if i == 0 else "attribute"
            con.execute(
                "INSERT INTO entity_attributes (id, aspect_id, memory_id, kind, content,"
                " normalized_content, importance) VALUES (?, ?, ?, ?, 'a', 'a', ?)",
                (f"attr{i}", f"asp{i % 6}", mid, kind, 0.4 if i == 0 else 0.99),
            )
        con.execute("UPDATE memories SET project = '/another/project' WHERE id = ?", (hog[0],))
    finally:
        con.close()
    return hog[0], hog


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    db = tmp_path_factory.mktemp("lifecycle-graph") / "memories.db"
    build_persona_store("light", db, seed=11, n_memories=150, schema="current")
    constraint, hog = _add_graph(db)
    now = parse_ts(read_synth_meta(db)["now"])
    world = ScriptedWorld(now, get_persona("light").projects[0].name, _texts(db))
    con = connect_writer(db)
    try:
        loop = Lifecycle(
            LoopStore(db, con, read_corpus(con)), world, LoggingTrainer(), LoopOptions(seed=4), CFG
        )
        report = loop.run(SESSIONS, keep=range(SESSIONS))
        again = loop.run(SESSIONS)
    finally:
        con.close()
    return db, constraint, set(hog), loop.records, report, again


def _rows(db: Path) -> list[tuple]:
    con = open_readonly(db)
    try:
        return con.execute(
            "SELECT session_key, memory_id, source, path_json, is_constraint, was_injected"
            " FROM session_memories WHERE source <> 'fts_only' ORDER BY session_key, rank"
        ).fetchall()
    finally:
        con.close()


def test_rows_carry_the_graphs_source_and_path(run):
    db, constraint, hog, _, report, again = run
    assert report.sessions_run == SESSIONS and again.sessions_run == 0  # a rerun changes nothing
    rows = _rows(db)
    joined = [r for r in rows if r[2] == "ka_traversal"]
    per_session = {k: sum(1 for r in joined if r[0] == k) for k, *_ in rows}
    assert joined and max(per_session.values()) <= pool_quota(CFG)
    assert all(r[1] in hog and '"entity_ids":["hog"]' in r[3] for r in joined)
    graph = read_graph(db)
    in_graph = set(graph.attr_memory.tolist()) | set(graph.mention_memory.tolist())
    assert all(r[1] in in_graph for r in rows if r[3] is not None)  # paths where it reached
    for key in per_session:
        rule = [r for r in rows if r[0] == key and r[1] == constraint]
        assert rule and rule[0][4] == 1 and rule[0][5] == 1, key  # forced in, every session


def test_the_scorer_saw_the_flags_and_the_injection_share_held(run):
    db, constraint, _, records, *_ = run
    corpus = read_corpus(db)
    for rec in records.values():
        res, inputs = rec.start, rec.inputs
        assert res.flags is not None
        traversal = inputs.features[:, FEATURE_INDEX["is_traversal"]]
        np.testing.assert_array_equal(traversal == 1, res.source == "ka_traversal")
        at = inputs.memory_ids.tolist().index(constraint)
        assert inputs.features[at, FEATURE_INDEX["is_constraint"]] == 1
        carried = res.flags.carried & res.was_injected & ~res.is_constraint
        chars = sum(len(corpus.contents[i]) for i in res.index[carried])
        assert chars <= CFG.traversal_max_share * CFG.injection_budget_chars


def test_the_trainer_reads_back_what_the_loop_computed(run):
    db, _, _, records, *_ = run
    samples, _ = load_samples(db, tz="UTC", seed=4)
    by_key = {s.session_key: s for s in samples}
    compared = 0
    for rec in records.values():
        s = by_key.get(rec.plan.session_key)
        if s is None:
            continue
        pos = {m: j for j, m in enumerate(rec.inputs.memory_ids.tolist())}
        common = [j for j, m in enumerate(s.memory_ids.tolist()) if m in pos]
        at_start = [pos[s.memory_ids[j]] for j in common]
        np.testing.assert_array_equal(rec.inputs.features[at_start], s.features[common])
        compared += len(common)
    assert compared > 100
