"""`signet-bench bench serve`: the served model's latency, start-up, memory and hot swap, all
measured in one run on an exported model of the default dims (768-d, 16,384 buckets).

Rows (stable names):
  score_inprocess_100x768  p50/p99       ms   `signet_scorer.Scorer.score` of 100 embedded
                                              candidates (float32 arrays, one intra-op
                                              thread), after a warm-up; goal p50 <= 0.5 ms,
                                              p99 <= 2 ms
  score_inprocess_100x768_signals  p50/p99  ms   the same with the candidates' texts, query
                                              terms, names, source sessions and track
                                              records, so the signals are computed too
                                              (same goals)
  score_inprocess_100x768_signals  ratio_p50  x  its p50 over score_inprocess_100x768's, in
                                              the same run: what the signals and the track
                                              record add to a score; goal <= 2
  signals_100x768          p50           ms   of that score:
                                              `signet_scorer.signals.candidate_signals` alone,
                                              timed in a loop of its own
  graph_100x768            p50           ms   of that score: onnxruntime's run of the parsed
                                              inputs alone, likewise
  rpc_roundtrip_80x768     p50/p95       ms   one `score` round trip through
                                              `python -m signet_scorer` on stdio: write the
                                              request line, read and parse the answer; 80
                                              candidates x 768-d serialised as the daemon does
                                              (float32 values at full double precision,
                                              `agent_id`); goal p95 <= 10 ms
  rpc_roundtrip_80x768     request_mb    MB   size of that request line
  rpc_roundtrip_80x768     json_parser   -    1 = orjson, 0 = the standard library
  sidecar_start            first_answer  ms   process start to the first `status` answer
                                              (median of 5 starts); goal <= 1.5 s
  sidecar_rss              after_scores  MiB  resident memory of the sidecar after N score
                                              requests (N = 10,000; 1,000 with --quick);
                                              goal <= 150 MB
  sidecar_rss              growth_last_half MiB  growth over the last N/2 requests (goal 0)
  hotswap                  p50/p99       ms   score round trips (80 x 768) answered while a
                                              `train_from_db` runs and swaps, from the same
                                              sidecar: heavy persona, 2,000 memories, 300
                                              scored sessions (40 with --quick; 300: a
                                              scheduled training of full size, 240 trained
                                              on, 60 held out), at learning rate 1e-4, after
                                              a first training without the last 10 sessions
  hotswap                  train_wall    s    that `train_from_db` call, request to answer
  hotswap                  swapped       -    1 when the trained model was swapped in
  score_idle               p50/p99       ms   score round trips (80 x 768) of that sidecar just
                                              before that training, none running (N = 1,000;
                                              300 with --quick)
  score_during_training    p50/p99       ms   the round trips answered while that
                                              `train_from_db` runs (the samples of `hotswap`);
                                              goal p99 < 120 ms, Signet's score timeout, past
                                              which the daemon ranks by its baseline

The sidecar runs as the daemon runs it, with one onnxruntime thread, and trains as it does: in
a child process below its priority with one BLAS thread. BLAS in this process is not involved.
Progress lines go to the `signet_bench.bench.serve_speed` logger.
"""

from __future__ import annotations

import json
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from signet_bench.analysis.report import Row, percentiles, timed_ms
from signet_bench.config import DEFAULT_CONFIG
from signet_bench.learn.export import model_bytes
from signet_bench.learn.model.checkpoint import CheckpointMeta
from signet_bench.learn.model.params import DEFAULT_SEED, init_params
from signet_bench.replay.loop import SimOptions, Simulator, simulate
from signet_bench.world.synth.build import build_persona_store
from signet_scorer import ScoreQuery, Scorer, jsonio
from signet_scorer.contract import N_FEATURES
from signet_scorer.scorer import parse_score_params
from signet_scorer.signals import Origins, candidate_signals
from signet_scorer.workbench import SERVED_MODEL_FILE

__all__ = ["daemon_score_line", "serve_rows"]

_log = logging.getLogger(__name__)

