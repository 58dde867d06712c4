"""The sidecar as Signet's daemon runs it: a real `python -m signet_scorer` subprocess on stdio, its
status, scores, error codes, checkpoints, logs, and start-up with a missing or broken model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.learn.model.checkpoint import (
    CheckpointMeta,
    load_any,
    read_sgpt,
    save_checkpoint,
    write_sgpt,
)
from signet_bench.learn.model.optim import Adam, copy_params
from signet_bench.learn.model.params import (
    SIGNET_PARAMS,
    init_params,
    param_shapes,
    signet_init_params,
)
from signet_bench.learn.model.scorer import loss_and_grads
from signet_bench.learn.step import step_batch
from signet_scorer import ScoreQuery, Scorer, contract
from signet_scorer.training import step_inputs
from tests.scorer.conftest import DIM, request, scores_of

SIGNET_STATUS = {
    "trained",
    "training_pairs",
    "model_version",
    "last_trained",
    "native_dimensions",
    "feature_dimensions",
}


def test_status_has_signets_fields_and_ours(sidecar, golden_onnx):
    s = sidecar("--model", str(golden_onnx), "--native-dim", str(DIM))
    status = s.call("status")["result"]
    assert SIGNET_STATUS <= set(status)
    assert status["trained"] is True
    assert (status["native_dimensions"], status["feature_dimensions"]) == (DIM, 17)
    assert status["model_version"] == 1
    assert status["model_path"] == str(golden_onnx)
    assert status["serving_feature_spec_hash"] == contract.FEATURE_SPEC_HASH
    s.call("score", request())
    again = s.call("status")["result"]
    assert again["latency_ms"]["score"]["n"] == 1
    assert set(again["latency_ms"]["score"]) == {"n", "p50", "p95", "p99"}


def test_scores_are_the_in_process_scores(sidecar, golden_onnx):
    s = sidecar("--model", str(golden_onnx), "--native-dim", str(DIM))
    req = request(seed=9)
    got = scores_of(s.call("score", {**req, "agent_id": "default"}))
    want = Scorer.open(golden_onnx).score(ScoreQuery(**req)).scores
    assert got == want


def test_signets_own_flags_with_an_sgpt_checkpoint(sidecar, tmp_path):
    params = signet_init_params()
    write_sgpt(tmp_path / "model.bin", params)
    s = sidecar("--native-dim", str(DIM), "--checkpoint", str(tmp_path / "model.bin"))
    status = s.call("status")["result"]
    assert status["trained"] is True and status["model_format"] == "sgpt"
    req = request(seed=2)
    assert (
        scores_of(s.call("score", req))
        == Scorer.open(tmp_path / "model.bin").score(ScoreQuery(**req)).scores
    )


def test_unknown_flags_are_ignored(sidecar, golden_onnx):
    s = sidecar("--model", str(golden_onnx), "--native-dim", str(DIM), "--future-flag", "1")
    assert s.call("status")["result"]["trained"] is True
    assert any(e["event"] == "ignored_flags" for e in s.log_events())


@pytest.mark.parametrize("damage", ["missing", "truncated", "corrupt"])
def test_a_broken_model_at_start_keeps_the_server_up(sidecar, golden_onnx, tmp_path, damage):
    path = tmp_path / "model.onnx"
    if damage == "truncated":
        path.write_bytes(golden_onnx.read_bytes()[:100_000])
    elif damage == "corrupt":
        path.write_bytes(b"\x08\x08" + b"\xff" * 5000)
    s = sidecar("--model", str(path), "--native-dim", str(DIM))
    status = s.call("status")["result"]
    assert status["trained"] is False
    assert str(path) in status["not_trained_reason"]
    err = s.call("score", request())["error"]
    assert err["code"] == contract.ErrorCode.SERVER_ERROR
    assert "no model loaded" in err["message"]
    assert s.call("status")["result"]["last_error"].endswith(err["message"])


ERRORS = [
    (b"{not json", None, -32700),
    (b"\xff\xfe\x00binary", None, -32700),
    (b"[1, 2]", None, -32600),
    (b'"just a string"', None, -32600),
    (b'{"jsonrpc": "1.0", "id": "a", "method": "status"}', "a", -32600),
    (b'{"jsonrpc": "2.0", "method": "status"}', None, -32600),
    (b'{"jsonrpc": "2.0", "id": true, "method": "status"}', None, -32600),
    (b'{"jsonrpc": "2.0", "id": "b", "method": 5}', "b", -32600),
    (b'{"jsonrpc": "2.0", "id": "c", "method": "predict"}', "c", -32601),
    (b'{"jsonrpc": "2.0", "id": 7, "method": "score", "params": [1]}', 7, -32602),
    (b'{"jsonrpc": "2.0", "id": "d", "method": "score", "params": {}}', "d", -32602),
]


def test_error_codes_keep_the_id(sidecar, golden_onnx):
    s = sidecar("--model", str(golden_onnx), "--native-dim", str(DIM))
    for line, rid, code in ERRORS:
        s.send_raw(line + b"\n")
        resp = s.recv()
        assert resp["jsonrpc"] == "2.0"
        assert (resp["id"], resp["error"]["code"]) == (rid, code), line
    s.send_raw(b"\n   \n")  # blank lines are skipped, not answered
    assert s.call("status")["result"]["errors"] == len(ERRORS)


def test_invalid_params_name_the_field(sidecar, golden_onnx):
    s = sidecar("--model", str(golden_onnx), "--native-dim", str(DIM))
    for change, field in [
        ({"context_embedding": "0.1"}, "context_embedding"),
        ({"project_slot": -1}, "project_slot"),
        ({"candidate_features": [["x"] * 17] * 12}, "candidate_features"),
    ]:
        err = s.call("score", {**request(), **change})["error"]
        assert err["code"] == -32602 and err["message"].startswith(field + ":")
    err = s.call("save_checkpoint", {"path": 5})["error"]
    assert err["code"] == -32602 and err["message"].startswith("path:")


def test_what_signet_refuses_is_refused_with_its_code_and_message(sidecar, golden_onnx):
    """Signet's `score` handler refuses arrays whose lengths disagree with `candidate_ids`
    (shorter `candidate_texts` included), a feature row of another width and a context of
    another dimension with -32000 and its message; so does this sidecar, and keeps serving.
    Such a request is the client's fault: no `last_error`."""
    s = sidecar("--model", str(golden_onnx), "--native-dim", str(DIM))
    req = request(seed=3)
    n = len(req["candidate_ids"])
    for change, message in [
        (
            {"candidate_texts": req["candidate_texts"][: n - 1]},
            "candidate_ids and candidate_texts length mismatch",
        ),
        (
            {"candidate_embeddings": req["candidate_embeddings"][1:]},
            "candidate_ids and candidate_embeddings length mismatch",
        ),
        (
            {"candidate_features": req["candidate_features"][:2]},
            "candidate_ids and candidate_features length mismatch",
        ),
        ({"candidate_features": [[0.0] * 18] * n}, "candidate_features row has invalid dimension"),
        ({"context_embedding": [0.1] * 3}, f"query embedding dim mismatch: expected {DIM}, got 3"),
    ]:
        err = s.call("score", {**req, **change})["error"]
        assert err == {"code": -32000, "message": message}
    assert s.call("score", req)["result"]["scores"]
    status = s.call("status")["result"]
    assert status["errors"] == 5 and status["last_error"] is None
    unknown = s.call("predict")["error"]
    assert unknown == {"code": -32601, "message": "method not found"}


