"""The LoCoMo knowledge graph: the naming rule on hand-written sentences, the graph's numbers on
hand-made memories, determinism, and a real conversation's store (read in place, never
copied) in both release lines: referential integrity, and the rest of the store unchanged."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from signet_bench.store.graph import canonical as canonical_name
from signet_bench.world.embed import get_embedder
from signet_bench.world.locomo import (
    LocomoMemory,
    conversation_memories,
    conversation_queries,
    load_locomo,
    parse_conversation,
    write_conversation_store,
)
from signet_bench.world.locomo_graph import (
    build_graph,
    entities_named_in,
    evidence_named,
    find_names,
    name_vocabulary,
)
from tests.world.test_locomo import LOCOMO, needs_data, slice_file

SPEAKERS = ("Caroline", "Melanie")
GRAPH_TABLES = ("entities", "memory_entity_mentions", "entity_aspects", "entity_attributes")
DEPENDENCY_TABLE = {"0.58": "relations", "current": "entity_dependencies"}


def names(text: str, *others: str, speakers=SPEAKERS) -> list[tuple[str, bool, str | None]]:
    """The names `find_names` reads in `text`, the vocabulary learnt from it and `others`."""
    vocab = name_vocabulary((text, *others), speakers)
    return [tuple(f) for f in find_names(text, vocab, speakers)]


def memory(mid: str, text: str, session: int = 1, importance: float = 0.5) -> LocomoMemory:
    at = datetime(2023, 5, session, 13, 0, tzinfo=UTC)
    return LocomoMemory(
        mid, "observation", text, session, at, (f"D{session}:1",), None, "fact", importance
    )


# --- the rule on hand-written sentences ---------------------------------------------------------


def test_speakers_are_found_where_they_open_a_sentence_and_possessives_are_cut():
    assert names("Caroline went hiking. Melanie's kids joined.") == [
        ("Caroline", True, None),
        ("Melanie", True, None),
    ]
    # a speaker never joins a longer name, even right beside another name word
    assert [n[0] for n in names("Yesterday Melanie Caroline met Sara.")] == [
        "Melanie",
        "Caroline",
        "Sara",
    ]


def test_sentence_initial_words_count_only_when_the_conversation_capitalises_them_elsewhere():
    text = "Painting helps Melanie relax. Oliver sleeps a lot."
    assert [n[0] for n in names(text)] == ["Melanie"]  # Painting and Oliver open sentences only
    # Oliver written mid-sentence in another memory is a name, so it counts at a sentence start
    assert [n[0] for n in names(text, "Melanie has a cat named Oliver.")] == ["Melanie", "Oliver"]


def test_stopwords_are_never_names():
    found = names("Caroline met Sara on Friday in May. She said Hey to The group.")
    assert [n[0] for n in found] == ["Caroline", "Sara"]


def test_multiword_names_join_across_spaces_and_of_the_but_not_across_punctuation():
    found = names(
        "Melanie visited the Grand Canyon, read Lord of the Rings and met Paris, Rome fans."
    )
    assert [n[0] for n in found] == [
        "Melanie",
        "Grand Canyon",
        "Lord of the Rings",
        "Paris",
        "Rome",
    ]
    assert names("Caroline loves Ed Sheeran's songs.")[1][0] == "Ed Sheeran"
    # a lower-case hyphenated suffix is cut and ends the name
    assert [n[0] for n in names("Caroline bought a Star Wars-related Lego set.")] == [
        "Caroline",
        "Star Wars",
        "Lego",
    ]
    # an upper-case part stays: the name keeps its hyphen
    assert names("Caroline watched Spider-Man twice.")[1][0] == "Spider-Man"


def test_the_type_cue_reads_the_word_before_a_name():
    cues = {
        n[0]: n[2]
        for n in names(
            "Melanie has a dog named Luna, visited the Grand Canyon, loves 'Becoming Nicole' and"
            " met her friend Sara at Door Dash with Bach."
        )
    }
    assert cues == {
        "Melanie": None,
        "Luna": "animal",
        "Grand Canyon": "place",
        "Becoming Nicole": "work",
        "Sara": "person",
        "Door Dash": None,
        "Bach": None,
    }
    # no cue across a sentence end
    assert names("Caroline went to bed. Sweden is cold.", "She lived in Sweden")[1][2] is None


def test_a_type_needs_votes_from_half_the_places_a_name_is_written():
    texts = [
        "Caroline loves LGBTQ art.",
        "Caroline joined LGBTQ events.",
        "Caroline spoke in LGBTQ rights.",
        "Caroline flew from Rome to Paris.",
    ]
    graph = build_graph("t", SPEAKERS, [memory(f"m{i}", t) for i, t in enumerate(texts)])
    types = {e.name: e.entity_type for e in graph.entities}
    assert types == {
        "Caroline": "person",
        "Melanie": "person",
        "LGBTQ": "thing",
        "Rome": "place",
        "Paris": "place",
    }


def test_canonical_names_and_question_matching():
    assert canonical_name("  Grand   Canyon ") == "grand canyon"
    graph = build_graph(
        "t",
        SPEAKERS,
        [memory("m1", "Melanie visited the Grand Canyon and heard the song 'Brave'.")],
    )

    def named(question: str) -> list[str]:
        return [e.name for e in entities_named_in(question, graph.entities)]

    assert named("When did Melanie visit the Grand Canyon?") == ["Melanie", "Grand Canyon"]
    assert named("What is Caroline's favourite song?") == ["Caroline"]
    assert named("Was Melanie brave at the canyon?") == ["Melanie"]  # written in lower case
    assert named("Did Melanie like Brave-themed art?") == ["Melanie", "Brave"]


# --- the graph on hand-made memories ------------------------------------------------------------


def hand_graph():
    mems = [
        memory("m1", "Caroline moved from Sweden with Oliver.", session=1, importance=0.7),
        memory("m2", "Caroline misses Sweden and Oliver.", session=2),
        memory("m3", "Caroline visited Sweden again.", session=2),
        memory("m4", "Painting relaxes her.", session=3),
    ]
    return mems, build_graph("conv-x", SPEAKERS, mems)


def test_entities_mentions_and_types():
    mems, g = hand_graph()
    by_name = {e.name: e for e in g.entities}
    assert list(by_name) == ["Caroline", "Melanie", "Sweden", "Oliver"]
    assert [(e.entity_type, e.mentions) for e in by_name.values()] == [
        ("person", 3),
        ("person", 0),
        ("place", 3),
        ("thing", 2),
    ]
    assert by_name["Melanie"].created_at == mems[0].created_at  # a speaker never named
    assert by_name["Sweden"].updated_at == mems[2].created_at
    assert {
        (m.memory_id, m.mention_text) for m in g.mentions if m.entity_id == by_name["Oliver"].id
    } == {("m1", "Oliver"), ("m2", "Oliver")}
    conf = {m.entity_id: m.confidence for m in g.mentions}
    assert conf[by_name["Caroline"].id] == 1.0 and conf[by_name["Sweden"].id] == 0.8


def test_aspects_are_sessions_weighted_by_the_busiest_and_attributes_point_at_memories():
    _, g = hand_graph()
    sweden = next(e for e in g.entities if e.name == "Sweden")
    aspects = {a.name: a for a in g.aspects if a.entity_id == sweden.id}
    assert {k: a.weight for k, a in aspects.items()} == {"session 1": 0.5, "session 2": 1.0}
    attrs = [a for a in g.attributes if a.aspect_id in {x.id for x in aspects.values()}]
    assert sorted(a.memory_id for a in attrs) == ["m1", "m2", "m3"]
    first = next(a for a in attrs if a.memory_id == "m1")
    assert first.aspect_id == aspects["session 1"].id
    assert first.importance == 0.7 and first.content.startswith("Caroline moved")
    assert len(g.attributes) == len(g.mentions)


def test_dependencies_are_co_occurrences_in_both_directions():
    _, g = hand_graph()
    ids = {e.name: e.id for e in g.entities}
    deps = {(d.source_entity_id, d.target_entity_id): d for d in g.dependencies}
    assert len(deps) == len(g.dependencies) == 6  # 3 pairs (Melanie is in none), both ways
    so = deps[(ids["Sweden"], ids["Oliver"])]
    # 2 memories name both, 3 name either: Jaccard 2/3, confidence 2/(2+1)
    assert so.co_occurrences == 2
    assert so.strength == pytest.approx(2 / 3) and so.confidence == pytest.approx(2 / 3)
    back = deps[(ids["Oliver"], ids["Sweden"])]
    assert (back.strength, back.confidence) == (so.strength, so.confidence)
    assert deps[(ids["Caroline"], ids["Sweden"])].strength == 1.0  # named together every time


def test_evidence_named_with_and_without_speakers():
    _, g = hand_graph()
    assert evidence_named(g, "Where did Caroline move from?", ["m3"])
    assert not evidence_named(g, "Where did Caroline move from?", ["m3"], speakers=False)
    assert evidence_named(g, "Does Caroline miss Sweden?", ["m2"], speakers=False)
    assert not evidence_named(g, "Does Caroline miss Sweden?", ["m4"])


# --- determinism ---------------------------------------------------------------------------------


_DIGEST = """
import hashlib, sys
from signet_bench.world.locomo import conversation_memories, load_locomo, parse_conversation
from signet_bench.world.locomo_graph import build_graph
doc = next(d for d in load_locomo(sys.argv[1]) if d["sample_id"] == "conv-30")
conv = parse_conversation(doc, [])
print(hashlib.sha256(repr(build_graph(conv.sample_id, conv.speakers,
      conversation_memories(conv))).encode()).hexdigest())
