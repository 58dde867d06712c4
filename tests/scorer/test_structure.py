"""The knowledge-graph columns (signet_scorer.structure) on real SQLite stores: the primary
attribute rule (constraint, importance, age, active, the agent, an aspect), hashSlot of its
entity and aspect, the entity's structural density, tolerance of missing tables and columns, one
statement per call whatever the number of ids, and the recorded-or-computed rule."""

from __future__ import annotations

import sqlite3
import struct
from pathlib import Path

import numpy as np
import pytest

from signet_bench.store.schema import connect_writer, create_store
from signet_scorer.structure import (
    MAX_BOUND_IDS,
    GraphColumns,
    read_structure,
    recorded_structure,
    session_columns,
    structure_columns,
)

ATTR_COLS = "id, aspect_id, agent_id, memory_id, kind, content, importance, status, created_at"


def fnv1a32_reference(text: str) -> int:
    """32-bit FNV-1a over UTF-16 code units, written out from the definition."""
    units = struct.unpack(f"<{len(text.encode('utf-16-le')) // 2}H", text.encode("utf-16-le"))
    h = 0x811C9DC5
    for unit in units:
        h = ((h ^ unit) * 0x01000193) % (1 << 32)
    return h


def slot(text: str) -> float:
    return float(fnv1a32_reference(text) % 256)


def test_reference_hash_matches_published_vectors():
    # FNV-1a 32-bit test vectors (ASCII: a UTF-16 code unit equals the byte)
    assert fnv1a32_reference("") == 0x811C9DC5
    assert fnv1a32_reference("a") == 0xE40C292C
    assert fnv1a32_reference("foobar") == 0xBF9CF968


# aspects: (id, entity, agent); attributes: (id, aspect, agent, memory, kind, importance,
# status, created_at)
ASPECTS = (
    ("asp-deploy", "ent-alpha", "default"),
    ("asp-rules", "ent-alpha", "default"),
    ("asp-theirs", "ent-alpha", "other"),
    ("asp-db", "ent-beta", "default"),
)
ATTRIBUTES = (
    ("x1", "asp-deploy", "default", "m-cons", "attribute", 0.9, "active", "2026-01-01"),
    ("x2", "asp-rules", "default", "m-cons", "constraint", 0.1, "active", "2026-01-05"),
    ("x3", "asp-deploy", "default", "m-imp", "attribute", 0.4, "active", "2026-01-01"),
    ("x4", "asp-db", "default", "m-imp", "attribute", 0.7, "active", "2026-01-09"),
    ("x5", "asp-deploy", "default", "m-old", "attribute", 0.5, "active", "2026-01-10"),
    ("x6", "asp-db", "default", "m-old", "attribute", 0.5, "active", "2026-01-03"),
    ("x7", "asp-rules", "default", "m-inactive", "constraint", 0.9, "superseded", "2026-01-01"),
    ("x8", "asp-rules", "default", "m-inactive", "constraint", 0.9, "deleted", "2026-01-01"),
    ("x9", "asp-db", "other", "m-agent", "constraint", 0.9, "active", "2026-01-01"),
    ("x10", None, "default", "m-no-aspect", "constraint", 0.9, "active", "2026-01-01"),
    ("x11", "asp-theirs", "default", "m-theirs", "attribute", 0.5, "active", "2026-01-01"),
)
# density: ent-alpha has 2 aspects of the default agent (asp-theirs is another agent's) and 3
# active attributes of kind 'attribute' in them (x1, x3, x5; x11 sits in another agent's
# aspect); ent-beta has 1 aspect and 2 (x4, x6; x9 is another agent's)
ALPHA_DENSITY, BETA_DENSITY = 2 + 3, 1 + 2


def _graph_store(path: Path, schema: str = "0.58") -> Path:
    create_store(path, schema=schema)
    con = connect_writer(path)
    try:
        for e in ("ent-alpha", "ent-beta"):
            con.execute(
                "INSERT INTO entities (id, name, entity_type, created_at, updated_at) "
                "VALUES (?, ?, 'project', 't', 't')",
                (e, e),
            )
        con.executemany(
            "INSERT INTO entity_aspects (id, entity_id, agent_id, name, canonical_name) "
            "VALUES (?, ?, ?, ?, ?)",
            [(a, e, ag, a, a) for a, e, ag in ASPECTS],
        )
        extra = ", normalized_content" if schema == "current" else ""
        rows = [(*r[:5], "text", *r[5:]) + (("text",) if extra else ()) for r in ATTRIBUTES]
        marks = ", ".join("?" * len(rows[0]))
        con.executemany(
            f"INSERT INTO entity_attributes ({ATTR_COLS}{extra}) VALUES ({marks})", rows
        )
        con.commit()
    finally:
        con.close()
    return path


