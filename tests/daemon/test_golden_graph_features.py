"""Golden features with a knowledge graph: a small real Signet store (entities, aspects,
attributes with a constraint, rows of another agent, an inactive one, one without an aspect) and
one session whose candidate rows record no graph columns, as the simulated daemon writes them.
The 17 features of every candidate are worked out by hand from the rules, with hashSlot computed
here from the FNV-1a definition; the trainer's samples, the loop's `session_inputs` and the
session-start hook all give them. A second session whose rows carry the daemon's own columns
keeps those (recorded wins), in the trainer and the hook alike."""

from __future__ import annotations

import math
import sqlite3
import struct
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.candidates import CandidateOrigin, SessionInputs, session_inputs
from signet_bench.learn.samples import load_samples
from signet_bench.store.corpus import read_corpus
from signet_bench.store.read import open_readonly
from signet_bench.store.schema import connect_writer, create_store
from signet_bench.store.write import (
    CandidateRow,
    insert_embeddings,
    insert_memories,
    insert_session_score,
    record_session_candidates,
    track_fts_hits,
    transaction,
    write_relevance_scores,
)
from signet_scorer.context import SessionContextVector
from signet_scorer.contract import FEATURE_NAMES
from signet_scorer.features import SessionInfo, feature_index
from signet_scorer.hook.rank import HookSession, session_query
from signet_scorer.structure import GraphColumns

TZ = "UTC"
DIM = 8
KEY, KEY_RECORDED = "graph-s1", "graph-s2"
START = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)  # a Monday, noon, in March
START_RECORDED = datetime(2026, 3, 3, 12, 0, tzinfo=UTC)
TOLERANCE = 1e-6

# id, project, created (days before START), importance, access count
MEMORIES = (
    ("gm1", "alpha", 1, 0.8, 3),
    ("gm2", "alpha", 3, 0.5, 0),
    ("gm3", "alpha", 7, 0.6, 0),
    ("gm4", "alpha", 6, 0.3, 0),
    ("gm5", "alpha", 2, 0.7, 0),
    ("gm6", "beta", 9, 0.5, 0),  # never a candidate: only its attributes count
)
ASPECTS = (  # id, entity, agent
    ("asp-deploy", "ent-alpha", "default"),
    ("asp-rules", "ent-alpha", "default"),
    ("asp-theirs", "ent-alpha", "other"),
    ("asp-db", "ent-beta", "default"),
    ("asp-cache", "ent-beta", "default"),
)
ATTRIBUTES = (  # id, aspect, agent, memory, kind, importance, status, created_at
    ("a1", "asp-deploy", "default", "gm1", "attribute", 0.9, "active", "2026-02-01"),
    ("a2", "asp-rules", "default", "gm1", "constraint", 0.1, "active", "2026-02-02"),
    ("b1", "asp-deploy", "default", "gm2", "attribute", 0.4, "active", "2026-02-01"),
    ("b2", "asp-db", "default", "gm2", "attribute", 0.7, "active", "2026-02-04"),
    ("c1", "asp-deploy", "default", "gm3", "attribute", 0.5, "active", "2026-02-10"),
    ("c2", "asp-cache", "default", "gm3", "attribute", 0.5, "active", "2026-02-03"),
    ("c3", "asp-rules", "default", "gm3", "constraint", 0.9, "deleted", "2026-02-01"),
    ("c4", "asp-cache", "other", "gm3", "attribute", 0.99, "active", "2026-02-01"),
    ("d1", None, "default", "gm4", "attribute", 0.9, "active", "2026-02-01"),
    ("e1", "asp-deploy", "default", "gm5", "attribute", 0.5, "active", "2026-02-01"),
    ("f1", "asp-theirs", "default", "gm6", "attribute", 0.5, "active", "2026-02-01"),
    ("f2", "asp-deploy", "default", "gm6", "attribute", 0.5, "superseded", "2026-02-01"),
)
# session 1: memory, source, injected, judge's relevance (rows record no graph columns)
SESSION = (
    ("gm1", "effective", True, 0.9),
    ("gm2", "effective", True, 0.2),
    ("gm3", "effective", True, 0.6),
    ("gm4", "effective", False, None),
    ("gm5", "ka_traversal", False, None),
)
# gm5 came by traversal alone, so only a signal of its own (an FTS hit) keeps it in the sample
FTS_HITS = ("gm5",)


