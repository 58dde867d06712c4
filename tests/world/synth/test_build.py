"""Whole synthetic stores: determinism, counts, FTS5, planted truth, Signet write paths."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections import Counter
from datetime import timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from signet_bench.cli import main
from signet_bench.errors import UserError
from signet_bench.world.synth.build import (
    PINNED_SHARE,
    USEFULNESS_SPREAD,
    build_persona_store,
    plan_store,
    reference_now,
)
from signet_bench.world.synth.embedding import TopicEmbedder, topic_separation_auc
from signet_bench.world.synth.persona import TIME_PATTERNS, Persona, get_persona, local_hour_weekday
from signet_bench.world.synth.plans import make_context, plan_sessions
from signet_bench.world.synth.text import tokens
from signet_bench.world.synth.truth import load_truth, read_synth_meta, true_relevance
from signet_bench.world.synth.vocab import TIME_WORDS


@pytest.fixture(scope="module")
def light(tmp_path_factory):
    path = tmp_path_factory.mktemp("light") / "memories.db"
    summary = build_persona_store("light", path, seed=0)
    return path, summary


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    path = tmp_path_factory.mktemp("heavy") / "memories.db"
    build_persona_store("heavy", path, seed=0)
    persona, truth = load_truth(path)
    return path, persona, truth


def _rows(path, sql):
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _dump(path):
    return {
        sql: _rows(path, sql)
        for sql in (
            "SELECT * FROM memories ORDER BY id",
            "SELECT source_id, content_hash, vector, dimensions FROM embeddings ORDER BY source_id",
            "SELECT * FROM memories_cold ORDER BY archive_id",
            "SELECT * FROM memory_history ORDER BY id",
            "SELECT * FROM synth_memory_truth ORDER BY memory_id",
        )
    }


def test_same_seed_same_store_other_seed_other_store(light, tmp_path):
    path, _ = light
    again = tmp_path / "again.db"
    build_persona_store("light", again, seed=0)
    assert _dump(again) == _dump(path)
    other = tmp_path / "other.db"
    build_persona_store("light", other, seed=1)
    a = {r[0] for r in _rows(path, "SELECT content FROM memories")}
    b = {r[0] for r in _rows(other, "SELECT content FROM memories")}
    assert len(a & b) < 0.2 * len(a)
    assert reference_now(0) != reference_now(1)


def test_light_store_counts_and_summary(light):
    path, summary = light
    assert _rows(path, "SELECT COUNT(*) FROM memories") == [(300,)]
    assert _rows(path, "SELECT COUNT(*) FROM synth_memory_truth") == [(300,)]
    types = {r[0] for r in _rows(path, "SELECT DISTINCT type FROM memories")}
    assert types == {"fact", "preference", "decision", "procedural", "constraint"}
    projects = {r[0] for r in _rows(path, "SELECT DISTINCT project FROM memories")}
    assert projects == {"portfolio", None}
    assert "300 memories" in summary and str(path) in summary and "768-d" in summary
    meta = read_synth_meta(path)
    assert meta["seed"] == "0" and meta["embedder"] == "synth-topic"
    assert meta["now"] == "2026-03-16T18:00:00.000Z"


def test_heavy_store_end_to_end(heavy):
    path, persona, truth = heavy
    assert _rows(path, "SELECT COUNT(*) FROM memories") == [(4000,)]
    assert len(truth) == 4000 and persona.name == "heavy"
    by_project = Counter(r[0] for r in _rows(path, "SELECT project FROM memories"))
    assert set(by_project) == {*persona.project_names, None}
    assert by_project.most_common(1)[0][0] == "signetai"
    ((n_emb, dmin, dmax),) = _rows(
        path, "SELECT COUNT(*), MIN(dimensions), MAX(dimensions) FROM embeddings"
    )
    assert dmin == dmax == 768 and 3 <= 4000 - n_emb <= 60
    # the FTS index covers every row, deleted ones included (as in Signet)
    assert _rows(path, "SELECT COUNT(*) FROM memories_fts") == [(4000,)]
    # ids of memories and of truth rows agree, in insertion (rowid) order
    ids = [r[0] for r in _rows(path, "SELECT id FROM memories ORDER BY rowid")]
    assert ids == list(truth.ids)


def test_memories_are_created_in_the_projects_local_hours(heavy):
    _, persona, truth = heavy
    hours, _ = local_hour_weekday(truth.created_s[truth.project == "ooide"], persona.tz)
    assert np.mean((hours >= 19) | (hours == 0)) > 0.8
    span = persona.span_days * 86_400
    assert truth.created_s.min() >= truth.now.timestamp() - span
    assert truth.created_s.max() <= truth.now.timestamp()


def test_drifting_memories_follow_the_project_switch(tmp_path):
    persona = get_persona("drifting", n_memories=600)
    plan = plan_store(persona, seed=0)
    mid = plan.now - timedelta(days=persona.span_days / 2)
    early = Counter(s.project for s in plan.specs if s.created < mid and s.project)
    late = Counter(s.project for s in plan.specs if s.created >= mid and s.project)
    assert early.most_common(1)[0][0] == "mobileapp"
    assert late.most_common(1)[0][0] == "mlplatform"


def test_fts_query_of_a_topics_words_finds_that_topic(heavy):
    path, persona, truth = heavy
    topic_of = dict(zip(truth.ids, truth.topic, strict=True))
    con = sqlite3.connect(path)
    try:
        for project in persona.projects:
            for topic in project.topics:
                query = " OR ".join(topic.objects[:4])
                hits = [
                    r[0]
                    for r in con.execute(
                        "SELECT m.id FROM memories_fts f JOIN memories m ON m.rowid = f.rowid"
                        " WHERE memories_fts MATCH ? AND m.is_deleted = 0 ORDER BY bm25(memories_fts)",
                        (query,),
                    )
                ]
                assert len(hits) >= 5, topic.name
                share = np.mean([topic_of[h] == topic.name for h in hits])
                assert share > 0.9, (topic.name, share)
    finally:
        con.close()


def test_planted_truth_ranks_same_topic_above_other_projects(heavy):
    _, persona, truth = heavy
    live = ~truth.deleted & ~truth.stale
    gaps = []
    for ctx in plan_sessions(persona, 40, start=truth.now, seed=0):
        r = true_relevance(truth, ctx)
        same = r[live & (truth.project == ctx.project) & (truth.topic == ctx.focus_topic)]
        other = r[live & (truth.project != ctx.project) & ~truth.is_global]
        gaps.append(same.mean() - other.mean())
    assert min(gaps) > 0.4


def test_time_patterned_memories_score_higher_inside_their_window(heavy):
    path, persona, truth = heavy
    patterned = np.flatnonzero(truth.is_time_patterned & ~truth.deleted)
    assert len(patterned) >= 50
    local_now = truth.now.astimezone(ZoneInfo(persona.tz))
    for i in patterned[:30]:
        pattern = TIME_PATTERNS[truth.time_pattern[i]]
        day, hour = pattern.weekdays[0], pattern.hours[0]
        inside = (local_now + timedelta(days=(day - local_now.weekday()) % 7)).replace(
            hour=hour, minute=30
        )
        ctx_in = make_context("a", truth.project[i], truth.topic[i], inside, persona.tz)
        assert (pattern.hour_mask >> ctx_in.local_hour) & 1
        assert (pattern.weekday_mask >> ctx_in.local_weekday) & 1
        # the first whole hour after the window
        for k in range(1, 7 * 24):
            ctx_out = make_context(
                "b", truth.project[i], truth.topic[i], inside + timedelta(hours=k), persona.tz
            )
            if not (
                (pattern.hour_mask >> ctx_out.local_hour) & 1
                and (pattern.weekday_mask >> ctx_out.local_weekday) & 1
            ):
                break
        r_in = true_relevance(truth, ctx_in)[i]
        r_out = true_relevance(truth, ctx_out)[i]
        useful = truth.usefulness[i]  # the hidden factor scales both alike
        assert r_in > 0.5 * useful and r_out < 0.1 * useful, (truth.time_pattern[i], r_in, r_out)
    contents = dict(_rows(path, "SELECT id, content FROM memories"))
    assert all(set(tokens(contents[truth.ids[i]])) & set(TIME_WORDS) for i in patterned)


def test_stale_memories_score_below_their_replacements(heavy):
    _, _, truth = heavy
    old = np.flatnonzero(truth.stale)
    assert len(old) >= 100
    pos = {m: i for i, m in enumerate(truth.ids)}
    for i in old:
        j = pos[truth.replaced_by[i]]
        assert truth.topic[j] == truth.topic[i] and truth.project[j] == truth.project[i]
        ctx = make_context("s", truth.project[i] or "signetai", truth.topic[i], truth.now, "UTC")
        r = true_relevance(truth, ctx)
        assert r[i] < 0 < r[j]


def test_in_place_supersession_follows_signet(heavy):
    path, _, truth = heavy
    in_place = [
        m for m, mode in zip(truth.ids, truth.supersede_mode, strict=True) if mode == "in_place"
    ]
    assert len(in_place) >= 100
    con = sqlite3.connect(path)
    try:
        for mid in in_place[:50]:
            content, chash, version, updates = con.execute(
                "SELECT content, content_hash, version, update_count FROM memories WHERE id = ?",
                (mid,),
            ).fetchone()
            assert (version, updates) == (2, 1)
            cold = con.execute(
                "SELECT content, archived_reason, original_row_json FROM memories_cold"
                " WHERE memory_id = ?",
                (mid,),
            ).fetchall()
            assert len(cold) == 1 and cold[0][1] == "superseded"
            assert cold[0][0] != content and json.loads(cold[0][2])["content"] == cold[0][0]
            ((event,),) = con.execute(
                "SELECT new_content FROM memory_history WHERE memory_id = ? AND event = 'updated'",
                (mid,),
            ).fetchall()
            assert event == content
            emb = con.execute(
                "SELECT content_hash FROM embeddings WHERE source_id = ?", (mid,)
            ).fetchall()
            assert emb in ([], [(chash,)])
    finally:
        con.close()
    assert not truth.stale[truth.positions(in_place)].any()


def test_separate_row_supersessions_and_deletions(heavy):
    path, _, truth = heavy
    con = sqlite3.connect(path)
    try:
        deleted = {r[0] for r in con.execute("SELECT id FROM memories WHERE is_deleted = 1")}
        assert deleted == set(truth.ids[truth.deleted])
        history = {
            r[0]
            for r in con.execute("SELECT memory_id FROM memory_history WHERE event = 'deleted'")
        }
        assert history == deleted
        for i in np.flatnonzero(truth.supersede_mode == "soft_delete"):
            assert truth.ids[i] in deleted and truth.replaced_by[i] not in deleted
        attr = np.flatnonzero(truth.supersede_mode == "attribute")
        assert len(attr) > 20
        for i in attr:
            assert truth.ids[i] not in deleted  # left live, marked in the graph
            ((status, by),) = con.execute(
                "SELECT status, superseded_by FROM entity_attributes WHERE memory_id = ?",
                (truth.ids[i],),
            ).fetchall()
            new_memory = con.execute(
                "SELECT memory_id FROM entity_attributes WHERE id = ?", (by,)
            ).fetchone()[0]
            assert status == "superseded" and new_memory == truth.replaced_by[i]
        user_deleted = truth.deleted & ~truth.stale
        assert user_deleted.sum() >= 100
    finally:
        con.close()


def test_some_memories_have_no_embedding_and_the_rest_match_their_text(heavy):
    path, _, _ = heavy
    missing = _rows(
        path,
        "SELECT m.id, m.is_deleted FROM memories m LEFT JOIN embeddings e"
        " ON e.source_type = 'memory' AND e.source_id = m.id WHERE e.id IS NULL",
    )
    assert len(missing) >= 3 and all(not d for _, d in missing)
    rows = _rows(
        path,
        "SELECT m.content, e.vector, e.chunk_text, m.embedding_model, e.content_hash = m.content_hash"
        " FROM memories m JOIN embeddings e ON e.source_id = m.id LIMIT 200",
    )
    emb = TopicEmbedder(0)
    stored = np.stack([np.frombuffer(r[1], dtype="<f4") for r in rows])
    assert np.allclose(stored, emb.embed([r[0] for r in rows]), atol=1e-6)
    assert all(r[0] == r[2] and r[3] == "synth-topic" and r[4] == 1 for r in rows)


def test_signet_timestamp_formats_and_pins(heavy):
    path, _, _ = heavy
    created = [r[0] for r in _rows(path, "SELECT created_at FROM memories LIMIT 50")]
    assert all(c.endswith("Z") and "T" in c for c in created)
    accessed = [
        r[0]
        for r in _rows(path, "SELECT last_accessed FROM memories WHERE last_accessed IS NOT NULL")
    ]
    assert accessed and all("T" not in a and len(a) == 19 for a in accessed)
    pinned = _rows(
        path, "SELECT type, project, importance, is_deleted FROM memories WHERE pinned = 1"
    )
    # a handful, as real stores pin (each pin takes a top slot of the baseline)
    assert 1 <= len(pinned) <= 10
    assert len(pinned) == max(1, round(PINNED_SHARE * 4000))
    assert all((t == "constraint" or p is None) and imp >= 0.9 and not d for t, p, imp, d in pinned)


def test_refuses_to_overwrite_and_names_bad_inputs(light, tmp_path):
    path, _ = light
    with pytest.raises(UserError, match="already exists"):
        build_persona_store("light", path)
    assert _rows(path, "SELECT COUNT(*) FROM memories") == [(300,)]
    with pytest.raises(UserError, match="light, heavy, drifting, multi-project"):
        build_persona_store("medium", tmp_path / "x.db")
    with pytest.raises(UserError, match="embedder"):
        build_persona_store("light", tmp_path / "y.db", embedder="nope")
    assert not (tmp_path / "x.db").exists() and not (tmp_path / "y.db").exists()


def test_embedder_instance_and_size_override(tmp_path):
    path = tmp_path / "small.db"
    summary = build_persona_store(
        get_persona("multi-project"), path, seed=2, n_memories=250, embedder=TopicEmbedder(2, 32)
    )
    assert "250 memories" in summary and "32-d" in summary
    assert _rows(path, "SELECT COUNT(*) FROM memories") == [(250,)]
    assert _rows(path, "SELECT DISTINCT dimensions FROM embeddings") == [(32,)]


def test_the_personas_own_embedder_is_used_unless_told_otherwise(tmp_path):
    small = get_persona("light", n_memories=40, embedder="nope")
    with pytest.raises(UserError, match="unknown embedder 'nope'"):
        build_persona_store(small, tmp_path / "a.db")
    build_persona_store(small, tmp_path / "b.db", embedder="topic")
    assert read_synth_meta(tmp_path / "b.db")["embedder"] == "synth-topic"


def test_a_wordllama_persona_has_real_text_embeddings(tmp_path):
    """The honest option: 256-d text embeddings, in which the topic no longer shows as
    plainly as in the topic generator's vectors."""
    persona = get_persona("multi-project", n_memories=400, embedder="wordllama")
    paths = {e: tmp_path / f"{e}.db" for e in ("topic", "wordllama")}
    for e, path in paths.items():
        build_persona_store(persona, path, seed=3, embedder=None if e == "wordllama" else e)
    assert read_synth_meta(paths["wordllama"])["embedder"] == "wordllama-l2-256"
    assert _rows(paths["wordllama"], "SELECT DISTINCT dimensions FROM embeddings") == [(256,)]
    auc = {}
    for e, path in paths.items():
        _, truth = load_truth(path)
        rows = _rows(path, "SELECT source_id, vector FROM embeddings")
        pos = truth.positions([r[0] for r in rows])
        vectors = np.stack([np.frombuffer(r[1], dtype="<f4") for r in rows])
        auc[e] = topic_separation_auc(vectors, truth.project[pos], truth.topic[pos], pairs=20_000)
    assert auc["topic"] > 0.98 and 0.6 < auc["wordllama"] < 0.9


