"""The session-start hook's resident scorer: real processes (`signet-bench-hook serve`, the
console hook, the stand-in `signet`), a real Unix socket, real onnxruntime.

With a resident running the hook prints, records and ranks exactly what it does in-process;
when the resident is not running, was killed (before or in the middle of a session start),
hangs, or is stale, the output is the in-process one, byte for byte, and every failure still
prints what Signet prints. A model replaced on disk is served from the next session start, the
resident exits on its own when idle, and the hook's own process never loads numpy or
onnxruntime when the resident answers."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import sys
import threading

import pytest

from signet_bench.store.hook_log import read_hook_injections, read_hook_invocations
from signet_scorer.hook.cli import run_hook
from signet_scorer.hook.rank import HookSession, session_basis
from signet_scorer.hook.resident import Resident, _Connection
from signet_scorer.hook.resident_link import (
    PROTOCOL,
    ResidentLink,
    code_fingerprint,
    resident_files,
    resident_status,
    stop_resident,
)
from signet_scorer.hook.run import save_record
from tests.scorer.hook_support import (
    HARNESS_ARGS,
    NOW,
    ServedResident,
    World,
    hook_prints,
    run_process,
    signet_prints,
    small_world,
    standin_runner,
    stdin_for,
)
from tests.scorer.test_hook import FAILURES

FORMATS = list(HARNESS_ARGS)
AUTO = {"resident": "auto"}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return small_world(tmp_path_factory.mktemp("hook-resident"))


@pytest.fixture
def resident(world):
    """A resident scorer for the world, stopped (and checked gone) after the test."""
    served = ServedResident(world)
    yield served
    assert served.close() == 0
    assert resident_status(resident_files(world.model.parent)) == {"running": False}


def _requests(world: World) -> int:
    return resident_status(resident_files(world.model.parent))["requests"]


def _recorded(world: World, key: str) -> tuple[list, list]:
    """What the log holds of a session key: its invocation's outcome fields and its rows."""
    runs = read_hook_invocations(world.workbench).filter(session_key=key)
    rows = read_hook_injections(world.workbench).filter(session_key=key).sort("rank")
    fields = ["outcome", "reason", "model_version", "pool", "injected", "context_rule"]
    return runs.select(fields).rows(), rows.select(["memory_id", "rank", "score"]).rows()


def _in_process(world: World, fmt: str, key: str, **options: str):
    """What the hook prints ranking in its own process (no resident), and what it recorded."""
    got = hook_prints(world, HARNESS_ARGS[fmt], stdin_for(key), world.env(), **options)
    return got, _recorded(world, key)


# --- the same output ----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_resident_ranks_prints_and_records_as_the_hook_does_in_process(world, resident, fmt):
    before = _requests(world)
    served = hook_prints(world, HARNESS_ARGS[fmt], stdin_for(f"res-{fmt}"), world.env(), **AUTO)
    # prepare, rerank, record and this status: it ranked and recorded it
    assert _requests(world) == before + 4
    alone, (runs, rows) = _in_process(world, fmt, f"own-{fmt}")
    assert served == alone and served.code == 0 and served.stderr == b""
    assert served.stdout != signet_prints(world, HARNESS_ARGS[fmt], stdin_for("x"), world.env())
    assert _recorded(world, f"res-{fmt}") == (runs, rows)
    assert runs[0][:2] == ("scorer", None) and len(rows) == 40


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("failure", list(FAILURES))
def test_every_failure_prints_what_signet_prints_with_the_resident_up(
    world, resident, failure, fmt
):
    env_extra, options = FAILURES[failure]
    stdin = stdin_for(f"res-fail-{failure}-{fmt}")
    env = world.env(**env_extra)
    hook = hook_prints(world, HARNESS_ARGS[fmt], stdin, env, **AUTO, **options)
    assert hook == signet_prints(world, HARNESS_ARGS[fmt], stdin, env)


