"""The notebooks as a served app: their arguments, and the `marimo run` command that serves them.

Every notebook takes `--db PATH` (a Signet `memories.db`; default: the embedded demo's store),
`--workbench PATH` (default: the store's, see `signet_scorer.workbench.default_workbench`) and
`--bench-dir DIR` (benchmark JSON files; default: the demo's). `signet-bench app` serves them
with `marimo run` (through `app.serve`, which imports the notebooks' libraries before the
server listens), bound to 127.0.0.1 unless told otherwise; any other address needs a token
password (memory content must never be served without one). `serve` runs such a command until
its block ends (benchmarks and tests).

`signet-bench app` checks what it was given before anything is started (`check_port`,
`check_store`: one message naming the port or the file) and runs the server as a child in a
process group of its own (`run_app`): a SIGTERM, SIGINT or SIGHUP of the command stops the
whole group and waits for it, and the server takes a SIGTERM when the command dies any other
way (`serve` asks Linux for it). Marimo's own files (its session cache) go to a cache folder,
never next to the notebooks (`serve.keep_marimo_files_out`).
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from signet_bench.errors import UserError
from signet_scorer.client import stop_process
from signet_scorer.workbench import default_workbench

__all__ = [
    "NOTEBOOKS",
    "NOTEBOOK_DIR",
    "NotebookArgs",
    "check_port",
    "check_store",
    "free_port",
    "is_loopback",
    "notebook_args",
    "notebook_path",
    "run_app",
    "run_command",
    "serve",
]

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = ("dashboard", "calibration", "drift", "bench")
DEFAULT_PORT = 2718
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0  # after a SIGTERM, the server's group is killed if it is still there
PARENT_ENV = "SIGNET_BENCH_APP_PARENT"  # the pid `serve` watches (module docstring)


@dataclass(frozen=True, slots=True)
class NotebookArgs:
    """What a notebook reads: the store, the workbench and the benchmark reports' folder."""

    db: Path
    workbench: Path | None
    bench_dir: Path | None
    labeler: str


def notebook_path(name: str) -> Path:
    """The file of a notebook (`dashboard`, `calibration`, `drift`, `bench`)."""
    if name not in NOTEBOOKS:
        raise UserError(f"unknown notebook {name!r}; choose one of {', '.join(NOTEBOOKS)}")
    return NOTEBOOK_DIR / f"{name}.py"


def notebook_args(args: Mapping[str, object]) -> NotebookArgs:
    """The notebook's arguments from `mo.cli_args()` (keys without dashes), with the demo's
    files as defaults; a missing store is a clear error naming what to run."""
    # here: `app` on a store of one's own starts without the demo's modules
    from signet_bench.app.demo import DEFAULT_DEMO_DIR, demo_paths

    raw_db = args.get("db")
    demo = demo_paths(os.environ.get("SIGNET_BENCH_DEMO_DIR", DEFAULT_DEMO_DIR))
    db = Path(str(raw_db)) if raw_db else demo.store
    if not db.exists():
        hint = "run `signet-bench demo` first" if not raw_db else "check the path"
        raise UserError(f"{db}: no such store ({hint})")
    raw_wb = args.get("workbench")
    workbench = Path(str(raw_wb)) if raw_wb else default_workbench(db)
    raw_bench = args.get("bench-dir") or args.get("bench_dir")
    bench_dir = Path(str(raw_bench)) if raw_bench else demo_paths(db.parent).bench_dir
    labeler = str(args.get("labeler") or os.environ.get("USER") or "human")
    return NotebookArgs(db, workbench, bench_dir if bench_dir.exists() else None, labeler)


