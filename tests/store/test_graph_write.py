"""The knowledge graph's one writer: hand-made rows written into real stores of both release
lines, read back column by column, in the order given, and through the project's graph reader;
the dependency table chosen by the store's tables; a clashing row rejected with nothing
written."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from signet_bench.store import write
from signet_bench.store.graph import read_graph
from signet_bench.store.graph_write import (
    Aspect,
    Attribute,
    Dependency,
    Entity,
    Mention,
    dependency_table,
    write_graph,
)
from signet_bench.store.schema import connect_writer, create_store
from signet_bench.store.timestamps import format_iso

T0 = datetime(2026, 2, 1, 9, 30, tzinfo=UTC)
T1 = T0 + timedelta(days=3)
T2 = T0 + timedelta(days=9)


@dataclass(frozen=True)
class Rows:
    """A graph's rows (what `write_graph` reads)."""

    entities: tuple[Entity, ...]
    aspects: tuple[Aspect, ...]
    attributes: tuple[Attribute, ...]
    mentions: tuple[Mention, ...]
    dependencies: tuple[Dependency, ...]


def _rows() -> Rows:
    """Three entities (the pinned one last, so insertion order differs from id order), one
    aspect, an attribute superseded by another, mentions and two dependencies."""
    entities = (
        Entity("e-zeta", "Zeta Service", "zeta service", "system", "the api service", 2, T0, T1),
        Entity("e-alpha", "alpha", "alpha", "tool", None, 0, T0, T0),
        Entity("e-kit", "Kit", "kit", "person", "an owner", 1, T1, T2, pinned=True),
    )
    aspects = (Aspect("a-1", "e-zeta", "Runbook", "runbook", 0.7, T0, T1),)
    attributes = (
        Attribute(
            "t-old",
            "a-1",
            "m1",
            "constraint",
            "Never  deploy on Fridays.",
            0.9,
            0.8,
            "superseded",
            "t-new",
            T0,
            T1,
        ),
        Attribute(
            "t-new",
            "a-1",
            "m2",
            "attribute",
            "Deploy on Fridays before noon!",
            0.6,
            0.75,
            "active",
            None,
            T1,
            T1,
        ),
    )
    mentions = (
        Mention("m2", "e-zeta", "Zeta Service", 0.95, T1),
        Mention("m1", "e-zeta", "Zeta Service", 0.95, T0),
        Mention("m2", "e-kit", "Kit", 0.8, T1),
    )
    dependencies = (
        Dependency("d-2", "e-zeta", "e-kit", "owned_by", 0.5, 0.6, "zeta owned by Kit", T1, T2),
        Dependency(
            "d-1",
            "e-zeta",
            "e-alpha",
            "uses",
            0.9,
            0.7,
            "zeta uses alpha",
            T0,
            T0,
            co_occurrences=4,
        ),
    )
    return Rows(entities, aspects, attributes, mentions, dependencies)


def _store(tmp_path: Path, schema: str) -> sqlite3.Connection:
    path = create_store(tmp_path / f"{schema}.db", schema=schema)
    con = connect_writer(path)
    write.insert_memories(
        con,
        [{"id": m, "content": f"memory {m}", "created_at": T0} for m in ("m1", "m2")],
        history=False,
    )
    return con


def _select(con: sqlite3.Connection, table: str, cols: str) -> list[tuple]:
    return con.execute(f"SELECT {cols} FROM {table} ORDER BY rowid").fetchall()


@pytest.fixture(params=["0.58", "current"])
def written(request, tmp_path):
    con = _store(tmp_path, request.param)
    write_graph(con, _rows())
    yield request.param, con
    con.close()


