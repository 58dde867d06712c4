"""The wrapper fails open on every problem of its own: each of its options and variables set to
a bad value (unknown options, options without a value, `--opt=value` forms, values out of
range, paths that are not there or not files, a `--signet` that cannot run, a corrupt model,
a stale or garbage resident socket and lock), alone and all at once. The real console entry
(`python -m signet_scorer.hook`) prints exactly what the stand-in `signet` prints for the same
harness arguments and stdin, byte for byte with its exit code, and records what was wrong in
the hook log of the workbench the settings resolve to (the default one when the workbench
setting is the bad one). Also: stdin that ends after Signet's old 2 s timeout reaches Signet
whole and is ranked under its own session key."""

from __future__ import annotations

import functools
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from signet_scorer.hook.config import read_command
from signet_scorer.hook.resident_link import resident_files, stop_resident
from signet_scorer.hook.signet import SignetResult
from signet_scorer.workbench import HOOK_LOG_FILE, default_store
from tests.scorer.hook_support import (
    HARNESS_ARGS,
    PROJECT,
    World,
    run_process,
    signet_prints,
    small_world,
    stdin_for,
)

FORMATS = list(HARNESS_ARGS)
PROMPT = "spacing margin breakpoint tailwind lightningcss portfolio carousel datagrid"
WRAPPER = [sys.executable, "-m", "signet_scorer.hook"]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return small_world(tmp_path_factory.mktemp("hook-fail-open"))


@dataclass(frozen=True)
class Place:
    """The folders of one run of the cases: a home (with Signet's `~/.agents/memory`), bad
    paths of every kind and a copy of the model made corrupt."""

    root: Path
    home: Path = field(init=False)
    folder: Path = field(init=False)
    corrupt: Path = field(init=False)
    empty: Path = field(init=False)
    plain: Path = field(init=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "home", self.root / "home")
        set_(self, "folder", self.root / "a-folder")
        set_(self, "corrupt", self.root / "corrupt.onnx")
        set_(self, "empty", self.root / "empty.onnx")
        set_(self, "plain", self.root / "plain-file")
        (self.home / ".agents" / "memory").mkdir(parents=True)
        self.folder.mkdir()
        self.empty.write_bytes(b"")
        self.plain.write_text("#!/bin/sh\necho not signet\n")  # not executable


def _options(world: World, drop: tuple[str, ...] = (), **over: str) -> list[str]:
    """The world's good options without `drop`, with `over` replacing some."""
    return world.options(**{**over, **dict.fromkeys(drop)})


@dataclass(frozen=True)
class Case:
    """Wrapper options (before `session-start`), variables, the harness's format, what the
    log's reason must hold (None: any reason) and where the log is ("world": the world's
    workbench, "store": beside the store, "home": Signet's default folder)."""

    options: list[str]
    env: dict[str, str] = field(default_factory=dict)
    needle: str | None = None
    log: str = "world"
    mode: str = "answer"
    resident: str | None = None  # a resident state to set up in the world's folder


