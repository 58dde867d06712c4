"""Our session start: pre-filter -> baseline -> predictor -> RRF -> diversity -> selection."""

from __future__ import annotations

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.ranking.baseline import rank_order
from signet_bench.daemon.ranking.session_start import InjectionLimits, Learned, session_start
from signet_bench.store.corpus import Corpus
from signet_scorer.budget import Budget, length_tokens

DAY = 86_400.0
NOW = 1_800_000_000.0


def _corpus(n=400, d=16, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.array([f"mem-{i:04d}" for i in rng.permutation(n)])
    created = NOW - rng.uniform(0, 60, n) * DAY
    importance = rng.uniform(0.2, 1.0, n)
    pinned = np.zeros(n, dtype=bool)
    lengths = rng.integers(50, 300, n)
    emb = rng.standard_normal((n, d)).astype(np.float32)
    has = np.ones(n, dtype=bool)
    return ids, created, importance, pinned, lengths, emb, has


def _grouped(kw: dict) -> dict:
    """`session_start`'s keywords with the learned side and the injection limits given flat
    (as these tests write them) grouped into their objects."""
    learned = {k: kw.pop(k) for k in ("predictor", "alpha", "cold_start_exited", "rng") if k in kw}
    limits = {k: kw.pop(k) for k in ("budget_chars", "use_budget", "top_k", "choice") if k in kw}
    return {**kw, "learned": Learned(**learned), "limits": InjectionLimits(**limits)}


def _run(c, *, context=None, is_constraint=None, is_deleted=None, is_superseded=None, **kw):
    """Session start over the corpus tuple; `context` names a row whose embedding becomes the
    context (as the only memory the previous session used)."""
    ids, created, importance, pinned, contents, emb, has = c
    stale = None if is_superseded is None else np.where(is_superseded, NOW - 1.0, np.nan)
    corpus = Corpus.from_arrays(
        ids,
        created,
        importance,
        emb,
        contents=contents,
        has_embedding=has,
        pinned=pinned,
    ).with_states(is_constraint=is_constraint, is_deleted=is_deleted, superseded_at=stale)
    used = () if context is None else (str(ids[context]),)
    return session_start(corpus, NOW, previous_used=used, **_grouped(kw))


def test_baseline_path_records_every_number():
    c = _corpus()
    r = _run(c, context=0)
    n = len(r.index)
    assert 50 <= n <= 100 and r.context_rule == "previous-session"
    assert r.rank.tolist() == list(range(n))
    assert r.index[rank_order(r.effective_score, r.memory_id)].tolist() == r.index.tolist()
    assert r.fused_score.tolist() == pytest.approx((1 / (13 + np.arange(n))).tolist())
    assert not r.predictor_used and r.alpha == 1.0 and np.all(r.predictor_rank == -1)
    assert r.final_order.tolist() == rank_order(r.final_score, r.memory_id).tolist()
    injected = r.injected_order
    assert r.was_injected.sum() == len(injected) > 0
    assert c[4][r.index[injected]].sum() <= DEFAULT_CONFIG.injection_budget_chars
    assert injected.tolist() == r.final_order[: len(injected)].tolist()
    assert set(r.source.tolist()) == {"effective"}


def test_predictor_scores_drive_the_order_when_alpha_is_zero():
    c = _corpus()
    seen = {}

    def predictor(rows, ctx):
        seen["rows"] = rows
        return np.asarray(c[2][rows], dtype=np.float64)[::-1].copy()

    r = _run(c, context=0, predictor=predictor, alpha=0.0, use_budget=False, top_k=10)
    assert r.predictor_used and r.alpha == 0.0
    assert seen["rows"].tolist() == r.index.tolist()
    assert sorted(r.predictor_rank.tolist()) == list(range(1, len(r.index) + 1))
    expected = rank_order(r.predictor_score, r.memory_id)
    assert r.final_order[:5].tolist() == expected[:5].tolist()
    assert r.was_injected.sum() == 10


def test_offline_predictor_falls_back_to_baseline():
    c = _corpus()
    r = _run(c, context=0, predictor=lambda rows, ctx: None, alpha=0.3)
    assert not r.predictor_used and r.alpha == 1.0


def test_exploration_only_after_cold_start():
    c = _corpus()
    cfg = DEFAULT_CONFIG.replace(exploration_rate=1.0)

    def predictor(rows, ctx):
        return np.linspace(0, 1, len(rows))  # the reverse of the baseline order

    kw = {"context": 0, "predictor": predictor, "alpha": 0.8, "cfg": cfg}
    r = _run(c, rng=np.random.default_rng(0), cold_start_exited=True, **kw)
    explored = np.flatnonzero(r.source == "exploration")
    assert len(explored) == 1 and r.was_injected[explored[0]]
    assert r.explored_id == r.memory_id[explored[0]] and r.displaced_id is not None
    r2 = _run(c, rng=np.random.default_rng(0), cold_start_exited=False, **kw)
    assert r2.explored_id is None and "exploration" not in r2.source


def test_constraints_injected_outside_the_budget_and_deleted_rows_never_candidates():
    c = _corpus()
    ids = c[0]
    cons = np.zeros(len(ids), dtype=bool)
    weakest = int(np.argmin(c[2]))
    cons[weakest] = True
    deleted = np.zeros(len(ids), dtype=bool)
    strongest = int(np.argmax(c[2]))
    deleted[strongest] = True
    r = _run(c, context=0, is_constraint=cons, is_deleted=deleted, budget_chars=0)
    assert r.injected_ids == [ids[weakest]]
    assert ids[strongest] not in r.memory_id and r.corpus_size == len(ids) - 1


def test_context_fallback_and_no_embeddings():
    c = _corpus()
    called = []
    r = _run(c, predictor=lambda rows, ctx: called.append(1))
    assert r.context_rule == "baseline-top10" and r.context is not None and called
    no_emb = c[:6] + (np.zeros(len(c[0]), dtype=bool),)
    called.clear()
    r = _run(no_emb, predictor=lambda rows, ctx: called.append(1))
    assert r.context_rule == "none" and not called and len(r.index) == 50


def test_near_duplicates_are_attenuated_in_the_injected_set():
    c = _corpus()
    emb = c[5].copy()
    order = rank_order(c[2] * 0.95 ** ((NOW - c[1]) / DAY), c[0])  # baseline order over the corpus
    emb[order[1]] = emb[order[0]]
    r = _run(c[:5] + (emb, c[6]), context=order[0], use_budget=False, top_k=3)
    pos_dup = int(np.flatnonzero(r.index == order[1])[0])
    assert r.overlap_count[pos_dup] == 1 and r.diversity_adjusted >= 1
    assert not r.was_injected[pos_dup]


def test_superseded_rows_stay_candidates_but_are_never_injected():
    c = _corpus()
    plain = _run(c, context=0)
    stale = np.zeros(len(c[0]), dtype=bool)
    first = plain.index[plain.injected_order[0]]
    stale[first] = True
    cons = np.zeros(len(c[0]), dtype=bool)
    cons[first] = True  # a superseded constraint: staleness wins
    r = _run(c, context=0, is_superseded=stale, is_constraint=cons)
    pos = int(np.flatnonzero(r.index == first)[0])
    assert r.memory_id[pos] == c[0][first] and not r.was_injected[pos]
    assert r.final_score.tolist() == plain.final_score.tolist()
    # the budget walk skips it: the injected rows are the next ones of the final order
    walk = [i for i in r.final_order.tolist() if i != pos]
    assert r.injected_order.tolist() == walk[: len(r.injected_order)]
    assert len(r.injected_order) >= len(plain.injected_order) - 1


def test_exploration_never_explores_a_superseded_row_in():
    c = _corpus()
    cfg = DEFAULT_CONFIG.replace(exploration_rate=1.0)

    def predictor(rows, ctx):
        return np.linspace(0, 1, len(rows))  # the reverse of the baseline order

    kw = {"context": 0, "predictor": predictor, "alpha": 0.8, "cfg": cfg}
    kw |= {"cold_start_exited": True}
    r = _run(c, rng=np.random.default_rng(0), **kw)
    assert r.explored_id is not None
    stale = np.zeros(len(c[0]), dtype=bool)
    stale[r.index[~r.was_injected | (r.source == "exploration")]] = True  # every outsider
    r2 = _run(c, rng=np.random.default_rng(0), is_superseded=stale, **kw)
    assert r2.explored_id is None and "exploration" not in r2.source
    assert not (r2.was_injected & stale[r2.index]).any()


def test_a_budget_choice_injects_the_best_k_within_its_tokens_from_the_whole_pool():
    """K within tokens, in place of the 2,000-character budget: the first of the final order
    that fit, a long one passed over; constraints still added after them."""
    c = _corpus()
    lengths = c[4]
    plain = _run(c, context=0)
    n = len(plain.index)
    assert n > 60  # a wide pool: the choice is from all of it
    chosen = _run(c, context=0, choice=Budget(k=15, tokens=700))
    assert chosen.final_order.tolist() == plain.final_order.tolist()  # the ranking is the same
    walk = chosen.final_order
    costs = [length_tokens(lengths[chosen.index[i]]) for i in walk.tolist()]
    expected, left = [], 700
    for i, cost in zip(walk.tolist(), costs, strict=True):
        if len(expected) < 15 and cost <= left:
            expected.append(i)
            left -= cost
    assert chosen.injected_order.tolist() == expected
    assert (
        0 < len(expected) <= 15
        and sum(length_tokens(lengths[chosen.index[i]]) for i in expected) <= 700
    )
    # K alone (no token cap) takes the first 15, more than the character budget's
    wide = _run(c, context=0, choice=Budget(k=15))
    assert wide.injected_order.tolist() == walk[:15].tolist()
    assert len(plain.injected_order) < 15
    # a constraint the choice did not reach is still injected, after the choice
    cons = np.zeros(len(c[0]), dtype=bool)
    last = int(chosen.index[walk[-1]])
    cons[last] = True
    held = _run(c, context=0, is_constraint=cons, choice=Budget(k=3))
    assert held.injected_ids[-1] == c[0][last] and len(held.injected_ids) == 4