def _ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


@pytest.fixture(params=["0.58", "current"])
def graph_db(request, tmp_path) -> Path:
    return _graph_store(tmp_path / "graph.db", request.param)


IDS = ["m-cons", "m-imp", "m-old", "m-inactive", "m-agent", "m-no-aspect", "m-theirs", "m-none"]


def test_primary_attribute_slots_constraint_and_density(graph_db):
    con = _ro(graph_db)
    try:
        cols = structure_columns(con, IDS, [False, True, False, False, False, False, False, True])
    finally:
        con.close()
    alpha, beta = slot("ent-alpha"), slot("ent-beta")
    assert cols.entity_slot.tolist() == [alpha, beta, beta, -1, -1, -1, alpha, -1]
    assert cols.aspect_slot.tolist() == [
        slot("asp-rules"),  # the constraint first, whatever its importance
        slot("asp-db"),  # then the higher importance
        slot("asp-db"),  # then the older created_at
        -1,
        -1,
        -1,  # only superseded/deleted rows; another agent's; no aspect
        slot("asp-theirs"),  # its aspect is another agent's, the attribute is ours
        -1,
    ]
    assert cols.is_constraint.tolist() == [True] + [False] * 7
    assert cols.structural_density.tolist() == [
        ALPHA_DENSITY,
        BETA_DENSITY,
        BETA_DENSITY,
        0,
        0,
        0,
        ALPHA_DENSITY,
        0,
    ]
    assert cols.is_traversal.tolist() == [False, True] + [False] * 5 + [True]


def test_the_agent_chooses_the_rows(graph_db):
    con = _ro(graph_db)
    try:
        theirs = structure_columns(con, ["m-agent", "m-cons"], agent_id="other")
    finally:
        con.close()
    # m-agent's constraint is the other agent's; its entity has one aspect of theirs and no
    # attribute of kind 'attribute' of theirs
    assert theirs.entity_slot.tolist() == [slot("ent-beta"), -1]
    assert theirs.is_constraint.tolist() == [True, False]
    assert theirs.structural_density.tolist() == [0.0, 0.0]


def test_many_ids_read_everything_once_and_give_the_same(graph_db):
    filler = [f"absent-{i}" for i in range(MAX_BOUND_IDS + 10)]
    con = _ro(graph_db)
    try:
        few = structure_columns(con, IDS)
        many = structure_columns(con, IDS + filler)
    finally:
        con.close()
    for name in ("entity_slot", "aspect_slot", "structural_density", "is_constraint"):
        np.testing.assert_array_equal(getattr(many, name)[: len(IDS)], getattr(few, name))
    assert (many.entity_slot[len(IDS) :] == -1).all()


def _statements(con: sqlite3.Connection, ids: list[str]) -> list[str]:
    """The statements a call runs (the table-valued pragma's own steps are traced as
    comments: not statements of ours)."""
    seen: list[str] = []
    con.set_trace_callback(seen.append)
    try:
        structure_columns(con, ids)
    finally:
        con.set_trace_callback(None)
    return [s for s in seen if not s.startswith("--")]


def test_one_statement_whatever_the_number_of_ids(graph_db):
    con = _ro(graph_db)
    try:
        two = _statements(con, IDS[:2])
        hundred = _statements(con, IDS + [f"absent-{i}" for i in range(92)])
    finally:
        con.close()
    # the schema look-up and the one query; never one per memory
    assert len(two) == len(hundred) == 2
    assert "entity_attributes" in hundred[1] and "ROW_NUMBER" in hundred[1]


def test_no_ids_no_query(graph_db):
    con = _ro(graph_db)
    try:
        assert _statements(con, []) == []
        assert len(structure_columns(con, [])) == 0
    finally:
        con.close()


def test_a_store_without_the_graph_gives_none(tmp_path):
    con = sqlite3.connect(tmp_path / "bare.db")
    con.execute("CREATE TABLE memories (id TEXT PRIMARY KEY)")
    try:
        cols = structure_columns(con, ["a", "b"], [True, False])
    finally:
        con.close()
    assert cols.entity_slot.tolist() == cols.aspect_slot.tolist() == [-1.0, -1.0]
    assert cols.structural_density.tolist() == [0.0, 0.0]
    assert cols.is_constraint.tolist() == [False, False]
    assert cols.is_traversal.tolist() == [True, False]


