"""What the hooks' own processes import, so that their start stays cheap: both hook commands,
run as the harness runs them (the console script's `main`, a real stand-in `signet`, a real
resident scorer answering), import none of the modules that would add milliseconds to every
session start and every prompt, and before Signet's command is started none of those that
only Signet's answer needs (what loads while Signet works overlaps with it). Every module the
process imports is read from Python's own `-X importtime` report, in the order they load, with
a line where Signet's command is spawned (an audit hook on `os.posix_spawn`); `-S` leaves out
`site`, whose imports (an editable install's finders) are the environment's, not the hook's."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import signet_scorer
from signet_scorer.hook.prompt import HEADING
from tests.scorer.hook_support import (
    HARNESS_ARGS,
    ServedResident,
    run_process,
    signet_prints,
    small_world,
    stdin_for,
)

# Heavy for a hook's process: the ranking's libraries (the resident holds them), modules whose
# import builds many classes or reads files (`typing`, `dataclasses`, `socket`'s and `signal`'s
# enums, `zoneinfo` and `sysconfig`, the `idna` codec), `subprocess` and what it loads (Signet
# is started by `os.posix_spawn`), what `python -m` and HTTPS would load, the workbench, and
# the hook log's `sqlite3` (the resident that answered writes the record).
HEAVY = (
    "numpy",
    "onnxruntime",
    "orjson",
    "typing",
    "dataclasses",
    "zoneinfo",
    "sysconfig",
    "socket",
    "signal",
    "encodings.idna",
    "subprocess",
    "threading",
    "selectors",
    "locale",
    "contextlib",
    "ssl",
    "http",
    "email",
    "urllib.request",
    "runpy",
    "importlib.util",
    "importlib.metadata",
    "logging",
    "argparse",
    "inspect",
    "signet_bench",
    "sqlite3",
    "signet_scorer.hook.log",
    "pathlib",  # with `fnmatch`, `urllib.parse` and `ipaddress`: paths are `os.path` strings
)
# Not before Signet's command is spawned: `json` needs `re` (and its `enum`), but only once
# Signet has answered; the daemon's address is parsed (`urllib.parse`) while it works.
AFTER_SPAWN = ("re", "enum", "fnmatch", "urllib", "ipaddress", "json", "datetime")
SPAWNED = "signet spawned"  # the line the audit hook writes
MAIN = (
    "import sys\n"
    "def spawned(event, args):\n"
    "    if event == 'os.posix_spawn':\n"
    f"        sys.stderr.write({SPAWNED!r} + '\\n')\n"
    "sys.addaudithook(spawned)\n"
    "from signet_scorer.hook.cli import main\n"
    "sys.exit(main())\n"
)
PROMPT = "the portfolio's quarterly review"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return small_world(tmp_path_factory.mktemp("hook-imports"))


def _imported(stderr: bytes) -> tuple[set[str], set[str]]:
    """The modules a process imported, from its `-X importtime` lines on stderr: (all of
    them, those imported before Signet's command was spawned)."""
    lines = stderr.decode("utf-8", "replace").splitlines()
    spawned = lines.index(SPAWNED) if SPAWNED in lines else len(lines)
    rows = [(i, line.split("|")[-1].strip()) for i, line in enumerate(lines)]
    rows = [(i, r) for i, r in rows if lines[i].startswith("import time:")]
    rows = [(i, r) for i, r in rows if r and r != "imported package"]
    return {r for _, r in rows}, {r for i, r in rows if i < spawned}


def _heavy(modules: set[str], heavy: tuple[str, ...] = HEAVY) -> set[str]:
    return {m for m in modules for h in heavy if m == h or m.startswith(f"{h}.")}


@pytest.mark.parametrize("hook", ["session-start", "user-prompt-submit"])
def test_the_hooks_processes_import_nothing_heavy(world, hook):
    # the scorer's folder and its dependencies' (for the resident's code fingerprint), no `site`
    folders = {str(Path(signet_scorer.__file__).parents[1])}
    folders |= {p for p in sys.path if p.endswith("site-packages")}
    env = world.env(
        PYTHONPATH=os.pathsep.join(sorted(folders)), SIGNET_DAEMON_URL="http://127.0.0.1:9"
    )
    args = HARNESS_ARGS["plain"]
    prompt = PROMPT if hook == "user-prompt-submit" else None
    resident = ServedResident(world)
    try:
        argv = [sys.executable, "-S", "-X", "importtime", "-c", MAIN]
        # the machine's zone, as by default (a `--tz` given is checked by `zoneinfo` at once)
        argv += [*world.options(resident="auto", tz=None), hook, *args]
        done = run_process(argv, stdin_for(f"imports-{hook}", prompt=prompt), env)
    finally:
        resident.close()
    signet = signet_prints(world, args, stdin_for(f"imports-{hook}", prompt=prompt), env, hook)
    assert done.code == 0, done.stderr[-2000:]
    assert done.stdout != signet.stdout  # the scorer's output: the path measured is the served one
    if prompt is not None:
        assert HEADING.encode() in done.stdout
    imported, before = _imported(done.stderr)
    # the report is read, Signet was spawned once the hook's modules had loaded, and the
    # resident was reached
    assert "signet_scorer.hook.cli" in before and "signet_scorer.hook.resident_link" in imported
    assert before < imported and "json" in imported
    assert _heavy(imported) == set()
    assert _heavy(before, AFTER_SPAWN) == set()
