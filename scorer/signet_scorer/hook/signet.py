"""Signet's own command as a child process: started at once, so the wrapper loads its model
while Signet works, and collected by threads (its stdin written and both pipes drained at once,
no deadlock). Standard library only, and neither `dataclasses` nor `typing`: the hook's start is
on every session's path. For the same reason the child is started by `os.posix_spawn` and its
threads by `_thread`, not by `subprocess` and `threading`, whose modules (with `signal`,
`locale`, `selectors` and `contextlib`) take some 3 ms of every hook's start to load; it is
started as `subprocess` starts it: the program looked up on the PATH of its environment,
SIGPIPE and SIGXFSZ at their defaults, no descriptor passed on but the three pipes."""

from __future__ import annotations

import _thread
import errno
import os
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from signal import SIGPIPE, SIGXFSZ
else:  # the same numbers: `signal` would build its enums at import (start-up time)
    from _signal import SIGPIPE, SIGXFSZ
if TYPE_CHECKING:  # the fields' types, for type checkers (`typing` stays unloaded)
    from typing import NamedTuple

    class _SignetResult(NamedTuple):
        stdout: bytes
        stderr: bytes
        code: int
else:
    _SignetResult = namedtuple("SignetResult", "stdout stderr code")

__all__ = ["SignetCall", "SignetResult", "SignetRunner", "Worker", "finished", "start_signet"]

HOOK = "hook"  # Signet's command group; the hook's name follows it
NOT_FOUND = 127  # what a shell exits with for a command it cannot find
NOT_RUNNABLE = 126  # ... and for one it cannot run
CHUNK = 1 << 16  # bytes read from a pipe at a time
# Python ignores these signals; a child gets them back at their defaults, as `subprocess` does
DEFAULT_SIGNALS = (SIGPIPE, SIGXFSZ)


class SignetResult(_SignetResult):
    """What the command wrote (`stdout`, `stderr`: bytes) and how it ended (`code`; a
    negative code: killed by that signal)."""

    __slots__ = ()


class Worker:
    """`work()` run in a thread of its own (daemonic, as every `_thread` thread is: the
    wrapper's exit does not wait for it); `wait` waits for its end."""

    def __init__(self, work: Callable[[], object]) -> None:
        self._ended = _thread.allocate_lock()
        self._ended.acquire()
        _thread.start_new_thread(self._run, (work,))

    def _run(self, work: Callable[[], object]) -> None:
        try:
            work()
        finally:
            self._ended.release()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Whether the work has ended, waiting for it at most `timeout_s` (None: for as long
        as it takes)."""
        if not self._ended.acquire(True, -1 if timeout_s is None else max(0.0, timeout_s)):
            return False
        self._ended.release()  # ended for every later wait too
        return True


class SignetCall:
    """A started command; `result()` waits for it. `failure` says why the command could not
    be started (None: it was)."""

    def __init__(self, run: Callable[[], SignetResult], failure: str | None = None) -> None:
        self.failure = failure
        self._result: SignetResult | None = None
        self._worker = Worker(lambda: self._collect(run))

    def _collect(self, run: Callable[[], SignetResult]) -> None:
        self._result = run()

    def result(self) -> SignetResult:
        self._worker.wait()
        assert self._result is not None
        return self._result


# How the wrapper reaches Signet: (Signet's arguments after `hook <name>`, stdin) -> a
# started call. `start_signet` runs the binary; an in-process caller may give its own.
SignetRunner = Callable[[Sequence[str], bytes], SignetCall]


def finished(result: SignetResult, failure: str | None = None) -> SignetCall:
    """A call that has already ended with `result` (`failure`: why it never started)."""
    return SignetCall(lambda: result, failure)


def start_signet(
    binary: str, env: Mapping[str, str] | None = None, hook: str = "session-start"
) -> Callable[[Sequence[str], bytes], SignetCall]:
    """A runner of `<binary> hook <hook> ARGS` with the given stdin (environment: ours,
    unless `env`). A binary that cannot be started ends with a shell's exit code for it, 127
    (not found) or 126, and prints nothing: a shell's own message differs from shell to shell,
    and the wrapper prints none of its own; the call's `failure` says why."""

    def runner(args: Sequence[str], stdin: bytes) -> SignetCall:
        argv = [binary, HOOK, hook, *args]
        try:
            child = _Child(argv, os.environ if env is None else dict(env))
        except OSError as exc:
            code = NOT_FOUND if isinstance(exc, FileNotFoundError) else NOT_RUNNABLE
            why = f"cannot run {binary}: {exc.strerror or exc}"
            return finished(SignetResult(b"", b"", code), why)
        return SignetCall(lambda: child.communicate(stdin))

    return runner