def _cases(world: World, p: Place) -> dict[str, Case]:
    """At least 50 invocations, each with settings the wrapper cannot use."""
    o = functools.partial(_options, world)
    c: dict[str, Case] = {}
    bad_values = {
        "db": ["/nonexistent/memories.db", str(p.folder), str(p.plain) + "/x"],
        "workbench": ["/nonexistent/dir/workbench.duckdb", str(p.folder)],
        "model": ["/nonexistent/model.onnx", str(p.folder)],
        "signet": [str(p.folder), str(p.plain)],
        "limit": ["0", "-5", "abc", "1.5", "99999999999999999999x"],
        "max_tokens": ["0", "-100", "lots", "2.5", "1e3"],
        "budget_ms": ["abc", "-1", "nan", "inf", "1e999"],
        "tz": ["Mars/Olympus", "../../etc/passwd", "UTC+5 "],
        "resident": ["on", "OFF", "yes"],
        "idle_s": ["-1", "0", "soon", "nan"],
    }
    where = {"workbench": "store"}
    for name, values in bad_values.items():
        flag = "--" + name.replace("_", "-")
        for i, value in enumerate(values):
            c[f"{flag} {value}"] = Case(
                o(**{name: value}), needle=f"{flag} {value!r}", log=where.get(name, "world")
            )
            if i == 0:  # the same as --opt=value
                c[f"{flag}={value}"] = Case(
                    [*o(drop=(name,)), f"{flag}={value}"],
                    needle=f"{flag} {value!r}",
                    log=where.get(name, "world"),
                )
            if i == 1:  # and as the variable, the option not given
                var = "SIGNET_BENCH_" + name.upper()
                c[f"{var}={value}"] = Case(
                    o(drop=(name,)),
                    {var: value},
                    needle=f"{var}={value!r} (environment)",
                    log=where.get(name, "world"),
                )
    for name in ("db", "limit", "max_tokens", "tz"):  # the variable, and the option empty
        var, flag = "SIGNET_BENCH_" + name.upper(), "--" + name.replace("_", "-")
        c[f"{var} bad"] = Case(
            o(drop=(name,)),
            {
                var: "/nonexistent"
                if name == "db"
                else "0"
                if name in ("limit", "max_tokens")
                else "Mars/Olympus"
            },
            needle=var,
        )
        c[f"{flag}= (empty)"] = Case(
            [*o(drop=(name,)), f"{flag}="], needle=f"{flag} '' (command line): needs a value"
        )
    unknown = {
        "--budget 100": (["--budget", "100"], "--budget (command line): unknown option"),
        "--budget=100": (["--budget=100"], "--budget '100' (command line): unknown option"),
        "-x": (["-x"], "-x (command line): unknown option"),
        "--help": (["--help"], "--help (command line): unknown option"),
        "--version": (["--version"], "--version (command line): unknown option"),
        "stray word": (["extra"], "argument 'extra' (command line): not a wrapper option"),
        "a command before": (["serve"], "argument 'serve' (command line)"),
        "--db last": (["--db"], "--db (command line): needs a value"),
        "--limit last": (["--limit"], "--limit (command line): needs a value"),
        "--tz last": (["--tz"], "--tz (command line): needs a value"),
        "--max-tokens last": (["--max-tokens"], "--max-tokens (command line): needs a value"),
        "--tokens 100": (["--tokens", "100"], "--tokens (command line): unknown option"),
    }
    for name, (extra, needle) in unknown.items():
        c[name] = Case([*o(), *extra], needle=needle)
    c["unknown option first"] = Case(["--frobnicate", *o()], needle="--frobnicate")
    c["--help first"] = Case(["--help", *o()], needle="--help (command line): unknown option")
    c["--version first"] = Case(
        ["--version", *o()], needle="--version (command line): unknown option"
    )
    c["--signet missing, signet on PATH"] = Case(
        o(signet="/nonexistent/signet"), needle="signet on PATH runs"
    )
    c["SIGNET_BENCH_SIGNET missing"] = Case(
        o(drop=("signet",)),
        {"SIGNET_BENCH_SIGNET": "/nonexistent/signet"},
        needle="SIGNET_BENCH_SIGNET='/nonexistent/signet'",
    )
    c["bad db, no workbench: the default one"] = Case(
        o(drop=("workbench",), db="/nonexistent/memories.db"), needle="--db", log="home"
    )
    c["corrupt model"] = Case(o(model=str(p.corrupt)))
    c["empty model"] = Case(o(model=str(p.empty)))
    c["corrupt model, signet errs"] = Case(o(model=str(p.corrupt)), mode="error")
    c["bad limit, daemon offline"] = Case(o(limit="0"), needle="--limit", mode="offline")
    c["bad tz, signet crashes"] = Case(o(tz="Mars/Olympus"), needle="--tz", mode="crash")
    c["bad max tokens, daemon offline"] = Case(
        o(max_tokens="-1"), needle="--max-tokens", mode="offline"
    )
    for state in ("garbage socket", "stale socket", "garbage lock", "dead pid lock"):
        c[f"corrupt model, {state}"] = Case(
            [*o(model=str(p.corrupt), resident="auto"), "--idle-s", "30"], resident=state
        )
        c[f"bad budget, {state}"] = Case(
            o(resident="auto", budget_ms="soon"), needle="--budget-ms", resident=state
        )
    every_option = [
        "--db",
        "/nonexistent/memories.db",
        "--workbench",
        str(p.folder),
        "--model",
        str(p.corrupt),
        "--signet",
        "/nonexistent/signet",
        "--limit",
        "0",
        "--max-tokens",
        "0",
        "--budget-ms",
        "abc",
        "--tz",
        "Mars/Olympus",
        "--resident",
        "on",
        "--idle-s",
        "-1",
        "--budget",
        "1",
    ]
    every_var = {
        "SIGNET_BENCH_DB": str(p.folder),
        "SIGNET_BENCH_WORKBENCH": "/nonexistent/w.duckdb",
        "SIGNET_BENCH_MODEL": str(p.empty),
        "SIGNET_BENCH_SIGNET": str(p.plain),
        "SIGNET_BENCH_LIMIT": "x",
        "SIGNET_BENCH_MAX_TOKENS": "none",
        "SIGNET_BENCH_BUDGET_MS": "-5",
        "SIGNET_BENCH_TZ": "Nowhere/City",
        "SIGNET_BENCH_RESIDENT": "always",
        "SIGNET_BENCH_IDLE_S": "0",
    }
    c["every option bad"] = Case(every_option, needle="--idle-s '-1'", log="home")
    c["every variable bad"] = Case([], every_var, needle="SIGNET_BENCH_IDLE_S='0'", log="home")
    c["every option and variable bad"] = Case(
        every_option, every_var, needle="--budget", log="home"
    )
    return c


