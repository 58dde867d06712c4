"""The LoCoMo quality bench on a small derived slice: question inputs, splits, metrics, rows
reproducible for a seed."""

from __future__ import annotations

import numpy as np
import pytest

from signet_bench.bench.quality_locomo import (
    ABLATIONS,
    DIAGNOSTIC,
    LocomoRun,
    evaluate_queries,
    locomo_rows,
    question_context,
    read_conversation,
    seen_evidence,
    split_queries,
)
from signet_bench.config import DEFAULT_CONFIG
from signet_bench.learn.base import write_base
from signet_bench.learn.pairs import INPUT_COLUMNS, BaseModel
from signet_bench.world.embed import get_embedder
from signet_bench.world.locomo import Query, convert_locomo, relevance
from tests.world.test_locomo import AUDIT, needs_data, slice_file


def _q(i: int, evidence: tuple[str, ...]) -> Query:
    return Query(f"k{i}", "s", i, "?", "", 4, evidence, False)


def test_question_context_is_the_unit_question_embedding():
    v = question_context(np.array([3.0, 4.0]))
    np.testing.assert_allclose(v, [0.6, 0.8], rtol=1e-6)
    assert v.dtype == np.float32
    assert question_context(np.zeros(4)) is None


def test_split_trains_on_the_questions_answerable_earlier():
    qs = [_q(0, ("D5:1",)), _q(1, ("D1:1",)), _q(2, ("D2:1", "D9:1")), _q(3, ("D3:4",))]
    train, held = split_queries(qs)
    assert train == [1, 3] and held == [0, 2]


def test_a_random_split_is_a_seeded_partition_and_a_bad_name_is_refused():
    qs = [_q(i, (f"D{i % 4 + 1}:1",)) for i in range(20)]
    train, held = split_queries(qs, "random", seed=5)
    assert sorted(train + held) == list(range(20)) and len(train) == 10
    assert (train, held) == split_queries(qs, "random", seed=5)
    assert train != split_queries(qs, "random", seed=6)[0]
    assert train != split_queries(qs)[0]
    with pytest.raises(Exception, match="--split"):
        split_queries(qs, "by-date")


def test_seen_evidence_counts_held_out_questions_sharing_a_training_turn():
    qs = [_q(0, ("D1:1",)), _q(1, ("D1:1", "D2:2")), _q(2, ("D3:1",)), _q(3, ("D2:2",))]
    assert seen_evidence(qs, [0], [1, 2, 3]) == 1
    assert seen_evidence(qs, [0, 1], [2, 3]) == 1
    assert seen_evidence(qs, [2], [0, 1, 3]) == 0


@pytest.fixture(scope="module")
def slice_stores(tmp_path_factory):
    if not AUDIT.exists():
        pytest.skip("LoCoMo data not present")
    tmp = tmp_path_factory.mktemp("locomo")
    data = slice_file(tmp)
    convert_locomo(data, tmp / "stores", get_embedder("wordllama"), audit=[AUDIT])
    return data, tmp / "stores"


@needs_data
def test_metrics_of_an_oracle_and_of_its_reverse(slice_stores):
    _, stores = slice_stores
    data = read_conversation(stores / "conv-26.db", DEFAULT_CONFIG, seed=0)
    positions = list(range(len(data.queries)))

    def covers(d, i):
        return [d.covers[r] for r in d.inputs[i].rows.tolist()]

    def oracle(d, i):
        return relevance(covers(d, i), d.queries[i].evidence)

    best = evaluate_queries(data, positions, oracle)
    worst = evaluate_queries(data, positions, lambda d, i: -oracle(d, i))
    covered = [
        len(set(data.queries[i].evidence) & set().union(*covers(data, i)))
        / len(data.queries[i].evidence)
        for i in positions
    ]
    np.testing.assert_allclose(best.values["recall@50"], covered)
    assert (best.values["mrr"][np.array(covered) > 0] == 1.0).all()
    assert (best.values["ndcg@10"] >= worst.values["ndcg@10"]).all()
    assert best.values["recall@10"].mean() > worst.values["recall@10"].mean()
    assert set(best.categories.tolist()) <= {1, 2, 3, 4}


