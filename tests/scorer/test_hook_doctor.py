"""`signet-bench-hook doctor`, run as a process on real stores, models and hook logs: on a
machine with nothing, on a store without a model, with a model in the place its verdict names,
after session starts that were served and that failed open, and with bad settings (reported,
never raised). And the rule of where each setting comes from (`config.setting_sources`)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from signet_bench.bench.hook_speed import store_answer
from signet_bench.bench.signet_standin import write_standin
from signet_bench.learn.export import model_bytes
from signet_bench.learn.model.checkpoint import CheckpointMeta
from signet_bench.learn.model.params import init_params
from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.world.synth.build import build_persona_store
from signet_scorer.hook.config import DEFAULT_DB, default_db, setting_sources
from signet_scorer.hook.doctor import doctor_args
from tests.scorer.hook_support import HARNESS_ARGS, HOOK, PROJECT, run_process, stdin_for

SESSIONS = 3


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A light store with a few sessions of the simulated daemon (no model, no workbench)."""
    db = tmp_path_factory.mktemp("doctor-store") / "memories.db"
    build_persona_store("light", db, seed=7, n_memories=60)
    simulate(db, SESSIONS, SimOptions(scorer="none", seed=7))
    assert not db.with_name(db.name + ".predictor").exists()
    return db


@pytest.fixture(scope="module")
def signet_bin(tmp_path_factory) -> Path:
    """A folder holding the stand-in `signet`."""
    return write_standin(tmp_path_factory.mktemp("doctor-bin")).parent


def _env(home: Path, signet_bin: Path, **extra: str) -> dict[str, str]:
    """A user's environment: this HOME, the stand-in `signet` on PATH, no Signet variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET")}
    path = os.pathsep.join([str(signet_bin), str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    return {**env, "HOME": str(home), "PATH": path, **extra}


def _doctor(env, *options: str, json_out: bool = False):
    argv = [sys.executable, "-m", "signet_scorer.hook", *options, "doctor"]
    return run_process([*argv, "--json"] if json_out else argv, b"", env)


def _report(env, *options: str) -> tuple[dict, int]:
    done = _doctor(env, *options, json_out=True)
    assert done.stderr == b"", done.stderr
    return json.loads(done.stdout), done.code


def _verdict(stdout: bytes) -> str:
    last = stdout.decode().splitlines()[-1]
    assert last.startswith("verdict:")
    return last.removeprefix("verdict:").strip()


def _install(home: Path, store: Path, *, model: bool) -> Path:
    """Signet's store in its default place under `home` and, with `model`, a workbench and a
    model where the verdict's command puts them (`<db>.predictor/`); the store's path."""
    db = home / ".agents" / "memory" / "memories.db"
    db.parent.mkdir(parents=True)
    shutil.copy(store, db)
    if model:
        folder = db.with_name(db.name + ".predictor")
        folder.mkdir()
        duckdb.connect(str(folder / "workbench.duckdb")).close()
        (folder / "model.onnx").write_bytes(model_bytes(init_params(seed=1), CheckpointMeta()))
    return db


def _files(root: Path) -> set[str]:
    """The files under `root`, but the shared-memory and write-ahead files SQLite keeps beside
    a store in WAL mode for any reader (Signet's daemon has them open all the time)."""
    return {
        str(p.relative_to(root)) for p in root.rglob("*") if not p.name.endswith(("-shm", "-wal"))
    }


# --- the settings' sources ----------------------------------------------------------------------


def test_each_setting_comes_from_its_option_else_its_variable_else_the_default():
    env = {
        "SIGNET_BENCH_LIMIT": "7",
        "SIGNET_BENCH_TZ": "",
        "SIGNET_PATH": "/srv/sig",
        "SIGNET_BENCH_MODEL": "/env/model.onnx",
    }
    got = setting_sources({"model": "/opt/m.onnx", "tz": ""}, env)
    assert got["model"] == ("/opt/m.onnx", "--model")  # the option wins
    assert got["limit"] == ("7", "SIGNET_BENCH_LIMIT")
    assert got["tz"] == (None, "default")  # empty, as the hook reads it: not set
    assert got["db"] == ("/srv/sig/memory/memories.db", "SIGNET_PATH")
    assert got["workbench"] == (None, "default") and got["signet"] == (None, "default")
    home = {"HOME": "/home/u"}
    expected = (str(Path(DEFAULT_DB.replace("~", "/home/u"))), "default")
    assert setting_sources({}, home)["db"] == expected == default_db(home)
    assert setting_sources({"db": "/a.db"}, env)["db"] == ("/a.db", "--db")
    assert setting_sources({}, {**env, "SIGNET_BENCH_DB": "/b.db"})["db"] == (
        "/b.db",
        "SIGNET_BENCH_DB",
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["doctor"], ([], [])),
        (
            ["--db", "/x.db", "--tz=UTC", "doctor", "--json"],
            (["--db", "/x.db", "--tz=UTC"], ["--json"]),
        ),
        (["--budget", "100", "doctor"], (["--budget", "100"], [])),
        # a command's name is never an option's value (config.read_command)
        (["--db", "doctor", "status"], (["--db"], ["status"])),
        (["session-start", "-H", "claude-code", "--project", "doctor"], None),
        (["--limit"], None),
    ],
)
def test_the_doctor_command_is_told_from_the_hooks_own(argv, expected):
    assert doctor_args(argv) == expected


