"""The session-start hook's way to its resident scorer (`signet_scorer.hook.resident`): a long-lived
process that keeps numpy, onnxruntime, the loaded model and the store's readers, so that a
session start pays for none of them. Standard library only: this is the hook's fast path.

The resident lives beside the workbench, in three files:
- `hook-scorer.sock`: its Unix domain socket (mode 0600);
- `hook-scorer.lock`: locked (`flock`) by the resident for as long as it lives, or by the
  process that starts one, which hands the lock to it; it holds the resident's pid;
- `hook-scorer.log`: what a detached resident writes (one JSON object a line).

One connection per session start; each request is a line of JSON and gets one line back:
- `prepare` (`protocol`, `code`, `db`, `model`, `timeout_s`, `session`: `now`, `tz` and
  `tz_var`, `project`, `session_key`, `agent_id`; `tz` None is the machine's zone, which the
  resident resolves with the hook's `TZ` variable, `tz_var`: `config.session_zone`), while
  Signet works: the model (reloaded when its file
  changed) and the store, as the hook would open them itself, and the session's basis
  (`signet_scorer.hook.rank.session_basis`); the reply is `{"ok": true, "model_version"}`,
  `{"ok": false, "reason"}` (the hook keeps Signet's output for that reason, as it would
  in-process) or `{"stale": true}` (the resident runs other code than the hook: it stops, and
  the hook ranks in-process);
- `rerank` (`ids`, `limit`): the ranking of `signet_scorer.hook.rank.rerank` for the prepared
  session, `{"ok": true, "order", "scores", "pool", "context_rule"}`, or `{"ok": false,
  "error"}` (what it raised, as the in-process hook reports it);
- `prompt` (`protocol`, `code`, `db`, `model`, `timeout_s`, `session`, `prompt`, `recalled`,
  `exclude`, `limit`), for a user's prompt: the ranking of
  `signet_scorer.hook.prompt_rank.rank_prompt`, `{"ok": true, "model_version", "memories":
  [[id, content, created_at, score, pool_rank], ...], "pool", "context_rule"}`, or `{"ok":
  false, "reason"}` (why not: the hook keeps Signet's output), or `{"stale": true}`;
- `record` (`log`, `invocation`, `injections`, `ranking`: a prompt ranking's `prompt`, `pool`,
  `hits` and `context`, its bytes as hex, or null), once the hook has printed: the invocation's
  record appended to the hook log `log` (`signet_scorer.hook.log.InjectionLog.record`), which
  must be the one beside the resident's socket; `{"ok": true}` once committed, or `{"ok":
  false, "reason"}` (the hook then writes it itself);
- `status`: the resident's pid, uptime, idle timeout, requests and models.

A `prompt` request whose `exclude` is null asks the resident to read the memories the session
already injected from the hook log beside its socket (the hook's process then opens no log).

Whatever else happens (no socket, a refused connection, no answer within the timeout, a reply
that is not this protocol's, a connection closed mid-way), `Unavailable` is raised and the
hook ranks in-process instead, as it did without a resident.
"""

from __future__ import annotations

import _socket  # `socket` would build its enums at import: some 2 ms of every session start
import json
import os
import sys
import time
from collections import namedtuple

from signet_scorer.hook.js import js_list, js_object

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any, NamedTuple

    class _ResidentFiles(NamedTuple):  # the fields' types (`typing` stays unloaded)
        socket: Path
        lock: Path
        log: Path

    class _RemoteRanking(NamedTuple):
        order: tuple[int, ...]
        scores: tuple[float, ...]
        pool: int
        context_rule: str
else:
    _ResidentFiles = namedtuple("ResidentFiles", "socket lock log")
    _RemoteRanking = namedtuple("RemoteRanking", "order scores pool context_rule")