def _resident_state(folder: Path, state: str) -> None:
    """A resident's socket or lock left as a crash, a bug or a stranger leaves them."""
    files = resident_files(folder)
    for f in files[:2]:
        f.unlink(missing_ok=True)
    if state == "garbage socket":
        files.socket.write_bytes(b"\x00not a socket")
    elif state == "stale socket":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(files.socket))
        s.close()  # bound, never listening: connections are refused
    elif state == "garbage lock":
        files.lock.write_bytes(b"\xffgarbage\n")
    else:
        dead = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
        ).stdout
        files.lock.write_bytes(dead)


def _logged(path: Path, key: str, hook: str = "session-start") -> list[tuple[str, str]]:
    if not path.exists():
        return []
    con = sqlite3.connect(path)
    try:
        rows = con.execute(
            "SELECT outcome, reason FROM hook_invocations WHERE session_key = ? AND hook = ?",
            [key, hook],
        ).fetchall()
    finally:
        con.close()
    return rows


@pytest.mark.parametrize("hook", ["session-start", "user-prompt-submit"])
def test_every_bad_setting_prints_exactly_what_signet_prints(world, tmp_path, hook):
    """The acceptance test: at least 50 invocations with settings the wrapper cannot use, for
    each hook command (the prompt's stdin holds a prompt the store's memories match)."""
    p = Place(tmp_path)
    p.corrupt.write_bytes(world.model.read_bytes()[:5000])  # an ONNX file cut short
    cases = _cases(world, p)
    assert len(cases) >= 50, len(cases)
    logs = {
        "world": world.workbench.parent / HOOK_LOG_FILE,
        "store": world.db.parent / HOOK_LOG_FILE,
        "home": p.home / ".agents" / "memory" / HOOK_LOG_FILE,
    }
    path = f"{world.signet.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    failed = []
    for i, (name, case) in enumerate(cases.items()):
        fmt = FORMATS[i % len(FORMATS)]
        key = f"fail-open-{i}"
        stdin = stdin_for(key, prompt=PROMPT if hook != "session-start" else None)
        stdin = stdin if i % 7 else b"  not json at all "
        env = world.env(HOME=str(p.home), PATH=path, SIGNET_STANDIN_MODE=case.mode, **case.env)
        if case.resident:
            _resident_state(world.model.parent, case.resident)
        try:
            got = run_process([*WRAPPER, *case.options, hook, *HARNESS_ARGS[fmt]], stdin, env)
        finally:
            if case.resident:  # the wrapper may have started one after printing
                stop_resident(resident_files(world.model.parent))
        signet = signet_prints(world, HARNESS_ARGS[fmt], stdin, env, hook)
        if got != signet:
            failed.append((name, fmt, got, signet))
            continue
        if i % 7:  # a readable session key: the row is found by it
            rows = _logged(logs[case.log], key, hook)
            ok = len(rows) == 1 and rows[0][0] == "signet" and rows[0][1]
            if not ok or (case.needle is not None and case.needle not in rows[0][1]):
                failed.append((name, "log", case.log, rows))
    assert failed == []
    assert not any(p.home.glob(".cache/**/*")), "nothing written under HOME"