# --- what a user sees ---------------------------------------------------------------------------


def test_a_machine_with_nothing_is_told_where_the_store_should_be(tmp_path, signet_bin):
    home = tmp_path / "home"
    home.mkdir()
    done = _doctor(_env(home, signet_bin))
    assert (done.code, done.stderr) == (1, b"")
    out = done.stdout.decode()
    db = home / ".agents" / "memory" / "memories.db"
    assert f"no Signet store at {db}" in out
    assert f"the default, Signet's {DEFAULT_DB}" in out
    assert "found: " + str((signet_bin / "signet").resolve()) in out
    verdict = _verdict(done.stdout)
    assert verdict.startswith(f"no Signet store at {db}") and "SIGNET_PATH" in verdict
    assert _files(home) == set()  # doctor writes nothing


def test_a_missing_signet_is_the_first_thing_to_fix(tmp_path, signet_bin):
    home = tmp_path / "home"
    home.mkdir()
    done = _doctor(_env(home, signet_bin), "--signet", str(tmp_path / "no-signet"))
    assert done.code == 1
    said = f"fix --signet '{tmp_path / 'no-signet'}' (command line): cannot be run"
    assert _verdict(done.stdout).startswith(said)


def test_signet_path_moves_the_store_as_it_moves_signets_folder(tmp_path, signet_bin, store):
    root = tmp_path / "signet-home"
    (root / "memory").mkdir(parents=True)
    shutil.copy(store, root / "memory" / "memories.db")
    report, code = _report(_env(tmp_path, signet_bin, SIGNET_PATH=str(root)))
    db = {r["field"]: r for r in report["settings"]}["db"]
    assert (db["source"], db["value"]) == ("SIGNET_PATH", str(root / "memory" / "memories.db"))
    assert report["store"]["exists"] and report["store"]["sessions"] == SESSIONS
    assert code == 1 and report["model"]["problem"].startswith("no model at ")


def test_a_store_without_a_model_is_told_the_command_that_puts_one_where_the_hook_looks(
    tmp_path, signet_bin, store
):
    home = tmp_path / "home"
    db = _install(home, store, model=False)
    env = _env(home, signet_bin)
    done = _doctor(env)
    assert (done.code, done.stderr) == (1, b"")
    out = done.stdout.decode()
    assert f"no model at {db.parent / 'model.onnx'}" in out
    assert f"opens read-only: 60 memories, {SESSIONS} sessions" in out
    p = f"{db}.predictor"
    assert _verdict(done.stdout).endswith(
        f"signet-bench train --db {db} --out {p} && "
        f"signet-bench export --model {p}/model.sbm --out {p}/model.onnx"
    )
    # what those commands leave (a workbench and a model in <db>.predictor) is what the hook
    # then finds by default
    shutil.rmtree(home)
    _install(home, store, model=True)
    report, code = _report(env)
    paths = {r["field"]: r["value"] for r in report["settings"]}
    assert (paths["workbench"], paths["model"]) == (f"{p}/workbench.duckdb", f"{p}/model.onnx")
    assert code == 0 and report["serving"], report["verdict"]


def _latest_session(db: Path) -> tuple[str, int]:
    """The store's latest session key and how many memories it injected."""
    con = sqlite3.connect(db)
    key = con.execute(
        "SELECT session_key FROM session_memories GROUP BY session_key "
        "ORDER BY MAX(created_at) DESC LIMIT 1"
    ).fetchone()[0]
    n = con.execute(
        "SELECT COUNT(*) FROM session_memories WHERE session_key = ? AND was_injected = 1", [key]
    ).fetchone()[0]
    con.close()
    return key, n


def test_a_model_ranks_the_stores_latest_session_by_the_hooks_ranking(tmp_path, signet_bin, store):
    home = tmp_path / "home"
    db = _install(home, store, model=True)
    env = _env(home, signet_bin)
    before = _files(home / ".agents")
    done = _doctor(env, "--resident", "off")
    assert (done.code, done.stderr) == (0, b""), done.stdout.decode()
    key, injected = _latest_session(db)
    assert injected > 0
    assert f"scored {injected} memories of session {key} (" in done.stdout.decode()
    report, code = _report(env, "--resident", "off")
    scoring = report["scoring"]
    assert code == 0 and (scoring["session_key"], scoring["memories"]) == (key, injected)
    assert scoring["pool"] >= injected and scoring["injected"] == injected
    assert report["model"]["model_version"] and report["resident"] == {"mode": "off"}
    assert report["verdict"].startswith("the scorer is ready: no session start has come")
    assert _files(home / ".agents") == before  # nothing written: no log, no resident