def test_a_project_slot_past_the_last_is_reduced_modulo_the_slots(sidecar, golden_onnx):
    """Signet's sidecar answers `project_slot: 39` as slot 39 % 32 = 7 (its slot is an
    unsigned number reduced modulo the slots); a negative slot is refused by both."""
    s = sidecar("--model", str(golden_onnx), "--native-dim", str(DIM))
    req = request(seed=8)
    by_slot = {
        k: scores_of(s.call("score", {**req, "project_slot": k})) for k in (7, 39, 2**64 - 25)
    }
    assert by_slot[39] == by_slot[7] == by_slot[2**64 - 25]
    assert by_slot[7] != scores_of(s.call("score", {**req, "project_slot": 8}))
    for bad in (-1, -33, 2**64):
        err = s.call("score", {**req, "project_slot": bad})["error"]
        assert err["code"] == -32602 and err["message"].startswith("project_slot:"), err


def test_save_checkpoint_writes_the_format_the_path_asks_for(sidecar, golden_onnx, tmp_path):
    s = sidecar("--model", str(golden_onnx), "--native-dim", str(DIM))
    assert s.call("save_checkpoint", {"path": str(tmp_path / "m.sbm")})["result"] == {"saved": True}
    own, _ = load_any(tmp_path / "m.sbm")
    assert set(own) == set(param_shapes())
    assert s.call("save_checkpoint", {"path": str(tmp_path / "m.onnx")})["result"]["saved"]
    query = ScoreQuery(**request(seed=4))
    assert Scorer.open(tmp_path / "m.onnx").score(query) == Scorer.open(golden_onnx).score(query)
    err = s.call("save_checkpoint", {"path": str(tmp_path / "model.bin")})["error"]
    assert err["code"] == -32000 and "SGPT has no place" in err["message"]
    assert not (tmp_path / "model.bin").exists()


def test_save_checkpoint_round_trips_signets_format(sidecar, tmp_path):
    rng = np.random.default_rng(1)
    params = {n: rng.normal(0, 0.1, s) for n, s in param_shapes().items() if n in SIGNET_PARAMS}
    write_sgpt(tmp_path / "model.bin", params)
    s = sidecar("--native-dim", str(DIM), "--checkpoint", str(tmp_path / "model.bin"))
    out = tmp_path / "back" / "model.bin"
    out.parent.mkdir()
    assert s.call("save_checkpoint", {"path": str(out), "flags": 2})["result"]["saved"]
    back, meta = read_sgpt(out)
    assert meta.is_finetuned
    for name in SIGNET_PARAMS:
        np.testing.assert_array_equal(back[name], params[name])  # exact: from the .bin itself


