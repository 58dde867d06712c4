"""One store, one writer process, two reader processes: the simulated daemon records sessions
while a stdlib reader (`open_readonly` + `read_memories` / `read_comparisons` /
`read_session_memories` / `read_sessions`) and a DuckDB reader (`connect_duckdb`, queries on
`store.session_memories` and `store.predictor_comparisons`) poll it.

Each process opens the store with one library only (docs/specification.md §2.3): the processes are
started with the `spawn` context, so no SQLite copy is inherited, and this module imports neither
DuckDB nor the simulator at import time. What is checked on every read:

- no error (in particular no `database is locked`) on either side;
- counts never go down (comparisons, session_memories rows) from one read to the next;
- no half sessions: in the stdlib reader's single read transaction the sessions with a
  comparison, with candidate rows and with a score row are the same set (each session is one
  write transaction); the DuckDB reader reads comparisons first and candidates after, so every
  comparison's session must have its candidate rows;
- nothing lost: the final counts equal what the writer reports, and each reader's last read
  (after the writer finished) sees them all.

Lag: for the k-th committed session, the time from its commit to the end of the first read
that returned it; `max_lag_s` is the largest over the run (it includes the poll interval and
the read itself).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "ConcurrencyResult",
    "ReaderStats",
    "duckdb_reader_main",
    "run_concurrency",
    "sqlite_reader_main",
    "store_counts",
    "writer_main",
]

MAX_READS = 100_000  # hard bound on a reader's loop, whatever the clock says
_CANDIDATE = "source <> 'fts_only'"


@dataclass(slots=True)
class ReaderStats:
    """What one reader process saw."""

    name: str
    reads: int = 0
    errors: list[str] = field(default_factory=list)
    inconsistent: list[str] = field(default_factory=list)  # half sessions seen
    non_monotone: list[str] = field(default_factory=list)  # a count that went down
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (t_end, cmp, rows)
    last: tuple[int, int] = (0, 0)  # (comparisons, session_memories rows) of the final read
    max_lag_s: float | None = None
    unseen: int = 0  # committed sessions no read ever returned

    @property
    def locked(self) -> int:
        return sum("locked" in e for e in self.errors)


@dataclass(slots=True)
class ConcurrencyResult:
    """The run's outcome; `ok` when nothing went wrong anywhere."""

    duration_s: float
    writes: int = 0  # sessions the writer committed
    writer_seconds: float = 0.0
    writer_errors: list[str] = field(default_factory=list)
    writer_counts: tuple[int, int] = (0, 0)  # (comparisons, rows) the writer saw at the end
    initial: dict[str, int] = field(default_factory=dict)  # counts before the first write
    readers: dict[str, ReaderStats] = field(default_factory=dict)
    final: dict[str, int] = field(default_factory=dict)
    lost: int = 0  # rows the writer committed that the final store lacks (or vice versa)

    @property
    def errors(self) -> int:
        return len(self.writer_errors) + sum(len(r.errors) for r in self.readers.values())

    @property
    def inconsistent(self) -> int:
        return sum(len(r.inconsistent) + len(r.non_monotone) for r in self.readers.values())

    @property
    def max_lag_s(self) -> float | None:
        lags = [r.max_lag_s for r in self.readers.values() if r.max_lag_s is not None]
        return max(lags) if lags else None

    @property
    def ok(self) -> bool:
        return (
            self.errors == 0
            and self.inconsistent == 0
            and self.lost == 0
            and self.writes > 0
            and all(r.reads > 0 and r.unseen == 0 for r in self.readers.values())
        )

    def summary(self) -> str:
        lines = [
            f"writer: {self.writes} sessions in {self.writer_seconds:.1f} s, "
            + f"errors {len(self.writer_errors)}"
        ]
        for r in self.readers.values():
            lag = "n/a" if r.max_lag_s is None else f"{r.max_lag_s * 1000:.0f} ms"
            lines.append(
                f"{r.name}: {r.reads} reads, errors {len(r.errors)} ({r.locked} locked), "
                f"half sessions {len(r.inconsistent)}, count decreases {len(r.non_monotone)}, "
                f"max lag {lag}, last read {r.last}"
            )
        lines.append(f"final {self.final}; lost {self.lost}")
        for e in [*self.writer_errors, *(e for r in self.readers.values() for e in r.errors)][:5]:
            lines.append(f"error: {e}")
        return "\n".join(lines)


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def store_counts(con: Any) -> dict[str, int]:
    """Row counts of the session tables, through a stdlib connection to the store."""
    out = {}
    for table in ("predictor_comparisons", "session_memories", "session_scores", "sim_sessions"):
        out[table] = int(con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    return out


# --- writer -----------------------------------------------------------------------------------


def writer_main(
    path: str,
    n_plan: int,
    duration_s: float,
    seed: int,
    go: Any,
    out: Any,
    start_timeout_s: float = 300.0,
) -> None:
    """Simulate sessions (scorer random) until `duration_s` has passed or the plan is done;
    put {'writes', 'commits': [(t, comparisons)], 'seconds', 'errors', 'counts'} on `out`."""
    result: dict[str, Any] = {"writes": 0, "commits": [], "seconds": 0.0, "errors": []}
    try:
        # here: each role's process imports only what it runs (start-up time)
        from signet_bench.replay.lifecycle import SimReport
        from signet_bench.replay.loop import SimOptions, Simulator

        sim = Simulator(path, SimOptions(scorer="random", seed=seed))
        try:
            plan = sim.plan(n_plan)
            done = sim.done()
            todo = [(i, c) for i, c in enumerate(plan) if i not in done]
            result["initial"] = store_counts(sim.con)
            n_cmp = result["initial"]["predictor_comparisons"]
            report = SimReport()
            if not go.wait(start_timeout_s):
                raise TimeoutError("readers did not become ready")
            t0 = time.time()
            deadline = t0 + duration_s
            for i, ctx in todo:
                if time.time() >= deadline:
                    break
                try:
                    sim.run_session(i, ctx, report)
                except Exception as exc:  # noqa: BLE001 - recorded, the run stops
                    result["errors"].append(f"session {i}: {_err(exc)}")
                    break
                n_cmp += 1
                result["commits"].append((time.time(), n_cmp))
            result["seconds"] = time.time() - t0
            result["writes"] = report.sessions_run
            result["counts"] = store_counts(sim.con)
        finally:
            sim.close()
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        result["errors"].append(_err(exc) + "\n" + traceback.format_exc(limit=3))
    out.put(("writer", result))


# --- readers ----------------------------------------------------------------------------------


def _open_reader(kind: str, opener: Any, path: str, ready: Any, out: Any) -> Any:
    """The reader's connection, or None after reporting why it could not open (the parent
    is released from waiting on it)."""
    try:
        return opener(path)
    except Exception as exc:  # noqa: BLE001 - reported as the reader's only error
        ready.set()
        out.put((kind, ReaderStats(kind, errors=[_err(exc)])))
        return None


def _reader_loop(name: str, read_once, ready: Any, done: Any, out: Any, deadline_s: float):
    """Call `read_once() -> (n_comparisons, n_rows, problem | None)` until the writer is done,
    then once more; collect errors, half sessions and count decreases."""
    stats = ReaderStats(name)
    hard_stop = time.time() + deadline_s
    prev = (0, 0)

    def one() -> None:
        nonlocal prev
        try:
            n_cmp, n_rows, problem = read_once()
        except Exception as exc:  # noqa: BLE001 - every failed read is counted
            stats.errors.append(_err(exc))
            return
        t_end = time.time()
        stats.reads += 1
        stats.samples.append((t_end, n_cmp, n_rows))
        if problem:
            stats.inconsistent.append(problem)
        if n_cmp < prev[0] or n_rows < prev[1]:
            stats.non_monotone.append(f"read {stats.reads}: {prev} -> {(n_cmp, n_rows)}")
        prev = (n_cmp, n_rows)
        stats.last = prev

    one()  # the first read also warms caches before the writer starts
    ready.set()
    for _ in range(MAX_READS):
        if done.is_set() or time.time() >= hard_stop:
            break
        one()
    if done.is_set():
        one()  # after the writer's last commit: must see everything
    else:
        stats.errors.append("writer did not finish before the reader's deadline")
    out.put((name, stats))


def sqlite_reader_main(path: str, ready: Any, done: Any, out: Any, deadline_s: float) -> None:
    """The library's read path: one read-only connection, each poll one read transaction."""
    # here: each role's process imports only what it runs (start-up time)
    from signet_bench.store.read import (
        open_readonly,
        read_comparisons,
        read_memories,
        read_session_memories,
        read_sessions,
    )

    con = _open_reader("sqlite", open_readonly, path, ready, out)
    if con is None:
        return

    def read_once():
        con.execute("BEGIN")  # one snapshot for every read below
        try:
            mem = read_memories(con)
            comps = read_comparisons(con)
            cands = read_session_memories(con)
            scores = read_sessions(con)
        finally:
            con.execute("COMMIT")
        if len(mem) == 0:
            return comps.height, cands.height, "read_memories returned no memories"
        cmp_keys = set(comps["session_key"].to_list())
        cand_keys = set(
            cands.filter(cands["source"] != "fts_only")["session_key"].unique().to_list()
        )
        score_keys = set(scores["session_key"].to_list())
        problem = None
        if not (cmp_keys == cand_keys == score_keys):
            problem = (
                f"half session: {len(cmp_keys)} with comparisons, {len(cand_keys)} with "
                f"candidates, {len(score_keys)} with scores"
            )
        if comps.height != len(cmp_keys):
            problem = f"{comps.height} comparison rows for {len(cmp_keys)} sessions"
        return comps.height, cands.height, problem

    try:
        _reader_loop("sqlite", read_once, ready, done, out, deadline_s)
    finally:
        con.close()


def duckdb_reader_main(path: str, ready: Any, done: Any, out: Any, deadline_s: float) -> None:
    """The notebooks' read path: DuckDB reading the store through its read-only views."""
    # here: each role's process imports only what it runs (start-up time)
    from signet_bench.store.duck import connect_duckdb

    con = _open_reader("duckdb", connect_duckdb, path, ready, out)
    if con is None:
        return

    def read_once():
        # Comparisons first: the later statement sees at least the sessions the earlier saw.
        rows = con.execute("SELECT session_key FROM store.predictor_comparisons").fetchall()
        cmp_keys = {r[0] for r in rows}
        n_rows, cand = con.execute(
            "SELECT COUNT(*), list(DISTINCT session_key) FILTER (WHERE "
            f"{_CANDIDATE}) FROM store.session_memories"
        ).fetchone()
        missing = cmp_keys - set(cand or [])
        problem = f"{len(missing)} compared sessions without candidates" if missing else None
        return len(cmp_keys), int(n_rows), problem

    try:
        _reader_loop("duckdb", read_once, ready, done, out, deadline_s)
    finally:
        con.close()


# --- orchestration ----------------------------------------------------------------------------


def _lag(stats: ReaderStats, commits: list[tuple[float, int]]) -> tuple[float | None, int]:
    """Max over commits of (end of the first read that saw it - commit time); unseen count."""
    worst, unseen, j = None, 0, 0
    samples = stats.samples
    for t_commit, n in commits:
        while j < len(samples) and samples[j][1] < n:
            j += 1
        if j == len(samples):
            unseen += 1
            continue
        lag = max(0.0, samples[j][0] - t_commit)
        worst = lag if worst is None else max(worst, lag)
    return worst, unseen


@dataclass(frozen=True, slots=True)
class _Channels:
    """What the parent shares with its children: the report queue, the writer's go signal,
    the 'writer done' signal and one 'ready' signal per reader."""

    out: Any
    done: Any
    go: Any
    ready: dict[str, Any]

    @classmethod
    def create(cls, ctx: Any) -> _Channels:
        """Fresh channels from the multiprocessing context `ctx`."""
        out = ctx.Queue()
        done = ctx.Event()
        go = ctx.Event()
        return cls(out, done, go, {"sqlite": ctx.Event(), "duckdb": ctx.Event()})


def _spawn(
    ctx: Any,
    ch: _Channels,
    path: str,
    n_plan: int,
    duration_s: float,
    seed: int,
    start_timeout_s: float,
) -> tuple[dict[str, Any], Any]:
    """Start the two reader processes and the writer (which waits for `ch.go`)."""
    reader_deadline = start_timeout_s + duration_s + 120.0
    mains = {"sqlite": sqlite_reader_main, "duckdb": duckdb_reader_main}
    # The children load numpy fresh: one BLAS thread each, as the CLI runs.
    env_before = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        readers = {
            name: ctx.Process(
                target=main,
                args=(path, ch.ready[name], ch.done, ch.out, reader_deadline),
                name=f"sb-{name}-reader",
            )
            for name, main in mains.items()
        }
        writer = ctx.Process(
            target=writer_main,
            args=(path, n_plan, duration_s, seed, ch.go, ch.out, start_timeout_s),
            name="sb-writer",
        )
        for p in (*readers.values(), writer):
            p.start()
    finally:
        if env_before is None:
            os.environ.pop("OPENBLAS_NUM_THREADS", None)
    return readers, writer


def _take(out: Any, got: dict[str, Any], timeout: float) -> bool:
    """Move one (name, report) from `out` into `got`; False when none came within `timeout`."""
    try:
        name, payload = out.get(timeout=timeout)
    except queue.Empty:
        return False
    got[name] = payload
    return True


def _collect(
    ch: _Channels,
    readers: dict[str, Any],
    writer: Any,
    start_timeout_s: float,
    duration_s: float,
) -> dict[str, Any]:
    """Release the writer once the readers are ready, gather every report, then join (or
    terminate) all children; the reports by process name."""
    got: dict[str, Any] = {}
    try:
        t_ready = time.time() + start_timeout_s
        for ev in ch.ready.values():
            ev.wait(max(0.0, t_ready - time.time()))
        ch.go.set()
        # Collect before joining: a child exits only once its queued result is consumed.
        t_stop = time.time() + start_timeout_s + duration_s + 60.0
        while "writer" not in got and time.time() < t_stop:
            if _take(ch.out, got, 1.0) or writer.is_alive():
                continue
            if not _take(ch.out, got, 5.0):
                break
        ch.done.set()
        t_stop = time.time() + 120.0
        while not set(readers) <= set(got) and time.time() < t_stop:
            if not _take(ch.out, got, 1.0) and not any(p.is_alive() for p in readers.values()):
                break
    finally:
        ch.done.set()
        ch.go.set()
        for p in (*readers.values(), writer):
            p.join(timeout=30)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)
    return got