def fnv1a32(text: str) -> int:
    """32-bit FNV-1a over UTF-16 code units, from the definition (offset 2166136261, prime
    16777619)."""
    raw = text.encode("utf-16-le")
    h = 2166136261
    for (unit,) in struct.iter_unpack("<H", raw):
        h = ((h ^ unit) * 16777619) % 2**32
    return h


def hash_slot(text: str) -> float:
    return (fnv1a32(text) % 256) / 255.0


def test_fnv_reference_vectors():
    assert fnv1a32("a") == 0xE40C292C and fnv1a32("foobar") == 0xBF9CF968


# the primary attribute of each candidate and its entity's density, by hand:
# gm1: a2 (the constraint beats a1's higher importance) -> ent-alpha / asp-rules
# gm2: b2 (importance 0.7 over 0.4) -> ent-beta / asp-db
# gm3: c2 (tie at 0.5, older than c1; c3 is deleted, c4 another agent's) -> ent-beta / asp-cache
# gm4: d1 has no aspect -> none
# gm5: e1 -> ent-alpha / asp-deploy, found by traversal
# density ent-alpha: aspects deploy, rules (asp-theirs is another agent's) = 2, active
#   attributes of kind 'attribute' in them a1, b1, c1, e1 = 4 (f1 sits in another agent's
#   aspect, f2 is superseded, a2 is a constraint) -> 6
# density ent-beta: aspects db, cache = 2, attributes b2, c2 = 2 (c4 another agent's) -> 4
GRAPH = {  # entity, aspect, constraint, density, traversal
    "gm1": ("ent-alpha", "asp-rules", 1.0, 6, 0.0),
    "gm2": ("ent-beta", "asp-db", 0.0, 4, 0.0),
    "gm3": ("ent-beta", "asp-cache", 0.0, 4, 0.0),
    "gm4": (None, None, 0.0, 0, 0.0),
    "gm5": ("ent-alpha", "asp-deploy", 0.0, 6, 1.0),
}


def expected_features() -> dict[str, list[float]]:
    """Each candidate's 17 features at START (Monday 12:00 UTC, March; the project's first
    session: gap 0; every memory embedded, none superseded)."""
    out = {}
    for mid, _project, days, importance, access in MEMORIES[:5]:
        entity, aspect, constraint, density, traversal = GRAPH[mid]
        out[mid] = [
            math.log(days + 1),  # recency
            importance,
            math.log(access + 1),  # usage
            math.sin(math.pi),
            math.cos(math.pi),  # 12:00 of 24 h
            0.0,
            1.0,  # Monday = 0
            math.sin(math.pi / 3),
            math.cos(math.pi / 3),  # March: (3 - 1) / 12 of a turn
            0.0,  # session gap
            1.0,  # has embedding
            0.0,  # superseded
            0.0 if entity is None else hash_slot(entity),
            0.0 if aspect is None else hash_slot(aspect),
            constraint,
            math.log(density + 1),
            traversal,
        ]
    return out


def _write_graph(con: sqlite3.Connection) -> None:
    for entity in ("ent-alpha", "ent-beta"):
        con.execute(
            "INSERT INTO entities (id, name, entity_type, created_at, updated_at) "
            "VALUES (?, ?, 'project', '2026-02-01', '2026-02-01')",
            (entity, entity),
        )
    con.executemany(
        "INSERT INTO entity_aspects (id, entity_id, agent_id, name, canonical_name) "
        "VALUES (?, ?, ?, ?, ?)",
        [(a, e, agent, a, a) for a, e, agent in ASPECTS],
    )
    con.executemany(
        "INSERT INTO entity_attributes (id, aspect_id, agent_id, memory_id, kind, content, "
        "importance, status, created_at) VALUES (?, ?, ?, ?, ?, 'fact', ?, ?, ?)",
        ATTRIBUTES,
    )