"""


@needs_data
def test_the_graph_is_the_same_in_every_process():
    """Equal row for row whatever the interpreter's string hashing (sets, dicts)."""
    digests = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", _DIGEST, str(LOCOMO)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(run.stdout.strip())
    assert len(digests) == 1
    doc = next(d for d in load_locomo(LOCOMO) if d["sample_id"] == "conv-30")
    conv = parse_conversation(doc, [])
    mems = conversation_memories(conv)
    g = build_graph(conv.sample_id, conv.speakers, mems)
    assert g == build_graph(conv.sample_id, conv.speakers, mems)
    assert len(g.entities) > 2 and g.dependencies


# --- a real conversation's store -----------------------------------------------------------------


def _build(out: Path, schema: str, graph: bool) -> Path:
    doc = next(d for d in load_locomo(LOCOMO) if d["sample_id"] == "conv-26")
    conv = parse_conversation(doc, [])
    mems = conversation_memories(conv)
    queries = conversation_queries(conv, {}, [])
    return write_conversation_store(
        out, conv, mems, queries, get_embedder("wordllama"), schema=schema, graph=graph
    )


@pytest.fixture(scope="module", params=["0.58", "current"])
def real_store(request, tmp_path_factory):
    if not LOCOMO.exists():
        pytest.skip("LoCoMo data not present")
    out = tmp_path_factory.mktemp(f"graph-{request.param}")
    return request.param, _build(out / "conv-26.db", request.param, graph=True)