def _hook(env, db: Path, key: str, *options: str):
    """One session start through the hook (the stand-in answering from the store)."""
    argv = [*HOOK, "--resident", "off", *options, "session-start"]
    return run_process([*argv, *HARNESS_ARGS["plain"]], stdin_for(key), env)


def test_the_last_session_starts_say_served_or_failed_open_and_why(tmp_path, signet_bin, store):
    home = tmp_path / "home"
    db = _install(home, store, model=True)
    answer = tmp_path / "answer.json"
    now = datetime(2026, 4, 20, 9, 30, tzinfo=UTC)
    answer.write_text(json.dumps(store_answer(db, PROJECT, now, 20)), encoding="utf-8")
    env = _env(home, signet_bin, SIGNET_STANDIN_ANSWER=str(answer))
    assert _hook(env, db, "first").code == 0
    missing = tmp_path / "gone.onnx"
    assert _hook(env, db, "second", "--model", str(missing)).code == 0
    done = _doctor(env, "--resident", "off")
    assert done.code == 0, done.stdout.decode()
    lines = done.stdout.decode().splitlines()
    at = lines.index(next(x for x in lines if x.startswith("log:")))
    assert "the last 2 session starts, newest first" in lines[at]
    assert "second" in lines[at + 1]
    why = f"--model '{missing}' (command line): no such file"
    assert f"failed open (Signet's output): {why}" in lines[at + 1]
    assert "first" in lines[at + 2]
    assert "served: the scorer's order, 20 of 20 memories" in lines[at + 2]
    assert _verdict(done.stdout).endswith(f"kept Signet's order: {why}")
    assert _hook(env, db, "third").code == 0
    done = _doctor(env, "--resident", "off")
    assert (done.code, _verdict(done.stdout)) == (0, "the scorer is serving")


@pytest.mark.parametrize(
    ("options", "variables", "named"),
    [
        ([], {"SIGNET_BENCH_TZ": "Mars/Olympus"}, "SIGNET_BENCH_TZ='Mars/Olympus' (environment)"),
        ([], {"SIGNET_BENCH_LIMIT": "0"}, "SIGNET_BENCH_LIMIT='0' (environment): expected an"),
        ([], {"SIGNET_BENCH_RESIDENT": "on"}, "SIGNET_BENCH_RESIDENT='on' (environment)"),
        ([], {"SIGNET_BENCH_BUDGET_MS": "abc"}, "SIGNET_BENCH_BUDGET_MS='abc' (environment)"),
        (["--idle-s", "-1"], {}, "--idle-s '-1' (command line): expected a number > 0"),
        (["--budget", "100"], {}, "does not know from its options (--budget (command line)"),
    ],
)
def test_bad_settings_are_reported_with_where_they_were_set(
    tmp_path, signet_bin, store, options, variables, named
):
    home = tmp_path / "home"
    _install(home, store, model=True)
    done = _doctor(_env(home, signet_bin, **variables), *options)
    assert (done.code, done.stderr) == (1, b"")
    assert named in _verdict(done.stdout)
    assert "Signet's output unchanged" in _verdict(done.stdout)
    assert "BAD: " in done.stdout.decode()
    # the rest is still diagnosed with the good settings
    assert "scored " in done.stdout.decode()


@pytest.mark.parametrize("what", ["other-sqlite", "empty-store", "garbage-model", "log"])
def test_broken_files_are_reported_not_raised(tmp_path, signet_bin, store, what):
    home = tmp_path / "home"
    db = _install(home, store, model=True)
    folder = db.with_name(db.name + ".predictor")
    expected = {
        "other-sqlite": (db, b"not a store\n", "is not a Signet store"),
        "empty-store": (db, b"", "not a SQLite file"),
        "garbage-model": (folder / "model.onnx", b"\x00garbage", "does not load"),
        "log": (folder / "hook_injections.db", b"SQLite format 3\x00 cut", "cannot be read"),
    }[what]
    path, data, said = expected
    if what == "other-sqlite":
        con = sqlite3.connect(db.with_name("other.db"))
        con.execute("CREATE TABLE notes (x)")
        con.close()
        db.unlink()
        db.with_name("other.db").rename(db)
    else:
        path.write_bytes(data)
    done = _doctor(_env(home, signet_bin), "--resident", "off")
    assert done.stderr == b"" and said in done.stdout.decode(), done.stdout.decode()
    assert done.code == (0 if what == "log" else 1)