def test_node_rows_are_written_column_by_column_in_the_order_given(written):
    _, con = written
    iso = format_iso
    assert _select(
        con,
        "entities",
        "id, name, canonical_name, entity_type, description, mentions, created_at, updated_at,"
        " pinned, pinned_at",
    ) == [
        (
            "e-zeta",
            "Zeta Service",
            "zeta service",
            "system",
            "the api service",
            2,
            iso(T0),
            iso(T1),
            0,
            None,
        ),
        ("e-alpha", "alpha", "alpha", "tool", None, 0, iso(T0), iso(T0), 0, None),
        ("e-kit", "Kit", "kit", "person", "an owner", 1, iso(T1), iso(T2), 1, iso(T1)),
    ]
    assert _select(
        con, "entity_aspects", "id, entity_id, name, canonical_name, weight, created_at, updated_at"
    ) == [("a-1", "e-zeta", "Runbook", "runbook", 0.7, iso(T0), iso(T1))]
    assert _select(
        con,
        "entity_attributes",
        "id, aspect_id, memory_id, kind, content, normalized_content, importance, confidence,"
        " status, superseded_by, created_at, updated_at",
    ) == [
        (
            "t-old",
            "a-1",
            "m1",
            "constraint",
            "Never  deploy on Fridays.",
            "never deploy on fridays",
            0.9,
            0.8,
            "superseded",
            "t-new",
            iso(T0),
            iso(T1),
        ),
        (
            "t-new",
            "a-1",
            "m2",
            "attribute",
            "Deploy on Fridays before noon!",
            "deploy on fridays before noon",
            0.6,
            0.75,
            "active",
            None,
            iso(T1),
            iso(T1),
        ),
    ]
    assert _select(
        con, "memory_entity_mentions", "memory_id, entity_id, mention_text, confidence, created_at"
    ) == [
        ("m2", "e-zeta", "Zeta Service", 0.95, iso(T1)),
        ("m1", "e-zeta", "Zeta Service", 0.95, iso(T0)),
        ("m2", "e-kit", "Kit", 0.8, iso(T1)),
    ]


def test_dependencies_go_to_the_table_the_store_has(written):
    """A current store keeps them in `entity_dependencies` (its `relations` stays empty); a
    0.58 store, which has no `entity_dependencies`, in `relations` with the reason as JSON
    metadata and the co-occurrences as mentions."""
    schema, con = written
    iso = format_iso
    if schema == "current":
        assert dependency_table(con) == "entity_dependencies"
        assert _select(
            con,
            "entity_dependencies",
            "id, source_entity_id, target_entity_id, dependency_type, strength, confidence,"
            " reason, created_at, updated_at",
        ) == [
            ("d-2", "e-zeta", "e-kit", "owned_by", 0.5, 0.6, "zeta owned by Kit", iso(T1), iso(T2)),
            ("d-1", "e-zeta", "e-alpha", "uses", 0.9, 0.7, "zeta uses alpha", iso(T0), iso(T0)),
        ]
        assert _select(con, "relations", "id") == []
    else:
        assert dependency_table(con) == "relations"
        rows = _select(
            con,
            "relations",
            "id, source_entity_id, target_entity_id, relation_type, strength, confidence,"
            " metadata, mentions, created_at, updated_at",
        )
        assert [(*r[:6], json.loads(r[6]), *r[7:]) for r in rows] == [
            (
                "d-2",
                "e-zeta",
                "e-kit",
                "owned_by",
                0.5,
                0.6,
                {"reason": "zeta owned by Kit"},
                1,
                iso(T1),
                iso(T2),
            ),
            (
                "d-1",
                "e-zeta",
                "e-alpha",
                "uses",
                0.9,
                0.7,
                {"reason": "zeta uses alpha"},
                4,
                iso(T0),
                iso(T0),
            ),
        ]


def test_the_graph_reader_reads_what_was_written(written):
    _, con = written
    con.commit()
    g = read_graph(con)
    assert g.dependency_table == dependency_table(con)
    assert g.entity_id.tolist() == ["e-zeta", "e-alpha", "e-kit"]
    assert g.entity_pinned.tolist() == [False, False, True]
    assert g.attr_constraint.tolist() == [True, False]
    assert [g.entity_id[i] for i in g.dep_target] == ["e-kit", "e-alpha"]
    assert g.dep_strength.tolist() == [0.5, 0.9]


def test_a_store_without_a_dependency_table_is_refused(tmp_path):
    con = sqlite3.connect(tmp_path / "plain.db")
    try:
        with pytest.raises(ValueError, match="no dependency table"):
            write_graph(con, _rows())
    finally:
        con.close()


def test_a_clashing_row_is_an_error_and_nothing_is_written(tmp_path):
    """Entity names are unique: a second entity of an existing name is never a silent
    replacement, and the half-written graph is rolled back."""
    con = _store(tmp_path, "current")
    try:
        rows = _rows()
        clash = Entity("e-other", "alpha", "alpha", "tool", None, 0, T0, T0)
        with pytest.raises(sqlite3.IntegrityError):
            write_graph(con, replace(rows, entities=(*rows.entities, clash)))
        for table in ("entities", "entity_aspects", "entity_dependencies"):
            assert _select(con, table, "COUNT(*)") == [(0,)], table
    finally:
        con.close()
