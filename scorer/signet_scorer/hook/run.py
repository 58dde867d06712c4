"""What a hook invocation of the wrapper prints, exits with and records (`HookRun`), shared by
its two hook commands (`signet_scorer.hook.cli` for session start, `signet_scorer.hook.prompt`
for a prompt): Signet's output passed on as it is, the record appended to the injection log
(best effort: the harness is served first), the harness's stdin read as Signet's CLI reads it.
Standard library only (the hooks' start is on every session's and every prompt's path).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping

from signet_scorer.hook.config import SESSION_START, USER_PROMPT_SUBMIT, Command, HookConfig
from signet_scorer.hook.harness import (
    PROMPT_OPTIONS,
    HookInput,
    Invocation,
    hook_input,
    parse_invocation,
    prompt_input,
)
from signet_scorer.hook.signet import SignetCall, SignetResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from signet_scorer.hook.resident_link import ResidentRecord

__all__ = [
    "HookRun",
    "as_asked",
    "as_run",
    "bypassed",
    "invocation_fields",
    "open_log",
    "read_stdin",
    "save_record",
    "utc_text",
]


class HookRun:
    """What the wrapper prints and how it exits (`stdout`, `stderr`, `code`), what it records
    (`invocation`, empty: nothing to record; `injections`; `ranking`, what a prompt's ranking
    saw, None: nothing; `log`, where the record goes; `writer`, the log already opened for it, a
    `signet_scorer.hook.log.InjectionLog`; `resident`, the resident scorer that answered, which
    writes the record in its place, a `signet_scorer.hook.resident_link.ResidentRecord`), and
    whether to start the resident scorer once it is done (`start_resident`)."""

    __slots__ = (
        "code",
        "injections",
        "invocation",
        "log",
        "ranking",
        "resident",
        "start_resident",
        "stderr",
        "stdout",
        "writer",
    )

    def __init__(
        self,
        stdout: bytes,
        stderr: bytes,
        code: int,
        invocation: dict[str, Any] | None = None,
        injections: list[dict[str, Any]] | None = None,
        log: str | None = None,
        writer: Any = None,
    ) -> None:
        self.stdout, self.stderr, self.code = stdout, stderr, code
        self.invocation = invocation if invocation is not None else {}
        self.injections = injections if injections is not None else []
        self.log, self.writer = log, writer
        self.ranking: dict[str, Any] | None = None
        self.resident: ResidentRecord | None = None
        self.start_resident = False


def utc_text(at: datetime) -> str:
    """An aware time as the log writes it: ISO UTC to the millisecond with a `Z`."""
    from datetime import UTC

    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def invocation_fields(
    inv: Invocation, inp: HookInput, cfg: HookConfig, reason: str | None, at: str
) -> dict[str, Any]:
    """The fields of an invocation's log row that both hooks fill alike (`hook.log`): who asked
    and where, how Signet was asked, whose output was printed and why, the model served."""
    return {
        "session_key": inp.session_key,
        "agent_id": inp.agent_id,
        "at": at,
        "harness": inv.options["harness"],
        "project": inp.project or None,
        "output": inv.output,
        "outcome": "signet" if reason else "scorer",
        "reason": reason,
        "model_path": str(cfg.model),
    }


def as_run(res: SignetResult) -> HookRun:
    """The run that prints what Signet printed and exits as it did."""
    return HookRun(res.stdout, res.stderr, res.code)


def open_log(path: str) -> Any:
    """The injection log opened for writing, or None (no workbench folder, or it fails)."""
    if not os.path.isdir(os.path.dirname(path) or "."):
        return None
    try:
        from signet_scorer.hook.log import InjectionLog

        return InjectionLog(path)
    except Exception:  # noqa: BLE001 - the record is best effort, the harness is served
        return None


def bypassed(env: Mapping[str, str]) -> bool:
    """Signet's own switches that make every hook exit at once, printing nothing."""
    return env.get("SIGNET_NO_HOOKS") == "1" or env.get("SIGNET_BYPASS") == "1"


def as_asked(
    command: Command,
    stdin: bytes | None,
    call: SignetCall,
    started: float,
    clock: Callable[[], float],
    hook: str = SESSION_START,
) -> HookRun:
    """Signet run with the harness's own arguments, its output as it is, and the invocation's
    record (`hook`: which hook command): outcome "signet", the reason every problem of the
    wrapper's settings (and why Signet did not start, when it did not). Best effort."""
    from datetime import UTC, datetime

    res = call.result()
    done = as_run(res)
    reasons = [str(p) for p in command.problems]
    failure = getattr(call, "failure", None)
    if failure is not None:
        reasons.append(str(failure))
    try:
        at = utc_text(datetime.now(UTC))
        args = command.args
        prompt = hook == USER_PROMPT_SUBMIT
        inv = parse_invocation(args, PROMPT_OPTIONS) if prompt else parse_invocation(args)
        inp = (
            None
            if inv is None
            else prompt_input(stdin, inv)[0]
            if prompt
            else hook_input(stdin, inv)
        )
        output = "codex" if "--codex-json" in args else "json" if "--json" in args else "plain"
        done.invocation = {
            "session_key": inp.session_key if inp else "",
            "agent_id": inp.agent_id if inp else "default",
            "at": at,
            "harness": inv.options["harness"] if inv else None,
            "project": (inp.project or None) if inp else None,
            "output": output,
            "outcome": "signet",
            "reason": "; ".join(reasons),
            "model_path": str(command.config.model),
            "signet_exit": res.code,
            "duration_ms": (clock() - started) * 1000.0,
            "hook": hook,
        }
        done.log = command.config.log
    except Exception:  # noqa: BLE001 - the record is best effort, the harness is served
        done.invocation = {}
    return done


def save_record(run: HookRun) -> None:
    """Append the run's record to the injection log, when its folder exists, and close it; a
    failure to write it never changes what the harness got (the output is already printed).
    The resident scorer that answered writes it, and says so once it is committed, before this
    process ends; when it does not, it is written here (unless the resident wrote it before it
    stopped answering). (While the resident runs it keeps the log open, so this is not the
    log's last connection: closing it neither checkpoints nor syncs, and the next opener has no
    write-ahead log to recover.)"""
    writer, resident = run.writer, run.resident
    if resident is not None:
        try:
            written = bool(run.invocation) and resident.record(
                run.invocation, run.injections, run.ranking
            )
        except Exception:  # noqa: BLE001 - written here then
            written = False
        finally:
            resident.close()
        if written:
            if writer is not None:
                writer.close()
            return
    if run.invocation and writer is None and run.log is not None:
        writer = open_log(run.log)
    if writer is None:
        return
    try:
        if run.invocation:
            once = resident is not None  # it may have written it before it stopped answering
            writer.record(run.invocation, run.injections, run.ranking, once=once)
    except Exception:  # noqa: BLE001, S110 - best effort: the harness is already served
        pass
    finally:
        writer.close()


def read_stdin() -> bytes | None:
    """The harness's stdin as Signet's CLI (0.145.7) reads it: None for a terminal (not
    read); else all of it, up to its end of file, however long that takes."""
    try:
        fd = sys.stdin.fileno()
        if os.isatty(fd):
            return None
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    except (OSError, ValueError):
        return None
