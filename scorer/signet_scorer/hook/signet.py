"""Signet's own command as a child process: started at once, so the wrapper loads its model
while Signet works, and collected by a thread (both pipes drained, no deadlock). Standard
library only, and no `dataclasses` or `typing`: the hook's start is on every session's path."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:  # the fields' types, for type checkers (`typing` stays unloaded)
    from typing import NamedTuple

    class _SignetResult(NamedTuple):
        stdout: bytes
        stderr: bytes
        code: int
else:
    _SignetResult = namedtuple("SignetResult", "stdout stderr code")

__all__ = ["SignetCall", "SignetResult", "SignetRunner", "finished", "start_signet"]

HOOK = "hook"  # Signet's command group; the hook's name follows it
NOT_FOUND = 127  # what a shell exits with for a command it cannot find
NOT_RUNNABLE = 126  # ... and for one it cannot run


class SignetResult(_SignetResult):
    """What the command wrote (`stdout`, `stderr`: bytes) and how it ended (`code`; a
    negative code: killed by that signal)."""

    __slots__ = ()


class SignetCall:
    """A started command; `result()` waits for it. `failure` says why the command could not
    be started (None: it was)."""

    def __init__(self, run: Callable[[], SignetResult], failure: str | None = None) -> None:
        self.failure = failure
        self._result: SignetResult | None = None
        self._thread = threading.Thread(target=self._collect, args=(run,), daemon=True)
        self._thread.start()

    def _collect(self, run: Callable[[], SignetResult]) -> None:
        self._result = run()

    def result(self) -> SignetResult:
        self._thread.join()
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
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=None if env is None else dict(env),
            )
        except OSError as exc:
            code = NOT_FOUND if isinstance(exc, FileNotFoundError) else NOT_RUNNABLE
            why = f"cannot run {binary}: {exc.strerror or exc}"
            return finished(SignetResult(b"", b"", code), why)

        def run() -> SignetResult:
            out, err = proc.communicate(stdin)
            return SignetResult(out, err, proc.returncode)

        return SignetCall(run)

    return runner


def exit_like(code: int) -> int:
    """Exit as the child did: a code as it is; killed by a signal, by the same signal."""
    if code >= 0:
        return code

    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
    return 128 - code  # not reached when the signal ends the process
