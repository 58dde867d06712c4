"""`bench quality` on a persona with a knowledge graph: the structure ablation (the graph's
feature columns zeroed, their gate weights held), the pool recall with and without the graph's
traversal, and their rows and page. On a small architect store and on a hand-made one."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from signet_bench.bench.docs_page import benchmarks_markdown
from signet_bench.bench.quality import (
    ABLATIONS,
    GRAPH_ABLATION_RETRAINS,
    Judging,
    Offline,
    Run,
    ablate_samples,
    ablation_frozen,
    ablation_selection,
    persona_rows,
    pool_recall,
    previous_used,
    retrain_seed,
    run_pool_recalls,
    simulate_run,
    start_pool,
    truly_relevant,
)
from signet_bench.bench.train_speed import synthetic_samples
from signet_bench.config import DEFAULT_CONFIG
from signet_bench.learn.model.params import init_params
from signet_bench.learn.train import Guard, TrainOptions, train_model
from signet_bench.store import write
from signet_bench.store.corpus import read_corpus
from signet_bench.store.graph import read_graph
from signet_bench.store.timestamps import format_iso
from signet_bench.world.synth.truth import EFFECTS
from signet_scorer.features import feature_indices
from tests.store.graph_stores import GraphStore

GRAPH_COLUMNS = [12, 13, 14, 15, 16]
CHECKPOINTS = (4, 10)


def _graph_featured(samples):
    """The samples with every knowledge-graph column set to a nonzero value."""
    rng = np.random.default_rng(5)
    out = []
    for s in samples:
        f = np.array(s.features, copy=True)
        f[:, GRAPH_COLUMNS] = rng.uniform(0.1, 1.0, (len(s), len(GRAPH_COLUMNS)))
        out.append(dataclasses.replace(s, features=f))
    return out


def test_the_structure_ablation_zeroes_exactly_the_graph_columns():
    assert list(feature_indices("entity_slot", "is_traversal")) == [12, 16]
    assert ABLATIONS["structure"].effects == ("graph",)
    samples = _graph_featured(synthetic_samples(4, dim=16, seed=2))
    for s, a in zip(samples, ablate_samples(samples, "structure"), strict=True):
        assert s.features[:, GRAPH_COLUMNS].all() and not a.features[:, GRAPH_COLUMNS].any()
        np.testing.assert_array_equal(
            np.delete(a.features, GRAPH_COLUMNS, 1), np.delete(s.features, GRAPH_COLUMNS, 1)
        )
        np.testing.assert_array_equal(a.context, s.context)
        assert a.project_slot == s.project_slot


def test_the_structure_ablation_holds_exactly_the_graph_columns_gate_weights():
    params = init_params(DEFAULT_CONFIG, 16)
    v_dim = DEFAULT_CONFIG.value_dim
    mask = ablation_frozen("structure", params)["gate_proj"]
    assert mask.shape == params["gate_proj"].shape
    assert np.flatnonzero(mask.reshape(-1)).tolist() == [v_dim + c for c in GRAPH_COLUMNS]
    samples = _graph_featured(synthetic_samples(24, dim=16, seed=3))
    # any held-out lead is served; the base is the start itself
    cfg = DEFAULT_CONFIG.replace(holdout_gain_evidence=0.0, serving_confidence=0.5)
    guard = Guard(previous_is_trained=False, base=params)
    held = train_model(
        samples,
        params,
        cfg=cfg,
        epochs=3,
        seed=1,
        guard=guard,
        options=TrainOptions(frozen={"gate_proj": mask}),
    )
    free = train_model(samples, params, cfg=cfg, epochs=3, seed=1, guard=guard)
    assert held.params is not None and free.params is not None
    np.testing.assert_array_equal(held.params["gate_proj"][mask], 0.0)
    assert np.abs(free.params["gate_proj"][mask]).max() > 0.0  # the hold is what keeps them


def test_ablation_names_are_checked():
    assert ablation_selection(["structure", "effect_graph"]) == {"structure", "effect_graph"}
    assert ablation_selection(False) == frozenset()
    assert {"structure", "effect_graph", "time"} <= ablation_selection(True)
    with pytest.raises(ValueError, match="unknown ablations \\['graph'\\]"):
        ablation_selection(["graph"])


# -- pool recall on a hand-made store: the graph alone brings a relevant memory --------------

START = datetime(2026, 3, 1, tzinfo=UTC)
PROJECT = "/home/me/app"


def _hand_made_store(path: Path) -> Path:
    """200 memories, m000 newest, a fifth of a day apart; the project's entity 'app' has one
    aspect whose attribute is m190, old and far from the top of the baseline order."""
    g = GraphStore(path)
    rng = np.random.default_rng(0)
    rows = [
        {
            "id": f"m{i:03d}",
            "content": f"memory {i:03d} " + "x" * int(rng.integers(40, 200)),
            "importance": float(rng.uniform(0.3, 1.0)),
            "created_at": format_iso(START - timedelta(days=0.2 * i + 0.01)),
            "project": PROJECT,
        }
        for i in range(200)
    ]
    write.insert_memories(g.con, rows, history=False)
    vectors = rng.standard_normal((200, 8)).astype(np.float32)
    write.insert_embeddings(g.con, [r["id"] for r in rows], vectors, "test")
    g.entity("app", "app", mentions=3)
    g.aspect("app-design", "app", weight=0.9)
    g.attribute("m190", "app-design", importance=0.95)
    return g.close()


def test_pool_recall_counts_the_relevant_memory_only_the_graph_brings(tmp_path):
    path = _hand_made_store(tmp_path / "m.db")
    corpus, graph = read_corpus(path), read_graph(path)
    now = START.timestamp()
    kw = {"project": PROJECT, "previous_used": (), "query_terms": (), "cfg": DEFAULT_CONFIG}
    with_graph = start_pool(corpus, now, graph=graph, **kw)
    without = start_pool(corpus, now, graph=None, **kw)
    row = corpus.row_of["m190"]
    assert row in with_graph and row not in without
    relevance = np.zeros(len(corpus.ids))
    relevance[row] = 1.0
    relevance[without[:4]] = 0.5  # four relevant memories both pools hold
    stale = next(r for r in with_graph[::-1] if relevance[r] == 0)
    relevance[stale] = -0.3  # below 0: never counted as relevant
    live = ~corpus.absent_at(now)
    relevant = truly_relevant(relevance, corpus.ids, live)
    assert relevant[0] == row and len(relevant) == 5
    assert pool_recall(relevant, with_graph) == 1.0
    assert pool_recall(relevant, without) == pytest.approx(0.8)
    assert np.isnan(pool_recall(relevant[:0], with_graph))


def test_the_truly_relevant_are_the_top_k_live_ones_ties_by_id():
    ids = np.array(["m4", "m3", "m2", "m1", "m0"], dtype=object)
    relevance = np.array([0.9, 0.5, 0.5, 1.0, 0.2])
    live = np.array([True, True, True, False, True])
    np.testing.assert_array_equal(truly_relevant(relevance, ids, live, k=3), [0, 2, 1])


# -- a small architect store, through the benchmark ------------------------------------------


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    run = simulate_run(
        "architect",
        5,
        Judging(CHECKPOINTS, 8),
        tmp_path_factory.mktemp("architect"),
        DEFAULT_CONFIG,
        "topic",
        n_memories=300,
    )
    yield run
    run.sim.close()


@pytest.fixture(scope="module")
def rows(run):
    return persona_rows([run], CHECKPOINTS, "", DEFAULT_CONFIG, {"structure", "effect_graph"})


def test_the_held_out_pools_are_the_session_starts_the_loop_ran(run: Run):
    """The pool without the graph is computed from the same session start: with the loop's
    graph, the same replayed previous session and query gives back the recorded pool."""
    assert run.has_graph
    used = previous_used(run.sim.con)
    for h in run.held:
        again = start_pool(
            run.sim.corpus,
            h.plan.start.timestamp(),
            project=h.plan.project,
            previous_used=used.get(h.plan.session_key, ()),
            query_terms=h.inputs.query.terms,
            graph=run.sim.loop.graph,
            cfg=run.sim.cfg,
        )
        np.testing.assert_array_equal(again, h.inputs.rows)


def test_a_stores_first_retrain_keeps_its_seed_and_the_others_differ():
    assert retrain_seed(7, 0) == 7
    seeds = [retrain_seed(7, k) for k in range(GRAPH_ABLATION_RETRAINS)]
    assert len(set(seeds)) == len(seeds)


def test_architect_rows_exist_with_finite_values(run: Run, rows):
    by = {(r.name, r.metric, r.n): r for r in rows}
    assert all(np.isfinite(r.value) for r in rows)
    shares = [r.name for r in rows if r.metric == "variance_share"]
    assert shares == [f"truth_share_{e}" for e in EFFECTS]  # the graph's beside the others
    assert by["truth_share_graph", "variance_share", None].value > 0.0
    recalls = run_pool_recalls(run)
    for n in CHECKPOINTS:
        got = [recalls[h.plan.session_key] for h in run.pools[n]]
        graph = by["pool_recall_graph", "recall_top10", n]
        plain = by["pool_recall_nograph", "recall_top10", n]
        delta = by["pool_recall_graph-pool_recall_nograph", "recall_top10_delta", n]
        assert graph.value == pytest.approx(np.mean([x.graph for x in got]))
        assert delta.value == pytest.approx(graph.value - plain.value)
        assert delta.ci_low <= delta.value <= delta.ci_high and delta.unit == "share"
        seed = by["seed_5/pool_recall_graph-pool_recall_nograph", "recall_top10_delta", n]
        assert seed.value == pytest.approx(delta.value)  # one seed: the pooled sessions
        assert by["pool_size_graph", "candidates", n].value > 0
    last = max(CHECKPOINTS)
    full = by["ablation_structure", "ndcg@10_full", last].value
    ablated = by["ablation_structure", "ndcg@10_ablated", last].value
    assert full == by["predictor_offline", "ndcg@10", last].value
    assert by["ablation_structure", "ndcg@10_drop", last].value == pytest.approx(full - ablated)
    assert by["seed_5/ablation_structure", "ndcg@10_drop", last].value == pytest.approx(
        full - ablated
    )
    k = GRAPH_ABLATION_RETRAINS
    for label, truth in (("", None), ("true_label_", ())):
        name = f"{label}ablation_structure_retrains"
        full = by[name, "ndcg@10_full", last].value
        each = [run.offline(Offline(last, None, truth, i), DEFAULT_CONFIG).mean() for i in range(k)]
        assert full == pytest.approx(np.mean(each))  # the retrains' mean, retrain 0 among them
        retrains = {m.retrain for m in run.scores if (m.n, m.group, m.truth) == (last, None, truth)}
        assert retrains == set(range(k))  # k retrains were run, each under its own key
        drop = by[name, "ndcg@10_drop", last].value
        assert drop == pytest.approx(full - by[name, "ndcg@10_ablated", last].value)
        assert by[f"seed_5/{name}", "ndcg@10_drop", last].value == pytest.approx(drop)
    assert ("effect_graph", "ndcg@10_drop", last) in by
    assert not any(r.name.startswith("ablation_") and "structure" not in r.name for r in rows)


def test_the_page_shows_the_graph_route(rows):
    doc = {"bench": "quality", "machine": {}, "results": [r.to_json() for r in rows]}
    page = benchmarks_markdown({"quality-architect": doc}, "bench-results", {})
    assert "What the knowledge graph adds" in page
    assert "signet-bench bench quality --personas architect" in page
    for name in (
        "pool_recall_graph",
        "seed_5/pool_recall_graph-pool_recall_nograph",
        "pool_size_nograph",
        "truth_share_graph",
        "seed_5/ablation_structure",
    ):
        assert f"| {name} |" in page
