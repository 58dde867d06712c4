"""The caller's side of the sidecar, for Python hooks and the simulator: spawn
`python -m signet_scorer`, send requests, and fail open — every call returns None (the caller
keeps its baseline) on a timeout, an error response, a dead or disabled sidecar.

Policy as Signet's daemon client (docs/specification.md §8.2): per-method timeouts (score 120 ms,
train and train_from_db 30 s, status 5 s, save_checkpoint 10 s); when the sidecar exits, pending
calls fail, the crash is recorded, and a restart follows after 1 s, up to 3 attempts; 3 crashes
within an hour disable it, and it is re-enabled 2 h after the last crash. `state()` gives the state
and the counters for a dashboard.
"""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from signet_scorer import contract as c
from signet_scorer import jsonio
from signet_scorer.query import ScoreQuery
from signet_scorer.request import TrainingRequest

__all__ = ["SidecarClient", "Supervision", "sidecar_command", "stop_process"]

STDERR_TAIL = 50


def sidecar_command(
    model: str | Path, native_dim: int, *, python: str = sys.executable, args: Sequence[str] = ()
) -> list[str]:
    """The command line that starts the sidecar on `model`."""
    dims = ["--native-dim", str(native_dim)]
    return [python, "-m", "signet_scorer", "--model", str(model), *dims, *args]


