"""`signet-bench bench loop`: session-start latency, simulation throughput, and a concurrent
writer/readers run on a fresh synthetic store (the heavy persona unless `--persona`).

Rows (stable names; `<p>` is the persona, `heavy` by default):
  session_start_<p>               p50/p95/p99 ms  one session start without the scorer (pre-filter +
                                                  baseline + fusion + diversity + selection), over
                                                  200 starts after 20 warm-up starts, in a child
                                                  process with OPENBLAS_NUM_THREADS=1 (as the CLI
                                                  runs); goal p95 <= 10 ms
  session_start_<p>               blas_threads    BLAS threads in that process
  session_start_<p>_blas_default  p50/p95/p99 ms  the same starts in a child process with OpenBLAS'
                                                  default threading (env var unset: all cores)
  session_start_<p>_blas_default  blas_threads
  simulate_<n>_random             wall s          `simulate --scorer random` of the first <n>
                                                  sessions on a fresh copy of the store (n = 1000;
                                                  store opening included); goal <= 60 s
  simulate_<n>_random             per_session ms  wall / n
  simulate_<n>_random             blas_threads    BLAS threads in the benchmark process
  concurrency_<d>s                writes          sessions the writer process committed in <d> s
  concurrency_<d>s                reads_sqlite    reads by the open_readonly reader process (each:
                                                  read_memories + read_comparisons +
                                                  read_session_memories + read_sessions, one
                                                  read transaction)
  concurrency_<d>s                reads_duckdb    reads by the DuckDB reader process (comparisons,
                                                  then store.session_memories)
  concurrency_<d>s                errors          failed reads/writes (any error; goal 0)
  concurrency_<d>s                locked          of which `database is locked` (goal 0)
  concurrency_<d>s                half_sessions   reads that saw part of a session or a count go
                                                  down (goal 0)
  concurrency_<d>s                lost            committed rows missing from the final store (0)
  concurrency_<d>s                max_lag         ms from a session's commit to the end of the
                                                  first read that returned it (either reader)
With --quick: 50 starts, n = 100, d = 10.

Session times, projects and contexts follow the loop: the persona's session plan gives each
start time and project; the context is built, as the loop builds it, from a few memories the
previous session of the same project injected (none for a project's first session: the top-10
baseline fallback); a store with a knowledge graph is walked at every start (traversal).
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import queue
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from signet_bench.analysis.report import Row, percentiles
from signet_bench.bench.concurrency import run_concurrency
from signet_bench.daemon.ranking.session_start import GraphWalk, session_start
from signet_bench.daemon.session_query import start_query
from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.store.corpus import read_corpus
from signet_bench.store.graph import read_graph
from signet_bench.store.read import open_readonly
from signet_bench.world.synth.build import build_persona_store
from signet_bench.world.synth.persona import get_persona
from signet_bench.world.synth.plans import plan_sessions
from signet_bench.world.synth.truth import load_truth

_log = logging.getLogger(__name__)

__all__ = ["blas_threads", "loop_rows", "session_start_latencies"]

WARMUP = 20
FULL = {"starts": 200, "sessions": 1000, "seconds": 60.0}
QUICK = {"starts": 50, "sessions": 100, "seconds": 10.0}
PLAN_HORIZON = 5000  # sessions in the concurrency writer's plan (it stops at the deadline)


def blas_threads() -> int | None:
    """BLAS threads numpy uses in this process (threadpoolctl when installed, else the env)."""
    try:
        # optional: threadpoolctl comes with the dev extras
        from threadpoolctl import threadpool_info

        counts = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
        if counts:
            return int(max(counts))
    except ImportError:
        pass
    env = os.environ.get("OPENBLAS_NUM_THREADS")
    return int(env) if env and env.isdigit() else None


def session_start_latencies(path: str | Path, n: int, seed: int = 0) -> list[float]:
    """Milliseconds per `session_start` call (predictor=None) over `n` planned sessions of the
    store's persona, after `WARMUP` untimed calls: the loop's own call, with the store's
    knowledge graph (traversal when it has one) and each start's query terms. Only the call
    is timed; the graph is read once, as the loop reads it."""

    con = open_readonly(path)
    try:
        persona, truth = load_truth(con)
        corpus, graph = read_corpus(con), read_graph(con)
        plans = plan_sessions(persona, n + WARMUP, start=truth.now, seed=seed)
        terms = [start_query(con, ctx.project, ctx.start).terms for ctx in plans]
    finally:
        con.close()
    rng = np.random.default_rng(seed)
    last_injected: dict[str | None, list[str]] = {}
    out: list[float] = []
    for k, ctx in enumerate(plans):
        prev = last_injected.get(ctx.project, [])
        used = rng.choice(prev, size=min(len(prev), int(rng.integers(3, 11))), replace=False)
        t0 = time.perf_counter()
        res = session_start(
            corpus,
            ctx.start.timestamp(),
            project=ctx.project,
            previous_used=used.tolist(),
            walk=GraphWalk(graph, terms[k]),
        )
        ms = (time.perf_counter() - t0) * 1000.0
        if k >= WARMUP:
            out.append(ms)
        last_injected[ctx.project] = list(res.injected_ids)
    return out


def _latency_child(path: str, n: int, seed: int, out) -> None:
    try:
        out.put(("ok", session_start_latencies(path, n, seed), blas_threads()))
    except BaseException as exc:  # noqa: BLE001 - reported by the parent
        out.put(("error", f"{type(exc).__name__}: {exc}", None))


def _latency_in_child(path: Path, n: int, seed: int, blas_env: str | None):
    """Run `session_start_latencies` in a fresh (spawned) interpreter whose numpy loads with
    OPENBLAS_NUM_THREADS=`blas_env` (unset when None)."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    before = os.environ.get("OPENBLAS_NUM_THREADS")
    if blas_env is None:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)
    else:
        os.environ["OPENBLAS_NUM_THREADS"] = blas_env
    try:
        proc = ctx.Process(target=_latency_child, args=(str(path), n, seed, out))
        proc.start()
    finally:
        if before is None:
            os.environ.pop("OPENBLAS_NUM_THREADS", None)
        else:
            os.environ["OPENBLAS_NUM_THREADS"] = before
    try:
        status, payload, threads = out.get(timeout=900)
    except queue.Empty:
        status, payload, threads = "error", "timed out", None
    proc.join(timeout=30)
    if proc.is_alive():
        proc.terminate()
        proc.join()
    return status, payload, threads


