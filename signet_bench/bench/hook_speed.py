"""`signet-bench bench hook`: what the session-start hook (`signet-bench-hook`) adds to Signet's
own `signet hook session-start`, process start included, with a trained model on a
4,000-memory store.

Signet's command is played by the stand-in (`bench.signet_standin`), answering a daemon answer
built from the store (Signet's baseline: project first, then importance x recency, a raised
`recallLimit` of 100); the hook re-ranks it and keeps 50. Each run is a fresh process with a
new session key, so every run writes its record; the two commands alternate, run after run.

Rows (stable names):
  signet_standin     p50/p95  ms  the stand-in alone (Python start, print the answer)
  hook_rerank        p50/p95  ms  the hook around it, its resident scorer running (as it is
                                  between session starts): start, Signet's call, the
                                  resident's ranking over its socket, output, record
  hook_overhead      p50/p95  ms  per pair of runs, the hook's time minus the stand-in's, the
                                  resident running; goal p95 <= 50 ms
  hook_reordered     share    -   runs whose printed order differs from Signet's (1 = all)
  hook_overhead_cpu  p50/p95  ms  per pair, the CPU time (user + system) of the hook and its
                                  stand-in minus the stand-in's alone: the overhead without
                                  the waiting a busy machine adds (the resident's own work,
                                  in its process, is not in it)
  hook_overhead_cold p50/p95  ms  the overhead with no resident running: the hook loads the
                                  model and ranks in its own process, then starts the
                                  resident (which the benchmark stops before the next run)
  hook_failopen      p50/p95  ms  per pair, the hook's time minus the stand-in's with no model
                                  (it prints Signet's output)
  hook_overhead_signet_200ms  p50/p95  ms  the overhead when Signet's command takes 200 ms
                                  (the stand-in waits that long before answering), the
                                  resident running: the hook asks it to prepare while Signet
                                  works, so what remains is the work after Signet's answer
  prompt_overhead    p50/p95  ms  the prompt hook (`signet-bench-hook user-prompt-submit`)
                                  around the stand-in's `signet hook user-prompt-submit` (its
                                  empty answer, as 0.145.7 gives for most prompts), the resident
                                  running, per pair: the candidates read from the store (FTS5;
                                  no daemon answers the recall), ranked, the section added and
                                  recorded; goal p95 <= 50 ms
  prompt_added       share    -   runs whose output has the scorer's section (1 = all)
  prompt_overhead_cpu p50/p95 ms  per pair, the CPU time of the prompt hook and its stand-in
                                  minus the stand-in's alone (as hook_overhead_cpu)
  prompt_failopen    p50/p95  ms  the prompt hook's overhead with no model (Signet's bytes)
With --quick: 30 runs of each instead of 200, a model trained on fewer sessions.

The hook runs as `pip install ./scorer` installs it, and as the harness runs it: the console
script `signet-bench-hook` of an environment whose `site-packages` names the scorer and its
dependencies by plain paths (`_installed`). Not the workbench's own environment: its editable
installs run setuptools' import finders at every Python start, which load `pathlib`,
`importlib.util` and `contextlib` before the hook's first line (a bare Python start takes
about twice as long; the hook, which loads `pathlib` itself, some milliseconds more), and not
`python -m signet_scorer.hook`, whose `runpy` loads `importlib.util` and `contextlib` too.
The hook's own modules are byte-compiled first, as an installation leaves them (a process that
compiles them at every start, as `PYTHONDONTWRITEBYTECODE` makes it, spends some 20 ms more).
Python's start alone (with `site`) takes some 10 ms of the 50 ms goal.
"""

from __future__ import annotations

import compileall
import importlib.util
import json
import logging
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

import signet_scorer
from signet_bench.analysis.report import Row, percentiles
from signet_bench.bench.signet_standin import signet_answer, write_standin
from signet_bench.daemon.ranking.baseline import age_days, effective_score
from signet_bench.learn.export import convert_model
from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.replay.trainers import model_dir, model_path
from signet_bench.store.read import open_readonly
from signet_bench.store.timestamps import parse_ts
from signet_bench.world.synth.build import build_persona_store
from signet_scorer.hook.cli import serve_argv
from signet_scorer.hook.config import parse_command
from signet_scorer.hook.prompt import memory_date
from signet_scorer.hook.resident_link import resident_status, start_detached, stop_resident
from signet_scorer.workbench import SERVED_MODEL_FILE

