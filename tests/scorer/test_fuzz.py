"""Hostile input: over 5,000 malformed requests (seeded) through one real sidecar — bad JSON,
wrong types, NaN/Infinity, huge and negative numbers, oversized arrays, deep nesting, unknown
methods, binary junk, cut-off lines and a line of several MB. Every non-blank line gets exactly
one well-formed JSON-RPC answer, and afterwards the server still answers `status` and scores
exactly as before."""

from __future__ import annotations

import json
import random
import threading

import numpy as np

from signet_scorer import ScoreQuery, Scorer, contract
from tests.scorer.conftest import DIM, Sidecar, request

COUNT = 5_200
CODES = {-32700, -32600, -32601, -32602, -32000, -32603}
METHODS = ["status", "score", "train", "train_from_db", "save_checkpoint"]

JUNK_VALUES = [
    None,
    True,
    False,
    0,
    -1,
    2**63,
    -(2**70),
    1e308,
    -1e308,
    1.5,
    "",
    "x",
    "\u0000",
    "💥",
    [],
    {},
    [None],
    [[]],
    {"a": 1},
    [1, "2", None],
    "NaN",
    [float("nan")],
]


def _value(rng: random.Random, depth: int = 0):
    """A random JSON value of any type (bounded depth)."""
    kind = rng.random()
    if kind < 0.5 or depth > 2:
        return rng.choice(JUNK_VALUES)
    if kind < 0.75:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(["a", "id", "params", "x"]): _value(rng, depth + 1) for _ in range(2)}


def _request(method, params, rid="f") -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()


def _bad_score(rng: random.Random, base: dict) -> bytes:
    """A score request with one or two fields replaced by something hostile."""
    params = dict(base)
    for _ in range(rng.randint(1, 2)):
        key = rng.choice(list(params) + ["project_slot", "agent_id", "extra"])
        params[key] = _value(rng)
    if rng.random() < 0.2:
        params["project_slot"] = rng.choice([-5, 32, 10**30, -(10**30), 3.0, "3"])
    return _request("score", params, rid=rng.choice(["a", 7, 1.25, "é"]))


def _special(rng: random.Random, base: dict) -> bytes:
    """NaN / Infinity literals, huge arrays, deep nesting, methods with hostile params."""
    text = json.dumps(base)
    k = rng.randrange(8)
    if k == 0:
        lit = rng.choice(["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
        return _request("score", {**base, "context_embedding": None}).replace(b"null", lit.encode())
    if k == 1:
        return _request("score", {**base, "candidate_ids": [str(i) for i in range(10_000)]})
    if k == 2:
        depth = rng.choice([100, 1_000, 20_000])
        return (
            b'{"jsonrpc":"2.0","id":"d","method":"score","params":'
            + b"[" * depth
            + b"]" * depth
            + b"}"
        )
    if k == 3:
        return _request(
            rng.choice(["", "Score", "status ", "rm -rf /", "\u202e", "train_from_db2"]), {}
        )
    if k == 4:
        # no string paths: a hostile but valid path would write a file
        path = rng.choice([None, 5, [], {}, True, -1.5])
        params = {"db_path": path, "path": path, "labels": _value(rng), "epochs": -1}
        return _request(rng.choice(METHODS[2:]), params)
    if k == 5:
        return text.encode()  # a score params object alone: not a request
    if k == 6:
        return _request(
            "score", {**base, "candidate_features": [[1e39] * 17] * len(base["candidate_ids"])}
        )
    return _request("status", _value(rng), rid=_value(rng))


def hostile_lines(seed: int = 0) -> list[bytes]:
    """COUNT hostile lines (no newline inside any) plus one line of several MB."""
    rng = random.Random(seed)
    base = request(n=6, seed=seed)
    base["context_embedding"] = base["context_embedding"][:8]  # keep lines short
    good = _request("score", base)
    lines = []
    for _ in range(COUNT):
        r = rng.random()
        if r < 0.15:
            cut = rng.randrange(1, len(good))
            lines.append(good[:cut])  # a partial line
        elif r < 0.3:
            lines.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 200))))
        elif r < 0.6:
            lines.append(_bad_score(rng, base))
        elif r < 0.85:
            lines.append(_special(rng, base))
        else:
            lines.append(json.dumps(_value(rng)).encode())
    big = {**request(n=4), "context_embedding": [0.123456789] * 400_000}
    lines.append(_request("score", big))  # ~5 MB
    return [line.replace(b"\n", b" ") for line in lines]


def test_hostile_requests_never_stop_the_server(golden_onnx, tmp_path):
    lines = hostile_lines()
    assert len(lines) > 5_000 and max(map(len, lines)) > 4_000_000
    expected = sum(1 for line in lines if line.strip())
    side = Sidecar("--model", str(golden_onnx), "--native-dim", str(DIM), cwd=tmp_path)
    try:
        writer = threading.Thread(
            target=lambda: side.send_raw(b"".join(line + b"\n" for line in lines)), daemon=True
        )
        writer.start()
        answers = [side.recv(timeout=120) for _ in range(expected)]
        writer.join()
        for a in answers:
            assert a["jsonrpc"] == "2.0" and ("result" in a) != ("error" in a), a
            if "error" in a:
                assert a["error"]["code"] in CODES and isinstance(a["error"]["message"], str)
        codes = {a["error"]["code"] for a in answers if "error" in a}
        assert {-32700, -32600, -32601, -32602} <= codes
        status = side.call("status")["result"]
        assert status["trained"] is True and status["errors"] > 4_000
        req = request(seed=11)
        got = side.call("score", req)["result"]["scores"]
        want = Scorer.open(golden_onnx).score(ScoreQuery(**req)).scores
        assert [(s["id"], s["score"]) for s in got] == want
        assert side.proc.poll() is None
    finally:
        assert side.close() == 0
    assert contract.MAX_LINE_BYTES > 5_000_000
    assert np.isfinite(status["latency_ms"]["score"]["p99"])