def _rows(con: sqlite3.Connection, sql: str) -> list[tuple]:
    return con.execute(sql).fetchall()


def test_the_store_graph_is_referentially_whole(real_store):
    schema, path = real_store
    deps = DEPENDENCY_TABLE[schema]
    con = sqlite3.connect(path)
    try:
        assert _rows(con, "PRAGMA foreign_key_check") == []
        counts = {t: _rows(con, f"SELECT COUNT(*) FROM {t}")[0][0] for t in (*GRAPH_TABLES, deps)}
        assert all(counts.values()), counts
        orphans = {
            "mention memory": "SELECT COUNT(*) FROM memory_entity_mentions x"
            " LEFT JOIN memories m ON m.id = x.memory_id WHERE m.id IS NULL",
            "mention entity": "SELECT COUNT(*) FROM memory_entity_mentions x"
            " LEFT JOIN entities e ON e.id = x.entity_id WHERE e.id IS NULL",
            "aspect entity": "SELECT COUNT(*) FROM entity_aspects a"
            " LEFT JOIN entities e ON e.id = a.entity_id WHERE e.id IS NULL",
            "attribute aspect": "SELECT COUNT(*) FROM entity_attributes t"
            " LEFT JOIN entity_aspects a ON a.id = t.aspect_id WHERE a.id IS NULL",
            "attribute without its mention": "SELECT COUNT(*) FROM entity_attributes t"
            " JOIN entity_aspects a ON a.id = t.aspect_id LEFT JOIN memory_entity_mentions x"
            " ON x.memory_id = t.memory_id AND x.entity_id = a.entity_id WHERE x.memory_id IS NULL",
            "dependency end": f"SELECT COUNT(*) FROM {deps} d LEFT JOIN entities s"
            " ON s.id = d.source_entity_id LEFT JOIN entities t ON t.id = d.target_entity_id"
            " WHERE s.id IS NULL OR t.id IS NULL",
            "one-way dependency": f"SELECT COUNT(*) FROM {deps} d LEFT JOIN {deps} r"
            " ON r.source_entity_id = d.target_entity_id AND r.target_entity_id ="
            " d.source_entity_id WHERE r.id IS NULL",
            "mention count": "SELECT COUNT(*) FROM entities e WHERE e.mentions <>"
            " (SELECT COUNT(*) FROM memory_entity_mentions x WHERE x.entity_id = e.id)",
        }
        bad = {k: _rows(con, sql)[0][0] for k, sql in orphans.items()}
        assert bad == dict.fromkeys(orphans, 0)
        assert counts["entity_attributes"] == counts["memory_entity_mentions"]
        kinds = _rows(con, "SELECT DISTINCT kind, status FROM entity_attributes")
        assert kinds == [("attribute", "active")]
        persons = _rows(
            con,
            "SELECT name FROM entities WHERE entity_type = 'person'"
            " AND description IS NOT NULL ORDER BY name",
        )
        assert persons == [("Caroline",), ("Melanie",)]
        values = _rows(
            con,
            f"SELECT MIN(strength), MAX(strength), MIN(confidence), MAX(confidence) FROM {deps}",
        )[0]
        assert 0 < values[0] <= values[1] <= 1 and 0.5 <= values[2] <= values[3] < 1
    finally:
        con.close()


