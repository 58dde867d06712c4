"""The one way `signet_scorer` reaches the workbench library: child processes running its command
line (`python -m signet_bench.cli ...`).

Model-format conversion (`export`), training on a store (`train --request FILE`) and Signet's
one-step `train` method (`train-step`) all run here, so the server never imports
`signet_bench` (a test walks the package's syntax tree to keep it so), and a crash, a hang or
a kill of a child leaves the server and the model it serves as they were. So that scoring
does not wait on a training sharing its cores, each child lowers its own priority before it
imports anything (every thread it starts inherits it) and runs with one BLAS/OpenMP thread.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CHILD_NICE",
    "CHILD_THREADS",
    "LIBRARY_MODULE",
    "TrainerError",
    "TrainerOptions",
    "convert",
    "failure",
    "run_library",
    "train_step",
]

LIBRARY_MODULE = "signet_bench.cli"
CHILD_NICE = 10  # how far below the server's priority a child runs
# one BLAS/OpenMP thread: set in the child's environment, so numpy reads it when it loads
CHILD_THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

# The child's first lines (`python -c BOOT NICE MODULE ARGS...`): lower its own priority, then
# run MODULE's command line with ARGS as `python -m MODULE ARGS...` would.
BOOT = """import os, runpy, sys
nice = int(sys.argv.pop(1))
if hasattr(os, "nice"):
    os.nice(nice)
runpy.run_module(sys.argv.pop(1), run_name="__main__", alter_sys=True)
"""

PidSink = Callable[[int | None], None]


def _ignore(pid: int | None) -> None:
    return None


class TrainerError(RuntimeError):
    """A child run of the library that failed (not a gate rejection); nothing the server
    reads was changed."""


@dataclass(frozen=True, slots=True)
class TrainerOptions:
    """How the server runs the library: interpreter, the user's time zone (the default of a
    training request's), a predictor config for the trainer, extra `train` arguments, a
    wall-clock cap after which a child is killed, and how far below the server a child runs."""

    python: str = sys.executable
    tz: str | None = None
    config: str | None = None
    extra_args: tuple[str, ...] = ()
    timeout_s: float = 600.0
    nice: int = CHILD_NICE

    def command(self, *args: str) -> list[str]:
        """The command line of one library command (through BOOT, which lowers its priority)."""
        return [self.python, "-c", BOOT, str(self.nice), LIBRARY_MODULE, *args]

    def env(self) -> dict[str, str]:
        """The child's environment: the server's, with one BLAS/OpenMP thread."""
        return {**os.environ, **CHILD_THREADS}


def run_library(
    args: Sequence[str], what: str, opts: TrainerOptions, on_pid: PidSink = _ignore
) -> subprocess.CompletedProcess[str]:
    """Run one library command with captured output, reporting its pid while it runs; a run
    over the time cap is killed and raises TrainerError."""
    proc = subprocess.Popen(
        opts.command(*args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=opts.env(),
    )
    on_pid(proc.pid)
    try:
        out, err = proc.communicate(timeout=opts.timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise TrainerError(
            f"{what} ran longer than {opts.timeout_s:.0f} s and was stopped"
        ) from None
    finally:
        on_pid(None)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def failure(what: str, done: subprocess.CompletedProcess[str]) -> TrainerError:
    """The error of a failed child: its signal, or its exit code and last message line."""
    if done.returncode < 0:
        return TrainerError(f"{what} was killed by signal {-done.returncode}")
    lines = [ln for ln in (done.stderr or "").splitlines() if ln.strip()]
    last = lines[-1].removeprefix("signet-bench: error: ") if lines else "no message"
    return TrainerError(f"{what} failed (exit {done.returncode}): {last[:500]}")


def convert(
    src: Path,
    dst: Path,
    fmt: str,
    opts: TrainerOptions,
    *,
    flags: int = 0,
    on_pid: PidSink = _ignore,
) -> Path:
    """Write the model of `src` (any format) to `dst` in `fmt` ("onnx", "sgpt" or
    "signet-bench"; `flags`: SGPT flag bits), atomically (`signet-bench export`)."""
    args = ["export", "--model", str(src), "--out", str(dst), "--format", fmt]
    done = run_library([*args, "--flags", str(flags)], "the export", opts, on_pid)
    if done.returncode != 0:
        raise failure("the export", done)
    return dst


def train_step(
    model: Path,
    state: Path | None,
    inputs: Path,
    out: Path,
    opts: TrainerOptions,
    on_pid: PidSink = _ignore,
) -> dict[str, Any]:
    """One listwise step (`signet-bench train-step`) on the weights of `model`, continuing the
    optimizer state in `state` (None: a fresh optimizer), for the session in `inputs`; the new
    weights, state and ONNX graph go to `out`. Returns {"loss", "steps"}."""
    args = ["train-step", "--model", str(model), "--inputs", str(inputs), "--out", str(out)]
    if state is not None:
        args += ["--state", str(state)]
    done = run_library(args, "the train step", opts, on_pid)
    if done.returncode != 0:
        raise failure("the train step", done)
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise TrainerError(f"the train step printed no result: {done.stdout[-200:]!r}") from None