def test_the_resident_reports_a_store_it_cannot_open_as_the_hook_would(world, resident, tmp_path):
    key = "res-no-store"
    text = tmp_path / "memories.db"
    text.write_text("not a store")
    hook_prints(world, HARNESS_ARGS["plain"], stdin_for(key), world.env(), **AUTO, db=str(text))
    (run,), _ = _recorded(world, key)
    assert run[:2] == ("signet", f"cannot open the store {text}: {text}: not a SQLite file")


def test_the_hooks_own_process_loads_neither_numpy_nor_onnxruntime(world, resident):
    probe = (
        "import json, sys\n"
        "from signet_scorer.hook.cli import run_hook\nfrom signet_scorer.hook.run import save_record\n"
        f"run = run_hook({[*world.options(**AUTO), 'session-start', *HARNESS_ARGS['plain']]!r},"
        f" {stdin_for('res-light')!r})\n"
        "save_record(run)\n"
        "print(json.dumps([run.invocation['outcome'],"
        " sorted({m.split('.')[0] for m in sys.modules})]))\n"
    )
    done = run_process([sys.executable, "-c", probe], b"", world.env())
    outcome, loaded = json.loads(done.stdout)
    assert outcome == "scorer", done.stderr
    assert not {"numpy", "onnxruntime", "dataclasses", "typing"} & set(loaded)


# --- when the resident does not answer ----------------------------------------------------------


@pytest.mark.parametrize("state", ["never started", "killed"])
def test_without_a_resident_the_hook_ranks_itself_and_starts_one(world, tmp_path, state):
    files = resident_files(world.model.parent)
    if state == "killed":  # a dead resident leaves its socket file behind
        served = ServedResident(world)
        served.proc.kill()
        served.close()
        assert files.socket.exists()
    key = f"cold-{state}"
    try:
        got = hook_prints(world, HARNESS_ARGS["codex"], stdin_for(key), world.env(), **AUTO)
        started = resident_status(files)
    finally:
        pid = stop_resident(files)
    assert started["running"] is True and pid == started["pid"] and pid > 0
    alone, own = _in_process(world, "codex", f"{key}-own")
    assert got == alone and _recorded(world, key) == own and own[0][0][0] == "scorer"


def test_a_resident_killed_mid_way_leaves_the_ranking_to_the_hook(world):
    """Signet's call ends only once the resident, which prepared the session, is dead."""
    served = ServedResident(world)
    env = world.env()
    plain = standin_runner(env)

    class KillingCall:
        def __init__(self, call):
            self.call = call

        def result(self):
            served.proc.kill()
            served.close()
            return self.call.result()

    def killing(args, stdin):
        return KillingCall(plain(args, stdin))

    argv = [*world.options(**AUTO), "session-start", *HARNESS_ARGS["json"]]
    got = run_hook(argv, stdin_for("mid-way"), env=env, runner=killing, now=NOW)
    assert served.proc.returncode == -9 and got.start_resident
    own = run_hook(
        [*world.options(), "session-start", *HARNESS_ARGS["json"]],
        stdin_for("mid-way"),
        env=env,
        runner=plain,
        now=NOW,
    )
    assert (got.stdout, got.stderr, got.code) == (own.stdout, own.stderr, own.code)
    assert got.injections == own.injections and got.invocation["outcome"] == "scorer"
    assert stop_resident(resident_files(world.model.parent)) is None  # none was started


def test_a_resident_gone_before_the_record_leaves_it_to_the_hook_once(world):
    """The resident that ranked writes the record; killed before it could, the hook writes it
    itself, once, and the same rows as in-process."""
    served = ServedResident(world)
    env, key = world.env(), "record-gone"
    argv = [*world.options(**AUTO), "session-start", *HARNESS_ARGS["plain"]]
    try:
        got = run_hook(argv, stdin_for(key), env=env, runner=standin_runner(env), now=NOW)
        assert got.resident is not None and got.writer is None  # ranked by the resident
    finally:
        served.proc.kill()
        served.close()
    save_record(got)
    (run,), rows = _recorded(world, key)
    alone, own = _in_process(world, "plain", f"{key}-own")
    assert got.stdout == alone.stdout and run[:2] == ("scorer", None)
    assert rows == own[1] and len(rows) == 40


