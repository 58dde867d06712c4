"""The session-start hook's command line: its options (before the command, each also read
from an environment variable), the command and Signet's arguments after it. Standard library
only, and neither `dataclasses`, `typing`, `pathlib` nor `re` at run time: this runs on every
session start, before Signet's command (its paths are `str`, as `pathlib` writes them).

Commands: `session-start ARGS...` (Signet's hook with the scorer's order),
`user-prompt-submit ARGS...` (Signet's prompt hook with the scorer's memories for the prompt
added, `signet_scorer.hook.prompt`), `serve` (the
resident scorer in the foreground), `start` (the resident, detached), `stop`, `status` and
`doctor` (what the hook would use and whether it serves, `signet_scorer.hook.doctor`).

Reading never fails (`read_command`): a setting that cannot be used (an unknown option, an
option without its value, a value out of range, a path that is not there, a `--signet` that
cannot run) is a `Problem`, and the configuration holds the default in its place. For a
hook command (`HOOK_COMMANDS`) any problem means Signet runs exactly as the harness asked, its
output unchanged, and the problem is recorded (`signet_scorer.hook.cli`); only without a hook
command is a problem the wrapper's own usage error (`parse_command`).
"""

from __future__ import annotations

import os
from collections import namedtuple

from signet_scorer.budget import Budget
from signet_scorer.workbench import (
    HOOK_LOG_FILE,
    SERVED_MODEL_FILE,
    SIGNET_PATH_VAR,
    default_store,
    default_workbench,
    path_text,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, NamedTuple, TypeVar

    from signet_scorer.hook.resident_link import ResidentFiles

    T = TypeVar("T")
    N = TypeVar("N", int, float)

__all__ = [
    "COMMANDS",
    "DEFAULT_BUDGET_MS",
    "DEFAULT_DB",
    "DEFAULT_IDLE_S",
    "DEFAULT_LIMIT",
    "DEFAULT_MAX_CHARS",
    "DEFAULT_SIGNET",
    "HOOK_COMMANDS",
    "OPTIONS",
    "RESIDENT_MODES",
    "SESSION_START",
    "USAGE",
    "USER_PROMPT_SUBMIT",
    "Command",
    "HookConfig",
    "Problem",
    "UsageError",
    "default_db",
    "hook_session_fields",
    "parse_command",
    "read_command",
    "runnable",
    "scan_argv",
    "session_zone",
    "setting_sources",
    "usage_error",
]

SESSION_START = "session-start"
USER_PROMPT_SUBMIT = "user-prompt-submit"
HOOK_COMMANDS = (SESSION_START, USER_PROMPT_SUBMIT)  # Signet's hooks the wrapper stands in for
DOCTOR = "doctor"
COMMANDS = (*HOOK_COMMANDS, "serve", "start", "stop", "status", DOCTOR)
DEFAULT_DB = "~/.agents/memory/memories.db"  # without SIGNET_PATH (workbench.default_store)
DEFAULT_SIGNET = "signet"  # on PATH
DEFAULT_LIMIT = 50  # Signet's own recallLimit
# What Signet 0.145.7 allows a prompt's inject: `hooks.userPromptSubmit.maxInjectChars`'s default
# (`platform/daemon/src/hooks-config.ts`); the prompt hook's section is held to it.
DEFAULT_MAX_CHARS = 500
DEFAULT_BUDGET_MS = 5_000.0
DEFAULT_IDLE_S = 1800.0  # the resident scorer exits after this long without a request
RESIDENT_MODES = ("auto", "off")
USAGE = (
    "usage: signet-bench-hook [--db PATH] [--workbench PATH] [--model PATH] [--signet PATH]\n"
    "                         [--limit K] [--max-tokens N] [--budget-ms MS] [--tz ZONE]\n"
    "                         [--max-chars N] [--resident auto|off] [--idle-s S] COMMAND\n"
    "       signet-bench-hook --version\n"
    "commands:\n"
    "  session-start ARGS...  Signet's `signet hook session-start ARGS` (same stdin) with the\n"
    "                         scorer's order\n"
    "  user-prompt-submit ARGS...  Signet's `signet hook user-prompt-submit ARGS` (same\n"
    "                         stdin) with the scorer's memories for the prompt added, at most\n"
    "                         --max-chars characters (default 500, Signet's maxInjectChars)\n"
    "  serve                  the resident scorer, in the foreground\n"
    "  start                  the resident scorer, detached\n"
    "  stop                   stop the resident scorer\n"
    "  status                 whether the resident scorer runs, and what it holds\n"
    "  doctor [--json]        which store, workbench, model and signet the hook would use and\n"
    "                         why, whether the model scores a session of the store, the last\n"
    "                         session starts, and whether the scorer is serving (exit 0) or not\n"
)
OPTIONS = {
    "--db": ("db", "SIGNET_BENCH_DB"),
    "--workbench": ("workbench", "SIGNET_BENCH_WORKBENCH"),
    "--model": ("model", "SIGNET_BENCH_MODEL"),
    "--signet": ("signet", "SIGNET_BENCH_SIGNET"),
    "--limit": ("limit", "SIGNET_BENCH_LIMIT"),
    "--max-tokens": ("max_tokens", "SIGNET_BENCH_MAX_TOKENS"),
    "--budget-ms": ("budget_ms", "SIGNET_BENCH_BUDGET_MS"),
    "--max-chars": ("max_chars", "SIGNET_BENCH_MAX_CHARS"),
    "--tz": ("tz", "SIGNET_BENCH_TZ"),
    "--resident": ("resident", "SIGNET_BENCH_RESIDENT"),
    "--idle-s": ("idle_s", "SIGNET_BENCH_IDLE_S"),
}


class UsageError(ValueError):
    """The wrapper's own command line is wrong; the message says how."""


if TYPE_CHECKING:  # the fields' types, for type checkers (`typing` stays unloaded)

    class _HookConfig(NamedTuple):
        db: str
        workbench: str
        model: str
        signet: str
        limit: int
        max_tokens: int | None
        budget_ms: float
        tz: str | None
        resident: str
        idle_s: float
        max_chars: int

    class _Problem(NamedTuple):
        setting: str
        source: str
        value: str | None
        why: str

    class _Command(NamedTuple):
        config: HookConfig
        name: str | None
        args: list[str]
        problems: list[Problem]
else:
    _HookConfig = namedtuple(
        "HookConfig",
        "db workbench model signet limit max_tokens budget_ms tz resident idle_s max_chars",
    )
    _Problem = namedtuple("Problem", "setting source value why")
    _Command = namedtuple("Command", "config name args problems")


class HookConfig(_HookConfig):
    """Where the store (`db`), `workbench`, `model` and `signet` are, the wrapper's limits
    (`limit`: K, the memories it injects at most; `max_tokens`: their estimated tokens at most,
    None: no cap; `budget_ms`: its time), the user's `tz` (None: the machine's, see `zone`), whether to use
    the resident scorer (`resident`: auto or off), how long it waits for a request before
    it exits (`idle_s`) and the characters a prompt's section may take (`max_chars`)."""

    __slots__ = ()

    def zone(self) -> str:
        """The user's IANA time zone: `tz`, else the machine's. The machine's is looked up
        only where the ranking runs (`zone_fields`): its module (`zoneinfo`) takes milliseconds
        to load; a zone given by the user is checked before Signet runs, as every option is."""
        return session_zone(self.zone_fields())

    def zone_fields(self) -> dict[str, str | None]:
        """The zone as a session's fields carry it to where the ranking runs: `tz`, and when
        it is None (the machine's) this process's `TZ` variable, `tz_var`, for the ranking's
        process to resolve (`session_zone`): the resident scorer has the zone's module
        loaded, which would cost each hook process some 2 ms to load."""
        var = os.environ.get("TZ", "") if self.tz is None else None
        return {"tz": self.tz, "tz_var": var}

    @property
    def choice(self) -> Budget:
        """What the wrapper injects of the scorer's order (`signet_scorer.budget`)."""
        return Budget(self.limit, self.max_tokens)

    @property
    def log(self) -> str:
        return os.path.join(os.path.dirname(self.workbench), HOOK_LOG_FILE)

    @property
    def socket(self) -> str:
        """The resident scorer's socket (`files.socket`), as a hook connects to it."""
        # here: the resident's link loads once Signet runs (start-up time)
        from signet_scorer.hook.resident_link import socket_file

        return socket_file(os.path.dirname(self.workbench))

    @property
    def files(self) -> ResidentFiles:
        """The resident scorer's socket, lock and log, beside the workbench."""
        # here: the resident's link loads once Signet runs (start-up time)
        from signet_scorer.hook.resident_link import resident_files

        return resident_files(os.path.dirname(self.workbench))

    def options(self) -> list[str]:
        """This configuration as the wrapper's options (for the resident it starts)."""
        values = (self.db, self.workbench, self.model, self.tz, self.idle_s)
        names = ("--db", "--workbench", "--model", "--tz", "--idle-s")
        pairs = zip(names, values, strict=True)
        return [item for name, v in pairs if v is not None for item in (name, str(v))]


_COMMAND_LINE, _ENVIRONMENT = "command line", "environment"


class Problem(_Problem):
    """A setting the wrapper cannot use: its name as given (`--limit`, `SIGNET_BENCH_LIMIT`,
    or "argument" for a word that is no option), where it came from ("command line" or
    "environment"), its value as given (None: it has none) and why. Its text is what the
    hook log records."""

    __slots__ = ()

    def __str__(self) -> str:
        value = "" if self.value is None else f" {self.value!r}"
        if self.value is not None and self.source == _ENVIRONMENT:
            value = f"={self.value!r}"
        return f"{self.setting}{value} ({self.source}): {self.why}"


class Command(_Command):
    """The wrapper's invocation as read: its `config` (a default in place of every setting
    that has a problem), the command's `name` (None: none was given), Signet's `args` (after
    `session-start`) and the `problems` of its settings, in the order met."""

    __slots__ = ()


class _Bad(ValueError):
    """A setting's value cannot be used; the message says why."""


def scan_argv(
    argv: Sequence[str],
) -> tuple[dict[str, tuple[str, str, str]], str | None, list[str], list[Problem]]:
    """The options given before the command (field -> (option, source, text)), the command,
    the arguments after it and the problems met. The first hook command (`HOOK_COMMANDS`) is
    the command wherever it stands (what is before it is the wrapper's, right or wrong);
    another command counts only when no hook command follows. A command's name is never an
    option's value: an option right before one has no value."""
    given: dict[str, tuple[str, str, str]] = {}
    problems: list[Problem] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        hook_later = any(h in argv[i:] for h in HOOK_COMMANDS)
        if token in HOOK_COMMANDS or (token in COMMANDS and not hook_later):
            return given, token, list(argv[i + 1 :]), problems
        name, eq, text = token.partition("=")
        i += 1
        if name not in OPTIONS:
            why = "unknown option" if token.startswith("-") else "not a wrapper option"
            setting, value = (
                (name, text if eq else None) if token.startswith("-") else ("argument", token)
            )
            problems.append(Problem(setting, _COMMAND_LINE, value, why))
            continue
        if not eq:
            if i >= len(argv) or argv[i] in COMMANDS:
                problems.append(Problem(name, _COMMAND_LINE, None, "needs a value"))
                continue
            text = argv[i]
            i += 1
        if text:
            given[OPTIONS[name][0]] = (name, _COMMAND_LINE, text)
        else:
            problems.append(Problem(name, _COMMAND_LINE, text, "needs a value"))
    return given, None, [], problems


def _number(text: str, kind: type[N], low: float, *, above: bool = False) -> N:
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or not (value > low if above else value >= low) or value == float("inf"):
        what = "an integer" if kind is int else "a number"
        raise _Bad(f"expected {what} {'>' if above else '>='} {low:g}")
    return value


def _zone(tz: str) -> str:
    # here: zoneinfo loads once a zone is asked for, after Signet starts (start-up time)
    from zoneinfo import ZoneInfo

    try:
        ZoneInfo(tz)
    except (ValueError, OSError, KeyError):
        raise _Bad("not a known IANA time zone") from None
    return tz


def _resident(text: str) -> str:
    if text not in RESIDENT_MODES:
        raise _Bad(f"expected one of {', '.join(RESIDENT_MODES)}")
    return text


def _file(text: str) -> str:
    """An existing, readable file."""
    path = path_text(text)
    if os.path.isdir(path):
        raise _Bad("a folder, not a file")
    if not os.path.isfile(path):
        raise _Bad("no such file")
    if not os.access(path, os.R_OK):
        raise _Bad("not readable")
    return path


def _workbench(text: str) -> str:
    """A workbench file that may not exist yet, in a folder that does."""
    path = path_text(text)
    if os.path.isdir(path):
        raise _Bad("a folder, not the workbench file")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise _Bad(f"its folder {folder} does not exist")
    return path


def runnable(program: str, env: Mapping[str, str]) -> bool:
    """Whether `program` names an executable file: a path, or a name on the PATH of `env`."""
    if os.sep in program:
        places = [program]
    else:
        places = [os.path.join(d, program) for d in os.get_exec_path(dict(env))]
    return any(os.path.isfile(p) and os.access(p, os.X_OK) for p in places)


class _Reader:
    """The settings of one invocation: each from its option, else its variable, else its
    default; a value that cannot be used is a problem and gives the default."""

    def __init__(
        self,
        given: dict[str, tuple[str, str, str]],
        env: Mapping[str, str],
        problems: list[Problem],
    ) -> None:
        self.given, self.env, self.problems = given, env, problems

    def get(self, field: str, parse: Callable[[str], T], default: T) -> T:
        found = self.given.get(field)
        if found is None:
            var = next(v for f, v in OPTIONS.values() if f == field)
            text = self.env.get(var)
            found = (var, _ENVIRONMENT, text) if text else None
        if found is None:
            return default
        setting, source, text = found
        try:
            return parse(text)
        except _Bad as exc:
            self.problems.append(Problem(setting, source, text, str(exc)))
            return default


def _config(read: _Reader, check_paths: bool) -> HookConfig:
    """The configuration (`check_paths`: the store, workbench and model given must be there,
    and the `signet` given runnable, as a hook command needs them)."""
    as_file = _file if check_paths else path_text
    db = read.get("db", as_file, None) or default_store(read.env)
    workbench = read.get("workbench", _workbench if check_paths else path_text, None)
    workbench = workbench or default_workbench(db)
    model = read.get("model", as_file, None)

    def signet(text: str) -> str:
        if check_paths and not runnable(text, read.env):
            raise _Bad(f"cannot be run (no executable file); {DEFAULT_SIGNET} on PATH runs")
        return text

    return HookConfig(
        db=db,
        workbench=workbench,
        model=model or os.path.join(os.path.dirname(workbench), SERVED_MODEL_FILE),
        signet=read.get("signet", signet, DEFAULT_SIGNET),
        limit=read.get("limit", lambda t: _number(t, int, 1), DEFAULT_LIMIT),
        max_tokens=read.get("max_tokens", lambda t: _number(t, int, 1), None),
        budget_ms=read.get("budget_ms", lambda t: _number(t, float, 0), DEFAULT_BUDGET_MS),
        tz=read.get("tz", _zone, None),
        resident=read.get("resident", _resident, RESIDENT_MODES[0]),
        idle_s=read.get("idle_s", lambda t: _number(t, float, 0, above=True), DEFAULT_IDLE_S),
        max_chars=read.get("max_chars", lambda t: _number(t, int, 1), DEFAULT_MAX_CHARS),
    )


def read_command(argv: Sequence[str], env: Mapping[str, str]) -> Command:
    """The wrapper's invocation: never fails; what cannot be used is listed in `problems`
    (module docstring). For a hook command the paths given are checked as well."""
    given, name, args, problems = scan_argv(argv)
    config = _config(_Reader(given, env, problems), check_paths=name in HOOK_COMMANDS)
    if name is not None and name not in HOOK_COMMANDS and args:
        problems.append(
            Problem(
                name, _COMMAND_LINE, " ".join(args), "takes no arguments (options go before it)"
            )
        )
    return Command(config, name, args, problems)


def session_zone(fields: Mapping[str, Any]) -> str:
    """The IANA zone of a session's fields (`HookConfig.zone_fields`): `tz`, else the
    machine's as a process with the `TZ` variable `tz_var` sees it (`timestamps.local_tz`)."""
    tz = fields.get("tz")
    if tz is not None:
        return str(tz)
    # here: zoneinfo loads where the ranking runs, not in the hook's process (start-up time)
    from signet_scorer.timestamps import local_tz

    var = fields.get("tz_var")
    return local_tz(tz_var=None if var is None else str(var))


def hook_session_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A session's fields as sent (`zone_fields` in place of the zone) as
    `signet_scorer.hook.rank.HookSession` takes them: the zone resolved (`session_zone`)."""
    out = {k: v for k, v in fields.items() if k != "tz_var"}
    out["tz"] = session_zone(fields)
    return out


def usage_error(command: Command) -> str:
    """What the wrapper says of an invocation it cannot run (no command, or a problem of a
    command of its own), its usage last."""
    lines = [str(p) for p in command.problems]
    if command.name is None:
        lines.append(f"missing the command: {' or '.join(HOOK_COMMANDS)}")
    return "\n".join(lines) + "\n" + USAGE


def parse_command(argv: Sequence[str], env: Mapping[str, str]) -> tuple[HookConfig, str, list[str]]:
    """The wrapper's options, the command and, for a hook command, Signet's arguments; a
    UsageError naming every problem (`read_command` is the lenient reading)."""
    command = read_command(argv, env)
    if command.name is None or command.problems:
        raise UsageError(usage_error(command).rstrip("\n"))
    return command.config, command.name, command.args


def default_db(env: Mapping[str, str]) -> tuple[str, str]:
    """The store when no option or variable names it, and why: Signet's own
    (`$SIGNET_PATH/memory/memories.db` when `SIGNET_PATH` moves Signet's `~/.agents`, else
    `DEFAULT_DB`)."""
    source = SIGNET_PATH_VAR if env.get(SIGNET_PATH_VAR) else "default"
    return default_store(env), source


def setting_sources(
    given: Mapping[str, str], env: Mapping[str, str]
) -> dict[str, tuple[str | None, str]]:
    """Each setting's text as the wrapper reads it and where it came from: {field: (text, source)}
    for the fields of `HookConfig`; the source is the option (`--db`), the variable
    (`SIGNET_BENCH_DB`), `SIGNET_PATH` or "default" (text None: the default the wrapper derives,
    a workbench beside the store, a model beside the workbench, `signet` on PATH). `given`:
    the options of the command line by field, as `parse_command` collects them."""
    out: dict[str, tuple[str | None, str]] = {}
    for option, (field, var) in OPTIONS.items():
        if given.get(field):
            out[field] = (given[field], option)
        elif env.get(var):
            out[field] = (env[var], var)
        else:
            out[field] = (None, "default")
    if out["db"][0] is None:
        out["db"] = default_db(env)
    return out