DIM = 768
_SIM = SimOptions(scorer="random", seed=0)
FULL = {"inprocess": 5_000, "rpc": 500, "rss": 10_000, "starts": 5, "idle": 1_000, "history": 300}
QUICK = {"inprocess": 1_000, "rpc": 100, "rss": 1_000, "starts": 3, "idle": 300, "history": 40}
SCORE_TIMEOUT = "< 120 ms"  # Signet's score timeout
WARMUP = 50


def daemon_score_line(n: int, seed: int, rid: str = "req-1") -> bytes:
    """A score request as Signet's daemon writes it: float32 embeddings printed as doubles at
    full precision, every feature, `agent_id`, no project slot."""
    rng = np.random.default_rng(seed)
    emb = rng.normal(size=(n, DIM)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    feats = rng.uniform(0, 1, size=(n, N_FEATURES)).astype(np.float32)
    params = {
        "context_embedding": emb[:10].mean(axis=0).astype(np.float64).tolist(),
        "candidate_ids": [f"mem-{seed}-{i:03d}" for i in range(n)],
        "candidate_embeddings": emb.astype(np.float64).tolist(),
        "candidate_features": feats.astype(np.float64).tolist(),
        "agent_id": "default",
    }
    req = {"jsonrpc": "2.0", "id": rid, "method": "score", "params": params}
    return json.dumps(req, separators=(",", ":")).encode() + b"\n"


class _Sidecar:
    """A `python -m signet_scorer` child driven request by request on its pipes."""

    def __init__(self, *args: str) -> None:
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "signet_scorer", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def send(self, line: bytes) -> None:
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def answer(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the sidecar exited")
        return jsonio.loads(line)

    def call(self, method: str, params: dict, rid: str = "b") -> dict:
        req = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        self.send(jsonio.dumps(req) + b"\n")
        return self.answer()

    def rss_mib(self) -> float | None:
        try:
            text = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return None
        kb = next(int(ln.split()[1]) for ln in text.splitlines() if ln.startswith("VmRSS:"))
        return kb / 1024.0

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _timed_scores(side: _Sidecar, line: bytes, n: int) -> list[float]:
    """Milliseconds of n score round trips of the same request line."""
    out = []
    for _ in range(n):
        t = time.perf_counter()
        side.send(line)
        side.answer()
        out.append((time.perf_counter() - t) * 1000.0)
    return out


def _inprocess_query(with_signals: bool) -> ScoreQuery:
    """100 embedded candidates x 768-d; with signals, also their texts, a query's terms and
    names, their source sessions (10 sessions of 10) and track records, so the server computes
    the signals."""
    rng = np.random.default_rng(1)
    emb = rng.normal(size=(100, DIM)).astype(np.float32)
    ctx = emb[:10].mean(axis=0)
    feats = rng.uniform(0, 1, size=(100, N_FEATURES)).astype(np.float32)
    ids = [f"m{i}" for i in range(100)]
    if not with_signals:
        return ScoreQuery(ctx, ids, emb, None, feats)
    words = [f"term{i}" for i in range(300)] + ["Caroline", "Melanie", "deploy", "staging"]
    texts = [" ".join(rng.choice(words, size=24)) for _ in ids]
    return ScoreQuery(
        ctx,
        ids,
        emb,
        texts,
        feats,
        query_terms=["deploy", "staging", "term7"],
        query_entities=["Caroline"],
        candidate_sources=[f"s{i // 10}" for i in range(100)],
        candidate_created_at=[1.7e9 + 60.0 * i for i in range(100)],
        candidate_track_record=rng.uniform(0.0, 1.0, size=100),
    )


def _inprocess_rows(model: Path, n: int) -> list[Row]:
    scorer = Scorer.open(model, native_dim=DIM)
    if scorer.model is None:
        raise RuntimeError(f"bench serve: {model} did not load: {scorer.reason}")
    rows, p50 = [], {}
    for name, with_signals in (
        ("score_inprocess_100x768", False),
        ("score_inprocess_100x768_signals", True),
    ):
        query = _inprocess_query(with_signals)
        p = percentiles(timed_ms(lambda q=query: scorer.score(q), WARMUP, n), (50, 99))
        p50[with_signals] = p["p50"]
        rows += [
            Row(name, "p50", p["p50"], "ms", n=n, goal="<= 0.5 ms"),
            Row(name, "p99", p["p99"], "ms", n=n, goal="<= 2 ms"),
        ]
    ratio = p50[True] / p50[False]
    rows.append(Row(name, "ratio_p50", ratio, "x", n=n, goal="<= 2"))
    return rows + _part_rows(scorer, n)


def _part_rows(scorer: Scorer, n: int) -> list[Row]:
    """Where a score with the signals goes, each part timed in a loop of its own (so with
    warmer caches than inside a whole score): the signals alone and onnxruntime's run alone."""
    query = _inprocess_query(True)
    inputs = parse_score_params(query.rpc_params(), scorer.info).inputs
    emb = np.asarray(query.candidate_embeddings, dtype=np.float32)
    has = np.ones(len(emb), dtype=bool)

    def signals() -> np.ndarray:
        return candidate_signals(
            query_terms=query.query_terms,
            query_entities=query.query_entities,
            candidate_texts=query.candidate_texts,
            context=query.context_embedding,
            embeddings=emb,
            has_embedding=has,
            origins=Origins(
                query.candidate_sources, np.asarray(query.candidate_created_at, dtype=np.float64)
            ),
            track_record=query.candidate_track_record,
        )

    model = scorer.model
    parts = (("signals_100x768", signals), ("graph_100x768", lambda: model.run(inputs)))
    return [
        Row(name, "p50", percentiles(timed_ms(call, WARMUP, n), (50,))["p50"], "ms", n=n)
        for name, call in parts
    ]


def _rpc_rows(model: Path, n: int) -> list[Row]:
    line = daemon_score_line(80, seed=2)
    side = _Sidecar("--model", str(model), "--native-dim", str(DIM))
    try:
        _timed_scores(side, line, WARMUP)
        p = percentiles(_timed_scores(side, line, n), (50, 95))
    finally:
        side.close()
    name = "rpc_roundtrip_80x768"
    return [
        Row(name, "p50", p["p50"], "ms", n=n),
        Row(name, "p95", p["p95"], "ms", n=n, goal="<= 10 ms"),
        Row(name, "request_mb", len(line) / 1e6, "MB"),
        Row(name, "json_parser", float(jsonio.PARSER == "orjson"), "1=orjson"),
    ]


def _start_rows(model: Path, n: int) -> list[Row]:
    firsts = []
    for _ in range(n):
        side = _Sidecar("--model", str(model), "--native-dim", str(DIM))
        side.call("status", {})
        firsts.append((time.perf_counter() - side.t0) * 1000.0)
        side.close()
    return [
        Row("sidecar_start", "first_answer", statistics.median(firsts), "ms", n=n, goal="<= 1500")
    ]


def _rss_rows(model: Path, n: int) -> list[Row]:
    lines = [daemon_score_line(80, seed=s, rid=f"req-{s}") for s in range(8)]
    side = _Sidecar("--model", str(model), "--native-dim", str(DIM))
    try:
        half = None
        for i in range(n):
            side.send(lines[i % len(lines)])
            side.answer()
            if i == n // 2 - 1:
                half = side.rss_mib()
        end = side.rss_mib()
    finally:
        side.close()
    if end is None or half is None:
        return []
    return [
        Row("sidecar_rss", "after_scores", end, "MiB", n=n, goal="<= 150 MB"),
        Row("sidecar_rss", "growth_last_half", end - half, "MiB", n=n // 2, goal="0"),
    ]


def _store(tmp: Path, sessions: int, first: int) -> Path:
    """A heavy store whose plan holds `sessions` scored sessions, the first `first` of them run
    (`simulate` up to `sessions` runs the rest)."""
    db = tmp / "memories.db"
    build_persona_store("heavy", db, seed=0, n_memories=2000)
    sim = Simulator(db, _SIM)
    try:
        sim.plan(sessions)  # fixes the horizon: drift depends on it
        sim.loop.run(first)
    finally:
        sim.close()
    return db


def _latency_rows(name: str, times: list[float], p99_goal: str | None = None) -> list[Row]:
    """p50 and p99 rows of round-trip times."""
    p = percentiles(times, (50, 99))
    return [
        Row(name, "p50", p["p50"], "ms", n=len(times)),
        Row(name, "p99", p["p99"], "ms", n=len(times), goal=p99_goal),
    ]


def _scores_while_training(
    side: _Sidecar, line: bytes, db: Path
) -> tuple[list[float], dict, float]:
    """Score round trips sent one after another while one `train_from_db` runs: their times,
    the training's answer and its seconds from request to answer."""
    train = {"jsonrpc": "2.0", "id": "train", "method": "train_from_db"}
    t = time.perf_counter()
    side.send(jsonio.dumps({**train, "params": {"db_path": str(db)}}) + b"\n")
    times: list[float] = []
    done, wall = None, 0.0
    while done is None:
        t1 = time.perf_counter()
        side.send(line)
        while (ans := side.answer())["id"] == "train":
            done, wall = ans, time.perf_counter() - t
        times.append((time.perf_counter() - t1) * 1000.0)
    return times, done, wall


def _hotswap_rows(tmp: Path, n_idle: int, history: int) -> list[Row]:
    """As the daemon schedules it: a first training on all but the last interval's sessions
    gives the served model; the timed one sees those new sessions too (on unchanged history the
    held-out gate rightly keeps the served model, and nothing would swap)."""
    interval = DEFAULT_CONFIG.train_interval_sessions
    db = _store(tmp, history, history - interval)
    served = tmp / "served.onnx"  # absent: the first training makes it
    # fine-tuning a served model at the incremental rate (lr/10); any held-out lead is
    # served, since what is timed is the swap, not the gate's evidence
    config = tmp / "agent.yaml"
    config.write_text("predictor:\n  learningRate: 1.0e-4\n  holdoutGainEvidence: 0\n")
    args = ("--model", str(served), "--native-dim", str(DIM), "--tz", "UTC")
    side = _Sidecar(*args, "--train-config", str(config))
    line = daemon_score_line(80, seed=3, rid="s")
    try:
        first = side.call("train_from_db", {"db_path": str(db)})
        if "result" not in first or not first["result"].get("accepted"):
            _log.info(f"  hot swap: the first training did not give a model ({first})")
            return []
        simulate(db, history, _SIM)  # the last interval's sessions
        _timed_scores(side, line, WARMUP)
        idle = _timed_scores(side, line, n_idle)
        times, done, wall = _scores_while_training(side, line, db)
    finally:
        side.close()
    swapped = float(bool(done.get("result", {}).get("accepted")))
    return [
        *_latency_rows("hotswap", times),
        Row("hotswap", "train_wall", wall, "s"),
        Row("hotswap", "swapped", swapped, "1=yes"),
        *_latency_rows("score_idle", idle, SCORE_TIMEOUT),
        *_latency_rows("score_during_training", times, SCORE_TIMEOUT),
    ]


def serve_rows(*, quick: bool = False, seed: int = 0) -> list[Row]:
    """Every serving measurement of one run (see the module docstring)."""
    sizes = QUICK if quick else FULL
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        root = Path(tmp)
        model = root / SERVED_MODEL_FILE
        model.write_bytes(model_bytes(init_params(seed=DEFAULT_SEED + seed), CheckpointMeta()))
        rows: list[Row] = []
        steps = [
            ("in-process scores", lambda: _inprocess_rows(model, sizes["inprocess"])),
            ("JSON-RPC round trips", lambda: _rpc_rows(model, sizes["rpc"])),
            ("sidecar starts", lambda: _start_rows(model, sizes["starts"])),
            ("resident memory", lambda: _rss_rows(model, sizes["rss"])),
            ("hot swap", lambda: _hotswap_rows(root, sizes["idle"], sizes["history"])),
        ]
        for what, measure in steps:
            _log.info(f"bench serve: {what} ...")
            rows += measure()
    return rows
