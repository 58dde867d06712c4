"""What the hooks' own processes import, so that their start stays cheap: both hook commands,
run as the harness runs them (the console script's `main`, a real stand-in `signet`, a real
resident scorer answering), import none of the modules that would add milliseconds to every
session start and every prompt. Every module the process imports is read from Python's own
`-X importtime` report; `-S` leaves out `site`, whose imports (an editable install's finders)
are the environment's, not the hook's."""

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
)
MAIN = "import sys\nfrom signet_scorer.hook.cli import main\nsys.exit(main())\n"
PROMPT = "the portfolio's quarterly review"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return small_world(tmp_path_factory.mktemp("hook-imports"))


def _imported(stderr: bytes) -> set[str]:
    """The modules a process imported, from its `-X importtime` lines on stderr."""
    lines = stderr.decode("utf-8", "replace").splitlines()
    rows = [line.split("|")[-1].strip() for line in lines if line.startswith("import time:")]
    return {r for r in rows if r and r != "imported package"}


def _heavy(modules: set[str]) -> set[str]:
    return {m for m in modules for h in HEAVY if m == h or m.startswith(f"{h}.")}


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
    imported = _imported(done.stderr)
    # the report is read, and the resident was reached
    assert "signet_scorer.hook.cli" in imported and "signet_scorer.hook.resident_link" in imported
    assert _heavy(imported) == set()
