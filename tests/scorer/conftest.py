"""Shared pieces of the serving tests: the golden model and a driver for the real sidecar
subprocess (`python -m signet_scorer`), read line by line with timeouts so a hung server fails a
test instead of hanging it."""

from __future__ import annotations

import importlib.util
import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.learn.model.scorer import SessionArrays, score_session
from signet_scorer.tokenize import token_buckets

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "scorer"
DIM = 768
TEXTS = ["deploy to staging first", "pnpm over npm", "", "postgres index on created_at"]


def request(n: int = 12, seed: int = 0, mode: str = "mixed") -> dict:
    """A score request; mode: "mixed" (every third candidate on the text path), "embedded",
    "text"."""
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n, DIM)).astype(np.float32)
    feats = rng.normal(size=(n, 17)).astype(np.float32)
    feats[:, 3:10] = rng.normal(size=7)
    text = {"mixed": lambda i: i % 3 == 1, "embedded": lambda i: False, "text": lambda i: True}
    rows = [None if text[mode](i) else emb[i].tolist() for i in range(n)]
    return {
        "context_embedding": rng.normal(size=DIM).astype(np.float32).tolist(),
        "candidate_ids": [f"m{i:02d}" for i in range(n)],
        "candidate_embeddings": rows,
        "candidate_texts": [TEXTS[i % len(TEXTS)] for i in range(n)],
        "candidate_features": feats.tolist(),
        "project_slot": 4,
    }


def numpy_scores(params: dict[str, np.ndarray], req: dict) -> dict[str, float]:
    """The numpy model's probabilities for Signet-style score parameters (float32 inputs;
    rows of another length and null rows on the text path, as the sidecar takes them)."""
    n = len(req["candidate_ids"])
    rows = req.get("candidate_embeddings") or [None] * n
    has = np.array([r is not None and len(r) == DIM for r in rows])
    emb = np.array([r if h else [0.0] * DIM for r, h in zip(rows, has, strict=True)], np.float32)
    texts = req.get("candidate_texts") or [None] * n
    tokens = [
        None if h else token_buckets(t, DEFAULT_CONFIG.hash_buckets)
        for h, t in zip(has, texts, strict=True)
    ]
    session = SessionArrays(
        np.asarray(req["context_embedding"], np.float32),
        emb,
        has,
        tokens,
        np.asarray(req.get("candidate_features") or [[0.0] * 17] * n, np.float32),
        req.get("project_slot", 0),
    )
    probs = score_session(params, session)
    return dict(zip(req["candidate_ids"], probs.tolist(), strict=True))


def scores_of(resp: dict) -> list[tuple[str, float]]:
    """(id, score) pairs of a score response."""
    return [(s["id"], s["score"]) for s in resp["result"]["scores"]]


def generator() -> ModuleType:
    """fixtures/scorer/generate.py as a module (golden weights and requests)."""
    name = "scorer_golden_generate"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FIXTURES / "generate.py")
        assert spec is not None and spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


class Sidecar:
    """One `python -m signet_scorer ...` process with line-based I/O."""

    def __init__(self, *args: str, timeout: float = 60.0, cwd: Path | None = None) -> None:
        self.timeout = timeout
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "signet_scorer", *args],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        threading.Thread(target=self._pump_err, daemon=True).start()
        self._next = 0

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _pump_err(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def send_raw(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, method: str, params: Any = None, rid: Any = None) -> Any:
        if rid is None:
            self._next += 1
            rid = f"t-{self._next}"
        req = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            req["params"] = params
        self.send_raw(json.dumps(req).encode() + b"\n")
        return rid

    def recv(self, timeout: float | None = None) -> dict:
        try:
            line = self.lines.get(timeout=timeout or self.timeout)
        except queue.Empty:
            raise AssertionError(f"no answer; stderr: {''.join(self.stderr[-5:])}") from None
        if line is None:
            raise AssertionError(f"the sidecar exited; stderr: {''.join(self.stderr[-5:])}")
        return json.loads(line)

    def call(self, method: str, params: Any = None) -> dict:
        rid = self.send(method, params)
        resp = self.recv()
        assert resp["id"] == rid, resp
        return resp

    def log_events(self) -> list[dict]:
        return [json.loads(x) for x in self.stderr if x.startswith("{")]

    def close(self) -> int:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@pytest.fixture(scope="session")
def golden_onnx(tmp_path_factory) -> Path:
    """The golden model (fixed weights, every parameter block in play) as an ONNX file."""
    return generator().golden_model(tmp_path_factory.mktemp("golden") / "golden.onnx")


@pytest.fixture
def sidecar():
    """Start sidecars with `sidecar(*args)`; all are closed after the test."""
    started: list[Sidecar] = []

    def start(*args: str) -> Sidecar:
        s = Sidecar(*args)
        started.append(s)
        return s

    yield start
    for s in started:
        s.close()
