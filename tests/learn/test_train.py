"""Gated training (signet_bench.learn.train): the finite-loss gate and copy semantics, the canary
split, the replay buffer, masked padding, fine-tuning from base weights, and a two-project store
on which the scorer learns to prefer the session's own project."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from signet_bench.bench.train_speed import synthetic_samples
from signet_bench.config import DEFAULT_CONFIG
from signet_bench.learn.base import shipped_base_params
from signet_bench.learn.holdout import free_ranker_name, holdout_plan, start_at_best_free_ranker
from signet_bench.learn.model.checkpoint import load_checkpoint
from signet_bench.learn.model.optim import densify
from signet_bench.learn.model.params import init_params
from signet_bench.learn.model.scorer import forward, loss_and_grads
from signet_bench.learn.publish import holdout_record
from signet_bench.learn.samples import load_samples
from signet_bench.learn.train import (
    Guard,
    canary_metrics,
    replay_buffer,
    split_canary,
    to_batch,
    train_model,
)
from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.replay.trainers import model_path
from signet_bench.store.read import read_memories
from signet_bench.world.synth.build import build_persona_store
from signet_bench.world.synth.persona import get_persona

TZ = "Europe/Berlin"


def _light_store(path: Path, sessions: int = 40) -> Path:
    build_persona_store("light", path, seed=0, n_memories=150)
    simulate(path, sessions, SimOptions(scorer="random", seed=0))
    return path


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    path = _light_store(tmp_path_factory.mktemp("train") / "memories.db")
    got, _ = load_samples(path, tz=TZ)
    assert 20 <= len(got) < 2 * DEFAULT_CONFIG.canary_size
    return got


@pytest.fixture(scope="module")
def trained(samples):
    # the specification's canary gates (a canary given): accepted whatever the held-out sessions say
    res = train_model(samples, None, epochs=5, seed=0, guard=Guard(canary=samples))
    assert res.accepted
    return res.params


def _snapshot(params):
    return {k: np.array(v, copy=True) for k, v in params.items()}


def _assert_identical(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, k
        assert a[k].tobytes() == b[k].tobytes(), f"{k} changed"


def _with_nan_label(samples, which: int = 0):
    bad = list(samples)
    labels = bad[which].labels.copy()
    labels[0] = np.nan
    bad[which] = dataclasses.replace(bad[which], labels=labels)
    return bad


def _fake(n: int, dim: int = 16, seed: int = 0):
    """Small synthetic samples (dim 16) with distinct confidences and continuities."""
    out = synthetic_samples(n, dim=dim, mean_candidates=12, seed=seed)
    rng = np.random.default_rng(seed)
    conf = rng.permutation(np.linspace(0.6, 1.0, n))
    cont = rng.permutation(np.linspace(0.0, 1.0, n))
    return [
        dataclasses.replace(s, confidence=float(c), continuity=float(k))
        for s, c, k in zip(out, conf, cont, strict=True)
    ]


# --- gates ------------------------------------------------------------------------------------


def test_nan_label_fails_the_finite_gate_and_leaves_the_weights_untouched(samples, trained):
    before = _snapshot(trained)
    ids = {k: id(v) for k, v in trained.items()}
    res = train_model(_with_nan_label(samples), trained, epochs=2, seed=0)
    assert not res.accepted
    assert res.gate_reason == "finite_losses"
    assert res.gates["finite_losses"] is False
    assert res.params is None
    # the caller's weights: same arrays, same bits
    assert {k: id(v) for k, v in trained.items()} == ids
    _assert_identical(trained, before)


def test_nan_label_fails_from_fresh_weights_too(samples):
    # the oldest session: every fold trains on it, whichever epoch the held-out sessions keep
    oldest = min(range(len(samples)), key=lambda i: samples[i].start)
    res = train_model(_with_nan_label(samples, which=oldest), None, epochs=1, seed=0)
    assert (res.accepted, res.gate_reason, res.params) == (False, "finite_losses", None)
    assert res.gates["finite_losses"] is False


def test_accepted_training_returns_a_new_copy(samples, trained):
    before = _snapshot(trained)
    res = train_model(
        samples, trained, epochs=1, seed=0, guard=Guard(previous_is_trained=False, canary=samples)
    )
    assert res.accepted
    assert all(res.params[k] is not trained[k] for k in trained)
    assert any(not np.array_equal(res.params[k], trained[k]) for k in trained)
    _assert_identical(trained, before)


def test_loop_logs_a_rejected_training_and_keeps_the_base(tmp_path, monkeypatch):
    """Through the daemon loop: every training sees a NaN label, every one is rejected, the
    shipped base put in place before the first session stays the model served, and each run
    is still logged."""
    import signet_bench.learn.publish as publish_mod

    real = publish_mod.load_samples

    def poisoned(*args, **kwargs):
        got, skipped = real(*args, **kwargs)
        return (_with_nan_label(got) if got else got), skipped

    monkeypatch.setattr(publish_mod, "load_samples", poisoned)
    path = tmp_path / "memories.db"
    build_persona_store("light", path, seed=1, n_memories=120)
    # every training learns (none is held at its start for want of sessions)
    cfg = DEFAULT_CONFIG.replace(holdout_min_sessions=0)
    report = simulate(path, 30, SimOptions(scorer="model", seed=1, train_epochs=2), cfg)
    assert report.trainings >= 2
    assert report.trainings_accepted == 0
    assert report.final_state.model_version == 0
    saved, meta = load_checkpoint(model_path(path))
    base = shipped_base_params(meta.native_dim)
    assert meta.is_pretrained_base and all(np.array_equal(saved[k], base[k]) for k in base)
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        logged = con.execute("SELECT COUNT(*) FROM predictor_training_log").fetchone()[0]
        scored_by_model = con.execute(
            "SELECT COUNT(*) FROM session_memories WHERE predictor_score IS NOT NULL"
        ).fetchone()[0]
    finally:
        con.close()
    assert logged == report.trainings
    assert scored_by_model > 0  # the base scored from the first session


# --- canary and replay buffer -------------------------------------------------------------------


def test_canary_holds_out_the_25_most_confident_with_enough_samples():
    data = _fake(60)
    train, canary = split_canary(data)
    assert len(canary) == 25 and len(train) == 35
    want = sorted(data, key=lambda s: -s.confidence)[:25]
    assert [s.session_key for s in canary] == [s.session_key for s in want]
    assert not {s.session_key for s in train} & {s.session_key for s in canary}
    assert {s.session_key for s in train} | {s.session_key for s in canary} == {
        s.session_key for s in data
    }
    assert min(s.confidence for s in canary) > max(s.confidence for s in train)


def test_canary_boundary_is_two_canaries():
    train, canary = split_canary(_fake(50))
    assert (len(train), len(canary)) == (25, 25)
    data = _fake(49)
    train, canary = split_canary(data)
    assert len(train) == len(canary) == 49
    assert {s.session_key for s in canary} == {s.session_key for s in data}


def test_canary_ties_prefer_the_newest():
    data = [dataclasses.replace(s, confidence=0.8) for s in _fake(60)]
    _, canary = split_canary(data)
    newest = sorted(data, key=lambda s: s.start, reverse=True)[:25]
    assert {s.session_key for s in canary} == {s.session_key for s in newest}


def test_train_model_reports_the_split():
    res = train_model(_fake(60), None, epochs=1, seed=0)
    assert (res.sample_count, res.canary_count) == (35, 25)
    res = train_model(_fake(30), None, epochs=1, seed=0)
    assert (res.sample_count, res.canary_count) == (30, 24)  # the oldest block is never judged


def test_replay_buffer_is_the_top_20_by_continuity():
    data = _fake(45)
    buf = replay_buffer(data)
    assert len(buf) == 20
    want = sorted(data, key=lambda s: -s.continuity)[:20]
    assert [s.session_key for s in buf] == [s.session_key for s in want]
    small = _fake(12)
    assert {s.session_key for s in replay_buffer(small)} == {s.session_key for s in small}


# --- masked padding -----------------------------------------------------------------------------


def test_scores_do_not_change_when_batched_with_a_longer_session(samples):
    by_len = sorted(samples, key=len)
    short, long = by_len[0], by_len[-1]
    assert len(short) < len(long)
    n = len(short)
    params = init_params(native_dim=768)

    def batch(sessions, dtype):
        return to_batch(sessions, with_labels=False, dtype=dtype)

    # float64 batches: the same numbers up to rounding
    alone = forward(params, batch([short], np.float64))
    mixed = forward(params, batch([short, long], np.float64))
    np.testing.assert_allclose(mixed.probs[0, :n], alone.probs[0], rtol=1e-10, atol=1e-15)
    assert np.all(mixed.probs[0, n:] == 0.0)
    assert np.all(np.isneginf(mixed.logits[0, n:]))
    assert mixed.probs[0].sum() == pytest.approx(1.0)
    # training batches (to_batch: float32 embeddings, whose product is float32-exact only)
    alone = forward(params, to_batch([short], with_labels=False))
    mixed = forward(params, to_batch([short, long], with_labels=False))
    np.testing.assert_allclose(mixed.probs[0, :n], alone.probs[0], rtol=1e-5, atol=1e-9)
    assert np.all(mixed.probs[0, n:] == 0.0)
    # and the longer session is scored as if alone too
    np.testing.assert_allclose(
        mixed.probs[1], forward(params, to_batch([long], with_labels=False)).probs[0], rtol=1e-5
    )


def test_padding_content_reaches_neither_loss_nor_gradients(samples, trained):
    by_len = sorted(samples, key=len)
    short, long = by_len[0], by_len[-1]
    clean = to_batch([short, long])
    dirty = to_batch([short, long])
    n = len(short)
    rng = np.random.default_rng(0)
    # training batches are packed: no embedding padding, and text-path rows are never read
    assert dirty.cand_emb is None
    text_rows = np.flatnonzero(~dirty.has_emb[dirty.mask])
    assert text_rows.size
    dirty.real_emb[text_rows] = rng.normal(0, 100, (text_rows.size, 768))
    dirty.features[0, n:] = rng.normal(0, 100, dirty.features[0, n:].shape)
    dirty.has_emb[0, n:] = rng.random(dirty.has_emb[0, n:].shape) < 0.5
    dirty.labels[0, n:] = rng.uniform(-1, 1, dirty.labels[0, n:].shape)
    # tokens owned by a padding slot are ignored too
    dirty.tok_bucket = np.concatenate([dirty.tok_bucket, [1, 2, 3]])
    dirty.tok_owner = np.concatenate([dirty.tok_owner, [n, n, n + 1]])
    loss_c, grads_c = loss_and_grads(trained, clean)
    loss_d, grads_d = loss_and_grads(trained, dirty)
    assert loss_d == pytest.approx(loss_c, rel=1e-12)
    for k, g in grads_c.items():
        shape = trained[k].shape
        np.testing.assert_allclose(
            densify(grads_d[k], shape), densify(g, shape), rtol=1e-9, atol=1e-12, err_msg=k
        )


# --- fine-tuning from base weights ----------------------------------------------------------------


def _distance(a, b, names=("down_proj", "q_proj", "k_proj", "v_proj", "gate_proj")):
    return float(np.sqrt(sum(np.sum((a[k] - b[k]) ** 2) for k in names)))


def test_finetune_starts_from_the_base_weights(samples, trained):
    before = _snapshot(trained)
    tuned = train_model(
        samples, trained, epochs=1, seed=0, guard=Guard(previous_is_trained=False, canary=samples)
    )
    fresh = train_model(samples, None, epochs=1, seed=0, guard=Guard(canary=samples))
    assert tuned.accepted and fresh.accepted
    moved = _distance(tuned.params, trained)
    assert moved > 0
    # the same epoch from fresh weights ends far away: the base is where training started
    assert moved < 0.5 * _distance(fresh.params, tuned.params)
    assert moved < 0.5 * _distance(fresh.params, trained)
    _assert_identical(trained, before)


def test_previous_is_trained_decides_which_gates_apply(samples, trained):
    canary = split_canary(samples)[1]
    base_ndcg = canary_metrics(trained, canary).ndcg

    first = train_model(
        samples, trained, epochs=1, seed=0, guard=Guard(previous_is_trained=False, canary=canary)
    )
    assert set(first.gates) == {"finite_losses", "canary_variance"}
    assert first.canary_ndcg_before is None
    assert first.canary_ndcg_delta is None and first.canary_topk_overlap is None

    for flag in (True, None):  # None: a given model counts as trained
        res = train_model(
            samples, trained, epochs=1, seed=0, guard=Guard(previous_is_trained=flag, canary=canary)
        )
        assert set(res.gates) == {
            "finite_losses",
            "canary_variance",
            "canary_topk_overlap",
            "canary_ndcg_drop",
        }
        assert res.canary_ndcg_before == pytest.approx(base_ndcg, abs=1e-12)
        assert res.canary_ndcg_delta == pytest.approx(res.canary_ndcg - base_ndcg, abs=1e-12)
        assert res.canary_topk_overlap is not None


def test_forgetting_is_rejected_only_when_the_base_is_a_trained_model(samples, trained):
    """Fine-tune on inverted labels, judged on the real canary: a trained base is protected by
    the stability and NDCG-drop gates; an untrained base (previous_is_trained=False) is not."""
    inverted = [dataclasses.replace(s, labels=-s.labels) for s in samples]
    protected = train_model(
        inverted, trained, epochs=3, seed=0, guard=Guard(previous_is_trained=True, canary=samples)
    )
    assert not protected.accepted
    assert protected.gate_reason in {"canary_topk_overlap", "canary_ndcg_drop"}
    assert protected.canary_ndcg_delta < -DEFAULT_CONFIG.canary_max_ndcg_drop
    assert protected.params is None
    unprotected = train_model(
        inverted, trained, epochs=3, seed=0, guard=Guard(previous_is_trained=False, canary=samples)
    )
    assert unprotected.accepted
    assert unprotected.canary_ndcg == pytest.approx(protected.canary_ndcg)


# --- a two-project store ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_projects(tmp_path_factory):
    """The multi-project persona cut to its first two projects (shopfront, datapipe: weekday
    mornings vs afternoons), 300 memories, 150 sessions run with the random scorer. Its
    supersessions name each project as a knowledge-graph entity; the entities are removed
    (the attributes stay, and with them what is superseded) so that session start walks no
    graph: the traversal would add each project's newest facts to its pools, which the model
    learns to rank on their own, and this test measures the project preference alone."""
    base = get_persona("multi-project")
    persona = dataclasses.replace(base, projects=base.projects[:2])
    path = tmp_path_factory.mktemp("two") / "memories.db"
    build_persona_store(persona, path, seed=0, n_memories=300)
    con = sqlite3.connect(path)
    con.execute("DELETE FROM entities")
    con.commit()
    con.close()
    simulate(path, 150, SimOptions(scorer="random", seed=0))
    got, _ = load_samples(path, tz=persona.tz)
    mem = read_memories(path, include_deleted=True).frame
    project = dict(zip(mem["id"].to_list(), mem["project"].to_list(), strict=True))
    return got, project, persona.project_names


def _project_preference(params, sessions, project):
    """Per project P: mean over P's sessions of the mean score of P's candidates, of the other
    project's candidates, and the mean log-score gap between them; plus the share of
    (own, other) candidate pairs ordered own-first."""
    per: dict[str, list[tuple[float, float, float]]] = {}
    pairs = []
    for s in sessions:
        fwd = forward(params, to_batch([s], with_labels=False))
        probs, logits = fwd.probs[0], fwd.logits[0]
        owner = np.array([project[m] for m in s.memory_ids], dtype=object)
        own = owner == s.project
        other = np.array([p is not None and p != s.project for p in owner])
        if not own.any() or not other.any():
            continue
        per.setdefault(s.project, []).append(
            (probs[own].mean(), probs[other].mean(), logits[own].mean() - logits[other].mean())
        )
        pairs.append((logits[own][:, None] > logits[other][None, :]).mean())
    out = {p: tuple(np.mean(v, axis=0)) for p, v in per.items()}
    return out, float(np.mean(pairs))


def test_model_learns_to_prefer_the_sessions_project(two_projects):
    samples, project, names = two_projects
    assert {s.project for s in samples} == set(names)
    cut = int(0.75 * len(samples))
    train, held_out = samples[:cut], samples[cut:]  # later sessions, never trained on
    assert {s.project for s in held_out} == set(names)

    res = train_model(train, None, epochs=10, seed=0, guard=Guard(canary=held_out))
    assert res.accepted
    _, pairs_before = _project_preference(init_params(native_dim=768), held_out, project)
    after, pairs_after = _project_preference(res.params, held_out, project)

    for p in names:  # for sessions of project p: p's memories vs the other project's
        own_a, other_a, _ = after[p]
        assert own_a > 1.3 * other_a, (p, own_a, other_a)
    # the untrained model ranks by the hybrid of cosine(context, memory) and the session-start
    # query's keywords, which already leans to the context's project (~88% of the pairs);
    # training still removes a clear share of the pairs it orders wrongly
    assert pairs_before > 0.5
    assert pairs_after > 0.8
    assert 1 - pairs_after < 0.85 * (1 - pairs_before)


def test_a_fresh_retrain_is_not_held_to_the_served_models_top5(samples, trained):
    """The top-5 stability gate lets a full retrain from fresh weights through however much it
    reorders (the served model may have trained on the canary); the NDCG-drop gate still
    applies. An incremental run needs `canary_churn_gain` to churn."""
    from signet_bench.learn.train import CanaryMetrics, _gate

    canary = split_canary(samples)[1]
    after = canary_metrics(trained, canary)
    churned = tuple(tuple(f"other-{i}-{j}" for j in range(5)) for i in range(len(canary)))
    before = CanaryMetrics(after.ndcg + 0.01, after.score_variance, churned)
    fresh = _gate(trained, canary, before, [0.1], True, DEFAULT_CONFIG, fresh=True)
    tuned = _gate(trained, canary, before, [0.1], True, DEFAULT_CONFIG, fresh=False)
    assert fresh.overlap == 0.0 and fresh.gates["canary_topk_overlap"]
    assert fresh.gates["canary_ndcg_drop"] and not tuned.gates["canary_topk_overlap"]
    drop = DEFAULT_CONFIG.canary_max_ndcg_drop + 0.01
    broken = CanaryMetrics(after.ndcg + drop, after.score_variance, churned)
    assert not _gate(trained, canary, broken, [0.1], True, DEFAULT_CONFIG, True).gates[
        "canary_ndcg_drop"
    ]


def test_a_full_retrain_through_train_model_is_judged_out_of_sample(samples, trained):
    """Without a canary a full retrain is judged on sessions it did not train on, not by the
    canary gates. With few sessions (forward folds) the served model learned from the judged
    sessions, so only the free rankers set the bar; with a time hold-out the served model is
    held to it as well."""
    res = train_model(
        samples, None, epochs=2, seed=3, guard=Guard(reference=trained, previous_is_trained=True)
    )
    assert set(res.gates) == {"finite_losses", "canary_variance", "holdout"}
    d = res.holdout
    assert d is not None and d.method == "forward"
    # the oldest block is never judged
    assert d.sessions == len(holdout_plan(samples).held) < len(samples)
    assert d.served is None and res.canary_topk_overlap is None
    # served: the candidate when shown better than the base and the free rankers, else the base
    assert res.accepted and d.accepted == res.serving.per_user
    reasons = {"per-user": "passed", "base": "base", "free": "free"}
    assert res.gate_reason == reasons[res.serving.served]
    many = _fake(60, dim=16)
    served = train_model(many, None, epochs=1, seed=0, guard=Guard(canary=many)).params
    timed = train_model(
        many, None, epochs=2, seed=3, guard=Guard(reference=served, previous_is_trained=True)
    )
    assert timed.holdout.method == "time" and timed.holdout.served is not None
    assert timed.canary_ndcg_before == timed.holdout.served


def _against_cosine(params):
    """A model that learned the wrong way round: the start with cosine's weight negated."""
    out = {k: np.array(v, copy=True) for k, v in params.items()}
    out["cosine_weight"] = -np.abs(out["cosine_weight"]) - 1.0
    return out