__all__ = ["hook_rows", "store_answer", "store_memories"]

_log = logging.getLogger(__name__)

FULL = {"runs": 200, "sessions": 40}
QUICK = {"runs": 30, "sessions": 30}
WARMUP = 5
POOL = 100  # the answer's memories: Signet's recallLimit raised
LIMIT = 50  # what the hook injects: Signet's default recallLimit
SLOW_SIGNET_S = 0.2  # a Signet command that takes this long (an assumption, not a measurement)
MEMORIES = 4_000  # the heavy persona's
PROJECT = "signetai"  # the heavy persona's largest project


def store_memories(
    db: str | Path, project: str | None, now: datetime, limit: int
) -> list[dict[str, Any]]:
    """Signet's session-start memories on a store at `now`: live memories created by then,
    those of the project first, then by effective score (importance x 0.95^age, pinned 1),
    the first `limit`, each with its answer fields and its line's date and tags."""
    con = open_readonly(db)
    try:
        rows = con.execute(
            "SELECT id, content, type, COALESCE(importance, 0.5), created_at, COALESCE(pinned, 0),"
            " project, tags FROM memories WHERE COALESCE(is_deleted, 0) = 0"
        ).fetchall()
    finally:
        con.close()
    created = np.array([parse_ts(r[4]).timestamp() for r in rows])
    age = age_days(created, now.timestamp())
    imp = np.array([r[3] for r in rows], dtype=np.float64)
    eff = effective_score(imp, age, np.array([bool(r[5]) for r in rows]))
    live = np.flatnonzero(created <= now.timestamp()).tolist()
    live.sort(key=lambda i: (bool(project) and rows[i][6] != project, -eff[i], rows[i][0]))
    keys = ("id", "content", "type", "importance", "created_at")
    return [
        {
            **dict(zip(keys, rows[i][:5], strict=True)),
            "date": memory_date(rows[i][4]),
            "tags": rows[i][7],
            "effective_score": float(eff[i]),
        }
        for i in live[:limit]
    ]


def store_answer(db: str | Path, project: str | None, now: datetime, limit: int) -> dict[str, Any]:
    """Signet's answer of `store_memories`, as `signet_standin.signet_answer` writes it."""
    return signet_answer(store_memories(db, project, now, limit))


def _trained_store(tmp: Path, sessions: int, seed: int) -> tuple[Path, Path, datetime]:
    """(store, exported model, the next session's start): the heavy persona (4,000
    memories) after `sessions` sessions of the simulated daemon scoring and training with the
    model, its accepted model exported to ONNX beside its workbench."""
    db = tmp / "memories.db"
    build_persona_store("heavy", db, seed=seed)
    report = simulate(db, sessions, SimOptions(scorer="model", seed=seed))
    _log.info(f"  {report.trainings_accepted} of {report.trainings} trainings accepted")
    if not model_path(db).exists():
        raise RuntimeError(f"{db}: no training was accepted in {sessions} sessions")
    model = convert_model(model_path(db), model_dir(db) / SERVED_MODEL_FILE)
    con = open_readonly(db)
    try:
        last = con.execute("SELECT MAX(created_at) FROM session_memories").fetchone()[0]
    finally:
        con.close()
    return db, model, parse_ts(last) + timedelta(days=1)


