"""`signet-bench-hook session-start ...`: Signet's session-start hook with the scorer's order.

The harness's command `signet hook session-start ARGS` becomes `signet-bench-hook [OPTIONS]
session-start ARGS`: same arguments, same stdin. The wrapper calls Signet's own command once,
with `--json` in place of the harness's format, re-ranks the memories of its answer with the
exported model (`serving.hook.rank`), rebuilds the memories block of the inject text
(`serving.hook.inject`) and prints the harness's format as Signet's command line would
(`serving.hook.harness`). It records what it injected beside the workbench (`serving.hook.log`).

**Fail-open, byte for byte.** Signet is called once (a second call with the same session key
would get a stub), so whatever fails, the wrapper prints what Signet's command would have
printed for the harness's own arguments, derived from that one call:

- Signet exits non-zero (an `Error: ...` on stderr, a crash): its stdout, stderr and exit code
  unchanged (the CLI fails the same way whatever the output format);
- Signet prints nothing (daemon offline, no identity files): nothing, or Codex's empty object;
- Signet prints an answer: the harness's format of it, untouched (plain: the inject and a
  newline; Codex: the compact object; `--json`: Signet's own bytes);
- Signet prints something that is not its JSON: its raw output, stderr and exit code (such a
  `signet` is not one whose other formats can be derived, and asking it twice is not safe);
- arguments the CLI's option table does not hold, `SIGNET_NO_HOOKS=1` or `SIGNET_BYPASS=1`:
  Signet runs with the harness's arguments as they are and its output is passed on.

The answer is re-ranked only when all of this holds: stdin is empty or a JSON object, the
model exists and loads, the store opens read-only, every memory of the answer is in it, the
block is found, and the wrapper is within its time budget, counted from its start (Signet's
own time included) to the end of the re-ranking. Stderr is always Signet's.

Options (before `session-start`; each also read from an environment variable): `--db`
(`SIGNET_BENCH_DB`, default `~/.agents/memory/memories.db`), `--workbench`
(`SIGNET_BENCH_WORKBENCH`, default the store's: `<db>.predictor/workbench.duckdb` when it
exists, else beside the store), `--model` (`SIGNET_BENCH_MODEL`, default `model.onnx` beside the
workbench), `--signet` (`SIGNET_BENCH_SIGNET`, default `signet` on PATH), `--limit`
(`SIGNET_BENCH_LIMIT`, memories to inject, default 50), `--budget-ms`
(`SIGNET_BENCH_BUDGET_MS`, default 5000), `--tz` (`SIGNET_BENCH_TZ`, default the machine's).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from serving.hook.harness import (
    HookInput,
    Invocation,
    Unusable,
    answer_output,
    empty_output,
    hook_input,
    is_text,
    parse_invocation,
)
from serving.hook.js import parse_json
from serving.hook.signet import SignetResult, SignetRunner, exit_like, start_signet
from serving.workbench import HOOK_LOG_FILE, SERVED_MODEL_FILE, default_workbench

__all__ = [
    "HookConfig",
    "HookRun",
    "UsageError",
    "main",
    "open_scorer",
    "parse_command",
    "read_stdin",
    "run_hook",
    "save_record",
    "signet_output",
]

COMMAND = "session-start"
DEFAULT_DB = "~/.agents/memory/memories.db"
DEFAULT_LIMIT = 50  # Signet's own recallLimit
DEFAULT_BUDGET_MS = 5_000.0
STDIN_TIMEOUT_S = 2.0  # Signet's CLI gives up on stdin after 2 s and reads it as no input
USAGE = (
    "usage: signet-bench-hook [--db PATH] [--workbench PATH] [--model PATH] [--signet PATH]\n"
    "                         [--limit N] [--budget-ms MS] [--tz ZONE] session-start ARGS...\n"
    "ARGS and stdin are those of `signet hook session-start`.\n"
)
_OPTIONS = {
    "--db": ("db", "SIGNET_BENCH_DB"),
    "--workbench": ("workbench", "SIGNET_BENCH_WORKBENCH"),
    "--model": ("model", "SIGNET_BENCH_MODEL"),
    "--signet": ("signet", "SIGNET_BENCH_SIGNET"),
    "--limit": ("limit", "SIGNET_BENCH_LIMIT"),
    "--budget-ms": ("budget_ms", "SIGNET_BENCH_BUDGET_MS"),
    "--tz": ("tz", "SIGNET_BENCH_TZ"),
}


class UsageError(ValueError):
    """The wrapper's own command line is wrong; the message says how."""


@dataclass(frozen=True, slots=True)
class HookConfig:
    """Where the store, workbench, model and Signet are, and the wrapper's limits."""

    db: Path
    workbench: Path
    model: Path
    signet: str
    limit: int
    budget_ms: float
    tz: str

    @property
    def log(self) -> Path:
        return self.workbench.parent / HOOK_LOG_FILE


