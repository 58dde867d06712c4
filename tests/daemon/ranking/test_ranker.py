"""The rankers against the ranker contract, and what each one computes."""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.candidates import SessionInputs
from signet_bench.daemon.ranking.baseline import baseline_ranking
from signet_bench.daemon.ranking.peers.bm25 import BM25Ranker
from signet_bench.daemon.ranking.ranker import (
    CosineRanker,
    EffectiveScoreRanker,
    HybridRanker,
    LexicalRanker,
    Ranker,
    distinct_candidates,
    per_distinct_candidate,
    ranking_order,
)
from signet_bench.learn.model.optim import Adam
from signet_bench.learn.model.params import init_params
from signet_bench.learn.model.ranker import ModelRanker
from signet_bench.learn.model.scorer import Batch, forward, loss_and_grads
from signet_bench.learn.samples import SessionSample
from signet_bench.learn.train import to_batch
from tests.daemon.ranking.ranker_contract import (
    DIM,
    MULTI,
    START,
    WORD_QUERY,
    RankerContract,
    build_corpus,
    session,
    store_session,
)

CFG = DEFAULT_CONFIG.replace(internal_dim=8, value_dim=4)
TRAIN_SESSIONS = ("mixed", "text_only", "embedded_only", "duplicates")


def _batch(sessions: list[SessionInputs], labels: list[np.ndarray] | None = None) -> Batch:
    """The trainer's float64 batch (`train.to_batch`) of these sessions (all with a context)."""
    samples = [
        SessionSample(
            session_key=s.session_key,
            start=s.start,
            project=s.project,
            confidence=1.0,
            continuity=1.0,
            memory_ids=s.memory_ids,
            context=s.context,
            cand_emb=s.embeddings,
            has_emb=s.has_embedding,
            tokens=s.tokens,
            features=s.features,
            project_slot=s.project_slot,
            labels=np.zeros(len(s)) if labels is None else labels[i],
            baseline_rank=np.arange(len(s)),
            signals=s.signals,
        )
        for i, s in enumerate(sessions)
    ]
    return to_batch(samples, with_labels=labels is not None, dtype=np.float64)


@cache
def trained_params() -> dict[str, np.ndarray]:
    """Weights after a few Adam steps on random labels of the contract sessions."""
    params = init_params(CFG, DIM)
    rng = np.random.default_rng(7)
    sessions = [session(name) for name in TRAIN_SESSIONS]
    batch = _batch(sessions, [rng.uniform(0.0, 1.0, len(s)) for s in sessions])
    cfg = CFG.replace(learning_rate=0.05)
    adam = Adam(params, cfg)
    for _ in range(5):
        _loss, grads = loss_and_grads(params, batch, cfg)
        adam.step(params, grads)
    return params


# -- the contract -------------------------------------------------------------------------------


class TestEffectiveScoreRanker(RankerContract):
    def make_ranker(self) -> Ranker:
        return EffectiveScoreRanker()


class TestCosineRanker(RankerContract):
    def make_ranker(self) -> Ranker:
        return CosineRanker()


class TestModelRankerUntrained(RankerContract):
    def make_ranker(self) -> Ranker:
        return ModelRanker(init_params(CFG, DIM), CFG)


class TestModelRankerTrained(RankerContract):
    def make_ranker(self) -> Ranker:
        return ModelRanker(trained_params(), CFG)


class TestModelRankerUntrainedWithAQuery(RankerContract):
    session_query = WORD_QUERY

    def make_ranker(self) -> Ranker:
        return ModelRanker(init_params(CFG, DIM), CFG)


class TestLexicalRanker(RankerContract):
    session_query = WORD_QUERY

    def make_ranker(self) -> Ranker:
        return LexicalRanker()


class TestHybridRanker(RankerContract):
    session_query = WORD_QUERY

    def make_ranker(self) -> Ranker:
        return HybridRanker()


# -- what each ranker computes ------------------------------------------------------------------


def test_baseline_scores_are_the_effective_scores() -> None:
    inputs = session("mixed")
    scores = EffectiveScoreRanker().score(inputs)
    finite = np.isfinite(inputs.effective_score)
    assert not finite.all()  # the NULL-importance constraint
    np.testing.assert_array_equal(scores[finite], inputs.effective_score[finite])
    assert (scores[~finite] == 0.0).all()
    assert (scores[inputs.memory_ids == "m-11"] == 1.0).all()  # pinned