def test_a_handful_of_pins_and_a_hidden_usefulness_per_memory():
    persona = get_persona("heavy", n_memories=1000)
    plan = plan_store(persona, seed=5)
    assert sum(s.pinned for s in plan.specs) == max(1, round(PINNED_SHARE * 1000))
    useful = plan.truth().usefulness
    assert useful.min() >= 1 - USEFULNESS_SPREAD and useful.max() <= 1.0
    assert useful.std() > 0.05
    # hidden: not what importance or access counts say
    importance = np.array([s.importance for s in plan.specs])
    access = np.array([s.access_count for s in plan.specs])
    assert abs(np.corrcoef(useful, importance)[0, 1]) < 0.1
    assert abs(np.corrcoef(useful, access)[0, 1]) < 0.1
    assert np.array_equal(plan_store(persona, seed=5).truth().usefulness, useful)
    assert not np.array_equal(plan_store(persona, seed=6).truth().usefulness[:50], useful[:50])


def test_cli_synth_prints_the_summary_and_refuses_overwrite(tmp_path, capsys):
    out = tmp_path / "cli.db"
    assert main(["synth", "--persona", "light", "--out", str(out), "--memories", "80"]) == 0
    assert "80 memories" in capsys.readouterr().out
    assert main(["synth", "--persona", "light", "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err


class _NanEmbedder:
    name = "nan"
    dim = 4

    def embed(self, texts):
        return np.full((len(texts), self.dim), np.nan, dtype=np.float32)


def test_a_failed_build_leaves_no_file(tmp_path):
    out = tmp_path / "broken.db"
    with pytest.raises(ValueError, match="finite"):
        build_persona_store("light", out, n_memories=40, embedder=_NanEmbedder())
    assert list(tmp_path.iterdir()) == []


def test_a_persona_can_plant_more_time_patterns_and_live_supersessions():
    base = get_persona("heavy", n_memories=1500)
    planted = dataclasses.replace(
        base, time_pattern_share=0.3, supersede_share=0.25, supersede_modes=(("attribute", 1.0),)
    )
    default_plan, planted_plan = plan_store(base, seed=0), plan_store(planted, seed=0)

    def patterned(plan) -> float:
        project = [s for s in plan.specs if s.project]
        return sum(1 for s in project if s.time_pattern) / len(project)

    def kinds(plan) -> Counter:
        return Counter(e.kind for e in plan.events if e.kind != "delete")

    assert patterned(default_plan) < 0.1
    assert patterned(planted_plan) > 0.2
    assert set(kinds(default_plan)) == {"in_place", "soft_delete", "attribute"}
    assert set(kinds(planted_plan)) == {"attribute"}
    assert kinds(planted_plan).total() > 2 * kinds(default_plan).total()
    assert Persona.from_json(planted.to_json()) == planted


@pytest.mark.parametrize(
    "bad",
    [{"time_pattern_share": 1.5}, {"supersede_share": -0.1}, {"supersede_modes": (("x", 1.0),)}],
)
def test_planted_shares_are_validated(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        dataclasses.replace(get_persona("light"), **bad)


def test_too_few_supersedable_memories_are_topped_up_to_the_exact_count():
    # 90% of the rows planned as soft-delete replacements: far fewer old rows qualify
    persona = dataclasses.replace(
        get_persona("light", n_memories=200),
        supersede_share=0.9,
        supersede_modes=(("soft_delete", 1.0),),
    )
    plan = plan_store(persona, seed=1)
    superseded = [s for s in plan.specs if s.supersede_mode == "soft_delete"]
    assert 0 < len(superseded) < round(0.9 * 200)
    assert len(plan.specs) == 200 == len({s.id for s in plan.specs})
    replacements = {s.replaced_by for s in superseded}
    assert len(replacements) == len(superseded)
    assert replacements <= {s.id for s in plan.specs}
    assert [(s.created, s.id) for s in plan.specs] == sorted((s.created, s.id) for s in plan.specs)