__all__ = [
    "ANSWER_TIMEOUT_S",
    "LOCK_FD_ENV",
    "PROTOCOL",
    "RemoteRanking",
    "ResidentFiles",
    "ResidentLink",
    "ResidentRecord",
    "Unavailable",
    "code_fingerprint",
    "read_line",
    "resident_files",
    "resident_status",
    "socket_file",
    "start_detached",
    "stop_resident",
]

PROTOCOL = 1
SOCKET_FILE = "hook-scorer.sock"
LOCK_FILE = "hook-scorer.lock"
LOG_FILE = "hook-scorer.log"
ANSWER_TIMEOUT_S = 1.0  # a warm answer takes milliseconds; past this the hook ranks itself
# the record's answer: the log's own lock timeout (1 s) and a margin; past it the hook writes it
RECORD_TIMEOUT_S = 2.0
MAX_REPLY_BYTES = 1 << 20
# sockaddr_un holds 108 bytes with the final NUL (104 on macOS): a longer path cannot be bound
MAX_SOCKET_PATH = 103
LOCK_FD_ENV = "SIGNET_BENCH_HOOK_LOCK_FD"  # the lock a starting resident inherits
STOP_TIMEOUT_S = 10.0


class Unavailable(Exception):
    """The resident cannot answer this session start; the message says why."""


class ResidentFiles(_ResidentFiles):
    """The resident's socket, lock and log files (paths) in one folder."""

    __slots__ = ()


def resident_files(folder: str | Path) -> ResidentFiles:
    """The resident's files in `folder` (the workbench's folder)."""
    # here: `pathlib` (and its `re`, `fnmatch`, `urllib`) loads only to start, stop or describe
    # the resident; a hook connects to `socket_file` (start-up time)
    from pathlib import Path

    p = Path(folder)
    return ResidentFiles(p / SOCKET_FILE, p / LOCK_FILE, p / LOG_FILE)


def socket_file(folder: str) -> str:
    """The resident's socket in `folder` (`resident_files`'s `socket`), as a hook connects."""
    return os.path.join(folder, SOCKET_FILE)


class RemoteRanking(_RemoteRanking):
    """The resident's ranking, with the fields of `signet_scorer.hook.rank.Ranking`."""

    __slots__ = ()


def code_fingerprint() -> str:
    """What the ranking's code is: this interpreter, the size and time of every module of
    `signet_scorer` and the times of the installed packages' folders. A resident whose fingerprint
    differs from the hook's runs older code (or other packages) and is not asked."""
    here = os.path.dirname(os.path.abspath(__file__))
    parts = [sys.executable, sys.version, str(PROTOCOL)]
    for folder in (os.path.dirname(here), here):
        with os.scandir(folder) as entries:
            for e in sorted(entries, key=lambda e: e.name):
                if e.name.endswith(".py"):
                    st = e.stat()
                    parts.append(f"{e.path}:{st.st_size}:{st.st_mtime_ns}")
    for entry in sys.path:
        if entry.endswith("site-packages") and os.path.isdir(entry):
            parts.append(f"{entry}:{os.stat(entry).st_mtime_ns}")
    return "\n".join(parts)


# --- the connection -----------------------------------------------------------------------------