def test_baseline_order_is_the_seed_baseline_order() -> None:
    inputs = session("mixed")
    order, _eff = baseline_ranking(
        inputs.memory_ids,
        inputs.importance,
        inputs.created_at,
        build_corpus().pinned[inputs.rows],
        START.timestamp(),
    )
    assert ranking_order(EffectiveScoreRanker(), inputs).tolist() == order.tolist()


def test_cosine_is_the_dot_product_of_unit_vectors() -> None:
    inputs = session("mixed")
    scores = CosineRanker().score(inputs)
    emb = inputs.embeddings.astype(np.float64)
    ctx = inputs.context.astype(np.float64)
    has = inputs.has_embedding
    nonzero = has & (np.linalg.norm(emb, axis=1) > 0)
    unit = emb[nonzero] / np.linalg.norm(emb[nonzero], axis=1, keepdims=True)
    np.testing.assert_allclose(scores[nonzero], unit @ (ctx / np.linalg.norm(ctx)), rtol=1e-12)
    assert (~has).any() and (has & ~nonzero).any()
    assert (scores[~nonzero] == 0.0).all()  # text-only candidates and the zero vector


@pytest.mark.parametrize("name", ["no_context", "zero_context"])
def test_cosine_without_a_context_is_zero(name: str) -> None:
    inputs = session(name)
    np.testing.assert_array_equal(CosineRanker().score(inputs), np.zeros(len(inputs)))


def test_cosine_refuses_a_context_of_another_dimension() -> None:
    inputs = replace(session("mixed"), context=np.ones(DIM + 1, dtype=np.float32))
    with pytest.raises(ValueError, match=r"session mixed: context has dimension 17"):
        CosineRanker().score(inputs)


@pytest.mark.parametrize("params", [lambda: init_params(CFG, DIM), trained_params])
def test_model_scores_are_a_distribution_that_is_not_flat(params) -> None:
    scores = ModelRanker(params(), CFG).score(session("mixed"))
    assert (scores > 0).all()
    assert scores.sum() == pytest.approx(1.0, abs=1e-12)
    assert scores.max() - scores.min() > 1e-3  # the contract tests see a real ranking


@pytest.mark.parametrize("seed", range(6))
def test_untrained_model_ranks_as_cosine(seed: int) -> None:
    """A fresh model is cosine(context, memory) until it learns: the same order as
    `CosineRanker` on every contract session (text-path candidates and the zero vector at
    cosine 0, ties by memory id), whatever the random draws of its other weights."""
    model = ModelRanker(init_params(CFG, DIM, seed=seed), CFG)
    for name in MULTI:
        inputs = session(name, seed)
        assert (
            ranking_order(model, inputs).tolist() == ranking_order(CosineRanker(), inputs).tolist()
        ), name


def test_untrained_model_ranks_a_store_session_as_cosine(tmp_path) -> None:
    inputs = store_session(tmp_path / "memories.db", seed=3)
    assert (~inputs.has_embedding).any()
    model = ModelRanker(init_params(CFG, DIM), CFG)
    assert ranking_order(model, inputs).tolist() == ranking_order(CosineRanker(), inputs).tolist()


@pytest.mark.parametrize("seed", range(4))
def test_untrained_model_ranks_as_the_hybrid(seed: int) -> None:
    """With query terms a fresh model is 0.7·cosine + 0.3·lexical (`HybridRanker`): the same
    order on every contract session with a context (without one the model, like Signet's
    predictor, gives no opinion, while the hybrid still has its keyword leg) and on a session
    read from a store."""
    model = ModelRanker(init_params(CFG, DIM, seed=seed), CFG)
    lexical_seen = False
    for name in (n for n in MULTI if n != "no_context"):
        inputs = session(name, seed, query=WORD_QUERY)
        lexical_seen |= bool(LexicalRanker().score(inputs).any())
        assert (
            ranking_order(model, inputs).tolist() == ranking_order(HybridRanker(), inputs).tolist()
        ), name
    assert lexical_seen


