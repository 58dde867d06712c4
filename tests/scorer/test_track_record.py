"""The track record's score (signet_scorer.track_record.track_record) and its request input: a
memory without history gets exactly the user's mean, more useful judgements raise it, less useful
ones lower it, a supersession lowers it, every value stays in [0, 1]; the server takes it as
`candidate_track_record` (nulls: the mean of the given values), names a bad value, and a graph
exported with fewer signals still scores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from signet_scorer import contract
from signet_scorer.scorer import ParamError, Scorer, parse_score_params
from signet_scorer.signals import signal_column
from signet_scorer.track_record import (
    NO_HISTORY_MEAN,
    PRIOR_STRENGTH,
    TrackCounts,
    track_record,
    user_mean,
)
from tests.scorer.conftest import request

COL = signal_column("track_record")


@pytest.fixture(scope="module")
def golden(golden_onnx) -> Scorer:
    scorer = Scorer.open(golden_onnx)
    assert scorer.ready, scorer.reason
    return scorer


def counts(n: int, **given: list[float]) -> TrackCounts:
    """Counts of `n` memories, zero but for the given fields."""
    base = TrackCounts.empty(n)
    values = {f: np.asarray(given.get(f, getattr(base, f)), dtype=np.float64) for f in given}
    fields = ("injected", "judged", "useful", "fts_unseen", "ratings", "rating_sum")
    arrays = [values.get(f, getattr(base, f)) for f in fields]
    flags = np.asarray(given.get("superseded", base.superseded), dtype=bool)
    return TrackCounts(*arrays, superseded=flags)


@pytest.mark.parametrize("mean", [0.0, 0.13, NO_HISTORY_MEAN, 0.8, 1.0])
def test_no_history_is_exactly_the_users_mean(mean):
    got = track_record(TrackCounts.empty(3), mean)
    np.testing.assert_array_equal(got, np.full(3, mean, dtype=np.float32))


def test_no_judged_session_means_the_neutral_mean():
    assert user_mean(TrackCounts.empty(1)) == NO_HISTORY_MEAN


def test_more_useful_injections_raise_it_monotonically():
    k = np.arange(8, dtype=np.float64)
    got = track_record(counts(8, injected=list(k), judged=list(k), useful=list(k)), 0.4)
    assert got[0] == np.float32(0.4) and (np.diff(got) > 0).all() and got[-1] < 1.0


def test_useless_injections_lower_it_monotonically():
    k = np.arange(8, dtype=np.float64)
    got = track_record(counts(8, injected=list(k), judged=list(k)), 0.4)
    assert (np.diff(got) < 0).all() and got[-1] > 0.0


def test_an_injection_the_judge_did_not_rate_is_no_evidence():
    got = track_record(counts(2, injected=[0, 5]), 0.3)
    assert got[0] == got[1] == np.float32(0.3)


def test_fts_hits_while_not_injected_and_good_ratings_raise_it():
    got = track_record(
        counts(3, fts_unseen=[0, 2, 0], ratings=[0, 0, 2], rating_sum=[0, 0, 2]), 0.5
    )
    assert got[1] > got[0] and got[2] > got[0]
    bad = track_record(counts(1, ratings=[3], rating_sum=[-3]), 0.5)
    assert bad[0] < 0.5


def test_the_formula_is_the_documented_one():
    c = counts(
        1, injected=[3], judged=[2], useful=[1.5], fts_unseen=[1], ratings=[2], rating_sum=[1.0]
    )
    weight, value = 2 + 1 + 2, 1.5 + 1 + (1.0 + 2) / 2
    expected = (PRIOR_STRENGTH * 0.6 + value) / (PRIOR_STRENGTH + weight)
    assert track_record(c, 0.6)[0] == pytest.approx(expected, rel=1e-6)


def test_a_supersession_lowers_it_below_the_mean():
    got = track_record(counts(2, superseded=[False, True]), 0.6)
    assert got[0] == np.float32(0.6) and got[1] == pytest.approx(0.3)


def test_values_stay_in_the_unit_interval():
    rng = np.random.default_rng(3)
    n = 500
    judged = rng.integers(0, 20, n).astype(float)
    ratings = rng.integers(0, 5, n).astype(float)
    c = counts(
        n,
        injected=list(judged + rng.integers(0, 3, n)),
        judged=list(judged),
        useful=list(judged * rng.random(n)),
        fts_unseen=list(rng.integers(0, 4, n)),
        ratings=list(ratings),
        rating_sum=list(ratings * rng.uniform(-1, 1, n)),
        superseded=list(rng.random(n) < 0.2),
    )
    for mean in (0.0, user_mean(c), 1.0):
        got = track_record(c, mean)
        assert got.dtype == np.float32 and (got >= 0).all() and (got <= 1).all()


def test_a_prior_strength_must_be_positive():
    with pytest.raises(ValueError, match="prior strength"):
        track_record(TrackCounts.empty(1), 0.5, prior=0.0)


# --- the request input ---------------------------------------------------------------------------


def test_the_request_carries_the_track_record(golden):
    req = {**request(n=4, seed=2), "candidate_track_record": [0.9, None, 0.1, 0.5]}
    signals = parse_score_params(req, golden.info).inputs[contract.INPUT_SIGNALS]
    np.testing.assert_allclose(signals[:, COL], [0.9, 0.5, 0.1, 0.5], rtol=1e-6)
    short = {**request(n=3, seed=2), "candidate_track_record": [0.2]}
    got = parse_score_params(short, golden.info).inputs[contract.INPUT_SIGNALS][:, COL]
    np.testing.assert_allclose(got, [0.2, 0.2, 0.2], rtol=1e-6)  # nulls: the given mean


def test_a_request_without_it_has_a_zero_column(golden):
    signals = parse_score_params(request(n=3), golden.info).inputs[contract.INPUT_SIGNALS]
    assert signals.shape == (3, contract.N_SIGNALS) and not signals[:, COL].any()


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ([0.5, 1.5, 0.5], "candidate_track_record[1]"),
        ([0.5, "x", 0.5], "candidate_track_record[1]"),
        ([True, 0.5, 0.5], "candidate_track_record[0]"),
        ("0.5", "candidate_track_record"),
        ([0.1, 0.2, 0.3, 0.4], "candidate_track_record"),
    ],
)
def test_a_bad_track_record_is_named(golden, value, field):
    with pytest.raises(ParamError) as err:
        parse_score_params({**request(n=3), "candidate_track_record": value}, golden.info)
    assert err.value.field == field


@pytest.fixture(scope="module")
def older_graph(golden_onnx, tmp_path_factory) -> Path:
    """The golden graph as one exported before the track record existed: its signal input and
    weights cut to the signals before it."""
    model = onnx.load(str(golden_onnx))
    for init in model.graph.initializer:
        if init.name == "signal_weights":
            weights = numpy_helper.to_array(init)[:COL]
            init.CopyFrom(numpy_helper.from_array(weights, "signal_weights"))
    for given in model.graph.input:
        if given.name == contract.INPUT_SIGNALS:
            given.type.tensor_type.shape.dim[1].dim_value = COL
    path = tmp_path_factory.mktemp("older") / "older.onnx"
    onnx.save(model, str(path))
    return path


def test_a_graph_of_fewer_signals_still_scores(older_graph, golden: Scorer):
    """A graph of the first signals only is fed those: the same scores as the current graph
    (whose track-record weight is 0) for any request, with or without track records."""
    older = Scorer.open(older_graph)
    assert older.ready and older.info is not None and older.info.n_signals == COL, older.reason
    req = request(n=6, seed=4)
    with_track = {**req, "candidate_track_record": [0.0, 1.0, 0.2, 0.9, 0.4, 0.6]}
    assert older.score_request(with_track) == older.score_request(req)
    assert older.score_request(req) == golden.score_request(req)