@needs_data
def test_rows_are_reproducible_for_a_seed_and_name_every_ranker(slice_stores):
    data, _ = slice_stores
    rows = locomo_rows(data, LocomoRun(seed=3, quick=True), embedders=["wordllama"])
    again = locomo_rows(data, LocomoRun(seed=3, quick=True), embedders=["wordllama"])
    assert [repr(r) for r in rows] == [repr(r) for r in again]  # NaN intervals included
    names = {r.name for r in rows}
    for n in ("bm25", "cosine", "signet_hybrid", "effective", "cogmem_v9", "cascade"):
        assert n in names
    assert {"hybrid", "lexical"} <= names  # our free rankers on the candidates' signals
    for n in ("learned", "learned_base_loco", "learned_finetuned", "learned_fused"):
        assert n in names
    # the shipped base beside the one trained on the other conversations, alone and fused
    assert {"learned_base_shipped", "learned_base_shipped_fused"} <= names
    assert "learned_base_shipped-signet_hybrid" in names and "learned_base_file" not in names
    assert "learned-cosine" in names
    # the experiments are reported alone, never as a difference from a heuristic
    assert {"learned_oracle", "learned_pooled", "learned_init", *ABLATIONS} <= names
    assert not [n for n in names if n.split("-")[0] in DIAGNOSTIC and "-" in n]
    # the untrained scorer is the hybrid ranker: the same order, so the same held-out metrics
    held = {(r.name, r.metric): r.value for r in rows}
    for metric in ("recall@10", "ndcg@10", "mrr"):
        assert held[("learned_init", metric)] == pytest.approx(held[("hybrid", metric)], abs=0.01)
    assert held[("lexical", "recall@50")] > 0.0  # the questions' terms reach the memories
    seen = next(r for r in rows if r.name == "held_out_seen_evidence")
    assert 0.0 <= seen.value <= 1.0 and seen.n == next(r.n for r in rows if r.name == "cosine")
    recall = [r for r in rows if r.metric.startswith("recall@") and "delta" not in r.metric]
    assert all(0.0 <= r.value <= 1.0 for r in recall)
    for r in rows:
        if r.ci_low is not None and np.isfinite(r.ci_low):
            assert r.ci_low <= r.value + 1e-12 and r.value <= r.ci_high + 1e-12
    cos = {r.metric: r.value for r in rows if r.name == "cosine"}
    assert cos["recall@5"] <= cos["recall@10"] <= cos["recall@25"] <= cos["recall@50"]


@needs_data
def test_a_given_base_file_is_judged_as_learned_base_file(slice_stores, tmp_path):
    """`--base FILE`: the rows of that base, paired with every heuristic; a base weighing only
    the similarity ranks as cosine does."""
    data, _ = slice_stores
    weights = np.zeros(len(INPUT_COLUMNS))
    weights[0] = 1.0
    path = write_base(
        BaseModel(weights, sessions=1, loss_curve=(1.0,)),
        tmp_path / "cosine-base.json",
        {"training": {"data": "none"}, "licence": {"name": "none"}},
    )
    rows = locomo_rows(
        data, LocomoRun(seed=3, quick=True, graph=False), embedders=["wordllama"], base=path
    )
    names = {r.name for r in rows}
    assert "learned_base_file" in names and "learned_base_shipped" not in names
    assert {"learned_base_file-signet_hybrid", "learned_base_file-hybrid"} <= names
    value = {(r.name, r.metric): r.value for r in rows}
    for metric in ("recall@10", "ndcg@10", "mrr"):
        assert value[("learned_base_file", metric)] == pytest.approx(
            value[("cosine", metric)], abs=1e-9
        )