def test_entity_names_are_findable_from_question_terms(real_store):
    schema, path = real_store
    con = sqlite3.connect(path)
    try:
        names = {r[0]: r[1] for r in _rows(con, "SELECT canonical_name, name FROM entities")}
        assert names["grand canyon"] == "Grand Canyon" and names["lgbtq"] == "LGBTQ"
        if schema == "current":  # Signet's own entity search
            hit = _rows(con, "SELECT name FROM entities_fts WHERE entities_fts MATCH 'canyon'")
            assert hit == [("Grand Canyon",)]
    finally:
        con.close()


_SAME = {
    "memories": "SELECT * FROM memories ORDER BY id",
    "embeddings": "SELECT * FROM embeddings ORDER BY id",
    "memories_fts": "SELECT rowid, content FROM memories_fts ORDER BY rowid",
    "fts search": "SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'pottery' ORDER BY rowid",
    "memory_history": "SELECT * FROM memory_history ORDER BY id",
    "session_memories": "SELECT * FROM session_memories ORDER BY session_key, memory_id",
    "session_scores": "SELECT * FROM session_scores ORDER BY id",
    "locomo_queries": "SELECT * FROM locomo_queries ORDER BY session_key",
    "locomo_meta": "SELECT * FROM locomo_meta ORDER BY key",
}


@needs_data
def test_the_graph_changes_nothing_else_in_the_store(tmp_path):
    """Memories, embeddings, FTS and recorded sessions are equal with and without the graph,
    so LoCoMo results stay reproducible."""
    with_graph = _build(tmp_path / "with.db", "0.58", graph=True)
    without = _build(tmp_path / "without.db", "0.58", graph=False)
    a, b = sqlite3.connect(with_graph), sqlite3.connect(without)
    try:
        for name, sql in _SAME.items():
            rows = _rows(a, sql)
            assert rows and rows == _rows(b, sql), name
        for table in (*GRAPH_TABLES, "relations"):
            assert _rows(b, f"SELECT COUNT(*) FROM {table}") == [(0,)]
            assert _rows(a, f"SELECT COUNT(*) FROM {table}")[0][0] > 0
    finally:
        a.close()
        b.close()


@needs_data
def test_convert_locomo_writes_the_graph_into_every_store(tmp_path):
    from signet_bench.world.locomo import convert_locomo

    res = convert_locomo(
        slice_file(tmp_path), tmp_path / "out", get_embedder("wordllama"), schema="current"
    )
    for path in res.stores.values():
        con = sqlite3.connect(path)
        try:
            assert _rows(
                con,
                "SELECT COUNT(*) FROM entities WHERE entity_type = 'person'"
                " AND description IS NOT NULL",
            ) == [(2,)]
            assert _rows(con, "SELECT COUNT(*) FROM memory_entity_mentions")[0][0] > 0
        finally:
            con.close()