def _number(name: str, text: str, kind: type, low: float) -> Any:
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not value >= low or value == float("inf"):
        raise UsageError(f"{name}: expected a {kind.__name__} >= {low:g}, got {text!r}")
    return value


def _config(given: Mapping[str, str], env: Mapping[str, str]) -> HookConfig:
    value = {k: given.get(k) or env.get(var) or None for k, var in _OPTIONS.values()}
    db = Path(value["db"] or DEFAULT_DB).expanduser()
    workbench = Path(value["workbench"]).expanduser() if value["workbench"] else None
    workbench = workbench or default_workbench(db)
    model = Path(value["model"]).expanduser() if value["model"] else None
    tz = value["tz"]
    if tz is None:
        from serving.timestamps import local_tz

        tz = local_tz()
    _check_zone(tz)
    return HookConfig(
        db=db,
        workbench=workbench,
        model=model or workbench.parent / SERVED_MODEL_FILE,
        signet=value["signet"] or "signet",
        limit=_number("--limit", value["limit"] or str(DEFAULT_LIMIT), int, 1),
        budget_ms=_number("--budget-ms", value["budget_ms"] or str(DEFAULT_BUDGET_MS), float, 0),
        tz=tz,
    )


def _check_zone(tz: str) -> None:
    from zoneinfo import ZoneInfo

    try:
        ZoneInfo(tz)
    except (ValueError, OSError, KeyError):
        raise UsageError(f"--tz: {tz!r} is not a known IANA time zone") from None


def parse_command(argv: Sequence[str], env: Mapping[str, str]) -> tuple[HookConfig, list[str]]:
    """The wrapper's options (before `session-start`) and Signet's arguments (after it)."""
    given: dict[str, str] = {}
    i = 0
    while i < len(argv) and argv[i] != COMMAND:
        name, eq, text = argv[i].partition("=")
        if name not in _OPTIONS:
            raise UsageError(f"unknown option {argv[i]!r} before {COMMAND}\n{USAGE}")
        if not eq:
            if i + 1 >= len(argv):
                raise UsageError(f"{name} needs a value")
            text = argv[i + 1]
            i += 1
        given[_OPTIONS[name][0]] = text
        i += 1
    if i >= len(argv):
        raise UsageError(f"missing the command: {COMMAND}\n{USAGE}")
    return _config(given, env), list(argv[i + 1 :])


# --- one invocation -----------------------------------------------------------------------------


@dataclass
class HookRun:
    """What the wrapper prints and how it exits, and what it records."""

    stdout: bytes
    stderr: bytes
    code: int
    invocation: dict[str, Any] = field(default_factory=dict)  # empty: nothing to record
    injections: list[dict[str, Any]] = field(default_factory=list)
    log: Path | None = None  # where the record goes
    writer: Any = None  # the log already opened for it (`serving.hook.log.InjectionLog`)


def _as_run(res: SignetResult) -> HookRun:
    return HookRun(res.stdout, res.stderr, res.code)