def stop_process(proc: subprocess.Popen[Any], grace_s: float) -> None:
    """SIGTERM `proc`, then SIGKILL when it has not exited within `grace_s`; returns once it
    has exited (the sidecar and the dashboard's server stop so)."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@dataclass(frozen=True, slots=True)
class Supervision:
    """How the client restarts a crashed sidecar: `restart_attempts` tries `restart_delay_s`
    apart; `crash_threshold` crashes within `crash_window_s` disable it until it has been quiet
    for `reenable_after_s`."""

    restart_delay_s: float = c.RESTART_DELAY_S
    restart_attempts: int = c.RESTART_ATTEMPTS
    crash_threshold: int = c.CRASH_DISABLE_THRESHOLD
    crash_window_s: float = c.CRASH_WINDOW_S
    reenable_after_s: float = c.REENABLE_AFTER_S


@dataclass(slots=True)
class _Pending:
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: str | None = None


class SidecarClient:
    """A supervised sidecar process and its JSON-RPC calls; thread-safe, never raises on a call."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        timeouts_ms: dict[str, float] | None = None,
        supervision: Supervision = Supervision(),
        clock: Callable[[], float] = time.monotonic,
        start: bool = True,
    ) -> None:
        self.command = list(command)
        self.timeouts_ms = {**c.CLIENT_TIMEOUTS_MS, **(timeouts_ms or {})}
        self.supervision = supervision
        self.clock = clock
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._state = "stopped"
        self.counters = dict.fromkeys(
            ("calls", "ok", "errors", "timeouts", "fail_open", "crashes", "restarts"), 0
        )
        self.last_error: str | None = None
        self.crash_times: deque[float] = deque()
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self.ready = threading.Event()  # set while a started sidecar answers
        self._proc: subprocess.Popen[bytes] | None = None
        self._pending: dict[str, _Pending] = {}
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()
        self._stopping = False
        self._closing = threading.Event()
        if start:
            self.start()

    @classmethod
    def for_model(
        cls, model: str | Path, native_dim: int, *, args: Sequence[str] = (), **kwargs: Any
    ) -> SidecarClient:
        """A client of `python -m signet_scorer --model MODEL --native-dim D [args]`."""
        return cls(sidecar_command(model, native_dim, args=args), **kwargs)

    # --- process supervision -------------------------------------------------------------------

    @property
    def status_name(self) -> str:
        """stopped | starting | running | restarting | failed | disabled"""
        return self._state

    @status_name.setter
    def status_name(self, value: str) -> None:
        with self._changed:
            self._state = value
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float) -> bool:
        """Block until `predicate(self.state())` holds (True) or `timeout` seconds pass."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self.state()), timeout)

    def start(self) -> bool:
        """Spawn the sidecar and wait for its first `status`; False (and the reason in
        `last_error`) when it does not answer."""
        with self._lock:
            self._stopping = False
            self._closing.clear()
            self.status_name = "starting"
            try:
                proc = subprocess.Popen(
                    self.command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    bufsize=0,
                )
            except OSError as exc:
                self.last_error = f"cannot start the sidecar: {exc}"
                self.status_name = "failed"
                return False
            self._proc = proc
            for target, stream in (
                (self._read_stdout, proc.stdout),
                (self._read_stderr, proc.stderr),
            ):
                threading.Thread(target=target, args=(proc, stream), daemon=True).start()
        if self._call(proc, "status", {}, self.timeouts_ms["status"]) is None:
            with self._lock:
                if self._proc is proc:
                    self._proc = None
                self.status_name = "failed"
            self._kill(proc)
            return False
        with self._lock:
            if self._proc is not proc:  # it exited meanwhile
                return False
            self.status_name = "running"
        self.ready.set()
        return True

    def _read_stdout(self, proc: subprocess.Popen[bytes], stream: Any) -> None:
        for line in stream:
            try:
                msg = jsonio.loads(line)
            except jsonio.DecodeError:
                continue
            reply = jsonio.json_object(msg)
            if reply is None:
                continue
            with self._lock:
                pending = self._pending.pop(str(reply.get("id")), None)
            if pending is None:
                continue  # the answer to a call that timed out
            err = reply.get("error")
            if err is not None:
                pending.error = f"{err.get('code')}: {err.get('message')}"
            else:
                pending.result = reply.get("result")
            pending.done.set()
        self._exited(proc)

    def _read_stderr(self, proc: subprocess.Popen[bytes], stream: Any) -> None:
        for line in stream:
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip())

    def _exited(self, proc: subprocess.Popen[bytes]) -> None:
        """The sidecar's stdout closed: fail pending calls; record a crash unless stopping."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        with self._lock:
            if proc is not self._proc:
                return
            self.ready.clear()
            for pending in self._pending.values():
                pending.error = f"the sidecar exited with code {proc.returncode}"
                pending.done.set()
            self._pending.clear()
            self._proc = None
            if self._stopping:
                self.status_name = "stopped"
                return
            if self.status_name != "running":
                return  # died while starting: start() reports the failed attempt
            now = self.clock()
            self.counters["crashes"] += 1
            self.crash_times.append(now)
            while self.crash_times and now - self.crash_times[0] > self.supervision.crash_window_s:
                self.crash_times.popleft()
            self.last_error = f"the sidecar exited with code {proc.returncode}"
            if len(self.crash_times) >= self.supervision.crash_threshold:
                self.status_name = "disabled"
                return
            self.status_name = "restarting"
        threading.Thread(target=self._restart, daemon=True).start()

    def _restart(self) -> None:
        for _ in range(self.supervision.restart_attempts):
            if self._closing.wait(self.supervision.restart_delay_s):
                return
            with self._lock:
                if self._stopping or self.status_name != "restarting":
                    return
                self.counters["restarts"] += 1
            if self.start():
                return
            with self._lock:
                # start() may have set it: pyright keeps the narrowing across the call
                if self.status_name == "failed":  # pyright: ignore[reportUnnecessaryComparison]
                    self.status_name = "restarting"
        self.status_name = "failed"

    def _available(self) -> bool:
        """Whether calls go out now; re-enables a disabled client after the quiet period."""
        with self._lock:
            quiet = self.clock() - self.crash_times[-1] if self.crash_times else 0.0
            if (
                self.status_name == "disabled"
                and quiet
                and quiet >= self.supervision.reenable_after_s
            ):
                self.crash_times.clear()
                self.status_name = "stopped"
            reenable = self.status_name == "stopped" and not self._stopping
            proc = self._proc
        if reenable:
            return self.start()
        return self.status_name == "running" and proc is not None

    def _kill(self, proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(OSError):
            proc.kill()

    def close(self) -> None:
        """Stop the sidecar: close its stdin, then SIGTERM, then SIGKILL after 2 s."""
        with self._lock:
            self._stopping = True
            proc = self._proc
        self._closing.set()
        self.ready.clear()
        if proc is None:
            self.status_name = "stopped"
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            stop_process(proc, 2)
        self.status_name = "stopped"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- calls ----------------------------------------------------------------------------------

    def call(self, method: str, params: dict[str, Any], timeout_ms: float | None = None) -> Any:
        """The result of one request, or None (fail open) on any failure."""
        self.counters["calls"] += 1
        available = self._available()
        proc = self._proc
        if not available or proc is None:
            self.counters["fail_open"] += 1
            return None
        limit = self.timeouts_ms.get(method, 5_000) if timeout_ms is None else timeout_ms
        result = self._call(proc, method, params, limit)
        if result is None:
            self.counters["fail_open"] += 1
        return result

    def _call(
        self, proc: subprocess.Popen[bytes] | None, method: str, params: Any, timeout_ms: float
    ) -> Any:
        if proc is None:
            return None
        rid = f"req-{next(self._ids)}"
        pending = _Pending()
        with self._lock:
            self._pending[rid] = pending
        try:
            line = jsonio.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            stdin = proc.stdin
            assert stdin is not None  # started with stdin=PIPE
            with self._write_lock:
                stdin.write(line + b"\n")
                stdin.flush()
        except (OSError, TypeError, ValueError) as exc:
            with self._lock:
                self._pending.pop(rid, None)
            self.counters["errors"] += 1
            self.last_error = f"{method}: cannot send ({exc})"
            return None
        if not pending.done.wait(timeout_ms / 1000.0):
            with self._lock:
                self._pending.pop(rid, None)
            self.counters["timeouts"] += 1
            self.last_error = f"{method}: no answer within {timeout_ms:g} ms"
            return None
        if pending.error is not None:
            self.counters["errors"] += 1
            self.last_error = f"{method}: {pending.error}"
            return None
        self.counters["ok"] += 1
        return pending.result

    def score(
        self, query: ScoreQuery, *, timeout_ms: float | None = None
    ) -> list[tuple[str, float]] | None:
        """(id, probability) sorted descending, or None: the caller keeps its baseline."""
        result = self.call("score", query.rpc_params(), timeout_ms)
        try:
            return [(str(s["id"]), float(s["score"])) for s in result["scores"]]
        except (TypeError, KeyError, ValueError):
            return None

    def status(self) -> dict[str, Any] | None:
        return self.call("status", {})

    def train_from_db(
        self, request: TrainingRequest, *, timeout_ms: float | None = None
    ) -> dict[str, Any] | None:
        """Signet's `train_from_db` for one training request (the sidecar trains the model it
        serves in a work folder of its own, so the request's `out_dir` and `base_weights` are
        not sent)."""
        return self.call("train_from_db", request.rpc_params(), timeout_ms)

    def save_checkpoint(self, path: str | Path, flags: int = 0) -> dict[str, Any] | None:
        return self.call("save_checkpoint", {"path": str(path), "flags": flags})

    def state(self) -> dict[str, Any]:
        """State and counters, for a dashboard."""
        with self._lock:
            proc = self._proc
            last_crash = self.crash_times[-1] if self.crash_times else None
            disabled_for = None
            if self.status_name == "disabled" and last_crash is not None:
                disabled_for = max(
                    0.0, self.supervision.reenable_after_s - (self.clock() - last_crash)
                )
            return {
                "state": self.status_name,
                "pid": proc.pid if proc is not None else None,
                "command": list(self.command),
                "crashes_in_window": len(self.crash_times),
                "reenabled_in_s": disabled_for,
                **self.counters,
                "last_error": self.last_error,
                "stderr_tail": list(self.stderr_tail)[-10:],
            }
