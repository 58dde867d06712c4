"""`signet-bench-hook session-start ...`: Signet's session-start hook with the scorer's order.

The harness's command `signet hook session-start ARGS` becomes `signet-bench-hook [OPTIONS]
session-start ARGS`: same arguments, same stdin, read to its end as Signet's CLI (0.145.7) reads
it, however late that comes (a terminal is not read). The wrapper calls Signet's own command once,
with `--json` in place of the harness's format, re-ranks the memories of its answer with the
exported model (`signet_scorer.hook.rank`), rebuilds the memories block of the inject text
(`signet_scorer.hook.inject`) and prints the harness's format as Signet's command line would
(`signet_scorer.hook.harness`). It records what it injected beside the workbench
(`signet_scorer.hook.log`).

**Fail-open, byte for byte.** A setting of the wrapper's own it cannot use (an unknown option
or one without its value, a value out of range, a store, workbench or model given that is not
there or not a file, a `--signet` that cannot run: `config.read_command`) runs Signet exactly
as the harness asked, once, and passes its stdout, stderr and exit code on; the invocation is
recorded with outcome "signet" and every problem (setting, source and value) as the reason,
in the log of the workbench the settings resolve to (the default one in place of a bad one).
A `--signet` that cannot run is replaced by `signet` on PATH; when no `signet` can be started
at all, the wrapper exits as a shell does for a command it cannot find or run (127 or 126) and
prints nothing: a shell's message differs from shell to shell, and none of the wrapper's own
is printed (the log has the reason). Otherwise Signet is called once (a second call with the
same session key would get a stub), so whatever fails, the wrapper prints what Signet's command would have
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
block is found, the token budget admits at least one memory, and the wrapper is within its time
budget, counted from its start (Signet's own time included) to the end of the re-ranking. What
it injects is the scorer's choice (`signet_scorer.budget`): its best memories of the answer, at
most `--limit`, within `--max-tokens` when given, under a heading that counts them. Stderr is always Signet's: Python's warnings
are off, and onnxruntime neither logs nor writes its telemetry (`signet_scorer.runtime`).

**The resident scorer.** Loading numpy, onnxruntime and the model takes far longer than the
ranking itself, so the ranking is asked of a resident scorer (`signet_scorer.hook.resident`) over
the Unix domain socket beside the workbench when one runs: connected while Signet works, it opens
the model and the store as this process would, and ranks by the same functions; once the
output is printed it also writes the record, in the log it holds open (`run.save_record`). This
module then imports the standard library only, and neither `sqlite3`, the log nor `pathlib`
(its paths are `os.path` strings, `signet_scorer.hook.config`). When no
resident answers (none runs, it is stale, hung or dies mid-way, a socket error), the wrapper
ranks in-process as it always could, and starts a resident, detached, after printing, for the
next session start (`--resident off`: always in-process, no resident). Either way the output is
the one of the rules above.

Options (before the command; each also read from an environment variable): `--db`
(`SIGNET_BENCH_DB`, default Signet's own: `$SIGNET_PATH/memory/memories.db`, or
`~/.agents/memory/memories.db` without `SIGNET_PATH`), `--workbench`
(`SIGNET_BENCH_WORKBENCH`, default the store's: `<db>.predictor/workbench.duckdb` when it
exists, else beside the store), `--model` (`SIGNET_BENCH_MODEL`, default `model.onnx` beside the
workbench), `--signet` (`SIGNET_BENCH_SIGNET`, default `signet` on PATH), `--limit`
(`SIGNET_BENCH_LIMIT`, K: memories to inject at most, default 50), `--max-tokens`
(`SIGNET_BENCH_MAX_TOKENS`, their estimated tokens at most, `signet_scorer.budget`; default
none), `--budget-ms`
(`SIGNET_BENCH_BUDGET_MS`, default 5000), `--tz` (`SIGNET_BENCH_TZ`, default the machine's),
`--resident` (`SIGNET_BENCH_RESIDENT`, auto or off, default auto), `--idle-s`
(`SIGNET_BENCH_IDLE_S`, how long the resident waits for a request before it exits, default
1800). Commands besides `session-start`: `serve`, `start`, `stop`, `status` and `doctor`
(`signet_scorer.hook.config`, `signet_scorer.hook.doctor`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence

from signet_scorer.budget import choose, token_costs
from signet_scorer.hook.config import (
    DOCTOR,
    HOOK_COMMANDS,
    SESSION_START,
    USAGE,
    USER_PROMPT_SUBMIT,
    Command,
    HookConfig,
    hook_session_fields,
    read_command,
    usage_error,
)
from signet_scorer.hook.harness import (
    HookInput,
    Invocation,
    Unusable,
    answer_output,
    empty_output,
    hook_input,
    is_text,
    parse_invocation,
)
from signet_scorer.hook.js import js_list, js_object, parse_json
from signet_scorer.hook.opening import (
    failure_text,
    missing_model,
    open_scorer,
    open_store_for,
    read_basis,
)
from signet_scorer.hook.run import (
    HookRun,
    as_asked,
    as_run,
    bypassed,
    invocation_fields,
    open_log,
    read_stdin,
    save_record,
    utc_text,
)
from signet_scorer.hook.signet import (
    SignetResult,
    SignetRunner,
    exit_like,
    start_signet,
)

# Everything else (`datetime`, the resident's link, the ranking, the block, the log and its
# `sqlite3`, the other commands' modules) is imported where it is used, once Signet runs: every
# millisecond before Signet starts adds to the session start.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from datetime import datetime
    from typing import Any

    from signet_scorer.hook.log import InjectionLog
    from signet_scorer.hook.rank import Ranking, SessionBasis
    from signet_scorer.hook.resident_link import ResidentLink
    from signet_scorer.scorer import Scorer

__all__ = ["main", "run_hook", "serve_argv", "signet_output"]

COMMAND = SESSION_START
START_WAIT_S = 60.0  # `start` waits this long for the resident to answer


# --- one invocation -----------------------------------------------------------------------------


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
    obj = js_object(answer)
    mems = js_list(obj.get("memories")) if obj is not None else None
    if mems is None or obj is None or not is_text(obj.get("inject")):
        raise Unusable("the answer has no memories list or no inject text")
    out: list[tuple[str, str]] = []
    for item in mems:
        m = js_object(item)
        i, c = (m.get("id"), m.get("content")) if m is not None else (None, None)
        if not (is_text(i) and is_text(c)):
            raise Unusable("a memory of the answer has no text id or content")
        out.append((i, c))
    return out


# A model loader: the model's path -> (a ready scorer, None) or (None, why not).
ScorerLoader = Callable[[str], "tuple[Any, str | None]"]


class _Attempt:
    """The state of one invocation while it runs: the ranking comes from the resident scorer
    (`link`) or from the model and store opened here (`scorer`, `con`)."""

    __slots__ = (
        "basis",
        "cfg",
        "chosen",
        "con",
        "inp",
        "inv",
        "link",
        "load",
        "model_version",
        "now",
        "ranking",
        "reason",
        "resident_down",
        "scorer",
        "started",
        "writer",
    )

    def __init__(
        self,
        cfg: HookConfig,
        inv: Invocation,
        inp: HookInput,
        started: float,
        load: ScorerLoader,
        now: datetime,
    ) -> None:
        self.cfg, self.inv, self.inp, self.started, self.load = cfg, inv, inp, started, load
        self.now = now  # the session's start
        self.reason: str | None = None
        self.scorer: Scorer | None = None
        self.con: sqlite3.Connection | None = None
        self.ranking: Ranking | None = None
        self.chosen: list[int] = []  # the positions of `ranking` the budget keeps
        self.writer: InjectionLog | None = None
        self.basis: SessionBasis | None = None
        self.link: ResidentLink | None = None
        self.model_version: str | None = None
        self.resident_down: str | None = None  # why the resident did not answer

    def fail(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason

    def session(self) -> dict[str, Any]:
        """The session starting, as the ranking takes it (`rank.HookSession`'s fields) but for
        its zone, as `HookConfig.zone_fields` sends it (`config.hook_session_fields`)."""
        inp = self.inp
        return {
            "now": self.now,
            **self.cfg.zone_fields(),
            "project": inp.project or None,
            "session_key": inp.session_key,
            "agent_id": inp.agent_id,
        }

    def time_left(self, clock: Callable[[], float] = time.monotonic) -> float:
        """Seconds of the budget left, at most the resident's answer timeout."""
        from signet_scorer.hook.resident_link import ANSWER_TIMEOUT_S

        left = self.cfg.budget_ms / 1000.0 - (clock() - self.started)
        return max(1e-3, min(ANSWER_TIMEOUT_S, left))


def _prepare(att: _Attempt) -> None:
    """While Signet works: the resident scorer asked to prepare and its answer, else the model
    and the store opened here; or the reason there is nothing to do. The log is opened here
    only when the resident will not write the record (`run.save_record`)."""
    missing = None if att.cfg.resident != "auto" else missing_model(att.cfg.model)
    asked = None
    if att.cfg.resident == "auto" and missing is None and not att.inp.malformed:
        asked = _ask_resident(att)
    # here: the block's module, used once Signet has answered, loads while it works (every
    # millisecond after its answer adds to the session start)
    import signet_scorer.hook.inject  # noqa: F401  # pyright: ignore[reportUnusedImport]

    if att.inp.malformed:
        att.fail("stdin is not a JSON object")
    elif missing is not None:  # the scorer is off: nothing to ask, nothing to start
        att.fail(missing)
    elif asked is None or not _resident_prepared(att, asked):
        _prepare_here(att)
    if att.link is None:
        att.writer = open_log(att.cfg.log)


def _ask_resident(att: _Attempt) -> ResidentLink | None:
    """The resident scorer connected and asked to prepare this session start (it answers
    once it has read the session's basis); None, with the reason kept, when it cannot be."""
    from signet_scorer.hook.resident_link import ResidentLink, Unavailable

    cfg = att.cfg
    try:
        link = ResidentLink.connect(cfg.socket, att.time_left())
        try:
            session = {**att.session(), "now": att.now.isoformat()}
            link.prepare(cfg.db, cfg.model, session, cfg.budget_ms / 1000.0, att.time_left())
        except Unavailable:
            link.close()
            raise
    except Unavailable as exc:
        att.resident_down = str(exc)
        return None
    return link


def _resident_prepared(att: _Attempt, link: ResidentLink) -> bool:
    """Whether the resident scorer took this session start (it holds the model and the store,
    or said why they cannot be had); False, with the reason kept, when it did not answer."""
    from signet_scorer.hook.resident_link import Unavailable

    try:
        version, why = link.prepared(att.time_left())
    except Unavailable as exc:
        link.close()
        att.resident_down = str(exc)
        return False
    if why is not None:
        link.close()
        att.fail(why)
    else:
        att.link, att.model_version = link, version
    return True


def _prepare_here(att: _Attempt) -> None:
    """The model and the store, opened in this process, and the session's basis."""
    scorer, why = att.load(att.cfg.model)
    if scorer is None:
        att.fail(why or "no model")
        return
    att.con, why = open_store_for(att.cfg.db, att.cfg.budget_ms / 1000.0)
    if why is not None:
        att.fail(why)
        return
    att.scorer = scorer
    info = scorer.info
    att.model_version = info.model_version if info is not None else None
    att.basis = read_basis(att.con, hook_session_fields(att.session()), info)


def _check_budget(att: _Attempt, clock: Callable[[], float]) -> None:
    spent = (clock() - att.started) * 1000.0
    if spent > att.cfg.budget_ms:
        att.fail(f"time budget exceeded ({spent:.0f} ms > {att.cfg.budget_ms:g} ms)")


class _Refused(Exception):
    """The ranking raised; the message is what it raised ("Type: message")."""


def _ranking(att: _Attempt, ids: list[str]) -> Any:
    """The ranking of the answer's memories `ids`: the resident's, else this process's (after
    opening the model and the store here when the resident failed); None (and the reason)
    when the model or the store cannot be had."""
    from signet_scorer.hook.resident_link import Unavailable

    # with a token cap the whole answer is ranked: the choice may pass over a long memory and
    # take a shorter one below the first K
    limit = len(ids) if att.cfg.max_tokens is not None else att.cfg.limit
    if att.link is not None:
        try:
            got = att.link.rerank(ids, limit, att.time_left())
        except Unavailable as exc:
            att.resident_down = str(exc)
            att.link.close()
            att.link = None
            _prepare_here(att)
            if att.reason is not None:
                return None
        else:
            if isinstance(got, str):
                raise _Refused(got)
            return got
    from signet_scorer.hook.rank import HookSession, rerank

    session = HookSession(**hook_session_fields(att.session()))
    assert att.con is not None and att.scorer is not None  # opened by `_prepare_here`
    return rerank(att.con, att.scorer, session, ids, limit, att.basis)


def _rerank(att: _Attempt, answer: Any) -> bytes | None:
    """The harness's output with the scorer's order, or None (and the reason) when not."""
    try:
        mems = _answer_memories(answer)
        if not mems:
            att.fail("signet's answer has no memories")
            return None
        from signet_scorer.hook.inject import find_block

        block = find_block(answer["inject"], [c for _, c in mems])
        if block is None:
            att.fail("the inject text has no memories block as Signet writes it")
            return None
        att.ranking = _ranking(att, [i for i, _ in mems])
        if att.ranking is None:
            return None
        att.chosen = choose(token_costs(block.lines[i] for i in att.ranking.order), att.cfg.choice)
        if not att.chosen:
            att.fail(f"the token budget ({att.cfg.max_tokens}) admits no memory of the answer")
            return None
        order = [i for i, _ in _picked(att)]
        memories = [answer["memories"][i] for i in order]
        return answer_output(
            att.inv.output, {**answer, "memories": memories, "inject": block.text(order)}
        )
    except Exception as exc:  # noqa: BLE001 - fail open: any fault keeps Signet's output
        att.ranking = None
        why = str(exc) if isinstance(exc, _Refused) else failure_text(exc)
        att.fail(f"re-ranking failed: {why}")
        return None


def _picked(att: _Attempt) -> list[tuple[int, float]]:
    """(position in the answer, score) of each memory injected, best first: the ranking's
    memories the budget chose (`signet_scorer.budget.choose`)."""
    assert att.ranking is not None  # ranked before anything is picked
    ranked = list(zip(att.ranking.order, att.ranking.scores, strict=True))
    return [ranked[i] for i in att.chosen]


def _injections(att: _Attempt, answer: Any) -> list[dict[str, Any]]:
    """The injected memories' rows: the scorer's choice, or Signet's answer as printed."""
    try:
        ids = [m for m, _ in _answer_memories(answer)]
    except Unusable:
        return []
    if att.reason is None and att.ranking is not None:
        rows = [(ids[i], r, i + 1, s, "scorer") for r, (i, s) in enumerate(_picked(att), 1)]
    else:
        rows = [(m, r, r, None, "signet") for r, m in enumerate(ids, 1)]
    names = ("memory_id", "rank", "signet_rank", "score", "chosen_by")
    return [dict(zip(names, row, strict=True)) for row in rows]


def _record(att: _Attempt, res: SignetResult, answer: Any, ms: float) -> HookRun:
    """The invocation's row and its injections' rows, on a run whose output is filled later."""
    version = att.model_version
    ranking = att.ranking if att.reason is None else None
    at = utc_text(att.now)
    key = {"session_key": att.inp.session_key, "agent_id": att.inp.agent_id}
    rows = [
        {**key, **r, "model_version": version, "injected_at": at} for r in _injections(att, answer)
    ]
    invocation = {
        **invocation_fields(att.inv, att.inp, att.cfg, att.reason, at),
        "model_version": version,
        "pool": None if ranking is None else ranking.pool,
        "injected": len(rows),
        "context_rule": None if ranking is None else ranking.context_rule,
        "signet_exit": res.code,
        "duration_ms": ms,
    }
    done = HookRun(b"", b"", res.code, invocation, rows, att.cfg.log, att.writer)
    if att.link is not None:  # the resident that ranked writes the record
        from signet_scorer.hook.resident_link import ResidentRecord

        done.resident = ResidentRecord(att.link, att.cfg.log)
    return done


def run_hook(
    argv: Sequence[str],
    stdin: bytes | None,
    *,
    env: Mapping[str, str] | None = None,
    runner: SignetRunner | None = None,
    load_scorer: ScorerLoader = open_scorer,
    now: datetime | None = None,
    clock: Callable[[], float] = time.monotonic,
    command: Command | None = None,
) -> HookRun:
    """One invocation of `session-start` (module docstring): what to print, the exit code and
    the record. `stdin` is None when it is a terminal; `env` the harness's environment
    (default: ours), which Signet gets; `runner` reaches Signet (default: the binary `--signet`
    names); `load_scorer` loads the model when it is ranked in this process; `now` is the
    session start (default: the wall clock once Signet is started); `command` is `argv` as
    already read by `config.read_command` (the console script reads it once, before Signet
    starts), else it is read here."""
    started = clock()
    env = os.environ if env is None else env
    command = command or read_command(argv, env)
    if command.name != COMMAND:
        return HookRun(b"", f"signet-bench-hook: {usage_error(command)}".encode(), 2)
    cfg, args = command.config, command.args
    run = runner or start_signet(cfg.signet, env)
    data = stdin or b""
    if command.problems:  # a setting of the wrapper's own: Signet exactly as asked
        return as_asked(command, stdin, run(args, data), started, clock)
    inv = None if bypassed(env) else parse_invocation(args)
    if inv is None:  # Signet exactly as asked
        return as_run(run(args, data).result())
    call = run(inv.json_args, data)
    from datetime import UTC, datetime

    att = None
    try:
        att = _Attempt(
            cfg, inv, hook_input(stdin, inv), started, load_scorer, now or datetime.now(UTC)
        )
        _prepare(att)
    except Exception as exc:  # noqa: BLE001 - fail open: Signet's output is printed
        if att is not None:
            att.fail(f"preparing failed: {failure_text(exc)}")
    res = call.result()
    if att is None:
        return HookRun(signet_output(inv.output, res)[0], res.stderr, res.code)
    failure = getattr(call, "failure", None)  # a runner's call may not say
    if failure is not None:
        att.fail(failure)
    try:
        done = _finish(att, res, clock)
    except Exception:  # noqa: BLE001 - fail open: whatever broke, Signet's output is printed
        done = HookRun(signet_output(inv.output, res)[0], res.stderr, res.code)
    finally:
        if att.con is not None:
            att.con.close()
    if att.link is not None and done.resident is None:  # else it writes the record
        att.link.close()
    done.start_resident = cfg.resident == "auto" and att.resident_down is not None
    return done


def _finish(att: _Attempt, res: SignetResult, clock: Callable[[], float]) -> HookRun:
    """Once Signet has answered: the scorer's output or Signet's, and the record."""
    printed, answer, why = signet_output(att.inv.output, res)
    if why is not None:
        att.fail(why)
    _check_budget(att, clock)
    out = _rerank(att, answer) if att.reason is None else None
    _check_budget(att, clock)
    done = _record(att, res, answer, (clock() - att.started) * 1000.0)
    done.stdout = printed if att.reason else out or printed
    done.stderr = res.stderr
    return done


# --- the resident scorer's commands -------------------------------------------------------------


def serve_argv(cfg: HookConfig) -> list[str]:
    """The command that runs the resident scorer for `cfg`."""
    return [sys.executable, "-m", "signet_scorer.hook", *cfg.options(), "serve"]


def _start_resident(cfg: HookConfig) -> None:
    """After a session start the resident did not answer: start one, detached (best effort)."""
    from signet_scorer.hook.resident_link import start_detached

    try:
        start_detached(cfg.files, serve_argv(cfg))
    except OSError:
        pass


def resident_command(cfg: HookConfig, command: str) -> int:
    """`serve`, `start`, `stop` or `status`: run, start, stop or describe the resident
    scorer of `cfg`'s workbench; prints what happened, exits 0 (1: it could not)."""
    from signet_scorer.hook.resident_link import resident_status, start_detached, stop_resident

    files = cfg.files
    if command == "serve":
        from signet_scorer.hook.resident import serve

        return serve(cfg)
    if command == "status":
        import json

        sys.stdout.write(json.dumps(resident_status(files), indent=2) + "\n")
        return 0
    if command == "stop":
        pid = stop_resident(files)
        said = "no resident scorer runs" if pid is None else f"stopped (pid {pid or 'unknown'})"
        sys.stdout.write(said + "\n")
        return 0
    state = resident_status(files)
    if state["running"]:
        sys.stdout.write(f"already running (pid {state['pid']})\n")
        return 0
    pid = start_detached(files, serve_argv(cfg), wait_s=START_WAIT_S)
    if pid is None:
        sys.stderr.write(f"signet-bench-hook: the resident scorer did not start; see {files.log}\n")
        return 1
    sys.stdout.write(f"started (pid {pid}), listening on {files.socket}\n")
    return 0


def _finish_run(run: HookRun, cfg: HookConfig) -> None:
    """Print the run's output, record it, start the resident scorer when it did not answer,
    and end the process as Signet's command ended."""
    for stream, data in ((sys.stdout, run.stdout), (sys.stderr, run.stderr)):
        stream.buffer.write(data)
        stream.flush()
    save_record(run)
    if run.start_resident:
        _start_resident(cfg)
    # End at once, as Signet's command ended: the interpreter's teardown (onnxruntime's
    # included) would add tens of milliseconds to every hook and print nothing.
    os._exit(exit_like(run.code))


def _main_prompt(args: list[str], env: dict[str, str], command: Command) -> int:
    """`user-prompt-submit`: Signet's prompt hook with the scorer's memories added."""
    # here: the prompt hook's module loads only for its command (start-up time)
    import warnings

    from signet_scorer.hook.prompt import run_prompt_hook

    warnings.simplefilter("ignore")  # stderr is Signet's alone
    _finish_run(run_prompt_hook(args, read_stdin(), env=env, command=command), command.config)
    return 0  # not reached


def main(argv: Sequence[str] | None = None) -> int:
    """The console script: for `session-start`, print what `run_hook` gives, record it, start
    the resident scorer when it did not answer, and exit as Signet's command did (the process
    ends here); the other commands return their exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] in (["-h"], ["--help"]) and not any(h in args for h in HOOK_COMMANDS):
        sys.stdout.write(USAGE)
        return 0
    if args == ["--version"]:  # alone: with a command it is an option, and session-start fails open
        from signet_scorer.version import version_line

        sys.stdout.write(version_line("signet-bench-hook") + "\n")
        return 0
    env = dict(os.environ)  # Signet runs with the harness's environment, as it would
    # one BLAS thread for numpy (the project's rule outside training: it also halves numpy's
    # start here), unless the user set a count
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if DOCTOR in args:  # reads the options itself: a bad one is what it reports
        from signet_scorer.hook.doctor import doctor_command

        code = doctor_command(args, env)
        if code is not None:
            return code
    command = read_command(args, env)
    if command.name == USER_PROMPT_SUBMIT:
        return _main_prompt(args, env, command)
    if command.name != COMMAND:
        if command.name is None or command.problems:
            sys.stderr.write(f"signet-bench-hook: {usage_error(command)}")
            return 2
        return resident_command(command.config, command.name)
    import warnings

    warnings.simplefilter("ignore")  # stderr is Signet's alone
    _finish_run(run_hook(args, read_stdin(), env=env, command=command), command.config)
    return 0  # not reached
