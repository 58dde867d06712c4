"""One path: for every session of a simulated store, the context, the candidate features and
the labels the session loop computed while it ran equal, bit for bit, what the trainer
assembles for the same session from the store afterwards."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from signet_bench.learn.samples import load_samples
from signet_bench.replay.loop import SimOptions, Simulator
from signet_bench.world.synth.build import build_persona_store

SESSIONS = 60


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    db: Path = tmp_path_factory.mktemp("one-path") / "memories.db"
    build_persona_store("multi-project", db, seed=5, n_memories=400)
    sim = Simulator(db, SimOptions(scorer="random", seed=5))
    try:
        sim.loop.run(SESSIONS, keep=range(SESSIONS))
        records = dict(sim.records)
        tz = sim.tz
    finally:
        sim.close()
    samples, _ = load_samples(db, tz=tz, seed=5)
    return records, {s.session_key: s for s in samples}


@pytest.fixture(scope="module")
def recorded_cosine(run, tmp_path_factory):
    """(session key -> (recorded cosine NDCG, the comparison's relevance map, every rating))
    from the store."""
    import json
    import sqlite3

    db = next(iter(tmp_path_factory.getbasetemp().glob("one-path*"))) / "memories.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT s.session_key, s.cosine_ndcg, c.relevance_scores FROM sim_sessions s "
            "JOIN predictor_comparisons c ON c.session_key = s.session_key"
        ).fetchall()
        rated: dict[str, dict[str, float]] = {}
        for key, mid, rel in con.execute(
            "SELECT session_key, memory_id, relevance_score FROM session_memories "
            "WHERE relevance_score IS NOT NULL"
        ):
            rated.setdefault(key, {})[mid] = rel
    finally:
        con.close()
    return {k: (v, json.loads(rel), rated.get(k, {})) for k, v, rel in rows}


def test_every_session_is_trainable_in_both_or_in_neither(run):
    records, samples = run
    for idx, rec in records.items():
        assert (rec.sample is None) == (rec.plan.session_key not in samples), idx
    assert len(samples) >= SESSIONS // 2


def test_context_is_the_same_vector_and_rule(run):
    records, samples = run
    rules = set()
    for rec in records.values():
        s = samples.get(rec.plan.session_key)
        if s is None:
            continue
        assert rec.inputs.context is not None
        np.testing.assert_array_equal(rec.inputs.context, s.context)
        rules.add(rec.inputs.context_rule)
    # both branches of the rule were exercised: each project's first session falls back
    assert rules == {"previous-session", "baseline-top10"}


def test_candidate_features_are_equal(run):
    records, samples = run
    rows = 0
    for rec in records.values():
        s = samples.get(rec.plan.session_key)
        if s is None:
            continue
        pos = {m: j for j, m in enumerate(rec.inputs.memory_ids.tolist())}
        common = [j for j, m in enumerate(s.memory_ids.tolist()) if m in pos]
        at_start = [pos[s.memory_ids[j]] for j in common]
        np.testing.assert_array_equal(rec.inputs.features[at_start], s.features[common])
        np.testing.assert_array_equal(rec.inputs.embeddings[at_start], s.cand_emb[common])
        np.testing.assert_array_equal(rec.inputs.has_embedding[at_start], s.has_emb[common])
        # the signals too (lexical from the session-start query, entities, neighbourhood)
        np.testing.assert_array_equal(rec.inputs.signals[at_start], s.signals[common])
        assert rec.inputs.project_slot == s.project_slot
        rows += len(common)
    assert rows > 500


def test_labels_are_equal(run):
    records, samples = run
    for rec in records.values():
        s = samples.get(rec.plan.session_key)
        if s is None:
            continue
        assert rec.sample.memory_ids.tolist() == s.memory_ids.tolist()
        np.testing.assert_array_equal(rec.sample.labels, s.labels)
        np.testing.assert_array_equal(rec.sample.features, s.features)


def test_the_recorded_cosine_ndcg_is_cosine_on_the_judged_labels(run, recorded_cosine):
    """Check sim_sessions.cosine_ndcg: the pool ordered by cosine(context, memory) (score
    desc, id asc), judged by Signet's NDCG@10 with the comparison's relevance map plus the
    judge's ratings of cosine's own top 10 (the judge's second pass rates them all)."""
    from signet_bench.daemon.metrics import signet_ndcg_at_k

    records, _ = run
    for rec in records.values():
        recorded, rel, ratings = recorded_cosine[rec.plan.session_key]
        cos = rec.inputs.embeddings @ rec.inputs.context
        cos = np.where(rec.inputs.has_embedding, cos, 0.0)
        ranked = tuple(rec.inputs.memory_ids[np.lexsort((rec.inputs.memory_ids, -cos))])
        assert all(m in ratings for m in ranked[:10])
        judged = {**{m: ratings[m] for m in ranked[:10]}, **rel}
        expected = signet_ndcg_at_k(ranked, judged, 10)
        assert recorded == pytest.approx(expected, abs=1e-6), rec.plan.session_key
