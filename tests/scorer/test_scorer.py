"""The in-process API: it scores what the numpy model scores (texts tokenized on the serving
side), loads every model format, and fails open — a missing or broken model or a bad request
gives no scores and a reason, never an exception."""

from __future__ import annotations

import numpy as np
import pytest

from signet_bench.learn.export import export_model
from signet_bench.learn.model.checkpoint import CheckpointMeta, save_checkpoint, write_sgpt
from signet_bench.learn.model.params import SIGNET_PARAMS, signet_init_params
from signet_scorer import ScoreQuery, Scorer, ScoreResult
from signet_scorer.scorer import ParamError, Refused, parse_score_params
from tests.scorer.conftest import DIM, generator, numpy_scores, request


@pytest.fixture(scope="module")
def golden(golden_onnx) -> Scorer:
    scorer = Scorer.open(golden_onnx, native_dim=DIM)
    assert scorer.ready, scorer.reason
    return scorer


def test_scores_match_the_numpy_model(golden):
    req = request()
    got = golden.score(ScoreQuery(**req))
    assert got.ok, got.reason
    want = numpy_scores(generator().golden_params(), req)
    ids = [i for i, _ in got.scores]
    assert ids == sorted(want, key=lambda k: (-want[k], k))
    np.testing.assert_allclose(
        [s for _, s in got.scores], [want[i] for i in ids], rtol=1e-5, atol=1e-6
    )
    assert [s for _, s in got.scores] == sorted((s for _, s in got.scores), reverse=True)


def test_arrays_and_lists_give_the_same_scores(golden):
    req = request(mode="embedded")
    as_lists = golden.score(ScoreQuery(**req))
    as_arrays = golden.score(
        ScoreQuery(
            np.asarray(req["context_embedding"], np.float32),
            req["candidate_ids"],
            np.asarray(req["candidate_embeddings"], np.float32),
            None,
            np.asarray(req["candidate_features"], np.float32),
            4,
        )
    )
    assert as_lists.scores == as_arrays.scores


def test_equal_candidates_rank_by_id(golden):
    req = request(n=3, mode="text")
    req["candidate_texts"] = ["same text"] * 3
    req["candidate_features"] = [req["candidate_features"][0]] * 3
    req["candidate_ids"] = ["c", "a", "b"]
    got = golden.score(ScoreQuery(**req))
    assert [i for i, _ in got.scores] == ["a", "b", "c"]
    assert got.scores[0][1] == got.scores[2][1]


def test_one_intra_op_thread_by_default(golden):
    assert golden.model.session.get_session_options().intra_op_num_threads == 1


@pytest.mark.parametrize("fmt", ["sgpt", "signet-bench"])
def test_checkpoints_are_converted_at_load(tmp_path, fmt):
    rng = np.random.default_rng(3)
    params = signet_init_params()  # SGPT holds Signet's parameters only
    for name in SIGNET_PARAMS:
        params[name] = params[name] + rng.normal(0, 0.05, params[name].shape)
    path = tmp_path / ("model.bin" if fmt == "sgpt" else "model.sbm")
    if fmt == "sgpt":
        write_sgpt(path, params)
    else:
        save_checkpoint(path, params, CheckpointMeta())
    direct = Scorer.open(path, native_dim=DIM)
    assert direct.ready, direct.reason
    assert direct.info.kind == fmt
    exported = Scorer.open(export_model(path, tmp_path / "m.onnx"), native_dim=DIM)
    req = request(seed=5)
    assert direct.score(ScoreQuery(**req)).scores == exported.score(ScoreQuery(**req)).scores


