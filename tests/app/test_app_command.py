"""`signet-bench app` as a user runs it, in real processes on real ports of 127.0.0.1: bad input
ends with one line and exit 2 before anything claims to serve; a SIGTERM, a Ctrl-C or a killed
command leaves no server behind; serving a page writes nothing next to the notebooks."""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from signet_bench.app.launch import NOTEBOOK_DIR, check_port, free_port, notebook_path
from signet_bench.world.synth.build import build_persona_store

APP = [sys.executable, "-m", "signet_bench.cli", "app"]
START_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("app") / "memories.db"
    build_persona_store("light", path, seed=0, n_memories=60)
    return path


def _app(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    cmd = [*APP, *args, "--headless"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def _one_line_exit_2(done: subprocess.CompletedProcess, *named: str) -> str:
    """The refusal: exit 2, nothing on stdout, one line on stderr naming `named`."""
    assert done.returncode == 2, done
    assert done.stdout == "", done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("signet-bench: error: ")
    for name in named:
        assert name in lines[0], lines[0]
    return lines[0]


def _bad_stores(folder: Path) -> dict[str, Path]:
    text, empty, other = folder / "notes.txt", folder / "empty.db", folder / "other.db"
    text.write_text("not a database\n")
    empty.touch()
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE t (x)")
    con.close()
    return {"missing": folder / "none.db", "text": text, "empty": empty, "not Signet": other}


def test_a_bad_store_is_one_line_and_exit_2(tmp_path):
    port = str(free_port())
    for kind, path in _bad_stores(tmp_path).items():
        line = _one_line_exit_2(_app("--db", str(path), "--port", port), str(path))
        assert {
            "missing": "no such file",
            "text": "not an SQLite",
            "empty": "empty file",
            "not Signet": "not a Signet store",
        }[kind] in line


def test_a_bad_workbench_is_one_line_and_exit_2(store, tmp_path):
    port = str(free_port())
    text, empty = tmp_path / "wb.txt", tmp_path / "wb.duckdb"
    text.write_text("hello\n")
    empty.touch()
    for path in (text, empty, tmp_path, store):
        _one_line_exit_2(
            _app("--db", str(store), "--workbench", str(path), "--port", port), str(path)
        )


def test_a_busy_port_is_one_line_and_exit_2(store):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        line = _one_line_exit_2(_app("--db", str(store), "--port", port), port)
    assert "in use" in line


def test_a_port_out_of_range_is_one_line_and_exit_2(store):
    for port in ("99999", "0", "-1", "65536", "http"):
        _one_line_exit_2(_app("--db", str(store), "--port", port), f"--port {port}")


@dataclass
class Served:
    """A running `signet-bench app`: the command, its server's pid (its process group) and port."""

    app: subprocess.Popen
    server_pid: int
    port: int


def _children(pid: int) -> list[int]:
    """The pids whose parent is `pid` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


@contextmanager
def _serving(store: Path, log: Path) -> Iterator[Served]:
    """`signet-bench app --db store` on a free port, once it says it serves (its first stdout
    line that starts with "serving"); killed at the end if a test left it running."""
    port = free_port()
    with log.open("w") as err:
        app = subprocess.Popen(
            [*APP, "--db", str(store), "--port", str(port), "--headless"],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    try:
        assert app.stdout is not None
        for line in app.stdout:  # marimo's banner first, then the command's line
            if line.startswith("serving"):
                break
        else:
            pytest.fail(f"the app ended without serving: {log.read_text()[-2000:]}")
        assert f"http://127.0.0.1:{port}" in line
        (server,) = _children(app.pid)
        assert os.getpgid(server) == server != os.getpgid(app.pid)  # a group of its own
        yield Served(app, server, port)
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
        app.stdout.close()


def _group_is_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def _load_page(port: int) -> list[str]:
    """Open a session as the browser does (marimo's /ws websocket) and read its messages until
    the notebook's run completes; the ops seen."""
    import websockets

    async def run() -> list[str]:
        url = f"ws://127.0.0.1:{port}/ws?session_id=s_{uuid.uuid4().hex[:8]}"
        ops: list[str] = []
        async with websockets.connect(url, max_size=None) as ws:
            while "completed-run" not in ops:
                ops.append(json.loads(await asyncio.wait_for(ws.recv(), START_TIMEOUT_S))["op"])
        return ops

    return asyncio.run(run())


def _notebook_dir_files() -> set[str]:
    return {str(p.relative_to(NOTEBOOK_DIR)) for p in NOTEBOOK_DIR.rglob("*")}


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_stopping_the_command_stops_its_server(store, tmp_path, stop):
    """A served page load, then SIGTERM (or Ctrl-C's SIGINT) to the command: it waits for its
    server's process group to end, so when it exits no process of the group is left, the port
    is free, and nothing was written beside the notebooks."""
    before = _notebook_dir_files()
    with _serving(store, tmp_path / "app.log") as served:
        ops = _load_page(served.port)
        assert ops[0] == "kernel-ready" and "cell-op" in ops
        served.app.send_signal(stop)
        assert served.app.wait(timeout=60) == 128 + stop
    assert _group_is_gone(served.server_pid)
    check_port("127.0.0.1", served.port)  # raises while anything listens there
    assert _notebook_dir_files() == before
    assert not list(NOTEBOOK_DIR.rglob("__marimo__"))


def test_a_killed_command_takes_its_server_along(store, tmp_path):
    """SIGKILL cannot be caught: the server, told by Linux when its parent dies, ends itself."""
    with _serving(store, tmp_path / "app.log") as served:
        watch = os.pidfd_open(served.server_pid)
        try:
            served.app.kill()
            served.app.wait()
            ready, _, _ = select.select([watch], [], [], 60)  # readable once the server exits
            assert ready == [watch]
        finally:
            os.close(watch)
    check_port("127.0.0.1", served.port)


def test_marimo_files_go_to_the_cache_folder(tmp_path):
    """In the server, marimo's `__marimo__` folder for a notebook is under the cache folder,
    not beside the notebook (`serve.keep_marimo_files_out`)."""
    code = (
        "from signet_bench.app.serve import keep_marimo_files_out; keep_marimo_files_out();"
        "from marimo._utils.paths import notebook_output_dir;"
        f"print(notebook_output_dir({str(notebook_path('dashboard'))!r}))"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    where = Path(done.stdout.strip())
    assert where.is_relative_to(tmp_path / "signet-bench" / "app") and where.name == "__marimo__"
    assert not where.is_relative_to(NOTEBOOK_DIR)