def is_loopback(host: str) -> bool:
    """Whether `host` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_command(
    notebook: str,
    db: Path,
    *,
    workbench: Path | None = None,
    bench_dir: Path | None = None,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token_password_file: Path | None = None,
    headless: bool = False,
) -> list[str]:
    """The `marimo run` command serving `notebook` ("all": the gallery of every notebook) on
    `db`, run through `app.serve`. Refuses a non-loopback `host` without a token password
    file."""
    if not is_loopback(host) and token_password_file is None:
        raise UserError(
            f"--host {host}: serving beyond this machine exposes memory content; "
            "pass --token-password-file FILE (the password visitors must give)"
        )
    if not Path(db).exists():
        raise UserError(f"{db}: no such store")
    if token_password_file is not None and not Path(token_password_file).is_file():
        raise UserError(f"{token_password_file}: no such password file")
    target = NOTEBOOK_DIR if notebook == "all" else notebook_path(notebook)
    cmd = [sys.executable, "-m", "signet_bench.app.serve", "run", str(target)]
    cmd += ["--host", host, "--port", str(port)]
    if token_password_file is not None:
        cmd += ["--token", "--token-password-file", str(token_password_file)]
    if headless:
        cmd.append("--headless")
    cmd += ["--", "--db", str(db)]
    if workbench is not None:
        cmd += ["--workbench", str(workbench)]
    if bench_dir is not None:
        cmd += ["--bench-dir", str(bench_dir)]
    return cmd


def check_port(host: str, port: int) -> None:
    """That marimo can listen on `host`:`port` now (bound and released as the server will
    bind it, with SO_REUSEADDR); else a UserError naming the port and why."""
    if not 1 <= port <= 65535:
        raise UserError(f"--port {port}: not a TCP port (1 to 65535)")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise UserError(f"--host {host}: no such address ({exc.strerror})") from None
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise UserError(
                    f"port {port} on {host} is in use by another program; "
                    "choose another with --port N"
                ) from None
            raise UserError(
                f"port {port} on {host}: cannot listen there ({exc.strerror})"
            ) from None


def check_store(db: Path, workbench: Path | None) -> None:
    """That `db` is a Signet store (the readers' checks `train` and `skew` meet: a file, SQLite,
    Signet's tables, a recorded version) and `workbench`, if given, a DuckDB file or absent;
    else the reader's UserError naming the file. The store is opened read-only and closed: the
    caller is the command, never the server, which reads it through DuckDB (docs/concepts.md §1.5)."""
    # here: the app's server process imports this module and reads no store (start-up time)
    from signet_bench.store.read import open_readonly
    from signet_bench.store.workbench import check_workbench_file

    open_readonly(db).close()
    if workbench is not None:
        check_workbench_file(workbench)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(server: subprocess.Popen, url: str, log: Path) -> None:
    """Until marimo answers `/health`; a server that exits or never answers is an error."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2)
            return
        except (urllib.error.URLError, ConnectionError) as exc:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"marimo run did not start: {log.read_text()}") from exc
            time.sleep(0.1)


def _listening(host: str, port: int) -> bool:
    """Whether something accepts connections on `port` at `host` (loopback for a wildcard)."""
    target = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
    try:
        with socket.create_connection((target, port), timeout=1):
            return True
    except OSError:
        return False


def _stop_group(server: subprocess.Popen) -> None:
    """SIGTERM the server's process group, wait for the server (SIGKILL the group after
    STOP_TIMEOUT_S), then SIGKILL whatever of the group is left (a child of a session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.pid, signal.SIGKILL)


class _Stopped(Exception):
    """The command was asked to stop (a signal); `signum` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, _frame: object) -> None:
    raise _Stopped(signum)


def run_app(cmd: Sequence[str], host: str, port: int, announce: Callable[[], None]) -> int:
    """Run the server command `cmd` in a process group of its own; once it listens on
    `host`:`port`, `announce()`. A SIGTERM, SIGINT or SIGHUP stops the group (`_stop_group`)
    and the return code is 128 + the signal; else the server's own exit code."""
    stops = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    previous = {s: signal.signal(s, _raise_stopped) for s in stops}
    server: subprocess.Popen | None = None
    try:
        env = {**os.environ, PARENT_ENV: str(os.getpid())}
        server = subprocess.Popen(list(cmd), stdin=subprocess.DEVNULL, process_group=0, env=env)
        while server.poll() is None:
            if _listening(host, port):
                announce()
                return server.wait()
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.wait(timeout=0.2)
        return server.returncode
    except _Stopped as stop:
        return 128 + stop.signum
    finally:
        if server is not None and server.poll() is None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C waits too
            _stop_group(server)
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextmanager
def serve(cmd: Sequence[str], port: int, log: Path) -> Iterator[str]:
    """Run a `marimo run` command listening on 127.0.0.1:`port`, its output going to the file
    `log` (a pipe nobody reads fills up and blocks the server); yields the base URL once it
    answers, and stops the server when the block ends."""
    with log.open("w") as out:
        server = subprocess.Popen(list(cmd), stdout=out, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(server, url, log)
        yield url
    finally:
        stop_process(server, 30)