def _write_session(
    con: sqlite3.Connection,
    key: str,
    rows: list[CandidateRow],
    relevance: dict[str, float],
    start: datetime,
    project: str,
    fts_hits: tuple[str, ...] = (),
) -> None:
    with transaction(con):
        record_session_candidates(con, key, rows, start.isoformat().replace("+00:00", "Z"))
        write_relevance_scores(con, key, relevance)
        track_fts_hits(con, key, fts_hits, start.isoformat().replace("+00:00", "Z"))
        insert_session_score(
            con,
            key,
            project=project,
            harness="golden",
            score=0.8,
            memories_recalled=len(rows),
            memories_used=sum(r.was_injected for r in rows),
            novel_context_count=0,
            created_at=(start + timedelta(hours=1)).isoformat().replace("+00:00", "Z"),
            confidence=0.9,
        )


def _session_rows() -> list[CandidateRow]:
    return [
        CandidateRow(mid, source, 1.0 - 0.1 * rank, None, 1.0 - 0.1 * rank, rank, injected)
        for rank, (mid, source, injected, _) in enumerate(SESSION)
    ]


def build_store(path: Path) -> Path:
    create_store(path, now=datetime(2026, 1, 1, tzinfo=UTC))
    con = connect_writer(path)
    try:
        insert_memories(
            con,
            [
                {
                    "id": mid,
                    "project": project,
                    "type": "fact",
                    "content": f"memory {mid}",
                    "created_at": START - timedelta(days=days),
                    "importance": importance,
                    "access_count": access,
                }
                for mid, project, days, importance, access in MEMORIES
            ],
        )
        vectors = np.random.default_rng(7).normal(size=(len(MEMORIES), DIM))
        insert_embeddings(con, [m[0] for m in MEMORIES], vectors, "golden-8d")
        with transaction(con):
            _write_graph(con)
        relevance = {m: r for m, _, _, r in SESSION if r is not None}
        _write_session(con, KEY, _session_rows(), relevance, START, "alpha", FTS_HITS)
    finally:
        con.close()
    return path


def _by_id(ids, features) -> dict[str, np.ndarray]:
    return {str(m): np.asarray(f, dtype=np.float64) for m, f in zip(ids, features, strict=True)}


def trainer_features(db: Path, key: str) -> dict[str, np.ndarray]:
    samples, _ = load_samples(db, tz=TZ)
    sample = next(s for s in samples if s.session_key == key)
    return _by_id(sample.memory_ids, sample.features)


TRAVERSAL = np.array([source == "ka_traversal" for _, source, *_ in SESSION])


def loop_inputs(db: Path, **flags) -> SessionInputs:
    """Session 1's inputs as the simulated daemon computes them at its start: the corpus rows
    in baseline order, the store's graph and the traversal flags of its candidates (`flags`:
    `traversal=` or `graph=`)."""
    corpus = read_corpus(db)
    con = open_readonly(db)
    try:
        ids = [m for m, *_ in SESSION]
        return session_inputs(
            corpus,
            corpus.rows(ids),
            KEY,
            SessionInfo(START, TZ, "alpha", None),
            SessionContextVector(None, "none"),
            origin=CandidateOrigin(store=con, **flags),
        )
    finally:
        con.close()


def loop_features(db: Path) -> dict[str, np.ndarray]:
    inputs = loop_inputs(db, traversal=TRAVERSAL)
    return _by_id(inputs.memory_ids, inputs.features)


