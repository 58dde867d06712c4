"""The architect persona's knowledge graph: Signet's graph tables filled in both release lines,
consistent with each other and with the memories' texts, deterministic per seed, with
dependencies on both sides of the traversal thresholds; relevance that flows through it from
focal entities a daemon can observe, carrying a real share of the truth."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from signet_bench.cli import main
from signet_bench.store.read import table_names
from signet_bench.world.synth.build import build_persona_store, plan_store
from signet_bench.world.synth.graph import (
    LIBRARY_NAMES,
    MIN_DEPENDENCY_CONFIDENCE,
    MIN_DEPENDENCY_STRENGTH,
    PERSON_NAMES,
    SERVICE_NAMES,
    plan_graph,
    traversable,
)
from signet_bench.world.synth.persona import PERSONAS, get_persona
from signet_bench.world.synth.text import template_words, tokens
from signet_bench.world.synth.truth import (
    FOCAL,
    NEIGHBOUR,
    REQUIRED,
    graph_truth,
    load_truth,
    true_relevance,
    variance_shares,
)
from signet_bench.world.synth.vocab import GENERIC_WORDS, TIME_WORDS, TOPICS
from signet_bench.world.synth.world import SyntheticWorld
from tests.world.synth.test_truth import _ctx, _truth

SEED, N = 1, 500
GRAPH_TABLES = ("entities", "entity_aspects", "entity_attributes", "memory_entity_mentions")
DEPENDENCY_TABLE = {"0.58": "relations", "current": "entity_dependencies"}


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("architect")
    out = {}
    for line in ("0.58", "current"):
        out[line] = root / f"{line}.db"
        build_persona_store("architect", out[line], seed=SEED, n_memories=N, schema=line)
    return out


def _rows(path: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _count(path: Path, table: str) -> int:
    return _rows(path, f"SELECT COUNT(*) FROM {table}")[0][0]


@pytest.mark.parametrize("line", ["0.58", "current"])
def test_graph_tables_are_filled_in_each_release_line(stores, line):
    """Check each release line's graph tables hold the graph, dependencies in its own table."""
    path = stores[line]
    for table in (*GRAPH_TABLES, DEPENDENCY_TABLE[line]):
        assert _count(path, table) > 0, table
    if line == "current":
        assert _count(path, "relations") == 0
    else:
        assert "entity_dependencies" not in table_names(sqlite3.connect(path))
    types = Counter(r[0] for r in _rows(path, "SELECT entity_type FROM entities"))
    assert set(types) == {"project", "system", "tool", "person"}
    kinds = Counter(r[0] for r in _rows(path, "SELECT kind FROM entity_attributes"))
    assert kinds["constraint"] > 0 and kinds["attribute"] > kinds["constraint"]
    weights = [r[0] for r in _rows(path, "SELECT weight FROM entity_aspects")]
    assert min(weights) >= 0.3 and max(weights) <= 0.9 and len(set(weights)) > 3


@pytest.mark.parametrize("line", ["0.58", "current"])
def test_every_graph_row_points_at_rows_that_exist(stores, line):
    """Check referential integrity: declared foreign keys, and the links Signet leaves
    undeclared (superseded_by, the dependency ends)."""
    path = stores[line]
    assert _rows(path, "PRAGMA foreign_key_check") == []
    dep = DEPENDENCY_TABLE[line]
    orphans = {
        "aspect": "SELECT COUNT(*) FROM entity_aspects WHERE entity_id NOT IN"
        " (SELECT id FROM entities)",
        "attribute aspect": "SELECT COUNT(*) FROM entity_attributes WHERE aspect_id IS NULL"
        " OR aspect_id NOT IN (SELECT id FROM entity_aspects)",
        "attribute memory": "SELECT COUNT(*) FROM entity_attributes WHERE memory_id IS NULL"
        " OR memory_id NOT IN (SELECT id FROM memories)",
        "superseded_by": "SELECT COUNT(*) FROM entity_attributes WHERE superseded_by IS NOT"
        " NULL AND superseded_by NOT IN (SELECT id FROM entity_attributes)",
        "mention": "SELECT COUNT(*) FROM memory_entity_mentions WHERE memory_id NOT IN"
        " (SELECT id FROM memories) OR entity_id NOT IN (SELECT id FROM entities)",
        "dependency": f"SELECT COUNT(*) FROM {dep} WHERE source_entity_id NOT IN"
        " (SELECT id FROM entities) OR target_entity_id NOT IN (SELECT id FROM entities)",
    }
    for what, sql in orphans.items():
        assert _rows(path, sql) == [(0,)], what
    # a superseded attribute's memory is stale in the truth, its replacement current
    _, truth = load_truth(path)
    stale = dict(zip(truth.ids, truth.stale, strict=True))
    for old, new in _rows(
        path,
        "SELECT a.memory_id, b.memory_id FROM entity_attributes a JOIN entity_attributes b"
        " ON a.superseded_by = b.id WHERE a.status = 'superseded'",
    ):
        assert stale[old] and not stale[new]