def signet_output(output: str, res: SignetResult) -> tuple[bytes, Any, str | None]:
    """(what Signet's command prints for the harness's format, its answer when there is one to
    re-rank, why not) from its `--json` call (module docstring)."""
    if res.code != 0:
        return res.stdout, None, f"signet exited with {res.code}"
    if not res.stdout:
        return empty_output(output), None, "signet printed nothing"
    try:
        answer = parse_json(res.stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return res.stdout, None, "signet's output is not JSON"
    if output == "json":
        try:
            same = answer_output("json", answer) == res.stdout
        except (TypeError, RecursionError):
            same = False
        reason = None if same else "signet's JSON is not written as Signet writes it"
        return res.stdout, answer if same else None, reason
    try:
        return answer_output(output, answer), answer, None
    except (Unusable, TypeError, RecursionError) as exc:
        return res.stdout, None, f"signet's answer cannot be reproduced: {exc}"


def _answer_memories(answer: Any) -> list[tuple[str, str]]:
    """(id, content) of each memory of the answer; Unusable when they are not that."""
    mems = answer.get("memories") if isinstance(answer, dict) else None
    if not isinstance(mems, list) or not is_text(answer.get("inject")):
        raise Unusable("the answer has no memories list or no inject text")
    out = [(m.get("id"), m.get("content")) if isinstance(m, dict) else (None, None) for m in mems]
    if not all(is_text(i) and is_text(c) for i, c in out):
        raise Unusable("a memory of the answer has no text id or content")
    return out


@dataclass
class _Attempt:
    """The state of one invocation while it runs."""

    cfg: HookConfig
    inv: Invocation
    inp: HookInput
    started: float
    reason: str | None = None
    scorer: Any = None
    con: Any = None
    ranking: Any = None
    writer: Any = None

    def fail(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason


# A model loader: the model's path -> (a ready scorer, None) or (None, why not).
ScorerLoader = Callable[[Path], tuple[Any, str | None]]


def open_scorer(path: Path) -> tuple[Any, str | None]:
    """The served model, ONNX only (a checkpoint would need the library to convert it, which
    takes seconds); onnxruntime is imported only when the file is there."""
    if not path.is_file():
        return None, f"no model at {path}"
    from serving.scorer import Scorer, model_kind

    if model_kind(path) != "onnx":
        return None, f"{path} is not an ONNX model (signet-bench export writes one)"
    scorer = Scorer.open(path, threads=1)
    return (scorer, None) if scorer.ready else (None, scorer.reason)


def _open_log(path: Path) -> Any:
    """The injection log opened for writing, or None (no workbench folder, or it fails)."""
    if not path.parent.is_dir():
        return None
    try:
        from serving.hook.log import InjectionLog

        return InjectionLog(path)
    except Exception:  # noqa: BLE001 - the record is best effort, the harness is served
        return None


def _prepare(att: _Attempt, load_scorer: ScorerLoader) -> None:
    """While Signet works: the log, the model and the store, or the reason there is nothing
    to do."""
    att.writer = _open_log(att.cfg.log)
    if att.inp.malformed:
        att.fail("stdin is not a JSON object")
        return
    scorer, why = load_scorer(att.cfg.model)
    if scorer is None:
        att.fail(why or "no model")
        return
    import sqlite3

    import serving.hook.rank  # noqa: F401 - loaded while Signet works, used once it answers
    from serving.hook.store import open_store

    try:
        att.con = open_store(att.cfg.db, att.cfg.budget_ms / 1000.0)
    except (OSError, sqlite3.Error) as exc:
        att.fail(f"cannot open the store {att.cfg.db}: {exc}")
        return
    att.scorer = scorer


def _check_budget(att: _Attempt, clock: Callable[[], float]) -> None:
    spent = (clock() - att.started) * 1000.0
    if spent > att.cfg.budget_ms:
        att.fail(f"time budget exceeded ({spent:.0f} ms > {att.cfg.budget_ms:g} ms)")


def _rerank(att: _Attempt, answer: Any, now: datetime) -> bytes | None:
    """The harness's output with the scorer's order, or None (and the reason) when not."""
    try:
        mems = _answer_memories(answer)
        if not mems:
            att.fail("signet's answer has no memories")
            return None
        from serving.hook.inject import find_block
        from serving.hook.rank import HookSession, rerank

        block = find_block(answer["inject"], [c for _, c in mems])
        if block is None:
            att.fail("the inject text has no memories block as Signet writes it")
            return None
        inp = att.inp
        session = HookSession(now, att.cfg.tz, inp.project or None, inp.session_key, inp.agent_id)
        att.ranking = rerank(att.con, att.scorer, session, [i for i, _ in mems], att.cfg.limit)
        order = att.ranking.order
        memories = [answer["memories"][i] for i in order]
        return answer_output(att.inv.output, {**answer, "memories": memories,
                                              "inject": block.text(order)})  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - fail open: any fault keeps Signet's output
        att.ranking = None
        att.fail(f"re-ranking failed: {type(exc).__name__}: {str(exc)[:300]}")
        return None


def _injections(att: _Attempt, answer: Any) -> list[dict[str, Any]]:
    """The injected memories' rows: the scorer's choice, or Signet's answer as printed."""
    try:
        ids = [m for m, _ in _answer_memories(answer)]
    except Unusable:
        return []
    if att.reason is None and att.ranking is not None:
        picked = zip(att.ranking.order, att.ranking.scores, strict=True)
        rows = [(ids[i], r, i + 1, s, "scorer") for r, (i, s) in enumerate(picked, 1)]
    else:
        rows = [(m, r, r, None, "signet") for r, m in enumerate(ids, 1)]
    names = ("memory_id", "rank", "signet_rank", "score", "chosen_by")
    return [dict(zip(names, row, strict=True)) for row in rows]


def _record(att: _Attempt, res: SignetResult, answer: Any, now: datetime, ms: float) -> HookRun:
    """The invocation's row and its injections' rows, on a run whose output is filled later."""
    info = att.scorer.info if att.scorer is not None else None
    version = info.model_version if info is not None else None
    ranking = att.ranking if att.reason is None else None
    at = now.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    key = {"session_key": att.inp.session_key, "agent_id": att.inp.agent_id}
    rows = [
        {**key, **r, "model_version": version, "injected_at": at} for r in _injections(att, answer)
    ]
    invocation = {
        **key,
        "at": at,
        "harness": att.inv.options["harness"],
        "project": att.inp.project or None,
        "output": att.inv.output,
        "outcome": "signet" if att.reason else "scorer",
        "reason": att.reason,
        "model_path": str(att.cfg.model),
        "model_version": version,
        "pool": None if ranking is None else ranking.pool,
        "injected": len(rows),
        "context_rule": None if ranking is None else ranking.context_rule,
        "signet_exit": res.code,
        "duration_ms": ms,
    }
    return HookRun(b"", b"", res.code, invocation, rows, att.cfg.log, att.writer)


def _bypassed(env: Mapping[str, str]) -> bool:
    """Signet's own switches that make every hook exit at once, printing nothing."""
    return env.get("SIGNET_NO_HOOKS") == "1" or env.get("SIGNET_BYPASS") == "1"


def run_hook(
    argv: Sequence[str],
    stdin: bytes | None,
    *,
    env: Mapping[str, str] | None = None,
    runner: SignetRunner | None = None,
    load_scorer: ScorerLoader = open_scorer,
    now: datetime | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> HookRun:
    """One invocation (module docstring): what to print, the exit code and the record.
    `stdin` is None when it is a terminal; `env` the harness's environment (default: ours),
    which Signet gets; `runner` reaches Signet (default: the binary `--signet` names); `now`
    is the session start (default: the wall clock)."""
    started = clock()
    env = os.environ if env is None else env
    try:
        cfg, args = parse_command(argv, env)
    except UsageError as exc:
        return HookRun(b"", f"signet-bench-hook: {exc}\n".encode(), 2)
    run = runner or start_signet(cfg.signet, env)
    data = stdin or b""
    inv = None if _bypassed(env) else parse_invocation(args)
    if inv is None:  # Signet exactly as asked
        return _as_run(run(args, data).result())
    att = _Attempt(cfg, inv, hook_input(stdin, inv), started)
    call = run(inv.json_args, data)
    try:
        _prepare(att, load_scorer)
    except Exception as exc:  # noqa: BLE001 - fail open: Signet's output is printed
        att.fail(f"preparing failed: {type(exc).__name__}: {exc}")
    res = call.result()
    try:
        return _finish(att, res, now or datetime.now(UTC), clock)
    except Exception:  # noqa: BLE001 - fail open: whatever broke, Signet's output is printed
        return HookRun(signet_output(inv.output, res)[0], res.stderr, res.code)
    finally:
        if att.con is not None:
            att.con.close()


def _finish(att: _Attempt, res: SignetResult, now: datetime, clock: Callable[[], float]) -> HookRun:
    """Once Signet has answered: the scorer's output or Signet's, and the record."""
    printed, answer, why = signet_output(att.inv.output, res)
    if why is not None:
        att.fail(why)
    _check_budget(att, clock)
    out = _rerank(att, answer, now) if att.reason is None else None
    _check_budget(att, clock)
    done = _record(att, res, answer, now, (clock() - att.started) * 1000.0)
    done.stdout = printed if att.reason else out or printed
    done.stderr = res.stderr
    return done


def save_record(run: HookRun) -> None:
    """Append the run's record to the injection log, when its folder exists, and close it; a
    failure to write it never changes what the harness got (the output is already printed)."""
    writer = run.writer
    if run.invocation and writer is None and run.log is not None:
        writer = _open_log(run.log)
    if writer is None:
        return
    try:
        with contextlib.suppress(Exception):  # best effort: the harness is already served
            if run.invocation:
                writer.record(run.invocation, run.injections)
    finally:
        writer.close()


def read_stdin(timeout_s: float = STDIN_TIMEOUT_S) -> bytes | None:
    """The harness's stdin as Signet's CLI reads it: None for a terminal; what arrives until
    end of file, or nothing (b"") when it does not end within `timeout_s`."""
    import select

    try:
        fd = sys.stdin.fileno()
        if os.isatty(fd):
            return None
        chunks: list[bytes] = []
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return b""
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    except (OSError, ValueError):
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: print what `run_hook` gives, then record it, and exit as Signet's
    command did (the process ends here; only `--help` returns)."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    env = dict(os.environ)  # Signet runs with the harness's environment, as it would
    # one BLAS thread for numpy (the project's rule outside training: it also halves numpy's
    # start here), unless the user set a count
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    run = run_hook(args, read_stdin(), env=env)
    for stream, data in ((sys.stdout, run.stdout), (sys.stderr, run.stderr)):
        stream.buffer.write(data)
        stream.flush()
    save_record(run)
    # End at once, as Signet's command ended: the interpreter's teardown (onnxruntime's
    # included) would add tens of milliseconds to every session start and print nothing.
    os._exit(exit_like(run.code))
