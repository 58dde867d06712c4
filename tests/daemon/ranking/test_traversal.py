"""Knowledge-graph traversal: focal entities, the one pass, the one hop, scores, paths, and the
share cap; on small hand-made stores."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.ranking.traversal import (
    Traversal,
    focal_entities,
    graph_index,
    injection_overflow,
    pool_quota,
    project_tokens,
    query_tokens,
    session_traversal,
    traverse,
)
from signet_bench.store.corpus import read_corpus
from signet_bench.store.graph import read_graph
from tests.store.graph_stores import GraphStore

NOW = datetime(2026, 2, 1, tzinfo=UTC).timestamp()


def _walk(path, project=None, terms=(), now=NOW, cfg=DEFAULT_CONFIG) -> Traversal:
    graph, corpus = read_graph(path), read_corpus(path)
    index = graph_index(graph, corpus.ids, corpus.importance)
    focal = focal_entities(index, project, terms)
    return traverse(index, focal, now, ~corpus.absent_at(now), cfg)


def _ids(path, rows) -> list[str]:
    return read_corpus(path).ids[np.asarray(rows, dtype=np.int64)].tolist()


def _names(walked: Traversal) -> list[str]:
    return walked.graph.entity_name[walked.focal_entities.entities].tolist()


def test_tokens_are_normalised_as_signet_matches_them():
    assert project_tokens("/home/me/Code/Signet-App/") == ["code", "signet-app"]
    assert project_tokens("C:\\work\\x\\My.Repo") == ["work", "myrepo"]  # 'c', 'x' dropped
    assert project_tokens(None) == [] and project_tokens("") == []
    assert query_tokens(["Postgres", "postgres", "a", "db!"]) == ["postgres", "db"]


def test_focal_entities_pinned_then_project_else_query(tmp_path):
    g = GraphStore(tmp_path / "m.db")
    g.entity("pin-a", "Style Guide", entity_type="concept", pinned=1, pinned_at="2026-01-02")
    g.entity("pin-b", "House Rules", entity_type="concept", pinned=1, pinned_at="2026-01-09")
    g.entity("app", "signet-app", mentions=3)
    g.entity("app-old", "signet-app legacy", mentions=9)
    g.entity("app-tool", "signet-app cli", entity_type="tool", mentions=50)  # not a project
    for i in range(6):
        g.entity(f"code-{i}", f"code thing {i}", mentions=i)  # 'code' matches: limit 5 overall
    g.entity("pg", "Postgres Database", entity_type="system", mentions=4)
    g.entity("pgx", "postgresql", entity_type="system", mentions=8)  # no whole-word match
    path = g.close()
    graph, corpus = read_graph(path), read_corpus(path)
    index = graph_index(graph, corpus.ids, corpus.importance)

    f = focal_entities(index, "/home/me/signet-app", ["postgres"])
    got = graph.entity_id[f.entities].tolist()
    assert f.source == "project" and got == ["pin-b", "pin-a", "app-old", "app"]
    f = focal_entities(index, "/srv/code/signet-app", [])
    assert graph.entity_id[f.entities].tolist()[2:] == [
        "app-old",
        "code-5",
        "code-4",
        "app",
        "code-3",
    ]
    f = focal_entities(index, "/elsewhere/nothing", ["Postgres", "database"])
    assert f.source == "query" and graph.entity_id[f.entities].tolist()[2:] == ["pg"]
    f = focal_entities(index, None, ["unknown"])
    assert f.source == "pinned" and graph.entity_id[f.entities].tolist() == ["pin-b", "pin-a"]


def _one_entity(tmp_path, n_aspects=3, per_aspect=4, **entity):
    """One project entity with aspects of falling weight, each with attributes of falling
    importance (memory m<aspect><k>, importance 0.9 - 0.1k - 0.01a)."""
    g = GraphStore(tmp_path / "m.db")
    g.entity("app", "app", **entity)
    for a in range(n_aspects):
        g.aspect(f"asp{a}", "app", weight=1.0 - a * 0.1)
        for k in range(per_aspect):
            mid = f"m{a}{k}"
            g.memory(mid, importance=0.5)
            g.attribute(mid, f"asp{a}", importance=round(0.9 - 0.1 * k - 0.01 * a, 3))
    return g


def test_one_pass_takes_top_aspects_and_attributes_by_importance(tmp_path):
    path = _one_entity(tmp_path).close()
    cfg = DEFAULT_CONFIG.replace(max_aspects_per_entity=2, max_attributes_per_aspect=3)
    w = _walk(path, "/x/app", cfg=cfg)
    assert _ids(path, w.rows) == ["m00", "m10", "m01", "m11", "m02", "m12"]  # by importance
    assert w.score.tolist() == pytest.approx([0.9, 0.89, 0.8, 0.79, 0.7, 0.69])
    assert (w.dependency == -1).all() and (w.focal == w.entity).all()
    budget = cfg.replace(max_traversal_paths=4)
    assert _ids(path, _walk(path, "/x/app", cfg=budget).rows) == ["m00", "m10", "m01", "m11"]


def test_only_live_memories_and_active_attributes_are_reached(tmp_path):
    g = _one_entity(tmp_path, n_aspects=1, per_aspect=3)
    g.memory("later", created_at="2026-03-01T00:00:00.000Z")
    g.attribute("later", "asp0", importance=1.0)
    g.con.execute("UPDATE memories SET is_deleted = 1 WHERE id = 'm01'")
    g.con.execute(
        "UPDATE entity_attributes SET status = 'superseded', updated_at = '2026-01-20 00:00:00'"
        " WHERE memory_id = 'm00'"
    )
    path = g.close()
    assert _ids(path, _walk(path, "/x/app").rows) == ["m02"]
    before = datetime(2026, 1, 10, tzinfo=UTC).timestamp()
    assert _ids(path, _walk(path, "/x/app", now=before).rows) == ["m00", "m02"]


def test_mentions_fill_the_room_attributes_leave(tmp_path):
    g = _one_entity(tmp_path, n_aspects=1, per_aspect=2)
    for mid, conf, imp in (
        ("x1", 0.5, 0.9),
        ("x2", 0.9, 0.1),
        ("x3", None, 1.0),
        ("x4", 0.5, 0.95),
    ):
        g.memory(mid, importance=imp)
        g.mention(mid, "app", conf)
    g.mention("m00", "app", 1.0)  # already reached through its attribute
    path = g.close()
    w = _walk(path, "/x/app")
    assert _ids(path, w.rows) == ["m00", "m01", "x2", "x4", "x1", "x3"]
    assert w.aspect[2:].tolist() == [-1] * 4 and w.score[2:].tolist() == [0.1, 0.95, 0.9, 1.0]
    w = _walk(path, "/x/app", cfg=DEFAULT_CONFIG.replace(max_traversal_paths=4))
    assert _ids(path, w.rows) == ["m00", "m01", "x2"]  # the room's mention rows, one repeated


def _hop_store(tmp_path):
    g = GraphStore(tmp_path / "m.db")
    g.entity("app", "app")
    for name, strength, conf in (
        ("strong", 0.9, 0.9),  # 0.81
        ("nullconf", 0.6, None),  # 0.7 x 0.6 = 0.42
        ("weak", 0.3, 0.9),  # 0.27 < 0.3
        ("unsure", 0.95, 0.4),  # confidence below 0.5
        ("fifth", 0.5, 0.8),  # 0.40
        ("sixth", 0.45, 0.8),  # 0.36
        ("seventh", 0.4, 0.8),  # 0.32: past maxBranching
    ):
        g.entity(name, name, entity_type="system")
        g.aspect(f"asp-{name}", name)
        g.memory(f"mem-{name}")
        g.attribute(f"mem-{name}", f"asp-{name}", importance=0.6)
        g.dependency("app", name, strength=strength, confidence=conf)
    g.dependency("app", "app", strength=1.0, confidence=1.0)  # a loop: never a hop
    g.aspect("asp-app", "app")
    g.memory("mem-app")
    g.attribute("mem-app", "asp-app", importance=0.9)
    return g


def test_one_hop_follows_the_strong_confident_edges(tmp_path):
    path = _hop_store(tmp_path).close()
    w = _walk(path, "/x/app")
    got = _ids(path, w.rows)
    assert got == ["mem-app", "mem-strong", "mem-nullconf", "mem-fifth", "mem-sixth"]
    g = w.graph
    assert g.entity_id[w.entity].tolist() == ["app", "strong", "nullconf", "fifth", "sixth"]
    assert (g.entity_id[w.focal] == "app").all()
    assert w.path(1) == {
        "entity_ids": ["app", "strong"],
        "aspect_ids": ["asp-strong"],
        "dependency_ids": ["dep-app-strong"],
    }
    assert json.loads(w.path_json(0)) == {
        "entity_ids": ["app"],
        "aspect_ids": ["asp-app"],
        "dependency_ids": [],
    }
    assert w.path_json(0) == '{"entity_ids":["app"],"aspect_ids":["asp-app"],"dependency_ids":[]}'
    fewer = _walk(path, "/x/app", cfg=DEFAULT_CONFIG.replace(max_branching=1))
    assert _ids(path, fewer.rows) == ["mem-app", "mem-strong"]
    looser = DEFAULT_CONFIG.replace(
        min_dependency_strength=0.2, min_confidence=0.3, max_branching=10
    )
    assert set(_ids(path, _walk(path, "/x/app", cfg=looser).rows)) >= {"mem-weak", "mem-unsure"}


def test_the_hop_only_uses_the_room_left(tmp_path):
    path = _hop_store(tmp_path).close()
    w = _walk(path, "/x/app", cfg=DEFAULT_CONFIG.replace(max_traversal_paths=2))
    assert _ids(path, w.rows) == ["mem-app", "mem-strong"]


def test_scores_and_constraints(tmp_path):
    g = GraphStore(tmp_path / "m.db")
    g.entity("app", "app")
    g.entity("dep", "dep", entity_type="system")
    g.aspect("a", "app")
    g.aspect("b", "dep")
    g.memory("hi", importance=0.2)
    g.attribute("hi", "a", importance=1.7)  # clamped to 1
    g.attribute("hi", "b", importance=0.3)
    g.memory("old-attr", importance=0.4)
    g.attribute("old-attr", "a", importance=0.9, status="superseded", updated_at="2026-01-05")
    g.mention("old-attr", "app", 0.9)  # reached through the mention: its own importance
    g.memory("rule-1")
    g.attribute("rule-1", "a", kind="constraint", importance=0.7)
    g.memory("rule-2")
    g.attribute("rule-2", "a", kind="constraint", importance=0.95)
    g.memory("rule-gone")
    g.attribute("rule-gone", "a", kind="constraint", status="deleted", updated_at="2026-01-05")
    g.memory("dep-rule")
    g.attribute("dep-rule", "b", kind="constraint", importance=0.99)
    g.dependency("app", "dep", strength=1.0, confidence=1.0)
    path = g.close()
    w = _walk(path, "/x/app")
    by_id = dict(zip(_ids(path, w.rows), w.score.tolist(), strict=True))
    assert by_id["hi"] == 1.0 and by_id["old-attr"] == pytest.approx(0.4)
    assert by_id["rule-2"] == 0.95 and by_id["dep-rule"] == 0.99  # the hop reaches it
    flags = dict(zip(_ids(path, w.rows), w.is_constraint.tolist(), strict=True))
    assert flags["rule-1"] and flags["dep-rule"] and not flags["hi"]
    assert _ids(path, w.constraint_rows) == ["rule-2", "rule-1"]  # the focal entity's only
    assert w.constraint_score.tolist() == [0.95, 0.7]


def test_without_an_active_attribute_the_memory_importance_else_half(tmp_path):
    g = GraphStore(tmp_path / "m.db", "0.58")
    g.entity("app", "app")
    for mid, conf in (("plain", 0.9), ("unrated", 0.8)):
        g.memory(mid, importance=0.3)
        g.mention(mid, "app", conf)
    g.con.execute("UPDATE memories SET importance = NULL WHERE id = 'unrated'")
    path = g.close()
    w = _walk(path, "/x/app")
    assert _ids(path, w.rows) == ["plain", "unrated"]
    assert w.score.tolist() == pytest.approx([0.3, 0.5])


def test_session_traversal_is_none_without_a_graph_or_a_reach(tmp_path):
    path = _one_entity(tmp_path, n_aspects=1, per_aspect=1).close()
    graph, corpus = read_graph(path), read_corpus(path)
    live = ~corpus.absent_at(NOW)
    args = (corpus.ids, corpus.importance)
    assert session_traversal(None, *args, "/x/app", (), NOW, live) is None
    assert session_traversal(graph, *args, "/x/other", (), NOW, live) is None  # no focal entity
    walked = session_traversal(graph, *args, "/x/app", (), NOW, live)
    assert walked is not None and not walked.empty
    assert graph_index(graph, corpus.ids, corpus.importance) is graph_index(
        graph, corpus.ids, corpus.importance
    )  # indexed once per corpus


def test_a_pinned_entity_with_hundreds_of_attributes_stays_within_its_bounds(tmp_path):
    path = _one_entity(tmp_path, n_aspects=15, per_aspect=30, pinned=1).close()
    w = _walk(path, None)
    assert w.focal_entities.source == "pinned"
    assert len(w.rows) == DEFAULT_CONFIG.max_traversal_paths
    asp = w.graph.aspect_id[w.aspect]
    assert len(set(asp.tolist())) <= DEFAULT_CONFIG.max_aspects_per_entity
    assert max(np.unique(asp, return_counts=True)[1]) <= DEFAULT_CONFIG.max_attributes_per_aspect


def test_the_injection_share_cap():
    order = np.array([0, 1, 2, 3, 4, 5])
    carried = np.array([True, True, False, True, True, False])
    lengths = np.array([200, 250, 900, 100, 50, 10])
    over = injection_overflow(order, carried, lengths, budget_chars=2000, top_k=None)
    assert over.tolist() == [False, False, False, True, True, False]  # 450 of 500, then 550
    over = injection_overflow(order[::-1], carried, lengths, budget_chars=2000, top_k=None)
    assert over.tolist() == [True, False, False, False, False, False]  # 50+100+250, then 600
    over = injection_overflow(order, carried, lengths, budget_chars=None, top_k=8)
    assert over.tolist() == [False, False, False, True, True, False]  # floor(0.25 x 8) = 2
    off = DEFAULT_CONFIG.replace(traversal_max_share=1.0)
    kept = injection_overflow(order, carried, lengths, budget_chars=2000, top_k=None, cfg=off)
    assert not kept.any()
    assert not injection_overflow(order, carried, lengths, budget_chars=None, top_k=None).any()
    assert pool_quota() == 25 and pool_quota(DEFAULT_CONFIG.replace(traversal_max_share=0)) == 0