def test_mentions_are_exactly_the_entity_names_in_the_texts(stores):
    """Check a memory mentions an entity when, and only when, its text names it; every
    attribute's memory names its entity; `entities.mentions` counts the mentions."""
    path = stores["0.58"]
    names = dict(_rows(path, "SELECT canonical_name, id FROM entities"))
    mentioned = Counter()
    for mid, entity_id in _rows(path, "SELECT memory_id, entity_id FROM memory_entity_mentions"):
        mentioned[mid, entity_id] += 1
    for mid, content in _rows(path, "SELECT id, content FROM memories"):
        named = {names[w] for w in tokens(content) if w in names}
        assert named == {e for m, e in mentioned if m == mid}, content
    attached = _rows(
        path,
        "SELECT a.memory_id, p.entity_id FROM entity_attributes a"
        " JOIN entity_aspects p ON p.id = a.aspect_id",
    )
    assert all((m, e) in mentioned for m, e in attached)
    counts = Counter(e for _, e in mentioned)
    for entity_id, n in _rows(path, "SELECT id, mentions FROM entities"):
        assert n == counts[entity_id]


def test_projects_are_entities_by_name_and_two_entities_are_pinned(stores):
    """Check every project has an entity of its name, and a library and a person are pinned."""
    path = stores["current"]
    projects = {
        r[0] for r in _rows(path, "SELECT name FROM entities WHERE entity_type = 'project'")
    }
    assert projects == set(get_persona("architect").project_names)
    pinned = _rows(path, "SELECT entity_type, pinned_at FROM entities WHERE pinned = 1")
    assert sorted(t for t, _ in pinned) == ["person", "tool"] and all(at for _, at in pinned)


def test_entity_names_are_words_nothing_else_uses():
    """Check an entity name in a text can only be a mention of that entity."""
    used = set(GENERIC_WORDS) | set(TIME_WORDS) | template_words()
    used |= {w for t in TOPICS.values() for w in t.words}
    used |= {n for p in PERSONAS.values() for n in p.project_names}
    pools = [w.lower() for w in (*SERVICE_NAMES, *LIBRARY_NAMES, *PERSON_NAMES)]
    assert len(set(pools)) == len(pools) and not set(pools) & used
    assert all(tokens(w) == [w] and len(w) >= 4 for w in pools)


def test_dependencies_lie_on_both_sides_of_the_traversal_thresholds(stores):
    """Check some dependencies are traversable, some too weak, some strong enough but too
    unsure; the stored values are the truth's."""
    rows = _rows(stores["current"], "SELECT strength, confidence FROM entity_dependencies")
    strong = [traversable(s, c) for s, c in rows]
    weak = [c * s < MIN_DEPENDENCY_STRENGTH for s, c in rows]
    unsure = [c * s >= MIN_DEPENDENCY_STRENGTH and c < MIN_DEPENDENCY_CONFIDENCE for s, c in rows]
    assert sum(strong) >= 10 and sum(weak) >= 5 and sum(unsure) >= 3
    assert sum(strong) + sum(weak) + sum(unsure) == len(rows)
    old = _rows(stores["0.58"], "SELECT strength, confidence FROM relations ORDER BY id")
    new = _rows(
        stores["current"], "SELECT strength, confidence FROM entity_dependencies ORDER BY id"
    )
    assert old == new
    truth = _rows(stores["current"], "SELECT strength, confidence FROM synth_graph_edges")
    assert sorted(truth) == sorted(rows)


def test_the_graph_is_deterministic_per_seed_and_leaves_the_layout_alone():
    """Check the same seed gives the same graph, another seed another one, and a store with a
    graph lays out the same memories as one without (only texts name entities)."""
    persona = get_persona("architect", N)
    plan = plan_store(persona, SEED)
    assert plan.graph is not None and plan.graph == plan_store(persona, SEED).graph
    other = plan_store(persona, SEED + 1).graph
    assert other is not None and {e.name for e in other.entities} != {
        e.name for e in plan.graph.entities
    }
    plain = plan_store(dataclasses.replace(persona, graph=False), SEED)
    assert plain.graph is None
    same = ("id", "project", "topic", "type", "created", "importance", "pinned", "stale_since")
    names = {e.id: e.canonical_name for e in plan.graph.entities}
    for a, b in zip(plan.specs, plain.specs, strict=True):
        assert all(getattr(a, f) == getattr(b, f) for f in same)
        if a.id in plan.graph.texts:  # the text, named after its subject (unless it was)
            assert b.content[1:] in a.content
            assert names[plan.graph.subjects[a.id][0]] in tokens(a.content)
        else:
            assert a.content == b.content
    start = min(s.created for s in plain.specs)
    assert plan_graph(persona, SEED, plain.specs, start).texts == plan.graph.texts