def _places(program: str, env: Mapping[str, str]) -> list[str]:
    """Where `program` is looked for, as `subprocess` looks: itself when it names a folder,
    else in each folder of the PATH of `env`."""
    if os.path.dirname(program):
        return [program]
    return [os.path.join(d, program) for d in os.get_exec_path(dict(env))]


def _spawn(argv: list[str], env: Mapping[str, str], fds: Sequence[int]) -> int:
    """The pid of `argv` started with `fds` as its stdin, stdout and stderr; the OSError of
    the first place that holds something it cannot run, else of the last one tried."""
    actions: list[tuple[int, ...]] = [(os.POSIX_SPAWN_DUP2, fd, n) for n, fd in enumerate(fds)]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable()]
    first: OSError | None = None
    last: OSError = FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv[0])
    for path in _places(argv[0], env):
        try:
            return os.posix_spawn(path, argv, env, file_actions=actions, setsigdef=DEFAULT_SIGNALS)
        except OSError as exc:
            last = exc
            if first is None and exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                first = exc
    raise first or last


def _inheritable() -> list[int]:
    """The descriptors above the standard streams that a child would inherit (ones the
    harness left inheritable), which `subprocess` closes in the child (`close_fds`)."""
    try:
        listed = [int(name) for name in os.listdir("/dev/fd")]
    except (OSError, ValueError):
        return []
    out: list[int] = []
    for fd in listed:
        try:
            if fd > 2 and os.get_inheritable(fd):
                out.append(fd)
        except OSError:  # the listing's own descriptor, closed since
            pass
    return out


def _above_std(fd: int) -> int:
    """`fd`, moved above the standard streams' numbers when it took one (the harness closed a
    stream), so that the child's three `dup2`s do not overwrite one another."""
    if fd > 2:
        return fd
    # here: only when the harness closed a standard stream
    import fcntl

    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    finally:
        os.close(fd)


def _pipe() -> tuple[int, int]:
    r, w = os.pipe()  # non-inheritable; the child's ends are made its 0, 1 and 2
    return _above_std(r), _above_std(w)


class _Child:
    """A started command with pipes to its stdin, stdout and stderr."""

    def __init__(self, argv: list[str], env: Mapping[str, str]) -> None:
        pipes = [_pipe() for _ in range(3)]
        theirs = [pipes[0][0], pipes[1][1], pipes[2][1]]
        self.stdin, self.stdout, self.stderr = pipes[0][1], pipes[1][0], pipes[2][0]
        try:
            self.pid = _spawn(argv, env, theirs)
        except OSError:
            for fd in (self.stdin, self.stdout, self.stderr):
                os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)

    def communicate(self, stdin: bytes) -> SignetResult:
        """Write `stdin` and close it (a child that stops reading is no error), read stdout
        and stderr to their ends, all at once, and wait for the child's exit."""
        err: list[bytes] = []
        writer = Worker(lambda: _write_all(self.stdin, stdin))
        reader = Worker(lambda: err.append(_read_all(self.stderr)))
        out = _read_all(self.stdout)
        reader.wait()
        writer.wait()
        _, status = os.waitpid(self.pid, 0)
        return SignetResult(out, b"".join(err), os.waitstatus_to_exitcode(status))


def _write_all(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError:  # the child ended or closed its stdin: as `communicate`, not an error
        pass
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    try:
        while chunk := os.read(fd, CHUNK):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def exit_like(code: int) -> int:
    """Exit as the child did: a code as it is; killed by a signal, by the same signal."""
    if code >= 0:
        return code
    # here: only for a child killed by a signal
    import signal

    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
    return 128 - code  # not reached when the signal ends the process
