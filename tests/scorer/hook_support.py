"""What the session-start hook's tests share: a small store with an exported model and a
Signet answer built from it, the stand-in `signet` script, and runners for the stand-in and
the hook (as processes, or in this process)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from signet_bench.bench.hook_speed import store_answer
from signet_bench.bench.signet_standin import session_start, write_standin
from signet_scorer.hook.resident_link import read_line
from signet_scorer.hook.signet import SignetResult, finished

HOOK = [sys.executable, "-m", "signet_scorer.hook"]  # the console script, as a module
PROJECT = "portfolio"  # the light persona's project
NOW = datetime(2026, 4, 20, 9, 30, tzinfo=UTC)
HARNESS_ARGS = {
    "plain": ["-H", "claude-code", "--project", PROJECT],
    "codex": ["-H", "codex", "--codex-json"],
    "json": ["-H", "claude-code", "--project", PROJECT, "--json"],
}


@dataclass(frozen=True)
class World:
    """A store, a model beside its workbench, a Signet answer from the store, the stand-in."""

    db: Path
    model: Path
    answer: Path
    signet: Path

    @property
    def workbench(self) -> Path:
        return self.model.parent / "workbench.duckdb"

    def env(self, **extra: str) -> dict[str, str]:
        """Our environment without Signet's hook switches, pointed at the stand-in's answer."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET")}
        return {**env, "SIGNET_STANDIN_ANSWER": str(self.answer), **extra}

    def options(self, **over: str | None) -> list[str]:
        """The hook's options for this world (`over`: replace some, e.g. model="...", or leave
        them out, model=None); the resident scorer is off unless asked for (resident="auto"),
        so that no test leaves one running."""
        given = {
            "db": str(self.db),
            "model": str(self.model),
            "signet": str(self.signet),
            "workbench": str(self.workbench),
            "tz": "Europe/Berlin",
            "resident": "off",
            **over,
        }
        pairs = ((f"--{k.replace('_', '-')}", v) for k, v in given.items() if v is not None)
        return [item for pair in pairs for item in pair]


@functools.cache
def small_world(root: Path) -> World:
    """A light persona of 60 memories, a fresh exported model (it ranks as the hybrid ranker),
    and Signet's answer of 40 of them for the project."""
    from signet_bench.learn.export import model_bytes
    from signet_bench.learn.model.checkpoint import CheckpointMeta
    from signet_bench.learn.model.params import init_params
    from signet_bench.world.synth.build import build_persona_store

    root.mkdir(parents=True, exist_ok=True)
    db = root / "memories.db"
    build_persona_store("light", db, seed=7, n_memories=60)
    model = root / "wb" / "model.onnx"
    model.parent.mkdir()
    model.write_bytes(model_bytes(init_params(seed=1), CheckpointMeta()))
    answer = root / "answer.json"
    answer.write_text(json.dumps(store_answer(db, PROJECT, NOW, 40)), encoding="utf-8")
    return World(db, model, answer, write_standin(root / "bin"))


def stdin_for(session_key: str, cwd: str = PROJECT, prompt: str | None = None) -> bytes:
    """The harness's stdin at a session start (with `prompt`: at a user's prompt)."""
    body = {"session_id": session_key, "cwd": cwd, "source": "startup"}
    if prompt is not None:
        body = {"session_id": session_key, "cwd": cwd, "prompt": prompt}
    return json.dumps(body).encode()


def run_process(argv: Sequence[str], stdin: bytes, env: Mapping[str, str]) -> SignetResult:
    """A command's stdout, stderr and exit code."""
    done = subprocess.run(
        list(argv), input=stdin, capture_output=True, env=dict(env), timeout=120, check=False
    )
    return SignetResult(done.stdout, done.stderr, done.returncode)


def signet_prints(
    world: World,
    args: Sequence[str],
    stdin: bytes,
    env: Mapping[str, str],
    hook: str = "session-start",
):
    """What the stand-in `signet hook <hook> ARGS` prints."""
    return run_process([str(world.signet), "hook", hook, *args], stdin, env)


def hook_prints(
    world: World, args: Sequence[str], stdin: bytes, env: Mapping[str, str], **options: str | None
) -> SignetResult:
    """What `signet-bench-hook OPTIONS session-start ARGS` prints (`python -m
    signet_scorer.hook`)."""
    argv = [*HOOK, *world.options(**options), "session-start"]
    return run_process([*argv, *args], stdin, env)


def standin_runner(env: Mapping[str, str], hook: str = "session-start"):
    """The stand-in's answers in this process: a runner for `signet_scorer.hook.cli.run_hook`
    (or `signet_scorer.hook.prompt.run_prompt_hook`, hook "user-prompt-submit")."""

    def runner(args: Sequence[str], stdin: bytes):
        return finished(SignetResult(*session_start(["hook", hook, *args], stdin, env)))

    return runner


class ServedResident:
    """A resident scorer (`signet-bench-hook ... serve`) for a world, as a real process: started
    and ready when built (its ready line read within a timeout), stopped by `close`."""

    def __init__(self, world: World, **options: str) -> None:
        argv = [*HOOK, *world.options(resident="auto", **options), "serve"]
        self.stderr = world.model.parent / "resident-test.log"
        with self.stderr.open("ab") as err:
            self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err)
        self.ready = read_line(self.proc, 60.0)
        assert self.ready.startswith(b"listening on "), (self.ready, self.stderr.read_text())

    def close(self) -> int:
        """Stop it (SIGTERM) and wait for its end; its exit code."""
        if self.proc.poll() is None:
            self.proc.terminate()
        code = self.proc.wait(timeout=60)
        self.proc.stdout.close()
        return code