def hook_features(db: Path, key: str, start: datetime, project: str) -> dict[str, np.ndarray]:
    """The session-start hook's features for the session (its recorded pool, Signet's answer
    listing the same memories)."""
    con = open_readonly(db)
    try:
        pool = [
            r[0]
            for r in con.execute(
                "SELECT memory_id FROM session_memories WHERE session_key = ? ORDER BY rank", [key]
            )
        ]
        query, _ = session_query(
            con,
            HookSession(start, TZ, project, key, "default"),
            pool,
            dim=DIM,
            slots=DEFAULT_CONFIG.project_slots,
        )
    finally:
        con.close()
    assert list(query.candidate_ids) == pool
    return _by_id(query.candidate_ids, query.candidate_features)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return build_store(tmp_path_factory.mktemp("golden-graph") / "memories.db")


def _mismatches(expected: dict[str, list[float]], got: dict[str, np.ndarray]) -> list[str]:
    return [
        f"{mid} {name}: got {got[mid][i]!r}, expected {value!r}"
        for mid, values in expected.items()
        for i, (name, value) in enumerate(zip(FEATURE_NAMES, values, strict=True))
        if not abs(got[mid][i] - value) <= TOLERANCE
    ]


def test_the_trainer_gives_the_hand_computed_features(store):
    got = trainer_features(store, KEY)
    assert sorted(got) == sorted(GRAPH), "every candidate is in the sample"
    assert _mismatches(expected_features(), got) == []


def test_the_loop_gives_the_hand_computed_features(store):
    assert _mismatches(expected_features(), loop_features(store)) == []


def test_the_hook_gives_the_hand_computed_features(store):
    assert _mismatches(expected_features(), hook_features(store, KEY, START, "alpha")) == []


def test_loop_trainer_and_hook_agree_bit_for_bit(store):
    loop, trainer = loop_features(store), trainer_features(store, KEY)
    hook = hook_features(store, KEY, START, "alpha")
    for mid in GRAPH:
        np.testing.assert_array_equal(loop[mid], trainer[mid], err_msg=mid)
        np.testing.assert_array_equal(hook[mid], trainer[mid], err_msg=mid)
    # the graph columns are not all zero: the parity covers them
    cols = [feature_index(n) for n in ("entity_slot", "aspect_slot", "structural_density")]
    assert all(trainer[m][cols].min() > 0 for m in ("gm1", "gm2", "gm3", "gm5"))


def test_recorded_columns_win_in_the_trainer_and_the_hook(store, tmp_path):
    """A session whose rows carry the daemon's graph columns keeps them: gm1's recorded slots
    and density, none for gm2 although the graph now has one, no constraint flag outside its
    project's scope; the hook reads the same."""
    db = tmp_path / "recorded.db"
    db.write_bytes(store.read_bytes())
    con = connect_writer(db)
    try:
        rows = [
            CandidateRow(
                "gm1",
                "effective",
                0.9,
                None,
                0.9,
                0,
                True,
                entity_slot=7,
                aspect_slot=9,
                structural_density=2,
            ),
            CandidateRow("gm2", "effective", 0.8, None, 0.8, 1, True),
            CandidateRow("gm4", "effective", 0.7, None, 0.7, 2, False),
        ]
        _write_session(con, KEY_RECORDED, rows, {"gm1": 0.8, "gm2": 0.3}, START_RECORDED, "beta")
    finally:
        con.close()
    trainer = trainer_features(db, KEY_RECORDED)
    hook = hook_features(db, KEY_RECORDED, START_RECORDED, "beta")
    graph = [feature_index(n) for n in FEATURE_NAMES[12:]]
    assert trainer["gm1"][graph] == pytest.approx([7 / 255, 9 / 255, 0.0, math.log(3), 0.0])
    assert trainer["gm2"][graph] == pytest.approx([0.0] * 5)
    for mid in ("gm1", "gm2", "gm4"):
        np.testing.assert_array_equal(hook[mid], trainer[mid], err_msg=mid)


