"""The score query: the JSON-RPC params it gives are what the sidecar and the in-process scorer
read — Signet's names, the parameters left at None left out, arrays kept as float32 arrays."""

from __future__ import annotations

import numpy as np
import pytest

from signet_scorer import ScoreQuery, jsonio
from signet_scorer.scorer import Refused, parse_score_params
from tests.scorer.conftest import DIM, request


def test_params_leave_out_what_is_none_and_keep_signets_names():
    params = ScoreQuery([0.5] * 3, ("a", "b")).rpc_params()
    assert params == {
        "context_embedding": [0.5] * 3,
        "candidate_ids": ["a", "b"],
        "project_slot": 0,
    }


def test_sequences_become_lists_and_float_arrays_float32():
    ctx = np.linspace(0, 1, DIM)  # float64
    params = ScoreQuery(
        ctx, ["a"], candidate_features=np.zeros((1, 17)), query_terms=("deploy", "fly")
    ).rpc_params()
    assert params["context_embedding"].dtype == np.float32
    np.testing.assert_array_equal(params["context_embedding"], ctx.astype(np.float32))
    assert params["candidate_features"].dtype == np.float32
    assert params["query_terms"] == ["deploy", "fly"]


def test_a_bad_value_is_passed_on_for_the_checks_to_name():
    assert ScoreQuery(5, ["a"], project_slot=1.5).rpc_params()["context_embedding"] == 5


def test_the_json_params_and_the_in_process_params_are_the_same_request(golden_onnx):
    from signet_scorer import Scorer

    info = Scorer.open(golden_onnx, native_dim=DIM).info
    req = request(seed=3)
    arrays = {**req, "candidate_features": np.asarray(req["candidate_features"], np.float64)}
    params = ScoreQuery(**arrays).rpc_params()
    direct = parse_score_params(params, info)
    sent = parse_score_params(jsonio.loads(jsonio.dumps(params)), info)
    assert direct.ids == sent.ids == req["candidate_ids"]
    for name, value in direct.inputs.items():
        np.testing.assert_array_equal(sent.inputs[name], value, err_msg=name)


def test_embedding_arrays_of_every_shape_parse_as_their_json_lists(golden_onnx):
    """An array of the candidates' embeddings, float32 or float64, or of another width (the
    text path), gives the inputs its JSON lists give; a short one is refused as Signet's
    sidecar refuses it, whichever way it comes."""
    from signet_scorer import Scorer

    info = Scorer.open(golden_onnx, native_dim=DIM).info
    req = request(n=6, seed=5, mode="embedded")
    emb = np.asarray(req["candidate_embeddings"], np.float32)
    for rows in (emb, emb.astype(np.float64), np.zeros((6, DIM + 1), np.float32)):
        params = {**req, "candidate_embeddings": rows}
        direct = parse_score_params(params, info)
        sent = parse_score_params(jsonio.loads(jsonio.dumps(params)), info)
        for name, value in direct.inputs.items():
            np.testing.assert_array_equal(sent.inputs[name], value, err_msg=name)
    whole = parse_score_params({**req, "candidate_embeddings": emb}, info).inputs
    assert whole["has_embedding"].all()
    short = {**req, "candidate_embeddings": emb[:4]}
    for params in (short, jsonio.loads(jsonio.dumps(short))):
        with pytest.raises(
            Refused, match="^candidate_ids and candidate_embeddings length mismatch$"
        ):
            parse_score_params(params, info)