def _latency_rows(name: str, result, n: int, goal: str | None) -> list[Row]:
    status, payload, threads = result
    if status != "ok":
        _log.info(f"note: {name} failed: {payload}")
        return []
    rows = [
        Row(name, metric, value, "ms", n=n, goal=goal if metric == "p95" else None)
        for metric, value in percentiles(payload, (50, 95, 99)).items()
    ]
    if threads is not None:
        rows.append(Row(name, "blas_threads", threads, "count"))
    return rows


def loop_rows(
    persona_name: str = "heavy",
    *,
    quick: bool = False,
    seed: int = 0,
) -> list[Row]:
    """Build the store, run the three measurements and return their rows."""
    sizes = QUICK if quick else FULL
    persona = get_persona(persona_name)  # UserError if unknown
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="signet-bench-loop-") as tmp_name:
        tmp = Path(tmp_name)
        fresh = tmp / f"{persona.name}.db"
        t0 = time.perf_counter()
        build_persona_store(persona, fresh, seed=seed)
        _log.info(f"built the {persona.name} store in {time.perf_counter() - t0:.1f} s")

        n = sizes["starts"]
        name = f"session_start_{persona.name}"
        rows += _latency_rows(name, _latency_in_child(fresh, n, seed, "1"), n, "<= 10 ms")
        rows += _latency_rows(
            f"{name}_blas_default", _latency_in_child(fresh, n, seed, None), n, None
        )

        n_sim = sizes["sessions"]
        sim_path = tmp / "simulate.db"
        shutil.copy(fresh, sim_path)
        t0 = time.perf_counter()
        report = simulate(sim_path, n_sim, SimOptions(scorer="random", seed=seed))
        wall = time.perf_counter() - t0
        name = f"simulate_{n_sim}_random"
        goal = "<= 60 s" if n_sim == FULL["sessions"] else None
        rows.append(Row(name, "wall", wall, "s", n=report.sessions_run, goal=goal))
        rows.append(Row(name, "per_session", wall / max(1, report.sessions_run) * 1000, "ms"))
        threads = blas_threads()
        if threads is not None:
            rows.append(Row(name, "blas_threads", threads, "count"))

        seconds = sizes["seconds"]
        conc_path = tmp / "concurrency.db"
        shutil.copy(fresh, conc_path)
        res = run_concurrency(conc_path, seconds, n_plan=PLAN_HORIZON, seed=seed)
        _log.info(res.summary())
        name = f"concurrency_{int(seconds)}s"
        sqlite_r, duck_r = res.readers["sqlite"], res.readers["duckdb"]
        locked = len([e for e in res.writer_errors if "locked" in e]) + sum(
            r.locked for r in res.readers.values()
        )
        rows += [
            Row(name, "writes", res.writes, "sessions"),
            Row(name, "reads_sqlite", sqlite_r.reads, "count"),
            Row(name, "reads_duckdb", duck_r.reads, "count"),
            Row(name, "errors", res.errors, "count", goal="0"),
            Row(name, "locked", locked, "count", goal="0"),
            Row(name, "half_sessions", res.inconsistent, "count", goal="0"),
            Row(name, "lost", res.lost, "count", goal="0"),
        ]
        if res.max_lag_s is not None:
            rows.append(Row(name, "max_lag", res.max_lag_s * 1000.0, "ms"))
    return rows
