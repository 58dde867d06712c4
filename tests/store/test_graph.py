"""The knowledge-graph reader: columns by name, both release lines, what is missing said."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from signet_bench.store.errors import StoreTimestampError
from signet_bench.store.graph import EntityGraph, read_graph
from signet_bench.store.schema import connect_writer, create_store
from tests.store.graph_stores import GraphStore


def _small(path: Path, schema: str) -> Path:
    g = GraphStore(path, schema)
    for m in ("m1", "m2", "m3"):
        g.memory(m)
    g.entity("e-app", "Signet App", mentions=7)
    g.entity("e-db", "Database", entity_type="system", mentions=2)
    g.entity("e-pin1", "Pinned Old", pinned=1, pinned_at="2026-01-02T00:00:00.000Z")
    g.entity("e-pin2", "Pinned New", pinned=1, pinned_at="2026-01-05T00:00:00.000Z")
    g.entity("e-other", "Other agent's", agent_id="someone-else")
    g.aspect("a-arch", "e-app", weight=0.9)
    g.aspect("a-db", "e-db", weight=0.4)
    g.aspect("a-lost", "e-missing")  # an aspect of an entity the store does not hold
    g.attribute("m1", "a-arch", importance=0.8)
    g.attribute("m2", "a-arch", kind="constraint", importance=0.6)
    g.attribute("m3", "a-db", importance=0.9, status="superseded", updated_at="2026-01-03 12:00:00")
    g.attribute("m3", None, id="loose", importance=0.3)  # no aspect: still the memory's
    g.dependency("e-app", "e-db", strength=0.8, confidence=0.9)
    g.dependency("e-app", "e-missing")
    g.mention("m1", "e-app", 0.9)
    g.mention("m2", "e-db")
    return g.close()


@pytest.mark.parametrize("schema", ["0.58", "current"])
def test_reads_every_table_by_name_on_both_lines(tmp_path, schema):
    g = read_graph(_small(tmp_path / "m.db", schema))
    assert g.has_graph
    names = g.entity_name.tolist()
    assert names == ["Signet App", "Database", "Pinned Old", "Pinned New"]  # other agent out
    assert g.entity_canonical[0] == "signet app" and g.entity_type[1] == "system"
    assert g.entity_id[g.pinned_order].tolist() == ["e-pin2", "e-pin1"]  # newest pin first
    assert g.entity_mentions[:2].tolist() == [7.0, 2.0]
    assert g.aspect_id.tolist() == ["a-arch", "a-db"]  # the orphan aspect is dropped
    assert g.aspect_entity.tolist() == [0, 1] and g.aspect_weight.tolist() == [0.9, 0.4]
    assert g.attr_memory.tolist() == ["m1", "m2", "m3", "m3"]
    assert g.attr_aspect.tolist() == [0, 0, 1, -1] and g.attr_entity.tolist() == [0, 0, 1, -1]
    assert g.attr_constraint.tolist() == [False, True, False, False]
    assert g.attr_importance.tolist() == [0.8, 0.6, 0.9, 0.3]
    when = datetime(2026, 1, 3, 12, tzinfo=UTC).timestamp()
    assert g.attr_active.tolist() == [True, True, False, True]
    assert g.attr_active_at(when - 1).tolist() == [True] * 4  # active until its status changed
    assert g.attr_active_at(when).tolist() == [True, True, False, True]
    assert g.dep_source.tolist() == [0] and g.dep_target.tolist() == [1]  # dangling edge out
    assert g.dep_strength.tolist() == [0.8] and g.dep_confidence.tolist() == [0.9]
    table = "entity_dependencies" if schema == "current" else "relations"
    assert g.dependency_table == table and g.dep_id.tolist() == ["dep-e-app-e-db"]
    assert g.mention_memory.tolist() == ["m1", "m2"] and g.mention_entity.tolist() == [0, 1]
    assert g.mention_confidence[0] == 0.9 and np.isnan(g.mention_confidence[1])


def test_an_empty_dependency_table_falls_back_to_relations(tmp_path):
    g = GraphStore(tmp_path / "m.db", "current")
    g.entity("a")
    g.entity("b")
    g.insert(
        "relations",
        id="r1",
        source_entity_id="a",
        target_entity_id="b",
        relation_type="uses",
        created_at="2026-01-01T00:00:00.000Z",
    )
    graph = read_graph(g.close())
    assert graph.dependency_table == "relations"
    assert graph.dep_strength.tolist() == [1.0] and graph.dep_confidence.tolist() == [0.5]
    assert "entity_dependencies is empty: dependencies read from relations" in graph.note


def test_empty_graph_tables_give_an_empty_graph(tmp_path):
    path = create_store(tmp_path / "m.db", schema="current")
    g = read_graph(path)
    assert not g.has_graph and len(g.entity_id) == 0 and g.note == "no entities"
    assert not EntityGraph.empty().has_graph


def test_entities_without_reachable_memories_are_no_graph(tmp_path):
    g = GraphStore(tmp_path / "m.db")
    g.entity("lonely")
    g.aspect("asp", "lonely")
    graph = read_graph(g.close())
    assert len(graph.entity_id) == 1 and not graph.has_graph


def _replace_tables(path: Path, *ddl: str) -> Path:
    """A 0.58 store whose graph tables are dropped, then `ddl` run (older or partial shapes)."""
    create_store(path)
    con = connect_writer(path)
    for table in ("entity_attributes", "entity_aspects", "memory_entity_mentions", "relations"):
        con.execute(f"DROP TABLE {table}")
    con.execute("DROP TABLE entities")
    for statement in ddl:
        con.execute(statement)
    con.close()
    return path


def test_absent_tables_and_columns_are_skipped_and_named(tmp_path):
    path = _replace_tables(
        tmp_path / "old.db",
        "CREATE TABLE entities (id TEXT PRIMARY KEY, name TEXT)",  # no pinned, type, mentions
        "CREATE TABLE entity_aspects (id TEXT PRIMARY KEY, name TEXT)",  # no entity_id
        "CREATE TABLE entity_attributes (memory_id TEXT, aspect_id TEXT)",
        "INSERT INTO entities VALUES ('e1', 'Widget  Factory')",
        "INSERT INTO entity_attributes VALUES ('m1', 'a1')",
        "INSERT INTO entity_attributes VALUES (NULL, 'a1')",  # points at no memory: not read
    )
    g = read_graph(path)
    assert g.entity_canonical.tolist() == ["widget factory"]  # derived as Signet backfills it
    assert g.entity_type.tolist() == [None] and not g.entity_pinned.any()
    assert g.attr_memory.tolist() == ["m1"] and g.attr_importance.tolist() == [0.5]
    assert g.attr_active.tolist() == [True]
    assert g.attr_aspect.tolist() == [-1] and not g.has_graph
    assert "no memory_entity_mentions table" in g.note
    assert "entity_aspects lacks entity_id: not read" in g.note
    assert "no dependency rows (entity_dependencies, relations): no dependency hops" in g.note


def test_a_bad_timestamp_names_table_row_and_field(tmp_path):
    g = GraphStore(tmp_path / "m.db")
    g.memory("m1")
    g.entity("e")
    g.aspect("a", "e")
    g.attribute("m1", "a", id="attr-7", status="superseded", updated_at="last tuesday")
    path = g.close()
    with pytest.raises(StoreTimestampError, match=r"entity_attributes\.updated_at of row 'attr-7'"):
        read_graph(path)


def test_reading_leaves_the_store_untouched(tmp_path):
    path = _small(tmp_path / "m.db", "current")
    before = path.read_bytes()
    read_graph(path)
    assert path.read_bytes() == before
    con = connect_writer(path)
    try:
        assert read_graph(con).entity_name[0] == "Signet App"  # a borrowed connection works too
    finally:
        con.close()