def _children_cpu_ms() -> float:
    """CPU time (user + system) of the finished child processes so far, in milliseconds."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000.0


def _timed_run(argv: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, float, bytes]:
    """Wall and CPU milliseconds of one process (its children included), and its stdout."""
    cpu, t0 = _children_cpu_ms(), time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, env=env, check=True)
    return (time.perf_counter() - t0) * 1000.0, _children_cpu_ms() - cpu, done.stdout


def _pairs(
    signet: list[str],
    hook: list[str],
    env: dict[str, str],
    n: int,
    tag: str,
    after: Callable[[], object] | None = None,
    prompts: list[str] | None = None,
):
    """n alternating runs of Signet's command and the hook (after WARMUP of each; `after`
    runs, untimed, after each of the hook's): their wall times, the hook's CPU time beyond
    the stand-in's, and how many of the hook's outputs differ from Signet's."""
    own, wrapped, cpu, differ = [], [], [], 0
    for i in range(-WARMUP, n):
        body = {"session_id": f"bench-{tag}-{i}", "cwd": PROJECT}
        if prompts:
            body["prompt"] = prompts[i % len(prompts)]
        stdin = json.dumps(body).encode()
        t_signet, c_signet, out_signet = _timed_run(signet, stdin, env)
        t_hook, c_hook, out_hook = _timed_run(hook, stdin, env)
        if after is not None:
            after()
        if i >= 0:
            own.append(t_signet)
            wrapped.append(t_hook)
            cpu.append(c_hook - c_signet)
            differ += out_hook != out_signet
    return np.array(own), np.array(wrapped), np.array(cpu), differ


def _rows(name: str, values: np.ndarray, goal: str | None = None) -> list[Row]:
    p = percentiles(values, (50, 95))
    return [Row(name, k, v, "ms", n=len(values), goal=goal) for k, v in p.items()]


# The console script as pip writes it for `signet-bench-hook = "signet_scorer.hook.cli:main"`
# (after the interpreter's line)
CONSOLE_SCRIPT = """import sys
from signet_scorer.hook.cli import main
if __name__ == '__main__':
    sys.argv[0] = sys.argv[0].removesuffix('.exe')
    sys.exit(main())
"""


INSTALLED = ("signet_scorer", "numpy", "onnxruntime", "orjson")  # the scorer's distribution


def _origin(package: str) -> str:
    """Where a package's `__init__` is, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"{package} is not installed")
    return spec.origin


def _installed(tmp: Path) -> Path:
    """A Python environment with the scorer as a regular (not editable) install leaves it: a
    venv whose `site-packages` holds a `.pth` file naming the scorer's folder and its
    dependencies' (numpy, onnxruntime, orjson) by plain paths, and the console script
    `signet-bench-hook` beside its interpreter; the interpreter's path."""
    venv = tmp / "installed"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    folders = dict.fromkeys(str(Path(_origin(p)).parent.parent) for p in INSTALLED)
    (Path(site) / "signet-scorer.pth").write_text("\n".join(folders) + "\n", encoding="utf-8")
    script = venv / "bin" / "signet-bench-hook"
    script.write_text(f"#!{python}\n{CONSOLE_SCRIPT}", encoding="utf-8")
    script.chmod(0o755)
    return python


def _compile_hook() -> None:
    """Byte-compile the hook's package (`signet_scorer`), as an installation leaves it."""

    compileall.compile_dir(Path(signet_scorer.__file__).parent, quiet=1)


# (tag, whether the model is there, extra environment, the resident scorer: "up" (running
# through the runs), "cold" (stopped after every run) or None (not involved)); the tags that
# start with "prompt" run the prompt hook
_SCENARIOS = (
    ("rerank", True, {}, "up"),
    ("cold", True, {}, "cold"),
    ("failopen", False, {}, None),
    (
        "slow",
        True,
        {"SIGNET_STANDIN_MODE": "slow", "SIGNET_STANDIN_SLEEP_S": str(SLOW_SIGNET_S)},
        "up",
    ),
    ("prompt", True, {}, "up"),
    ("prompt_failopen", False, {}, None),
)
NO_DAEMON = "http://127.0.0.1:9"  # nothing listens: the recall fails at once, as with none
PROMPT_WORDS = 12  # words of a memory of the project a benchmark prompt is made of


