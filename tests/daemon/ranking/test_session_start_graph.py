"""Both session starts with a knowledge graph (ours and the Signet 0.58 replica): traversal
memories join the pool, the focal entities' constraints are always injected, the graph's share
of the pool and the injection is capped; without a graph, or with one that reaches nothing, the
result is exactly the graph-less one. On small hand-made stores."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.ranking.compat import signet058_session_start
from signet_bench.daemon.ranking.session_start import (
    GraphWalk,
    InjectionLimits,
    Learned,
    SessionStartResult,
    session_start,
)
from signet_bench.daemon.ranking.traversal import pool_quota
from signet_bench.store import write
from signet_bench.store.corpus import Corpus, read_corpus
from signet_bench.store.graph import EntityGraph, read_graph
from signet_bench.store.schema import connect_writer
from signet_bench.store.timestamps import format_iso
from tests.store.graph_stores import GraphStore

START = datetime(2026, 3, 1, tzinfo=UTC)
NOW = START.timestamp()
PROJECT = "/home/me/app"
N = 300


def _memories(g: GraphStore, n: int = N, seed: int = 0) -> None:
    """`n` memories m000.. (m000 newest, a fifth of a day apart), half of them the project's,
    with random importance, lengths and embeddings."""
    rng = np.random.default_rng(seed)
    rows = [
        {
            "id": f"m{i:03d}",
            "content": f"memory {i:03d} " + "x" * int(rng.integers(40, 200)),
            "importance": float(rng.uniform(0.3, 1.0)),
            "created_at": format_iso(START - timedelta(days=0.2 * i + 0.01)),
            "project": PROJECT if i % 2 == 0 else None,
        }
        for i in range(n)
    ]
    write.insert_memories(g.con, rows, history=False)
    vectors = rng.standard_normal((n, 8)).astype(np.float32)
    write.insert_embeddings(g.con, [r["id"] for r in rows], vectors, "test")


def _graph_store(path: Path, schema: str = "current") -> Path:
    """The project entity 'app' with two aspects: old, important memories (m200-m229, their
    traversal score 0.95) and a recent one (m000, 0.99); a constraint of another project's
    memory (m251); a strong dependency to 'lib' (memory m260)."""
    g = GraphStore(path, schema)
    _memories(g)
    g.con.execute("UPDATE memories SET project = '/elsewhere' WHERE id = 'm251'")
    g.entity("app", "app", mentions=3)
    g.entity("lib", "lib", entity_type="tool")
    g.aspect("app-old", "app", weight=0.9)
    g.aspect("app-new", "app", weight=0.5)
    g.aspect("lib-api", "lib")
    for i in range(200, 230):
        g.attribute(f"m{i}", "app-old", importance=0.95)
    g.attribute("m000", "app-new", importance=0.99)
    g.attribute("m251", "app-new", kind="constraint", importance=0.4)
    g.attribute("m260", "lib-api", importance=0.9)
    g.dependency("app", "lib", strength=0.9, confidence=0.9)
    return g.close()


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Corpus, EntityGraph]:
    path = _graph_store(tmp_path_factory.mktemp("graph") / "m.db")
    return read_corpus(path), read_graph(path)


def _grouped(kw: dict) -> dict:
    """`session_start`'s keywords with the learned side and the injection limits given flat
    (as these tests write them) grouped into their objects."""
    learned = {k: kw.pop(k) for k in ("predictor", "alpha", "cold_start_exited", "rng") if k in kw}
    limits = {k: kw.pop(k) for k in ("budget_chars", "use_budget", "top_k") if k in kw}
    return {**kw, "learned": Learned(**learned), "limits": InjectionLimits(**limits)}


def _ours(corpus: Corpus, graph: EntityGraph | None, **kw) -> SessionStartResult:
    return session_start(
        corpus, NOW, project=kw.pop("project", PROJECT), walk=GraphWalk(graph), **_grouped(kw)
    )


def _replica(corpus: Corpus, graph: EntityGraph | None, **kw) -> SessionStartResult:
    c = corpus
    return signet058_session_start(
        c,
        kw.pop("project", PROJECT),
        NOW,
        kw.pop("cfg", DEFAULT_CONFIG),
        is_deleted=c.absent_at(NOW),
        graph=graph,
        **kw,
    )


def _assert_same(a: SessionStartResult, b: SessionStartResult) -> None:
    for f in dataclasses.fields(SessionStartResult):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype, f.name
            np.testing.assert_array_equal(x, y, err_msg=f.name)
        elif f.name == "context_vector":
            assert x.rule == y.rule
            np.testing.assert_array_equal(x.vector, y.vector)
        else:
            assert x == y, f.name


@pytest.mark.parametrize("start", [_ours, _replica])
def test_no_graph_an_empty_one_or_no_reach_change_nothing(store, start):
    corpus, graph = store
    plain = start(corpus, None)
    assert plain.traversal is None and plain.flags is None
    _assert_same(plain, start(corpus, EntityGraph.empty()))
    nowhere = start(corpus, graph, project="/somewhere/else")  # no focal entity
    assert nowhere.traversal is None
    _assert_same(start(corpus, None, project="/somewhere/else"), nowhere)
    assert all(p is None for p in plain.path_json)


def test_traversal_memories_join_our_pool(store):
    corpus, graph = store
    plain, res = _ours(corpus, None), _ours(corpus, graph)
    assert res.traversal is not None and res.traversal.focal_entities.source == "project"
    ids = res.memory_id.tolist()
    by_id = dict(zip(ids, range(len(ids)), strict=True))
    joined = [m for m, s in zip(ids, res.source.tolist(), strict=True) if s == "ka_traversal"]
    assert 0 < len(joined) <= pool_quota()
    assert set(joined) <= {f"m{i}" for i in range(200, 230)} | {"m260"}
    assert "m260" in joined  # through the dependency
    assert all(res.effective_score[by_id[m]] == pytest.approx(0.95) for m in joined if m != "m260")
    assert res.effective_score[by_id["m260"]] == pytest.approx(0.9)
    # an existing candidate keeps the higher score, and its source
    old = dict(zip(plain.memory_id.tolist(), plain.effective_score.tolist(), strict=True))
    assert res.source[by_id["m000"]] == "effective" and old["m000"] < 0.99
    assert res.effective_score[by_id["m000"]] == pytest.approx(0.99)
    assert res.rank.tolist() == list(range(len(ids)))  # baseline order by the joined scores
    assert np.all(np.diff(res.effective_score) <= 0)
    path = json.loads(res.path_json[by_id["m260"]])
    assert path == {
        "entity_ids": ["app", "lib"],
        "aspect_ids": ["lib-api"],
        "dependency_ids": ["dep-app-lib"],
    }
    assert json.loads(res.path_json[by_id["m000"]])["aspect_ids"] == ["app-new"]
    not_reached = [i for i, m in enumerate(ids) if m not in res.traversal.graph.attr_memory]
    assert all(res.path_json[i] is None for i in not_reached)


def test_focal_constraints_are_injected_however_the_scorer_ranks_them(store):
    corpus, graph = store
    assert "m251" not in _ours(corpus, None).memory_id  # another project's: not forced alone
    seen = {}

    def scorer(rows, context, flags=None):
        seen["flags"] = flags
        return np.where(flags.is_constraint, -1.0, np.linspace(1, 0, len(rows)))

    res = _ours(corpus, graph, predictor=scorer, alpha=0.0, previous_used=["m010"])
    at = int(np.flatnonzero(res.memory_id == "m251")[0])
    assert res.predictor_used and res.predictor_rank[at] == len(res.index)  # ranked last
    assert res.is_constraint[at] and res.was_injected[at]
    assert seen["flags"].is_constraint[at] and res.injected_ids[-1] == "m251"
    np.testing.assert_array_equal(seen["flags"].is_traversal, res.source == "ka_traversal")
    replica = _replica(corpus, graph)
    at = int(np.flatnonzero(replica.memory_id == "m251")[0])
    assert replica.is_constraint[at] and replica.was_injected[at]
    assert not _replica(corpus, None).is_constraint.any()


def test_the_replica_joins_as_signet_does(store):
    corpus, graph = store
    plain, res = _replica(corpus, None), _replica(corpus, graph)
    window = set(plain.memory_id.tolist())
    joined = res.memory_id[res.source == "ka_traversal"].tolist()
    assert joined and not set(joined) & window  # appended: not in the kept window
    assert len(res.index) == DEFAULT_CONFIG.candidate_pool_size
    by_id = dict(zip(res.memory_id.tolist(), res.effective_score.tolist(), strict=True))
    assert by_id["m000"] == pytest.approx(0.99) and by_id["m200"] == pytest.approx(0.95)
    # project first, then effScore: the project's traversal memories lead
    assert res.memory_id[0] == "m000" and res.memory_id[1] == "m200"
    assert res.kept_size == plain.kept_size and res.window_size == plain.window_size


def _hog_store(path: Path) -> Path:
    """A pinned entity with 400 attributes (memories m100-m499, importance 0.99), the shape
    that filled a whole injection in the field."""
    g = GraphStore(path)
    _memories(g, n=500, seed=3)
    g.entity("hog", "Everything", entity_type="concept", pinned=1, pinned_at="2026-01-01")
    for a in range(20):
        g.aspect(f"hog-{a}", "hog", weight=1.0 - a / 40)
        for k in range(20):
            g.attribute(f"m{100 + a * 20 + k:03d}", f"hog-{a}", importance=0.99)
    return g.close()


def test_a_pinned_entity_with_hundreds_of_attributes_cannot_fill_the_budget(tmp_path):
    path = _hog_store(tmp_path / "m.db")
    corpus, graph = read_corpus(path), read_graph(path)
    lengths = np.asarray([len(c) for c in corpus.contents])
    budget = DEFAULT_CONFIG.injection_budget_chars
    for cfg in (
        DEFAULT_CONFIG,
        DEFAULT_CONFIG.replace(max_traversal_paths=400, max_aspects_per_entity=20),
    ):
        res = _ours(corpus, graph, project=None, cfg=cfg)
        assert len(res.traversal.rows) == cfg.max_traversal_paths
        assert (res.source == "ka_traversal").sum() == pool_quota(cfg)
        carried = res.flags.carried & res.was_injected
        assert 0 < lengths[res.index[carried]].sum() <= cfg.traversal_max_share * budget
        assert (res.was_injected & ~res.flags.carried).sum() >= 5  # the rest still gets in
        assert lengths[res.index[res.was_injected]].sum() > 0.8 * budget
    # the cap is what holds it back: switched off, the graph's memories take the injection
    off = _ours(corpus, graph, project=None, cfg=DEFAULT_CONFIG.replace(traversal_max_share=1.0))
    taken = off.flags.carried & off.was_injected
    assert lengths[off.index[taken]].sum() > 0.8 * budget


def test_traversal_rows_are_never_explored_in(store):
    corpus, graph = store
    cfg = DEFAULT_CONFIG.replace(exploration_rate=1.0)

    def scorer(rows, context, flags=None):  # the reverse of the baseline order
        return np.linspace(0, 1, len(rows))

    kw = {"predictor": scorer, "alpha": 0.8, "cfg": cfg, "cold_start_exited": True}
    res = _ours(corpus, graph, rng=np.random.default_rng(0), previous_used=["m010"], **kw)
    assert res.explored_id is not None
    assert res.source[res.memory_id == res.explored_id][0] == "exploration"
    assert res.explored_id not in res.memory_id[res.flags.is_traversal]


@pytest.mark.parametrize("schema", ["0.58", "current"])
def test_recorded_rows_carry_the_source_and_the_path_where_the_store_has_it(tmp_path, schema):
    path = _graph_store(tmp_path / "m.db", schema)
    res = _ours(read_corpus(path), read_graph(path))
    rows = [
        write.CandidateRow(
            memory_id=str(res.memory_id[i]),
            source=str(res.source[i]),
            effective_score=float(res.effective_score[i]),
            predictor_score=None,
            final_score=float(res.final_score[i]),
            rank=i,
            was_injected=bool(res.was_injected[i]),
            is_constraint=bool(res.is_constraint[i]),
            path_json=res.path_json[i],
        )
        for i in range(len(res.index))
    ]
    con = connect_writer(path)
    try:
        assert write.record_session_candidates(con, "s1", rows, format_iso(START)) == len(rows)
        got = dict(con.execute("SELECT memory_id, source FROM session_memories"))
        assert got["m260"] == "ka_traversal" and got["m000"] == "effective"
        if schema == "current":
            paths = dict(con.execute("SELECT memory_id, path_json FROM session_memories"))
            assert paths == dict(zip(res.memory_id.tolist(), res.path_json.tolist(), strict=True))
            assert json.loads(paths["m260"])["dependency_ids"] == ["dep-app-lib"]
        else:
            cols = {r[1] for r in con.execute("PRAGMA table_info(session_memories)")}
            assert "path_json" not in cols
    finally:
        con.close()


def test_our_walk_skips_superseded_memories_signet_058s_does_not(tmp_path):
    g = GraphStore(tmp_path / "m.db")
    _memories(g, n=60)
    g.entity("app", "app")
    g.aspect("asp", "app")
    g.attribute("m040", "asp", importance=0.9, status="superseded", updated_at="2026-02-01")
    g.mention("m040", "app", 0.9)  # still mentioned: the mention fallback would reach it
    g.attribute("m041", "asp", importance=0.9)
    path = g.close()
    corpus, graph = read_corpus(path), read_graph(path)
    ours = _ours(corpus, graph)
    assert corpus.ids[ours.traversal.rows].tolist() == ["m041"]
    replica = _replica(corpus, graph)
    assert sorted(corpus.ids[replica.traversal.rows].tolist()) == ["m040", "m041"]