def test_the_truth_of_the_graph_reads_back(stores):
    """Check the store's graph truth is the plan's."""
    planned = plan_store(get_persona("architect", N), SEED).truth()
    _, truth = load_truth(stores["0.58"])
    assert truth.graph is not None and planned.graph is not None
    for f in ("entity_ids", "names", "home_project", "home_topic", "pinned", "edges"):
        assert np.array_equal(getattr(truth.graph, f), getattr(planned.graph, f)), f
    assert np.array_equal(truth.subject, planned.subject)
    assert np.array_equal(truth.constraint, planned.constraint)
    assert np.allclose(
        true_relevance(truth, _ctx("storefront", "api")),
        true_relevance(planned, _ctx("storefront", "api")),
    )


def _tiny_graph_truth():
    """Project a with service s (a/postgres), library l (traversable from s), libraries w (too
    weak) and u (too unsure) from s, a pinned person p; six memories of project b on topic ios
    (base OTHER_PROJECT): a constraint of s, an attribute of s, then of l, w, u, p."""
    entities = [
        ("a", "a", "a", None, 0),
        ("s", "svc", "a", "postgres", 0),
        ("l", "lib", None, None, 0),
        ("w", "weak", None, None, 0),
        ("u", "unsure", None, None, 0),
        ("p", "Pat", None, None, 1),
    ]
    edges = [("s", "l", 0.8, 0.9), ("s", "w", 0.2, 0.9), ("s", "u", 1.0, 0.4)]
    subjects = ["s", "s", "l", "w", "u", "p"]
    truth = _truth([{"project": "b", "topic": "ios", "importance": 1.0}] * len(subjects))
    atts = [
        (str(m), e, "constraint" if k == 0 else "attribute")
        for k, (m, e) in enumerate(zip(truth.ids, subjects, strict=True))
    ]
    graph, sub, con = graph_truth(entities, edges, atts, truth.ids)
    return dataclasses.replace(truth, graph=graph, subject=sub, constraint=con)


def test_relevance_flows_from_focal_entities_over_traversable_dependencies():
    """Check the rule: a focal entity's constraint is required, its other attributes focal,
    an attribute one traversable hop away a neighbour's; weak or unsure edges carry nothing;
    a pinned entity is focal in every session; the project entity by the session's project."""
    truth = _tiny_graph_truth()
    r = true_relevance(truth, _ctx("a", "postgres"))
    other = true_relevance(truth, _ctx("a", "postgres"), without=["graph"])
    assert r[:3] == pytest.approx([REQUIRED, FOCAL, NEIGHBOUR])
    assert r[3:5] == pytest.approx(other[3:5]) and r[3] < 0.05
    assert r[5] == pytest.approx(FOCAL)
    # another focus topic: s is not focal, only the pinned person is
    r = true_relevance(truth, _ctx("a", "auth"))
    assert r[:5] == pytest.approx(other[:5]) and r[5] == pytest.approx(FOCAL)
    assert truth.graph.topic_names("a", "postgres") == ["svc"]
    assert truth.graph.focal("a", "auth").tolist() == [True, False, False, False, False, True]


def test_the_graph_carries_a_tenth_of_the_truth(stores):
    """Check the graph effect's share of the truth's variance in a small architect store."""
    world = SyntheticWorld.load(stores["0.58"])
    shares = variance_shares(world.truth, world.plan(10, seed=5))
    assert shares["graph"] >= 0.10
    assert sum(shares.values()) <= 1.0 + 1e-9


def test_the_focal_entities_show_in_what_the_daemon_observes(stores):
    """Check a session's prompts and transcript name the entities its focus topic makes focal,
    and its project entity is found by the project's name."""
    world = SyntheticWorld.load(stores["0.58"])
    graph = world.truth.graph
    for k, plan in enumerate(world.plan(6, seed=2)):
        names = world.topic_entities(plan)
        assert len(names) == 1 and plan.project in set(graph.names)
        prompts = world.prompts(plan, [], np.random.default_rng([k, 0]))
        assert any(names[0] in tokens(p.text) for p in prompts)
        focal = graph.focal(plan.project, plan.focus_topic)
        assert set(graph.names[focal]) >= {plan.project, names[0]}


def test_cli_builds_the_architect(tmp_path):
    out = tmp_path / "a.db"
    assert main(["synth", "--persona", "architect", "--out", str(out), "--memories", "120"]) == 0
    assert _count(out, "entities") > 0 and _count(out, "synth_graph_attachments") > 0