def test_untrained_model_ranks_a_store_session_as_the_hybrid(tmp_path) -> None:
    inputs = store_session(tmp_path / "memories.db", seed=3, query=WORD_QUERY)
    assert LexicalRanker().score(inputs).any() and inputs.signals[:, 2].any()
    model = ModelRanker(init_params(CFG, DIM), CFG)
    assert ranking_order(model, inputs).tolist() == ranking_order(HybridRanker(), inputs).tolist()
    cosine = ranking_order(CosineRanker(), inputs).tolist()
    assert ranking_order(HybridRanker(), inputs).tolist() != cosine


@pytest.mark.parametrize("name", MULTI)
def test_lexical_is_the_fts5_bm25_of_the_query(name: str) -> None:
    """On plain words the lexical signal is SQLite FTS5's BM25 over the same candidates
    (the `bm25` peer, Signet's keyword search)."""
    inputs = session(name, query=WORD_QUERY)
    fts = BM25Ranker(query=" ".join(WORD_QUERY.terms)).score(inputs)
    np.testing.assert_allclose(LexicalRanker().score(inputs), fts, rtol=1e-6, atol=1e-7)


def test_hybrid_without_query_terms_orders_as_cosine() -> None:
    for name in MULTI:
        inputs = session(name)
        assert not LexicalRanker().score(inputs).any()
        assert (
            ranking_order(HybridRanker(), inputs).tolist()
            == ranking_order(CosineRanker(), inputs).tolist()
        ), name


def test_model_scores_equal_the_trainers_batched_forward() -> None:
    sessions = [session(name) for name in TRAIN_SESSIONS]
    probs = forward(trained_params(), _batch(sessions), CFG).probs
    ranker = ModelRanker(trained_params(), CFG)
    for i, s in enumerate(sessions):
        np.testing.assert_allclose(ranker.score(s), probs[i, : len(s)], rtol=1e-9, atol=0)


def test_training_moved_the_model() -> None:
    inputs = session("mixed")
    before = ModelRanker(init_params(CFG, DIM), CFG).score(inputs)
    after = ModelRanker(trained_params(), CFG).score(inputs)
    assert np.abs(after - before).max() > 1e-4


def test_model_without_a_context_is_uniform() -> None:
    inputs = session("no_context")
    scores = ModelRanker(trained_params(), CFG).score(inputs)
    np.testing.assert_array_equal(scores, np.full(len(inputs), 1.0 / len(inputs)))
    ids = inputs.memory_ids
    order = ranking_order(ModelRanker(trained_params(), CFG), inputs)
    assert ids[order].tolist() == sorted(ids.tolist())


def test_model_names_the_session_on_mismatched_weights() -> None:
    ranker = ModelRanker(init_params(CFG, DIM + 4), CFG)
    with pytest.raises(ValueError, match=r"session mixed: cand_emb has shape .* expected"):
        ranker.score(session("mixed"))


# -- identical candidates -----------------------------------------------------------------------


def test_distinct_candidates_groups_copies_under_other_ids() -> None:
    inputs = session("duplicates")  # dup-z dup-y m-07 dup-c dup-b dup-a m-02
    first, group = distinct_candidates(inputs)
    assert first.tolist() == [0, 2, 3, 6]
    assert group.tolist() == [0, 0, 1, 2, 2, 2, 3]


def test_a_copy_that_differs_in_one_input_is_distinct() -> None:
    inputs = session("duplicates")
    features = inputs.features.copy()
    features[4, 2] += 1.0  # dup-b's usage
    first, group = distinct_candidates(replace(inputs, features=features))
    assert first.tolist() == [0, 2, 3, 4, 6]
    assert group.tolist() == [0, 0, 1, 2, 3, 2, 4]


def test_distinct_candidates_of_unique_contents_are_all_distinct() -> None:
    inputs = session("mixed")
    first, group = distinct_candidates(inputs)
    assert first.tolist() == group.tolist() == list(range(len(inputs)))


def test_identical_candidates_share_the_score_of_the_first() -> None:
    inputs = session("duplicates")
    scores = per_distinct_candidate(inputs, lambda s: np.arange(len(s), dtype=np.float64))
    assert scores.tolist() == [0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 3.0]
