"""The session-start hook's resident scorer (`signet-bench-hook serve`): a long-lived process
that holds numpy, onnxruntime, the loaded models and answers the hook's `prepare` and `rerank`
requests over the Unix domain socket beside the workbench (`signet_scorer.hook.resident_link` has
the files and the protocol). What it computes is the hook's in-process ranking, by the same
functions: `opening.open_scorer` and `opening.open_store_for` on `prepare`, `rank.rerank` on `rerank`.

- A model is loaded once and again whenever its file changes (device, inode, size or time are
  checked on every `prepare`), so a newer training is served from the next session start; the
  store is opened read-only per connection, as the hook opens it, so it is read as it is now.
- It exits on its own when no request came for its idle time (`--idle-s`), on SIGTERM or
  SIGINT, and when a hook finds it stale (it runs other code than the hook's).
- It holds its lock file for as long as it lives and removes its socket when it ends; it also
  keeps the hook's injection log beside it open (`_HookLog`): it appends the record of each
  hook invocation it answered (`record`), so that the hook's process loads neither `sqlite3`
  nor the log, and reads a session's injections for a prompt; a hook it did not answer writes
  its own record, and its connection to the log is then cheap to open and close.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import selectors
import signal
import socket
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from signet_scorer.hook.config import hook_session_fields
from signet_scorer.hook.js import js_object
from signet_scorer.hook.log import InjectionLog
from signet_scorer.hook.resident_link import (
    LOCK_FD_ENV,
    PROTOCOL,
    ResidentFiles,
    code_fingerprint,
    write_pid,
)

__all__ = ["CONNECTION_TIMEOUT_S", "Resident", "serve"]

CONNECTION_TIMEOUT_S = 60.0  # a connection waiting longer for its next request is dropped
MAX_REQUEST_BYTES = 4 << 20
MODELS_KEPT = 4  # models (by path) kept loaded


class _Models:
    """The models asked for, by path: loaded once, and again when the file changed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[tuple[int, ...], Any, str | None]] = {}

    def get(self, path: Path) -> tuple[Any, str | None]:
        """(a ready scorer, None) or (None, why not), as `opening.open_scorer` gives them."""
        from signet_scorer.hook.opening import open_scorer

        with self._lock:
            try:
                st = os.stat(path)
                sig = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            except OSError:
                return open_scorer(path)  # no file: its reason, nothing to keep
            hit = self._cache.pop(str(path), None)
            if hit is None or hit[0] != sig:
                hit = (sig, *open_scorer(path))
            self._cache[str(path)] = hit  # the newest last
            while len(self._cache) > MODELS_KEPT:
                self._cache.pop(next(iter(self._cache)))
            return hit[1], hit[2]

    def loaded(self) -> list[dict[str, Any]]:
        with self._lock:
            return [
                {"path": p, "model_version": s.info.model_version if s else None, "reason": why}
                for p, (_, s, why) in self._cache.items()
            ]


