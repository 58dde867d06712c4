"""The notebooks as a served app: their arguments, and the `marimo run` command that serves them.

Every notebook takes `--db PATH` (a Signet `memories.db`; default: the embedded demo's store),
`--workbench PATH` (default: the store's, see `queries.source.default_workbench`) and
`--bench-dir DIR` (benchmark JSON files; default: the demo's). `signet-bench app` serves them
with `marimo run` (through `app.serve`, which imports the notebooks' libraries before the
server listens), bound to 127.0.0.1 unless told otherwise; any other address needs a token
password (memory content must never be served without one). `serve` runs such a command until
its block ends (benchmarks and tests).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from signet_bench.errors import UserError

__all__ = [
    "NOTEBOOKS",
    "NOTEBOOK_DIR",
    "NotebookArgs",
    "free_port",
    "is_loopback",
    "notebook_args",
    "notebook_path",
    "run_command",
    "serve",
]

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = ("dashboard", "calibration", "drift", "bench")
DEFAULT_PORT = 2718
START_TIMEOUT_S = 60.0


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
    from signet_bench.analysis.queries.source import default_workbench
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
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