def test_missing_model_fails_open(tmp_path):
    scorer = Scorer.open(tmp_path / "model.onnx")
    assert not scorer.ready and "no model at" in scorer.reason
    got = scorer.score(ScoreQuery(**request()))
    assert got == ScoreResult(None, f"no model loaded: {scorer.reason}")


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "sgpt_truncated"])
def test_broken_model_files_fail_open(tmp_path, golden_onnx, damage):
    path = tmp_path / ("model.bin" if damage == "sgpt_truncated" else "model.onnx")
    data = golden_onnx.read_bytes()
    path.write_bytes(
        {
            "truncated": data[: len(data) // 2],
            "garbage": b"\x08\x07" + bytes(range(256)) * 10,
            "empty": b"",
            "sgpt_truncated": b"SGPT\x01\x00\x00\x00\x00\x00\x00\x00\x05\x00",
        }[damage]
    )
    scorer = Scorer.open(path, native_dim=DIM)
    assert not scorer.ready
    assert str(path) in scorer.reason
    assert not scorer.score(ScoreQuery(**request())).ok


def test_native_dim_mismatch_is_a_reason(golden_onnx):
    scorer = Scorer.open(golden_onnx, native_dim=384)
    assert not scorer.ready and "native_dim is 768" in scorer.reason


BAD = [
    ({"context_embedding": None}, "context_embedding"),
    ({"context_embedding": "0.1"}, "context_embedding"),
    ({"context_embedding": [float("nan")] * DIM}, "context_embedding"),
    ({"context_embedding": [1e39] * DIM}, "context_embedding"),
    ({"context_embedding": [[0.1]] * DIM}, "context_embedding"),
    ({"candidate_ids": "m1"}, "candidate_ids"),
    ({"candidate_ids": ["m1", 2] + [f"x{i}" for i in range(10)]}, "candidate_ids[1]"),
    ({"candidate_ids": [f"m{i}" for i in range(2000)]}, "candidate_ids"),
    ({"candidate_embeddings": "x"}, "candidate_embeddings"),
    ({"candidate_embeddings": [["a"] * DIM] + [None] * 11}, "candidate_embeddings[0]"),
    ({"candidate_texts": [1] * 12}, "candidate_texts[0]"),
    ({"project_slot": 2**64}, "project_slot"),
    ({"project_slot": -1}, "project_slot"),
    ({"project_slot": True}, "project_slot"),
    ({"project_slot": 1.5}, "project_slot"),
    ({"candidate_texts": ["word " * 30000] * 12}, "candidate_texts"),
]


@pytest.mark.parametrize(("change", "field"), BAD)
def test_bad_parameters_name_the_field(golden, change, field):
    req = {**request(), **change}
    with pytest.raises(ParamError) as err:
        parse_score_params(req, golden.info)
    assert err.value.field == field
    got = (
        golden.score(ScoreQuery(**req))
        if "candidate_ids" in req and isinstance(req["candidate_ids"], list)
        else None
    )
    if got is not None:
        assert not got.ok and got.reason.startswith(field)


# What Signet's sidecar refuses in its `score` handler (-32000), with its messages.
REFUSED = [
    (
        {"candidate_embeddings": [None] * 13},
        "candidate_ids and candidate_embeddings length mismatch",
    ),
    (
        {"candidate_embeddings": [None] * 11},
        "candidate_ids and candidate_embeddings length mismatch",
    ),
    ({"candidate_texts": ["a"] * 11}, "candidate_ids and candidate_texts length mismatch"),
    ({"candidate_texts": ["a"] * 13}, "candidate_ids and candidate_texts length mismatch"),
    (
        {"candidate_features": [[0.0] * 17] * 11},
        "candidate_ids and candidate_features length mismatch",
    ),
    ({"candidate_features": [[0.0] * 16] * 12}, "candidate_features row has invalid dimension"),
    ({"context_embedding": [0.1] * 10}, "query embedding dim mismatch: expected 768, got 10"),
    ({"context_embedding": []}, "query embedding dim mismatch: expected 768, got 0"),
    (
        {"candidate_texts": [None] * 12},
        "candidate m01 must provide either native embedding or text",
    ),
    # Signet's order: the lengths before the context, the context before the candidates
    (
        {"candidate_texts": ["a"], "context_embedding": [0.1]},
        "candidate_ids and candidate_texts length mismatch",
    ),
    (
        {"context_embedding": [0.1], "candidate_texts": [None] * 12},
        "query embedding dim mismatch: expected 768, got 1",
    ),
    (
        {
            "candidate_ids": [],
            "candidate_texts": ["a"],
            "candidate_embeddings": [],
            "candidate_features": [],
        },
        "candidate_ids and candidate_texts length mismatch",
    ),
]


@pytest.mark.parametrize(("change", "message"), REFUSED)
def test_what_signet_refuses_is_refused_with_its_message(golden, change, message):
    req = {**request(), **change}
    with pytest.raises(Refused) as err:
        parse_score_params(req, golden.info)
    assert str(err.value) == message
    got = golden.score(ScoreQuery(**req))
    assert not got.ok and got.reason.startswith(message[:40])


def test_never_raises_into_the_caller(golden):
    for ctx in (object(), {"a": 1}, 5, b"xx"):
        assert not golden.score(ScoreQuery(ctx, ["a"])).ok
    assert not golden.score(ScoreQuery([0.0] * DIM, [object()])).ok
    assert not golden.score({"context_embedding": [0.0] * DIM, "candidate_ids": []}).ok


def test_no_candidates_is_an_empty_ranking(golden):
    assert golden.score(ScoreQuery([0.0] * DIM, [])).scores == []


def test_extra_keys_are_ignored(golden):
    req = request()
    assert (
        parse_score_params({**req, "agent_id": "default", "x": [1]}, golden.info).ids
        == req["candidate_ids"]
    )