class ResidentLink:
    """One connection to the resident, for one session start."""

    def __init__(self, sock: _socket.socket) -> None:
        self.sock = sock
        self._buffer = b""

    @classmethod
    def connect(cls, path: str | Path, timeout_s: float) -> ResidentLink:
        """Connect to the resident's socket; Unavailable when none listens there."""
        name = os.fsencode(path)
        if len(name) > MAX_SOCKET_PATH:
            raise Unavailable(f"the socket path is too long ({len(name)} bytes)")
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(max(timeout_s, 1e-3))
            sock.connect(name)
        except OSError as exc:
            sock.close()
            raise Unavailable(f"not running ({exc.strerror or type(exc).__name__})") from None
        return cls(sock)

    def ask(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request and read its reply within `timeout_s`; Unavailable otherwise."""
        deadline = time.monotonic() + timeout_s
        self.send(message, timeout_s)
        return self.reply(deadline - time.monotonic())

    def send(self, message: dict[str, Any], timeout_s: float) -> None:
        """Send one request within `timeout_s` (its reply is read by `reply`); Unavailable
        otherwise."""
        try:
            self.sock.settimeout(max(timeout_s, 1e-3))
            self.sock.sendall(json.dumps(message).encode() + b"\n")
        except TimeoutError:
            raise Unavailable(f"not sent within {timeout_s * 1000:.0f} ms") from None
        except OSError as exc:
            raise Unavailable(f"the connection failed ({exc.strerror or exc})") from None

    def reply(self, timeout_s: float) -> dict[str, Any]:
        """The next reply, read within `timeout_s`; Unavailable otherwise."""
        deadline = time.monotonic() + timeout_s
        try:
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                self.sock.settimeout(left)
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    raise Unavailable("the resident closed the connection")
                self._buffer += chunk
                if len(self._buffer) > MAX_REPLY_BYTES:
                    raise Unavailable("the resident's reply is too long")
        except TimeoutError:
            raise Unavailable(f"no answer within {timeout_s * 1000:.0f} ms") from None
        except OSError as exc:
            raise Unavailable(f"the connection failed ({exc.strerror or exc})") from None
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        obj = js_object(reply)
        if obj is None:
            raise Unavailable("the resident's reply is not a JSON object")
        return obj

    def prepare(
        self,
        db: str,
        model: str,
        session: dict[str, Any],
        store_timeout_s: float,
        timeout_s: float,
    ) -> None:
        """Ask the resident to open the model and the store for the `session` starting
        (`rank.HookSession`'s fields, `now` in ISO 8601) and read its basis; `prepared` reads
        the answer, so that the hook works on while the resident reads. Unavailable when it
        cannot be sent."""
        message = {
            "op": "prepare",
            "protocol": PROTOCOL,
            "code": code_fingerprint(),
            "db": db,
            "model": model,
            "timeout_s": store_timeout_s,
            "session": session,
        }
        self.send(message, timeout_s)

    def prepared(self, timeout_s: float) -> tuple[str | None, str | None]:
        """The answer to `prepare`: (the model's version, None) when the resident has the
        model and the store open, or (None, why) when it cannot have them; Unavailable when
        it is stale or not answering."""
        reply = self.reply(timeout_s)
        if reply.get("stale") is True:
            raise Unavailable("the resident runs other code than this hook; it stops")
        if reply.get("ok") is True and _text_or_none(reply.get("model_version")):
            return reply.get("model_version"), None
        if reply.get("ok") is False and isinstance(reply.get("reason"), str):
            return None, reply["reason"]
        raise Unavailable("the resident's prepare reply is not this protocol's")

    def rerank(self, ids: Sequence[str], limit: int, timeout_s: float) -> RemoteRanking | str:
        """The resident's ranking of the answer's memories `ids` for the prepared session, or
        the text of what the ranking raised ("Type: message"); Unavailable when there is no
        usable answer."""
        reply = self.ask({"op": "rerank", "ids": list(ids), "limit": limit}, timeout_s)
        if reply.get("ok") is False and isinstance(reply.get("error"), str):
            return reply["error"]
        ranking = _ranking(reply, len(ids), limit) if reply.get("ok") is True else None
        if ranking is None:
            raise Unavailable("the resident's ranking is not this protocol's")
        return ranking

    def prompt(self, ask: dict[str, Any], timeout_s: float) -> tuple[Any, str | None]:
        """(the ranking's reply, None) for a prompt (`ask`: the `prompt` request's fields but
        the protocol's), or (None, why not); Unavailable when it is stale or not answering."""
        message = {"op": "prompt", "protocol": PROTOCOL, "code": code_fingerprint(), **ask}
        reply = self.ask(message, timeout_s)
        if reply.get("stale") is True:
            raise Unavailable("the resident runs other code than this hook; it stops")
        if reply.get("ok") is False and isinstance(reply.get("reason"), str):
            return None, reply["reason"]
        if reply.get("ok") is True and _prompt_reply(reply, int(ask["limit"])):
            return reply, None
        raise Unavailable("the resident's prompt reply is not this protocol's")

    def record(self, log: str, run: dict[str, Any], timeout_s: float) -> bool:
        """Ask the resident to append an invocation's record (`run`: `invocation`,
        `injections`, `ranking`, a prompt ranking's context as bytes) to the hook log `log`
        (the one beside its socket); whether it wrote it (acknowledged once committed).
        Unavailable when there is no usable answer."""
        ranking = run.get("ranking")
        if ranking is not None:  # JSON carries the context vector's bytes as hex
            context = ranking.get("context")
            ranking = {**ranking, "context": None if context is None else context.hex()}
        message = {"op": "record", "log": log, **run, "ranking": ranking}
        reply = self.ask(message, timeout_s)
        if reply.get("ok") is True:
            return True
        if reply.get("ok") is False:
            return False
        raise Unavailable("the resident's record reply is not this protocol's")

    def close(self) -> None:
        self.sock.close()


class ResidentRecord:
    """The record's writer when the resident scorer answered the hook: the resident appends it
    to the hook log it holds open, so the hook's process loads neither `sqlite3` nor the log
    (`signet_scorer.hook.run.save_record` writes it itself when this cannot)."""

    def __init__(self, link: ResidentLink, log: str) -> None:
        self.link, self.log = link, log

    def record(
        self,
        invocation: dict[str, Any],
        injections: list[dict[str, Any]],
        ranking: dict[str, Any] | None = None,
    ) -> bool:
        """Whether the resident wrote the record (False: it said it did not, or no answer)."""
        run = {"invocation": invocation, "injections": injections, "ranking": ranking}
        try:
            return self.link.record(self.log, run, RECORD_TIMEOUT_S)
        except Unavailable:
            return False

    def close(self) -> None:
        self.link.close()


def _prompt_reply(reply: dict[str, Any], limit: int) -> bool:
    """Whether a prompt reply reads as the protocol's: at most `limit` memories, each [id,
    content, created_at, score, pool_rank], a pool at least as large, a rule and a version."""
    mems, pool = js_list(reply.get("memories")), reply.get("pool")
    if mems is None or len(mems) > limit or type(pool) is not int or pool < len(mems):
        return False
    kinds = (str, str, str, float, int)
    for m in mems:
        row = js_list(m)
        if (
            row is None
            or len(row) != 5
            or any(type(v) is not k for v, k in zip(row, kinds, strict=True))
        ):
            return False
    return isinstance(reply.get("context_rule"), str) and _text_or_none(reply.get("model_version"))


def _text_or_none(value: object) -> bool:
    return value is None or isinstance(value, str)


def _ranking(reply: dict[str, Any], n: int, limit: int) -> RemoteRanking | None:
    """The reply's ranking when it is one of `n` memories within `limit`, else None."""
    order, scores = js_list(reply.get("order")), js_list(reply.get("scores"))
    pool, rule = reply.get("pool"), reply.get("context_rule")
    if order is None or scores is None or len(order) != len(scores):
        return None
    ints = all(type(i) is int and 0 <= i < n for i in order) and len(set(order)) == len(order)
    floats = all(type(s) is float for s in scores)
    if not (ints and floats and len(order) <= limit and type(pool) is int and pool >= len(order)):
        return None
    if not isinstance(rule, str):
        return None
    return RemoteRanking(tuple(order), tuple(scores), pool, rule)


# --- starting, stopping, asking -----------------------------------------------------------------


def _claim(lock: Path) -> int | None:
    """The lock file's descriptor, locked by us, or None when a resident (or its starter)
    holds it or the folder cannot hold it."""
    # here: the lock's, process's and threads' modules load only to start, stop or describe
    # the resident, never on a hook's path while one answers (start-up time)
    import fcntl

    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def write_pid(fd: int, pid: int) -> None:
    """Record the resident's pid in its lock file."""
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{pid}\n".encode(), 0)


def start_detached(files: ResidentFiles, argv: Sequence[str], *, wait_s: float = 0.0) -> int | None:
    """Start `argv` (a `serve` command) as a detached resident holding the lock, when no
    resident holds it: its own session, no terminal, stdin and stdout closed (with `wait_s`
    > 0, stdout is read until its ready line, at most that long), stderr appended to the log.
    Returns its pid, or None when one is already there or it could not start."""
    if len(os.fsencode(files.socket)) > MAX_SOCKET_PATH:
        return None
    fd = _claim(files.lock)
    if fd is None:
        return None
    import subprocess  # here: as `_claim`'s modules (start-up time)

    try:
        with open(files.log, "ab") as log:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stderr=log,
                stdout=subprocess.PIPE if wait_s > 0 else subprocess.DEVNULL,
                env={**os.environ, LOCK_FD_ENV: str(fd)},
                pass_fds=(fd,),
                start_new_session=True,
                cwd="/",
            )
        write_pid(fd, proc.pid)
    except OSError:
        return None
    finally:
        os.close(fd)  # the resident keeps the lock it inherited
    if wait_s > 0:
        ready = read_line(proc, wait_s)
        if proc.stdout is not None:
            proc.stdout.close()
        if not ready:
            return None
    return proc.pid


def read_line(proc: subprocess.Popen[bytes], timeout_s: float) -> bytes:
    """The first line of the process's stdout, or b"" when none comes within `timeout_s`."""
    import selectors  # here: as `_claim`'s modules (start-up time)

    out = proc.stdout
    assert out is not None  # started with stdout=PIPE
    with selectors.DefaultSelector() as sel:
        sel.register(out, selectors.EVENT_READ)
        if not sel.select(timeout_s):
            return b""
    return out.readline()


def _holder(lock: Path) -> int | None:
    """The pid of the process holding the lock (0 when it has not written it yet), or None
    when no one holds it."""
    if not lock.exists():
        return None
    fd = _claim(lock)
    if fd is not None:
        os.close(fd)
        return None
    try:
        return int(lock.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return 0


def _wait_released(lock: Path, timeout_s: float) -> bool:
    """Whether the lock is free within `timeout_s` (a thread blocks on it, then lets go)."""
    import fcntl  # here: as `_claim`'s modules (start-up time)
    import threading

    fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)

    def take() -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    waiter = threading.Thread(target=take, daemon=True)
    waiter.start()
    waiter.join(timeout_s)
    return not waiter.is_alive()


def stop_resident(files: ResidentFiles, timeout_s: float = STOP_TIMEOUT_S) -> int | None:
    """Stop the resident (SIGTERM, then SIGKILL when it has not ended within `timeout_s`)
    and wait until it has ended; its pid (0: unknown), or None when none was running."""
    pid = _holder(files.lock)
    if not pid:  # none, or one starting that has no pid yet: it can only be waited for
        if pid == 0:
            _wait_released(files.lock, timeout_s)
        return pid
    import signal  # here: as `_claim`'s modules (start-up time)

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
        if _wait_released(files.lock, timeout_s):
            return pid
    return pid


def resident_status(files: ResidentFiles, timeout_s: float = ANSWER_TIMEOUT_S) -> dict[str, Any]:
    """What the resident says of itself, or {"running": false}; a resident that holds its
    lock but does not answer (starting, or hung) is `{"running": true, "answering": false}`."""
    pid = _holder(files.lock)
    if pid is None:
        return {"running": False}
    try:
        link = ResidentLink.connect(files.socket, timeout_s)
        try:
            reply = link.ask({"op": "status"}, timeout_s)
        finally:
            link.close()
    except Unavailable as exc:
        return {"running": True, "answering": False, "pid": pid, "why": str(exc)}
    return {"running": True, "answering": True, **reply}
