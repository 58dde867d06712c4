"""The session-start hook's command line: its options (before the command, each also read
from an environment variable), the command and Signet's arguments after it. Standard library
only, and neither `dataclasses` nor `typing` at run time: this runs on every session start.

Commands: `session-start ARGS...` (Signet's hook with the scorer's order), `serve` (the
resident scorer in the foreground), `start` (the resident, detached), `stop`, `status` and
`doctor` (what the hook would use and whether it serves, `serving.hook.doctor`).
"""

from __future__ import annotations

from collections import namedtuple
from pathlib import Path

from serving.workbench import HOOK_LOG_FILE, SERVED_MODEL_FILE, default_workbench

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from serving.hook.resident_link import ResidentFiles

__all__ = [
    "COMMANDS",
    "DEFAULT_BUDGET_MS",
    "DEFAULT_DB",
    "DEFAULT_IDLE_S",
    "DEFAULT_LIMIT",
    "RESIDENT_MODES",
    "SESSION_START",
    "USAGE",
    "HookConfig",
    "UsageError",
    "default_db",
    "parse_command",
    "setting_sources",
]

SESSION_START = "session-start"
DOCTOR = "doctor"
COMMANDS = (SESSION_START, "serve", "start", "stop", "status", DOCTOR)
DEFAULT_DB = "~/.agents/memory/memories.db"
DEFAULT_LIMIT = 50  # Signet's own recallLimit
DEFAULT_BUDGET_MS = 5_000.0
DEFAULT_IDLE_S = 1800.0  # the resident scorer exits after this long without a request
RESIDENT_MODES = ("auto", "off")
USAGE = (
    "usage: signet-bench-hook [--db PATH] [--workbench PATH] [--model PATH] [--signet PATH]\n"
    "                         [--limit N] [--budget-ms MS] [--tz ZONE] [--resident auto|off]\n"
    "                         [--idle-s S] COMMAND\n"
    "commands:\n"
    "  session-start ARGS...  Signet's `signet hook session-start ARGS` (same stdin) with the\n"
    "                         scorer's order\n"
    "  serve                  the resident scorer, in the foreground\n"
    "  start                  the resident scorer, detached\n"
    "  stop                   stop the resident scorer\n"
    "  status                 whether the resident scorer runs, and what it holds\n"
    "  doctor [--json]        which store, workbench, model and signet the hook would use and\n"
    "                         why, whether the model scores a session of the store, the last\n"
    "                         session starts, and whether the scorer is serving (exit 0) or not\n"
)
_OPTIONS = {
    "--db": ("db", "SIGNET_BENCH_DB"),
    "--workbench": ("workbench", "SIGNET_BENCH_WORKBENCH"),
    "--model": ("model", "SIGNET_BENCH_MODEL"),
    "--signet": ("signet", "SIGNET_BENCH_SIGNET"),
    "--limit": ("limit", "SIGNET_BENCH_LIMIT"),
    "--budget-ms": ("budget_ms", "SIGNET_BENCH_BUDGET_MS"),
    "--tz": ("tz", "SIGNET_BENCH_TZ"),
    "--resident": ("resident", "SIGNET_BENCH_RESIDENT"),
    "--idle-s": ("idle_s", "SIGNET_BENCH_IDLE_S"),
}


class UsageError(ValueError):
    """The wrapper's own command line is wrong; the message says how."""


_FIELDS = "db workbench model signet limit budget_ms tz resident idle_s"


class HookConfig(namedtuple("HookConfig", _FIELDS)):
    """Where the store (`db`), `workbench`, `model` and `signet` are, the wrapper's limits
    (`limit`, `budget_ms`), the user's `tz` (None: the machine's, see `zone`), whether to use
    the resident scorer (`resident`: auto or off) and how long it waits for a request before
    it exits (`idle_s`)."""

    __slots__ = ()

    def zone(self) -> str:
        """The user's IANA time zone: `tz`, else the machine's. The machine's is looked up
        only when asked, once Signet runs: its module (`zoneinfo`) takes milliseconds to load,
        and a zone given by the user is checked before Signet runs, as every option is."""
        if self.tz is not None:
            return self.tz
        from serving.timestamps import local_tz

        return local_tz()

    @property
    def log(self) -> Path:
        return self.workbench.parent / HOOK_LOG_FILE

    @property
    def files(self) -> ResidentFiles:
        """The resident scorer's socket, lock and log, beside the workbench."""
        from serving.hook.resident_link import resident_files

        return resident_files(self.workbench.parent)

    def options(self) -> list[str]:
        """This configuration as the wrapper's options (for the resident it starts)."""
        values = (self.db, self.workbench, self.model, self.tz, self.idle_s)
        names = ("--db", "--workbench", "--model", "--tz", "--idle-s")
        pairs = zip(names, values, strict=True)
        return [item for name, v in pairs if v is not None for item in (name, str(v))]