class _HookLog:
    """The hook's injection log beside the resident, held open for its life (a hook's own
    connection to it is then never the last one, so closing that runs no checkpoint), shared by
    the connections' threads one at a time; opened again when the file at its path is another
    one (removed or replaced), so a record lands where the hook would have written it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._log: InjectionLog | None = None
        self._file: tuple[int, int] | None = None  # the open log's (device, inode)
        with self._lock:
            self._current()

    def _identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _current(self) -> InjectionLog | None:
        """The log open on the file at its path (created as the hook creates it), or None
        when it cannot be opened (no folder, not a log)."""
        if self._log is not None and self._identity() == self._file:
            return self._log
        self._close()
        if not self.path.parent.is_dir():
            return None
        try:
            self._log = InjectionLog(self.path, shared=True)
        except Exception:  # noqa: BLE001 - the hooks then write the log themselves
            return None
        self._file = self._identity()
        return self._log

    def record(
        self,
        invocation: dict[str, Any],
        injections: list[dict[str, Any]],
        ranking: dict[str, Any] | None,
    ) -> str | None:
        """Append a hook's record (`InjectionLog.record`); None once committed, else why not
        (the log's own errors are raised)."""
        with self._lock:
            log = self._current()
            if log is None:
                return f"the hook log {self.path} cannot be opened"
            log.record(invocation, injections, ranking)
        return None

    def injected(self, session_key: str, agent_id: str) -> set[str]:
        """The memories the log holds as injected for the session (none without a log)."""
        with self._lock:
            log = self._current()
            return set() if log is None else log.injected(session_key, agent_id)

    def _close(self) -> None:
        if self._log is not None:
            self._log.close()
        self._log, self._file = None, None

    def close(self) -> None:
        with self._lock:
            self._close()


class _Connection:
    """One hook's connection: the scorer and store its `prepare` opened."""

    def __init__(self) -> None:
        self.scorer: Any = None
        self.con: Any = None
        self.session: Any = None  # `rank.HookSession`
        self.basis: Any = None  # `rank.SessionBasis`, or None: the ranking reads it
        self.stale = False  # the hook runs other code than this resident

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None


class Resident:
    """The server's state: models, counters, idle clock and the stop signal."""

    def __init__(
        self, files: ResidentFiles, idle_s: float, code: str, log: Any, hook_log: Any = None
    ) -> None:
        self.files = files
        self.hook_log: _HookLog | None = hook_log  # None: the hooks write their records
        self.idle_s = idle_s
        self.code = code
        self.log = log
        self.models = _Models()
        self.started = time.monotonic()
        self.requests = 0
        self.stopping: str | None = None
        self._active = 0
        self._last = self.started
        self._state = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()

    # --- requests -------------------------------------------------------------------------------

    def answer(self, msg: Any, conn: _Connection) -> dict[str, Any]:
        """The reply to one request (module docstring of `signet_scorer.hook.resident_link`)."""
        request = js_object(msg)
        op = request.get("op") if request is not None else None
        with self._state:
            self.requests += 1
        if request is not None and op == "prepare":
            return self._prepare(request, conn)
        if request is not None and op == "rerank":
            return self._rerank(request, conn)
        if request is not None and op == "prompt":
            return self._prompt(request, conn)
        if request is not None and op == "record":
            return self._record(request)
        if op == "status":
            return self.status()
        return {"ok": False, "error": f"ValueError: unknown request {str(op)[:40]!r}"}

    def _prepare(self, msg: dict[str, Any], conn: _Connection) -> dict[str, Any]:
        if msg.get("protocol") != PROTOCOL or msg.get("code") != self.code:
            conn.stale = True  # stops once the hook has its answer
            return {"stale": True}
        from signet_scorer.hook.opening import failure_text, open_store_for, read_basis
        from signet_scorer.hook.rank import HookSession

        conn.close()
        conn.scorer = None
        try:
            session: dict[str, Any] = msg["session"]
            fields: dict[str, Any] = hook_session_fields(session)
            fields["now"] = datetime.fromisoformat(session["now"])
            conn.session = HookSession(**fields)
            scorer, why = self.models.get(Path(msg["model"]))
            if scorer is None:
                return {"ok": False, "reason": why or "no model"}
            conn.con, why = open_store_for(Path(msg["db"]), float(msg["timeout_s"]))
            if why is not None:
                return {"ok": False, "reason": why}
        except Exception as exc:  # noqa: BLE001 - reported as the hook reports it in-process
            return {"ok": False, "reason": f"preparing failed: {failure_text(exc)}"}
        conn.scorer = scorer
        conn.basis = read_basis(conn.con, fields, scorer.info)
        return {"ok": True, "model_version": scorer.info.model_version}

    def _rerank(self, msg: dict[str, Any], conn: _Connection) -> dict[str, Any]:
        from signet_scorer.hook.opening import failure_text
        from signet_scorer.hook.rank import rerank

        try:
            if conn.scorer is None:
                raise RuntimeError("rerank before a successful prepare")
            r = rerank(
                conn.con, conn.scorer, conn.session, msg["ids"], int(msg["limit"]), conn.basis
            )
        except Exception as exc:  # noqa: BLE001 - the hook keeps Signet's output and says why
            return {"ok": False, "error": failure_text(exc)}
        return {
            "ok": True,
            "order": list(r.order),
            "scores": [float(s) for s in r.scores],
            "pool": int(r.pool),
            "context_rule": r.context_rule,
        }

    def _prompt(self, msg: dict[str, Any], conn: _Connection) -> dict[str, Any]:
        """A user's prompt ranked as the hook ranks it in-process (`prompt_rank.rank_prompt`),
        on the store opened read-only for this request."""
        if msg.get("protocol") != PROTOCOL or msg.get("code") != self.code:
            conn.stale = True  # stops once the hook has its answer
            return {"stale": True}
        from signet_scorer.hook.opening import failure_text, open_store_for
        from signet_scorer.hook.prompt_rank import prompt_ask, rank_prompt, ranking_reply

        con = None
        try:
            if msg.get("exclude") is None:  # the session's injections, from the log held here
                held = self._injected(msg["session"])
                msg = {**msg, "exclude": sorted(held)}
            ask = prompt_ask(msg)
            scorer, why = self.models.get(Path(msg["model"]))
            if scorer is None:
                return {"ok": False, "reason": why or "no model"}
            con, why = open_store_for(Path(msg["db"]), float(msg["timeout_s"]))
            if why is not None:
                return {"ok": False, "reason": why}
            reply = ranking_reply(rank_prompt(con, scorer, ask))
        except Exception as exc:  # noqa: BLE001 - reported as the hook reports it in-process
            return {"ok": False, "reason": f"ranking failed: {failure_text(exc)}"}
        finally:
            if con is not None:
                con.close()
        return {"ok": True, "model_version": scorer.info.model_version, **reply}

    def _injected(self, session: dict[str, Any]) -> set[str]:
        if self.hook_log is None:
            return set()
        return self.hook_log.injected(str(session["session_key"]), str(session["agent_id"]))

    def _record(self, msg: dict[str, Any]) -> dict[str, Any]:
        """A hook's record appended to the log held here (`resident_link.ResidentLink.record`);
        `{"ok": true}` once committed, else why not (the hook then writes it)."""
        from signet_scorer.hook.opening import failure_text

        if self.hook_log is None or msg.get("log") != str(self.hook_log.path):
            return {"ok": False, "reason": "not the hook log this resident holds"}
        try:
            ranking = msg.get("ranking")
            if ranking is not None and ranking.get("context") is not None:
                ranking = {**ranking, "context": bytes.fromhex(ranking["context"])}
            why = self.hook_log.record(msg["invocation"], msg["injections"], ranking)
        except Exception as exc:  # noqa: BLE001 - the hook writes it, and meets the same fault
            return {"ok": False, "reason": f"recording failed: {failure_text(exc)}"}
        return {"ok": True} if why is None else {"ok": False, "reason": why}

    def status(self) -> dict[str, Any]:
        with self._state:
            requests, active = self.requests, self._active
        return {
            "ok": True,
            "pid": os.getpid(),
            "socket": str(self.files.socket),
            "uptime_s": round(time.monotonic() - self.started, 3),
            "idle_s": self.idle_s,
            "requests": requests,
            "connections": active,
            "models": self.models.loaded(),
        }

    # --- connections ----------------------------------------------------------------------------

    def handle(self, sock: socket.socket) -> None:
        """Answer one connection's requests until it closes (a thread per connection)."""
        conn = _Connection()
        try:
            sock.settimeout(CONNECTION_TIMEOUT_S)
            with sock.makefile("rb") as lines:
                while line := lines.readline(MAX_REQUEST_BYTES):
                    if not line.endswith(b"\n"):
                        break
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        msg = None
                    sock.sendall(json.dumps(self.answer(msg, conn)).encode() + b"\n")
                    if conn.stale:
                        self.stop("stale: a hook runs other code")
                        break
        except OSError:
            pass  # the hook went away or timed out: it ranks without us
        except Exception as exc:  # noqa: BLE001 - a fault ends this connection, not the server
            self.log("connection_failed", "error", error=f"{type(exc).__name__}: {exc}")
        finally:
            conn.close()
            sock.close()
            with self._state:
                self._active -= 1
                self._last = time.monotonic()
            self._poke()

    def _poke(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def stop(self, reason: str) -> None:
        """End the server loop (from any thread)."""
        self.stopping = self.stopping or reason
        self._poke()

    def loop(self, listener: socket.socket) -> str:
        """Accept connections until the idle time passes without one or `stop`; the reason."""
        listener.setblocking(False)
        self._last = time.monotonic()  # idle from now on: loading took its own time
        with selectors.DefaultSelector() as sel:
            sel.register(listener, selectors.EVENT_READ)
            sel.register(self._wake_r, selectors.EVENT_READ)
            while self.stopping is None:
                with self._state:
                    idle = 0.0 if self._active else time.monotonic() - self._last
                if idle >= self.idle_s:
                    return f"idle for {self.idle_s:g} s"
                for key, _ in sel.select(self.idle_s - idle):
                    if key.fileobj is listener:
                        self._accept(listener)
                    else:
                        os.read(self._wake_r, 4096)
        return self.stopping

    def _accept(self, listener: socket.socket) -> None:
        try:
            sock, _ = listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        with self._state:
            self._active += 1
        threading.Thread(target=self.handle, args=(sock,), daemon=True).start()


# --- the process --------------------------------------------------------------------------------


def _lock(files: ResidentFiles) -> int | None:
    """The lock's descriptor, held: the one inherited from the process that started this
    resident, else taken now; None when another resident holds it."""
    inherited = os.environ.pop(LOCK_FD_ENV, None)
    if inherited is not None:
        fd = int(inherited)
        os.set_inheritable(fd, False)
    else:
        fd = os.open(files.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    write_pid(fd, os.getpid())
    return fd


def _listen(path: Path) -> socket.socket:
    """The socket bound at `path` (a stale one removed first), readable by this user only."""
    path.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(os.fsencode(path))
    except OSError:
        sock.close()
        raise
    finally:
        os.umask(old)
    sock.listen(64)
    return sock


def _warm_up(cfg: Any, resident: Resident) -> None:
    """Load the configured model and rank a few of the store's memories once, so the first
    session start finds everything loaded (best effort: a failure is the requests' business)."""
    from signet_scorer.hook.opening import open_store_for
    from signet_scorer.hook.rank import HookSession, rerank

    con = None
    try:
        with contextlib.suppress(Exception):  # warming up only
            scorer, _ = resident.models.get(Path(cfg.model))
            con, _ = open_store_for(cfg.db, 5.0)
            if scorer is not None and con is not None:
                ids = [r[0] for r in con.execute("SELECT id FROM memories LIMIT 10")]
                session = HookSession(datetime.now(UTC), cfg.zone(), None, "", "default")
                rerank(con, scorer, session, ids, len(ids))
    finally:
        if con is not None:
            con.close()


def _say_ready(out: TextIO, path: Path) -> None:
    """The ready line, for whoever started the resident (gone already: nothing to say)."""
    try:
        out.write(f"listening on {path} (pid {os.getpid()})\n")
        out.flush()
    except (OSError, ValueError):
        pass


def _stop_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(0)


def serve(cfg: Any, ready: TextIO | None = None) -> int:
    """Run the resident for the hook configured by `cfg` (`config.HookConfig`: its folder, idle
    time, model and store to warm up) until it stops; prints "listening on PATH (pid N)" on
    `ready` (stdout) once it answers. Exit code 0, or 1 when another resident is running."""
    # here and in the methods: the ranking's modules load after `serve` fingerprints the code
    # and after a second resident has exited on the lock (start-up time)
    from signet_scorer.rpc import JsonLog

    log = JsonLog(level="info")
    files = cfg.files
    fd = _lock(files)
    if fd is None:
        log("already_running", "warning", socket=str(files.socket))
        return 1
    code = code_fingerprint()  # before the ranking's modules load: a change after is stale
    injections = None
    try:
        signal.signal(signal.SIGTERM, _stop_on_signal)
        signal.signal(signal.SIGINT, _stop_on_signal)
        injections = _HookLog(Path(cfg.log))
        resident = Resident(files, cfg.idle_s, code, log, injections)
        _warm_up(cfg, resident)
        listener = _listen(files.socket)
    except BaseException:
        if injections is not None:
            injections.close()
        os.close(fd)
        raise
    reason = "stopped by a signal"
    try:
        _say_ready(ready if ready is not None else sys.stdout, files.socket)
        log("start", socket=str(files.socket), idle_s=cfg.idle_s, model=str(cfg.model))
        reason = resident.loop(listener)
    finally:
        files.socket.unlink(missing_ok=True)  # ours: the lock is still held
        listener.close()
        injections.close()
        log("stop", reason=reason, requests=resident.requests)
        os.close(fd)
    return 0
