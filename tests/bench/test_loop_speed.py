"""`bench loop`'s session-start timing runs the loop's own session start, graph included."""

from __future__ import annotations

import math

import pytest

from signet_bench.bench.loop_speed import WARMUP, session_start_latencies
from signet_bench.daemon.ranking.session_start import GraphWalk, session_start
from signet_bench.store.corpus import read_corpus
from signet_bench.store.graph import read_graph
from signet_bench.store.read import open_readonly
from signet_bench.world.synth.build import build_persona_store
from signet_bench.world.synth.persona import get_persona
from signet_bench.world.synth.plans import plan_sessions
from signet_bench.world.synth.truth import load_truth


@pytest.fixture(scope="module")
def architect(tmp_path_factory):
    path = tmp_path_factory.mktemp("loop") / "architect.db"
    build_persona_store(get_persona("architect"), path, seed=3, n_memories=300)
    return path


def test_one_latency_per_timed_start(architect):
    got = session_start_latencies(architect, 6, seed=1)
    assert len(got) == 6
    assert all(math.isfinite(ms) and ms > 0 for ms in got)


def test_the_timed_starts_walk_the_graph(architect):
    """The store the timing runs on has a graph that the planned starts reach, so the timed
    call includes traversal (the call the benchmark makes, on the same plan)."""
    con = open_readonly(architect)
    try:
        persona, truth = load_truth(con)
        corpus, graph = read_corpus(con), read_graph(con)
    finally:
        con.close()
    assert graph.has_graph
    plans = plan_sessions(persona, WARMUP + 6, start=truth.now, seed=1)
    sources = {
        str(s)
        for ctx in plans[WARMUP:]
        for s in session_start(
            corpus, ctx.start.timestamp(), project=ctx.project, walk=GraphWalk(graph)
        ).source
    }
    assert "ka_traversal" in sources