def _number(name: str, text: str, kind: type, low: float, *, above: bool = False) -> object:
    try:
        value = kind(text)
    except ValueError:
        value = None
    ok = value is not None and (value > low if above else value >= low)
    if not ok or value == float("inf"):
        raise UsageError(f"{name}: expected a {kind.__name__} {'>' if above else '>='} {low:g}, "
                         f"got {text!r}")  # fmt: skip
    return value


def _config(given: Mapping[str, str], env: Mapping[str, str]) -> HookConfig:
    value = {k: given.get(k) or env.get(var) or None for k, var in _OPTIONS.values()}
    db = Path(value["db"] or DEFAULT_DB).expanduser()
    workbench = Path(value["workbench"]).expanduser() if value["workbench"] else None
    workbench = workbench or default_workbench(db)
    model = Path(value["model"]).expanduser() if value["model"] else None
    tz = value["tz"]
    if tz is not None:
        _check_zone(tz)
    resident = value["resident"] or RESIDENT_MODES[0]
    if resident not in RESIDENT_MODES:
        raise UsageError(f"--resident: expected one of {', '.join(RESIDENT_MODES)}, got "
                         f"{resident!r}")  # fmt: skip
    return HookConfig(
        db=db,
        workbench=workbench,
        model=model or workbench.parent / SERVED_MODEL_FILE,
        signet=value["signet"] or "signet",
        limit=_number("--limit", value["limit"] or str(DEFAULT_LIMIT), int, 1),
        budget_ms=_number("--budget-ms", value["budget_ms"] or str(DEFAULT_BUDGET_MS), float, 0),
        tz=tz,
        resident=resident,
        idle_s=_number("--idle-s", value["idle_s"] or str(DEFAULT_IDLE_S), float, 0, above=True),
    )


def _check_zone(tz: str) -> None:
    from zoneinfo import ZoneInfo

    try:
        ZoneInfo(tz)
    except (ValueError, OSError, KeyError):
        raise UsageError(f"--tz: {tz!r} is not a known IANA time zone") from None


def parse_command(argv: Sequence[str], env: Mapping[str, str]) -> tuple[HookConfig, str, list[str]]:
    """The wrapper's options (before the command), the command and, for `session-start`,
    Signet's arguments (after it)."""
    given: dict[str, str] = {}
    i = 0
    while i < len(argv) and argv[i] not in COMMANDS:
        name, eq, text = argv[i].partition("=")
        if name not in _OPTIONS:
            raise UsageError(f"unknown option {argv[i]!r} before {SESSION_START}\n{USAGE}")
        if not eq:
            if i + 1 >= len(argv):
                raise UsageError(f"{name} needs a value")
            text = argv[i + 1]
            i += 1
        given[_OPTIONS[name][0]] = text
        i += 1
    if i >= len(argv):
        raise UsageError(f"missing the command: {SESSION_START}\n{USAGE}")
    command, rest = argv[i], list(argv[i + 1 :])
    if command != SESSION_START and rest:
        raise UsageError(f"{command} takes no arguments (options go before it), got {rest!r}")
    return _config(given, env), command, rest


def default_db(env: Mapping[str, str]) -> tuple[str, str]:
    """The store when no option or variable names it, and why: Signet's own
    (`$SIGNET_PATH/memory/memories.db` when `SIGNET_PATH` moves Signet's `~/.agents`, else
    `DEFAULT_DB`)."""
    root = env.get("SIGNET_PATH")
    if root:
        return str(Path(root) / "memory" / "memories.db"), "SIGNET_PATH"
    return DEFAULT_DB, "default"


def setting_sources(given: Mapping[str, str], env: Mapping[str, str]) -> dict[str, tuple]:
    """Each setting's text as the wrapper reads it and where it came from: {field: (text, source)}
    for the fields of `HookConfig`; the source is the option (`--db`), the variable
    (`SIGNET_BENCH_DB`), `SIGNET_PATH` or "default" (text None: the default the wrapper derives,
    a workbench beside the store, a model beside the workbench, `signet` on PATH). `given`:
    the options of the command line by field, as `parse_command` collects them."""
    out: dict[str, tuple] = {}
    for option, (field, var) in _OPTIONS.items():
        if given.get(field):
            out[field] = (given[field], option)
        elif env.get(var):
            out[field] = (env[var], var)
        else:
            out[field] = (None, "default")
    if out["db"][0] is None:
        out["db"] = default_db(env)
    return out
