"""Golden transcript: requests exactly as Signet's daemon sends them (ids "req-N", `agent_id`,
`null` embeddings, 768-d full-precision vectors) replayed through the real sidecar, with the
recorded responses; and the recorded scores are the numpy model's scores."""

from __future__ import annotations

import json

import numpy as np
import pytest

from signet_bench.learn.export import weights_digest
from tests.scorer.conftest import FIXTURES, Sidecar, generator, numpy_scores

REGENERATE = ".venv/bin/python fixtures/scorer/generate.py"


@pytest.fixture(scope="module")
def transcript() -> tuple[dict, list[dict]]:
    lines = (FIXTURES / "transcript.jsonl").read_text(encoding="utf-8").splitlines()
    header, *entries = (json.loads(x) for x in lines)
    if header["model_version"] != weights_digest(generator().golden_params()):
        pytest.fail(f"the golden model changed; regenerate with `{REGENERATE}` and review the diff")
    return header, entries


def test_the_daemons_requests_get_the_recorded_responses(transcript, golden_onnx):
    header, entries = transcript
    side = Sidecar("--native-dim", str(header["native_dim"]), "--checkpoint", str(golden_onnx))
    try:
        for entry in entries:
            side.send_raw(entry["request"].encode() + b"\n")
            got = generator().expected_response(side.recv())
            want = entry["response"]
            assert got["id"] == want["id"]
            assert got.get("error") == want.get("error")
            if "scores" in (want.get("result") or {}):
                ids = [s["id"] for s in got["result"]["scores"]]
                assert ids == [s["id"] for s in want["result"]["scores"]]
                np.testing.assert_allclose(
                    [s["score"] for s in got["result"]["scores"]],
                    [s["score"] for s in want["result"]["scores"]],
                    rtol=1e-6,
                    atol=1e-9,
                )
            else:
                assert got.get("result") == want.get("result")
    finally:
        side.close()


def test_the_recorded_scores_are_the_numpy_models(transcript):
    _, entries = transcript
    params = generator().golden_params()
    checked = 0
    for entry in entries:
        req = json.loads(entry["request"])
        result = entry["response"].get("result") or {}
        if "scores" not in result:
            continue
        want = numpy_scores(params, req["params"])
        got = {s["id"]: s["score"] for s in result["scores"]}
        assert [s["id"] for s in result["scores"]] == sorted(want, key=lambda k: (-want[k], k))
        np.testing.assert_allclose(
            [got[k] for k in want], list(want.values()), rtol=1e-5, atol=1e-6
        )
        checked += 1
    assert checked >= 4


# What Signet 0.58's sidecar answers to the transcript's refused requests: its `score` handler's
# and model's checks (packages/predictor/src/main.rs `score`, model.rs `forward_logits` and
# `encode_candidate`) and its dispatcher's unknown method (main.rs `main`).
SIGNET_REFUSALS = {
    "req-5": (-32000, "candidate mem-5-01 must provide either native embedding or text"),
    "req-6": (-32000, "query embedding dim mismatch: expected 768, got 10"),
    "req-7": (-32601, "method not found"),
    "req-10": (-32000, "candidate_ids and candidate_texts length mismatch"),
    "req-11": (-32000, "candidate_ids and candidate_embeddings length mismatch"),
    "req-12": (-32000, "candidate_ids and candidate_features length mismatch"),
    "req-13": (-32000, "candidate_features row has invalid dimension"),
}


def test_the_recorded_refusals_are_signets(transcript):
    """Every error in the transcript is the code and message Signet's sidecar gives."""
    _, entries = transcript
    errors = {e["response"]["id"]: e["response"].get("error") for e in entries}
    refused = {rid: (err["code"], err["message"]) for rid, err in errors.items() if err}
    assert refused == SIGNET_REFUSALS