def hook_rows(*, quick: bool = False, seed: int = 0) -> list[Row]:
    """The hook's overhead over Signet's command (module docstring)."""
    sizes = QUICK if quick else FULL
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as name:
        tmp = Path(name)
        _log.info(f"bench hook: a {MEMORIES:,}-memory store, {sizes['sessions']} sessions ...")
        db, model, now = _trained_store(tmp, sizes["sessions"], seed)
        _compile_hook()
        answer = tmp / "answer.json"
        answer.write_text(json.dumps(store_answer(db, PROJECT, now, POOL)), encoding="utf-8")
        standin = str(write_standin(tmp / "bin"))
        args = ["-H", "claude-code", "--project", PROJECT]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET")}
        env["SIGNET_STANDIN_ANSWER"] = str(answer)
        env["SIGNET_DAEMON_URL"] = NO_DAEMON
        prompts = _prompts(db, sizes["runs"] + WARMUP)
        cfg = parse_command(["--db", str(db), "--model", str(model), "serve"], env)[0]
        files = cfg.files
        python = _installed(tmp)
        # the resident runs on the hook's interpreter: one on another is stale to the hook
        serve = [str(python), *serve_argv(cfg)[1:]]
        hook = [str(python.parent / "signet-bench-hook"), "--db", str(db), "--signet", standin]
        hook += ["--limit", str(LIMIT), "--model"]
        rows: list[Row] = []
        try:
            for tag, has_model, extra, resident in _SCENARIOS:
                if resident == "up" and start_detached(files, serve, wait_s=60) is None:
                    raise RuntimeError(f"the resident scorer did not start; see {files.log}")
                _log.info(f"bench hook: {sizes['runs']} runs, {tag} ...")
                path = model if has_model else tmp / "absent.onnx"
                name = "user-prompt-submit" if tag.startswith("prompt") else "session-start"
                own, wrapped, cpu, differ = _pairs(
                    [standin, "hook", name, *args],
                    [*hook, str(path), name, *args],
                    {**env, **extra},
                    sizes["runs"],
                    tag,
                    after=(lambda: stop_resident(files)) if resident == "cold" else None,
                    prompts=prompts if name == "user-prompt-submit" else None,
                )
                if resident == "up":
                    # a prompt's ranking, or a session start's prepare and rerank; the record
                    per_run = (1 if name == "user-prompt-submit" else 2) + 1
                    _check_served(files, per_run * (sizes["runs"] + WARMUP))
                    stop_resident(files)
                rows += _scenario_rows(tag, own, wrapped, cpu, differ)
        finally:
            stop_resident(files)
    return rows


def _prompts(db: Path, n: int) -> list[str]:
    """`n` prompts, each the first words of a memory of the project (the newest first)."""
    con = open_readonly(db)
    try:
        rows = con.execute(
            "SELECT content FROM memories WHERE project = ? ORDER BY created_at DESC LIMIT ?",
            [PROJECT, n],
        ).fetchall()
    finally:
        con.close()
    return [" ".join(str(r[0]).split()[:PROMPT_WORDS]) for r in rows] or ["memory"]


def _check_served(files: Any, requests: int) -> None:
    """Raise unless the resident scorer answered every hook run of a scenario (a prepare and
    a ranking each, or a prompt's ranking, and the record): numbers of the in-process path under its name would mislead."""
    got = resident_status(files).get("requests", 0) - 1  # this status request counts itself
    if got != requests:
        raise RuntimeError(f"the resident scorer answered {got} requests, not {requests}")


def _scenario_rows(
    tag: str, own: np.ndarray, wrapped: np.ndarray, cpu: np.ndarray, differ: int
) -> list[Row]:
    """One scenario's rows (module docstring)."""
    if tag == "prompt":
        return [
            *_rows("prompt_overhead", wrapped - own, "p95 <= 50 ms"),
            Row("prompt_added", "share", differ / len(own), "-", n=len(own)),
            *_rows("prompt_overhead_cpu", cpu),
        ]
    if tag == "prompt_failopen":
        return _rows("prompt_failopen", wrapped - own)
    if tag == "failopen":
        return _rows("hook_failopen", wrapped - own)
    if tag == "slow":
        return _rows(f"hook_overhead_signet_{SLOW_SIGNET_S * 1000:.0f}ms", wrapped - own)
    if tag == "cold":
        return _rows("hook_overhead_cold", wrapped - own)
    return [
        *_rows("signet_standin", own),
        *_rows("hook_rerank", wrapped),
        *_rows("hook_overhead", wrapped - own, "p95 <= 50 ms"),
        Row("hook_reordered", "share", differ / len(own), "-", n=len(own)),
        *_rows("hook_overhead_cpu", cpu),
    ]