def test_a_learned_model_below_the_free_rankers_gives_way_to_the_base():
    """A run whose candidate is not shown better serves the base (the run's start: for the
    fresh scorer, the better free ranker), whatever was served before: a learned model that
    trails the free rankers, nothing, or the base itself."""
    many = _fake(60, dim=16)
    strict = DEFAULT_CONFIG.replace(serving_confidence=1.0)  # no bound is above 0
    bad = _against_cosine(init_params(strict, 16))
    res = train_model(
        many,
        None,
        cfg=strict,
        epochs=1,
        seed=3,
        guard=Guard(reference=bad, base=init_params(strict, 16)),
    )
    d = res.holdout
    assert d is not None and d.method == "time" and not d.accepted
    assert d.served < max(d.heuristics.values())
    assert res.accepted and res.gate_reason == "base" and not res.gates["holdout"]
    assert res.serving.served == "base" and res.serving.reason == "not-shown"
    start = start_at_best_free_ranker(init_params(strict, 16), many, strict)
    _assert_identical(res.params, start)
    assert free_ranker_name(res.params) in ("cosine", "hybrid")
    record = holdout_record(res)
    assert record["accepted"] is False and record["serving"]["served"] == "base"
    for reference in (None, start):
        again = train_model(
            many,
            None,
            cfg=strict,
            epochs=1,
            seed=3,
            guard=Guard(
                reference=reference, previous_is_trained=False, base=init_params(strict, 16)
            ),
        )
        assert again.accepted and again.gate_reason == "base"
        _assert_identical(again.params, start)