def _record_writer(
    result: ConcurrencyResult, report: dict[str, Any] | None, exitcode: int | None
) -> list[tuple[float, int]]:
    """Fill the writer's part of `result` from its report; its commits (time, comparisons)."""
    if report is None:
        result.writer_errors.append(f"writer exited ({exitcode}) without a report")
        return []
    result.writes = int(report["writes"])
    result.writer_seconds = float(report["seconds"])
    result.writer_errors.extend(report["errors"])
    counts = report.get("counts") or {}
    result.initial = dict(report.get("initial") or {})
    result.writer_counts = (
        counts.get("predictor_comparisons", 0),
        counts.get("session_memories", 0),
    )
    return [tuple(c) for c in report["commits"]]


def _record_readers(
    result: ConcurrencyResult,
    got: dict[str, Any],
    readers: dict[str, Any],
    commits: list[tuple[float, int]],
) -> None:
    """Put each reader's stats (or why it has none) in `result`, with its lag to the commits."""
    for name, proc in readers.items():
        stats = got.get(name)
        if stats is None:
            stats = ReaderStats(name, errors=[f"reader exited ({proc.exitcode}) without a report"])
        stats.max_lag_s, stats.unseen = _lag(stats, commits)
        result.readers[name] = stats


def _check_final(result: ConcurrencyResult, path: str) -> None:
    """Count the store after the run: rows lost against what the writer committed, and
    readers whose last read did not see the final counts."""
    # here: each role's process imports only what it runs (start-up time)
    from signet_bench.store.read import open_readonly

    con = open_readonly(path)
    try:
        result.final = store_counts(con)
    finally:
        con.close()
    final_pair = (result.final["predictor_comparisons"], result.final["session_memories"])
    result.lost = abs(final_pair[0] - result.writer_counts[0]) + abs(
        final_pair[1] - result.writer_counts[1]
    )
    if result.initial:  # every committed session is in the store once, with its comparison
        for table in ("sim_sessions", "predictor_comparisons", "session_scores"):
            result.lost += abs(result.final[table] - result.initial[table] - result.writes)
    for stats in result.readers.values():
        if stats.reads and stats.last != final_pair:
            stats.inconsistent.append(f"last read {stats.last} != final {final_pair}")


def run_concurrency(
    path: str | Path,
    duration_s: float,
    *,
    n_plan: int = 5000,
    seed: int = 0,
    start_timeout_s: float = 300.0,
) -> ConcurrencyResult:
    """Write `path` (a synthetic store) for `duration_s` in one process while two others read
    it; return what each saw. Opens the store only with stdlib sqlite3 here, after every
    child has exited."""
    path = str(Path(path).resolve())
    ctx = mp.get_context("spawn")
    ch = _Channels.create(ctx)
    readers, writer = _spawn(ctx, ch, path, n_plan, duration_s, seed, start_timeout_s)
    result = ConcurrencyResult(duration_s=duration_s)
    got = _collect(ch, readers, writer, start_timeout_s, duration_s)
    commits = _record_writer(result, got.get("writer"), writer.exitcode)
    _record_readers(result, got, readers, commits)
    _check_final(result, path)
    return result