def test_a_bad_setting_with_args_outside_signets_table_still_runs_signet_as_asked(world):
    env = world.env(SIGNET_BENCH_TZ="Mars/Olympus")
    for args in (["-H", "x", "--unknown"], [], ["--json"], ["-H"]):
        hook = run_process(
            [*WRAPPER, *_options(world, drop=("tz",)), "session-start", *args],
            stdin_for("asked"),
            env,
        )
        assert hook == signet_prints(world, args, stdin_for("asked"), env) and hook.code == 1


# --- the settings as read ------------------------------------------------------------------------


def test_reading_never_fails_and_keeps_the_defaults_for_what_it_cannot_use(tmp_path):
    env = {
        "SIGNET_BENCH_LIMIT": "0",
        "SIGNET_BENCH_TZ": "Mars/Olympus",
        "HOME": str(tmp_path),
        "SIGNET_BENCH_MAX_TOKENS": "0",
    }
    cmd = read_command(["--budget", "100", "--idle-s=-1", "session-start", "-H", "x"], env)
    assert cmd.name == "session-start" and cmd.args == ["-H", "x"]
    assert [str(x) for x in cmd.problems] == [
        "--budget (command line): unknown option",
        "argument '100' (command line): not a wrapper option",
        "SIGNET_BENCH_LIMIT='0' (environment): expected an integer >= 1",
        "SIGNET_BENCH_MAX_TOKENS='0' (environment): expected an integer >= 1",
        "SIGNET_BENCH_TZ='Mars/Olympus' (environment): not a known IANA time zone",
        "--idle-s '-1' (command line): expected a number > 0",
    ]
    cfg = cmd.config
    assert (cfg.limit, cfg.max_tokens, cfg.tz, cfg.idle_s) == (50, None, None, 1800.0)
    assert cfg.choice == (50, None)  # today's choice: Signet's 50, no token cap
    good = read_command(["--limit", "15", "--max-tokens", "3000", "session-start"], {})
    assert good.problems == [] and good.config.choice == (15, 3000)
    assert cfg.db == str(tmp_path / ".agents" / "memory" / "memories.db")
    assert read_command(["--db", "session-start"], env).problems[0].why == "needs a value"
    assert read_command(["--limit", "2", "serve"], {}).problems == []
    assert read_command(["--db", "x"], {}).name is None


def test_signet_path_moves_the_default_store(tmp_path):
    moved = {"SIGNET_PATH": str(tmp_path / "signet"), "HOME": str(tmp_path / "home")}
    assert default_store(moved) == str(tmp_path / "signet" / "memory" / "memories.db")
    assert default_store({**moved, "SIGNET_PATH": ""}) == str(
        tmp_path / "home" / ".agents" / "memory" / "memories.db"
    )
    cfg = read_command(["status"], moved).config
    assert cfg.db == str(tmp_path / "signet" / "memory" / "memories.db")
    assert cfg.workbench == str(tmp_path / "signet" / "memory" / "workbench.duckdb")
    assert cfg.model == str(tmp_path / "signet" / "memory" / "model.onnx")
    given = read_command(["--db", str(tmp_path / "x.db"), "status"], moved).config
    assert given.db == str(tmp_path / "x.db")


def test_the_hook_serves_the_store_under_signet_path(world, tmp_path):
    """With `SIGNET_PATH` and no store, workbench or model given, the wrapper ranks with the
    store and model there and logs beside them."""
    memory = tmp_path / "signet" / "memory"
    memory.mkdir(parents=True)
    (memory / "memories.db").write_bytes(world.db.read_bytes())
    (memory / "model.onnx").write_bytes(world.model.read_bytes())
    env = world.env(SIGNET_PATH=str(tmp_path / "signet"), HOME=str(tmp_path / "home"))
    opts = _options(world, drop=("db", "workbench", "model"))
    hook = run_process(
        [*WRAPPER, *opts, "session-start", *HARNESS_ARGS["plain"]], stdin_for("moved"), env
    )
    assert hook.code == 0 and hook.stderr == b""
    assert _logged(memory / HOOK_LOG_FILE, "moved") == [("scorer", None)]