def test_train_step_moves_the_served_model(sidecar, tmp_path):
    save_checkpoint(tmp_path / "model.sbm", init_params(), CheckpointMeta())
    s = sidecar("--model", str(tmp_path / "model.sbm"), "--native-dim", str(DIM))
    req = request(seed=6)
    before = scores_of(s.call("score", req))
    labels = np.linspace(1.0, -0.3, len(req["candidate_ids"])).tolist()
    train = {k: v for k, v in req.items() if k != "candidate_ids"}
    result = s.call("train", {**train, "labels": labels, "temperature": 0.5})["result"]
    assert result["step"] == 1 and np.isfinite(result["loss"])
    status = s.call("status")["result"]
    assert status["model_version"] == 2 and status["training_pairs"] == len(labels)
    assert scores_of(s.call("score", req)) != before
    err = s.call("train", {**train, "labels": ["x"] * len(labels)})["error"]
    assert err["code"] == -32602 and err["message"].startswith("labels")
    # what Signet's `train` refuses, with its messages
    for change, message in [
        ({"labels": labels[1:]}, "candidate_embeddings and labels length mismatch"),
        ({"temperature": 0}, "temperature must be > 0"),
        (
            {"context_embedding": [0.1] * 5},
            'train error: InvalidSample("sample rpc-train query dim mismatch")',
        ),
        (
            {"candidate_features": train["candidate_features"][1:]},
            (
                f'train error: InvalidSample("sample rpc-train has {len(labels)} candidate '
                f'embeddings but {len(labels) - 1} feature rows")'
            ),
        ),
    ]:
        err = s.call("train", {**train, "labels": labels, **change})["error"]
        assert err == {"code": -32000, "message": message}


def test_train_steps_continue_one_optimizer(sidecar, tmp_path):
    """Each `train` call runs in a child process, yet two calls make the two steps of one Adam
    optimizer (its moments carried between them), and `save_checkpoint` writes the moved
    weights."""
    start = init_params()
    save_checkpoint(tmp_path / "model.sbm", start, CheckpointMeta())
    s = sidecar("--model", str(tmp_path / "model.sbm"), "--native-dim", str(DIM))
    req = request(seed=6)
    labels = np.linspace(1.0, -0.3, len(req["candidate_ids"])).tolist()
    params = {**{k: v for k, v in req.items() if k != "candidate_ids"}, "labels": labels}
    got = [s.call("train", params)["result"] for _ in range(2)]
    assert [g["step"] for g in got] == [1, 2]
    assert s.call("save_checkpoint", {"path": str(tmp_path / "after.sbm")})["result"]["saved"]
    after, _ = load_any(tmp_path / "after.sbm")

    batch = step_batch(step_inputs(params, Scorer.open(tmp_path / "model.sbm").info))
    work, opt, losses = copy_params(start), Adam(start, DEFAULT_CONFIG), []
    for _ in range(2):
        loss, grads = loss_and_grads(work, batch, DEFAULT_CONFIG)
        opt.step(work, grads)
        losses.append(loss)
    np.testing.assert_allclose([g["loss"] for g in got], losses, rtol=1e-9)
    for name, value in work.items():
        np.testing.assert_allclose(after[name], value, rtol=1e-9, atol=1e-12, err_msg=name)


def test_logs_are_json_lines_on_stderr_and_in_the_log_file(sidecar, golden_onnx, tmp_path):
    log = tmp_path / "sidecar.log"
    s = sidecar("--model", str(golden_onnx), "--native-dim", str(DIM), "--log-file", str(log))
    s.send_raw(b"nonsense\n")
    s.recv()
    s.close()
    lines = [ln for ln in "".join(s.stderr).splitlines() if ln.strip()]
    events = [json.loads(ln) for ln in lines]
    assert all({"ts", "level", "event"} <= set(e) for e in events)
    assert events[0]["event"] == "start"
    assert any(e["event"] == "error" and e["code"] == -32700 for e in events)
    assert log.read_text().splitlines() == lines


def test_exits_cleanly_when_stdin_closes(sidecar, golden_onnx):
    s = sidecar("--model", str(golden_onnx), "--native-dim", str(DIM))
    s.call("status")
    assert s.close() == 0


def test_a_line_over_the_limit_is_refused_and_skipped(sidecar, golden_onnx):
    s = sidecar("--model", str(golden_onnx), "--native-dim", str(DIM))
    s.send_raw(b'{"jsonrpc":"2.0","id":"big","params":"' + b"x" * contract.MAX_LINE_BYTES + b'"}\n')
    err = s.recv()["error"]
    assert err["code"] == -32600 and "over" in err["message"]
    assert s.call("status")["result"]["trained"] is True  # the rest of the line was skipped