def test_an_empty_graph_changes_nothing(store, tmp_path):
    """With the graph's tables emptied, the loop's features from the store are exactly those
    without a store: every graph feature 0 but the traversal flag."""
    db = tmp_path / "bare.db"
    db.write_bytes(store.read_bytes())
    con = connect_writer(db)
    try:
        with transaction(con):
            for table in ("entity_attributes", "entity_aspects", "entities"):
                con.execute(f"DELETE FROM {table}")
    finally:
        con.close()
    corpus = read_corpus(db)
    ids = [m for m, *_ in SESSION]
    args = (KEY, SessionInfo(START, TZ, "alpha", None), SessionContextVector(None, "none"))
    con = open_readonly(db)
    try:
        with_store = session_inputs(
            corpus, corpus.rows(ids), *args, origin=CandidateOrigin(store=con)
        )
    finally:
        con.close()
    without = session_inputs(corpus, corpus.rows(ids), *args)
    np.testing.assert_array_equal(with_store.features, without.features)
    assert not with_store.features[:, feature_index("entity_slot") :].any()


def test_the_loops_flags_as_columns_give_the_same(store):
    """The daemon's flags handed over as columns without slots (a traversal and a forced
    constraint) are kept, and the slots and density come from the graph."""
    forced = np.array([False, False, False, True, False])  # gm4, e.g. a focal entity's
    flags = GraphColumns.none(len(SESSION), TRAVERSAL)
    flags = GraphColumns(
        flags.entity_slot, flags.aspect_slot, flags.structural_density, TRAVERSAL, forced
    )
    got = loop_inputs(store, graph=flags)
    want = loop_inputs(store, traversal=TRAVERSAL)
    cons = feature_index("is_constraint")
    np.testing.assert_array_equal(
        np.delete(got.features, cons, 1), np.delete(want.features, cons, 1)
    )
    assert got.features[:, cons].tolist() == [1.0, 0.0, 0.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="not both"):
        loop_inputs(store, graph=flags, traversal=TRAVERSAL)


def test_what_the_loop_records_the_trainer_reads_back(store, tmp_path):
    """The loop's session rows recorded with the columns it computed (`GraphColumns.recorded`,
    and its constraint flag, as the loop records it) give the trainer the loop's features,
    from the rows and not the graph: deleting the graph's attributes afterwards changes
    nothing."""
    db = tmp_path / "recorded-by-loop.db"
    db.write_bytes(store.read_bytes())
    inputs = loop_inputs(db, traversal=TRAVERSAL)
    rows = [
        CandidateRow(
            r.memory_id,
            r.source,
            r.effective_score,
            None,
            r.final_score,
            r.rank,
            r.was_injected,
            is_constraint=bool(inputs.is_constraint[i]),
            **inputs.graph.recorded(i),
        )
        for i, r in enumerate(_session_rows())
    ]
    con = connect_writer(db)
    try:
        with transaction(con):
            con.execute("DELETE FROM session_memories WHERE session_key = ?", [KEY])
            con.execute("DELETE FROM entity_attributes")
        relevance = {m: r for m, _, _, r in SESSION if r is not None}
        _write_session(con, KEY, rows, relevance, START, "alpha", FTS_HITS)
    finally:
        con.close()
    trainer = trainer_features(db, KEY)
    for mid, feats in _by_id(inputs.memory_ids, inputs.features).items():
        np.testing.assert_array_equal(trainer[mid], feats, err_msg=mid)


def test_the_hook_computes_them_when_the_store_records_no_such_columns(store, tmp_path):
    """A `session_memories` without the graph columns (a daemon before them): the hook reads
    the graph and gives the hand-computed features all the same."""
    db = tmp_path / "no-columns.db"
    db.write_bytes(store.read_bytes())
    con = connect_writer(db)
    try:
        for column in ("entity_slot", "aspect_slot", "structural_density"):
            con.execute(f"ALTER TABLE session_memories DROP COLUMN {column}")
    finally:
        con.close()
    assert _mismatches(expected_features(), hook_features(db, KEY, START, "alpha")) == []