def test_missing_columns_take_signets_defaults(tmp_path):
    """Without kind, importance, status, created_at or agent_id every attribute is an active
    'attribute' of importance 0.5 of every agent: the older row is primary."""
    con = sqlite3.connect(tmp_path / "old.db")
    con.executescript(
        "CREATE TABLE entity_aspects (id TEXT, entity_id TEXT);"
        "CREATE TABLE entity_attributes (aspect_id TEXT, memory_id TEXT);"
        "INSERT INTO entity_aspects VALUES ('p', 'E'), ('q', 'E');"
        "INSERT INTO entity_attributes VALUES ('q', 'm1'), ('p', 'm1'), ('p', 'm2');"
    )
    try:
        cols = structure_columns(con, ["m1", "m2"], agent_id="anyone")
        # a table without the columns the rule joins on gives none
        con.execute("ALTER TABLE entity_aspects RENAME COLUMN entity_id TO owner")
        lost = structure_columns(con, ["m1"])
    finally:
        con.close()
    assert cols.aspect_slot.tolist() == [slot("q"), slot("p")]
    assert cols.entity_slot.tolist() == [slot("E"), slot("E")]
    assert cols.structural_density.tolist() == [2 + 3, 2 + 3]
    assert lost.entity_slot.tolist() == [-1.0]


def test_traversal_flags_must_match_the_candidates(graph_db):
    con = _ro(graph_db)
    try:
        with pytest.raises(ValueError, match="expected 2 .* got 3"):
            structure_columns(con, ["m-cons", "m-imp"], [True, False, True])
    finally:
        con.close()


def _recorded(entity: list[float], constraint: list[bool]) -> GraphColumns:
    n = len(entity)
    return GraphColumns(
        entity_slot=np.array(entity, dtype=float),
        aspect_slot=np.full(n, -1.0),
        structural_density=np.zeros(n),
        is_traversal=np.array([False, True][:n]),
        is_constraint=np.array(constraint),
    )


def test_recorded_rows_win_when_they_carry_a_slot(graph_db):
    con = _ro(graph_db)
    try:
        structure = read_structure(con, ["m-cons", "m-imp"])
    finally:
        con.close()
    recorded = _recorded([5.0, np.nan], [False, False])
    assert recorded_structure(recorded.entity_slot, recorded.aspect_slot)
    assert session_columns(recorded, ["m-cons", "m-imp"], structure) is recorded


def test_bare_rows_are_computed_keeping_the_recorded_flags(graph_db):
    con = _ro(graph_db)
    try:
        structure = read_structure(con, ["m-imp", "m-none"])
    finally:
        con.close()
    recorded = _recorded([-1.0, np.nan], [False, True])
    assert not recorded_structure(recorded.entity_slot, recorded.aspect_slot)
    cols = session_columns(recorded, ["m-imp", "m-none"], structure)
    assert cols.entity_slot.tolist() == [slot("ent-beta"), -1.0]
    assert cols.structural_density.tolist() == [BETA_DENSITY, 0.0]
    assert cols.is_traversal.tolist() == [False, True]  # the recorded sources
    assert cols.is_constraint.tolist() == [False, True]  # the daemon's flag is kept
    assert session_columns(recorded, ["m-imp", "m-none"], None) is recorded
    with pytest.raises(ValueError, match="1 memory ids for 2 recorded rows"):
        session_columns(recorded, ["m-imp"], structure)


def test_take_keeps_the_columns_aligned(graph_db):
    con = _ro(graph_db)
    try:
        cols = structure_columns(con, IDS[:3], [True, False, True])
    finally:
        con.close()
    part = cols.take(np.array([2, 0]))
    assert part.entity_slot.tolist() == [cols.entity_slot[2], cols.entity_slot[0]]
    assert part.is_traversal.tolist() == [True, True]
    assert len(cols.take(np.array([True, False, False]))) == 1


def test_recorded_form_round_trips_through_the_rule(graph_db):
    """What the daemon records of its computed columns is read back as the same columns."""
    con = _ro(graph_db)
    try:
        cols = structure_columns(con, IDS, [False] * len(IDS))
    finally:
        con.close()
    rows = [cols.recorded(i) for i in range(len(IDS))]
    assert rows[0] == {
        "entity_slot": int(slot("ent-alpha")),
        "aspect_slot": int(slot("asp-rules")),
        "structural_density": ALPHA_DENSITY,
    }
    assert rows[-1] == {"entity_slot": None, "aspect_slot": None, "structural_density": None}
    back = GraphColumns(
        entity_slot=np.array([-1 if r["entity_slot"] is None else r["entity_slot"] for r in rows]),
        aspect_slot=np.array([-1 if r["aspect_slot"] is None else r["aspect_slot"] for r in rows]),
        structural_density=np.array([r["structural_density"] or 0 for r in rows]),
        is_traversal=cols.is_traversal,
        is_constraint=cols.is_constraint,
    )
    assert recorded_structure(back.entity_slot, back.aspect_slot)
    for name in ("entity_slot", "aspect_slot", "structural_density"):
        np.testing.assert_array_equal(getattr(back, name), getattr(cols, name))