class SilentResident:
    """A real socket server in the resident's place that holds its lock, accepts every
    connection and never answers (a hung resident), or answers each request with `reply`."""

    def __init__(self, world: World, reply: bytes | None = None) -> None:
        self.files = resident_files(world.model.parent)
        self.lock = os.open(self.files.lock, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        self.files.socket.unlink(missing_ok=True)
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(self.files.socket))
        self.server.listen(8)
        self.reply, self.held = reply, []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.held.append(conn)
            if self.reply is not None:
                with conn.makefile("rb") as lines:
                    while lines.readline():
                        conn.sendall(self.reply)

    def close(self) -> None:
        self.server.close()
        for conn in self.held:
            conn.close()
        self.files.socket.unlink(missing_ok=True)
        os.close(self.lock)


REPLIES = {
    "hung": None,
    "stale": b'{"stale": true}\n',
    "not JSON": b"<html>\n",
    "another protocol": b'{"jsonrpc": "2.0", "result": {}}\n',
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("reply", list(REPLIES))
def test_a_resident_that_does_not_answer_as_it_should_leaves_the_ranking_to_the_hook(
    world, reply, fmt
):
    fake = SilentResident(world, REPLIES[reply])
    try:
        key = f"silent-{reply}-{fmt}"
        got = hook_prints(world, HARNESS_ARGS[fmt], stdin_for(key), world.env(), **AUTO)
        assert len(fake.held) == 1  # the hook did ask it
    finally:
        fake.close()
    alone, own = _in_process(world, fmt, f"{key}-own")
    assert got == alone and _recorded(world, key) == own and own[0][0][0] == "scorer"


def test_a_stale_resident_stops_when_a_hook_runs_other_code(world):
    served = ServedResident(world)
    link = ResidentLink.connect(resident_files(world.model.parent).socket, 30.0)
    try:
        assert link.ask({"op": "status"}, 30.0)["pid"] == served.proc.pid
        request = {
            "op": "prepare",
            "protocol": 1,
            "code": code_fingerprint() + "-other",
            "db": str(world.db),
            "model": str(world.model),
            "timeout_s": 1.0,
        }
        assert link.ask(request, 30.0) == {"stale": True}
    finally:
        link.close()
    assert served.proc.wait(timeout=60) == 0
    served.close()
    assert not resident_files(world.model.parent).socket.exists()


# --- the model, idle time, the commands ---------------------------------------------------------


def _model_bytes(cosine_weight: float) -> bytes:
    from signet_bench.learn.export import model_bytes
    from signet_bench.learn.model.checkpoint import CheckpointMeta
    from signet_bench.learn.model.params import init_params

    params = init_params(seed=1)
    params["cosine_weight"] = params["cosine_weight"] * cosine_weight
    return model_bytes(params, CheckpointMeta())


def test_a_model_replaced_on_disk_is_served_from_the_next_session_start(tmp_path):
    world = small_world(tmp_path / "replaced")
    served = ServedResident(world)
    try:
        first = hook_prints(world, HARNESS_ARGS["plain"], stdin_for("m1"), world.env(), **AUTO)
        new = world.model.with_name("model.onnx.new")
        new.write_bytes(_model_bytes(-1.0))  # the cosine order upside down
        new.replace(world.model)  # as a training publishes it
        second = hook_prints(world, HARNESS_ARGS["plain"], stdin_for("m2"), world.env(), **AUTO)
        assert _requests(world) == 7  # the warm-up's none; 3 per session start, this status
    finally:
        assert served.close() == 0
    alone, own = _in_process(world, "plain", "m2-own")
    assert second == alone and _recorded(world, "m2") == own
    assert second.stdout != first.stdout
    versions = [_recorded(world, k)[0][0][2] for k in ("m1", "m2")]
    assert versions[0] != versions[1]


def test_the_resident_exits_on_its_own_when_idle(world):
    served = ServedResident(world, idle_s="0.2")
    assert served.proc.wait(timeout=60) == 0
    files = resident_files(world.model.parent)
    assert not files.socket.exists() and resident_status(files) == {"running": False}
    log = [json.loads(line) for line in served.stderr.read_text().splitlines()]
    assert log[-1]["event"] == "stop" and log[-1]["reason"] == "idle for 0.2 s"
    served.close()


def _command(world: World, command: str, **options: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "signet_scorer.hook", *world.options(**options), command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def test_start_status_and_stop(world):
    files = resident_files(world.model.parent)
    try:
        started = _command(world, "start", idle_s="120")
        assert started.returncode == 0 and started.stdout.startswith("started (pid ")
        pid = int(started.stdout.split("pid ")[1].split(")")[0])
        again = _command(world, "start")
        assert again.stdout == f"already running (pid {pid})\n"
        status = json.loads(_command(world, "status").stdout)
        assert (status["pid"], status["answering"], status["idle_s"]) == (pid, True, 120.0)
        assert [m["path"] for m in status["models"]] == [str(world.model)]  # warmed up
        hook_prints(world, HARNESS_ARGS["plain"], stdin_for("started"), world.env(), **AUTO)
        assert _requests(world) == status["requests"] + 4  # prepare, rerank, record
    finally:
        stopped = _command(world, "stop")
    assert stopped.stdout == f"stopped (pid {pid})\n"
    assert resident_status(files) == {"running": False}
    assert _command(world, "stop").stdout == "no resident scorer runs\n"


@pytest.mark.parametrize(
    ("flag", "value", "words"),
    [
        ("--resident", "sometimes", "--resident 'sometimes' (command line): expected one of auto"),
        ("--idle-s", "0", "--idle-s '0' (command line): expected a number > 0"),
    ],
)
def test_the_residents_options_are_checked(world, flag, value, words):
    argv = [sys.executable, "-m", "signet_scorer.hook", flag, value, "status"]
    got = run_process(argv, b"", world.env())
    assert got.code == 2 and words.encode() in got.stderr and got.stdout == b""
    got = run_process([sys.executable, "-m", "signet_scorer.hook", "stop", "now"], b"", world.env())
    assert got.code == 2 and b"stop 'now' (command line): takes no arguments" in got.stderr


def test_the_resident_reads_the_session_s_basis_while_signet_works(world):
    """`prepare` leaves the session's basis read (the previous session, the query terms and
    the memories' history, as `rank.session_basis` reads them), so that the ranking after
    Signet's answer reads only the pool; the ISO time of the request is the session's start."""
    files = resident_files(world.model.parent)
    resident = Resident(files, 60.0, code_fingerprint(), lambda *a, **k: None)
    conn = _Connection()
    session = {"tz": "UTC", "project": None, "session_key": "basis-1", "agent_id": "default"}
    request = {
        "op": "prepare",
        "protocol": PROTOCOL,
        "code": code_fingerprint(),
        "db": str(world.db),
        "model": str(world.model),
        "timeout_s": 5.0,
        "session": {**session, "now": NOW.isoformat()},
    }
    try:
        assert resident.answer(request, conn)["ok"] is True
        assert conn.basis is not None
        dim = conn.scorer.info.native_dim
        alone = session_basis(conn.con, HookSession(now=NOW, **session), dim)
    finally:
        conn.close()
    assert conn.basis.track.mean == alone.track.mean and conn.basis.terms == alone.terms
    assert conn.basis.track.rows == alone.track.rows and conn.basis.used == alone.used