# --- stdin that arrives late --------------------------------------------------------------------


def test_stdin_that_ends_late_reaches_signet_whole_and_is_ranked_under_its_key(world, tmp_path):
    """A harness that writes its stdin after more than 2 s (Signet 0.145.7's CLI waits for the
    end of file, and so does the wrapper): Signet gets it whole, the wrapper ranks under its
    session key and project (`cwd`, no `--project` given)."""
    key = "late-stdin"
    env = world.env(SIGNET_STANDIN_STATE=str(tmp_path))
    argv = [*WRAPPER, *_options(world), "session-start", "-H", "claude-code"]
    read, write = os.pipe()
    data = stdin_for(key)

    def harness() -> None:  # the scenario: the harness writes late
        time.sleep(2.5)
        os.write(write, data[:10])
        time.sleep(0.2)
        os.write(write, data[10:])
        os.close(write)

    writer = threading.Thread(target=harness)
    with subprocess.Popen(
        argv, stdin=read, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as proc:
        os.close(read)
        writer.start()
        out, err = proc.communicate(timeout=120)
    writer.join()
    got = SignetResult(out, err, proc.returncode)
    calls = (tmp_path / "calls.jsonl").read_text().splitlines()
    assert len(calls) == 1 and f'"key": "{key}"' in calls[0]  # Signet read the whole stdin
    assert got.code == 0 and got.stderr == b"" and got.stdout
    con = sqlite3.connect(world.workbench.parent / HOOK_LOG_FILE)
    row = con.execute(
        "SELECT outcome, reason, project FROM hook_invocations WHERE session_key = ?", [key]
    ).fetchall()
    con.close()
    assert row == [("scorer", None, PROJECT)]


# --- onnxruntime says nothing and writes nothing ----------------------------------------------

SCORE_PROBE = """
import json, sys
from signet_scorer.scorer import Scorer
scorer = Scorer.open(sys.argv[1], threads=1)
assert scorer.ready, scorer.reason
print(json.dumps(scorer.score_request(json.loads(sys.stdin.read()))[:3]))
"""


@pytest.mark.parametrize("home", ["a folder", "unwritable"])
def test_loading_and_scoring_a_model_writes_nothing_and_prints_nothing(world, tmp_path, home):
    """onnxruntime's telemetry (a device id under `~/.cache`, and a warning on stderr when it
    cannot write it) stays off even when the environment asks for it."""
    from tests.scorer.conftest import request

    place = tmp_path / "home"
    if home == "a folder":
        place.mkdir()
    else:
        place.write_text("a file: nothing can be made under it")
    env = {**os.environ, "HOME": str(place), "ORT_DISABLE_TELEMETRY": "0"}
    env.pop("XDG_CACHE_HOME", None)
    import json

    done = subprocess.run(
        [sys.executable, "-c", SCORE_PROBE, str(world.model)],
        input=json.dumps(request(n=8)).encode(),
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert len(json.loads(done.stdout)) == 3
    if home == "a folder":
        assert list(place.rglob("*")) == []


def test_the_hook_ranking_in_process_under_an_unwritable_home_prints_only_signets_bytes(
    world, tmp_path
):
    home = tmp_path / "home"
    home.write_text("not a folder")
    env = world.env(HOME=str(home), ORT_DISABLE_TELEMETRY="0", SIGNET_STANDIN_STATE=str(tmp_path))
    hook = run_process(
        [*WRAPPER, *_options(world), "session-start", *HARNESS_ARGS["json"]],
        stdin_for("ro-home"),
        env,
    )
    assert hook.code == 0 and hook.stderr == b""
    assert _logged(world.workbench.parent / HOOK_LOG_FILE, "ro-home") == [("scorer", None)]
