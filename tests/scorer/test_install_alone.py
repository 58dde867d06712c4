"""The scorer installs alone: `pip install scorer/` into a fresh venv brings numpy, onnxruntime
and orjson and none of the workbench's libraries, and its console script `signet-bench-hook`
runs a session start against the stand-in `signet` from there."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from signet_scorer.hook.inject import SCORER_ORDER, header
from tests.scorer.hook_support import (
    HARNESS_ARGS,
    hook_prints,
    run_process,
    signet_prints,
    small_world,
    stdin_for,
)

SCORER = Path(__file__).resolve().parents[2] / "scorer"
WORKBENCH_ONLY = {
    "polars",
    "duckdb",
    "marimo",
    "pyarrow",
    "altair",
    "vl-convert-python",
    "wordllama",
    "onnx",
    "signet-bench",
}


def _run(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-2000:])
    return done.stdout


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A fresh venv with the scorer installed from a copy of its folder (a build in place would
    leave build/ and *.egg-info behind); pip's cache makes a second build quick. The venv holds
    no pip of its own: this environment's pip installs into it (`--python`), which resolves
    the same dependencies and spares seeding a pip into every new venv."""
    root = tmp_path_factory.mktemp("scorer-alone")
    source = root / "scorer"
    shutil.copytree(
        SCORER, source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    )
    env_dir = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)])
    _run([*_pip(env_dir), "install", "-q", str(source)])
    return env_dir


def _pip(venv: Path) -> list[str]:
    """This environment's pip, acting on `venv`'s interpreter and its site-packages."""
    python = str(venv / "bin" / "python")
    return [sys.executable, "-m", "pip", "--python", python, "--disable-pip-version-check"]


def _installed(venv: Path) -> dict[str, str]:
    out = _run([*_pip(venv), "list", "--format=json"])
    return {d["name"].lower().replace("_", "-"): d["version"] for d in json.loads(out)}


def test_the_scorer_alone_pulls_none_of_the_workbenchs_libraries(venv):
    installed = _installed(venv)
    assert not installed.keys() & WORKBENCH_ONLY, installed
    assert {"signet-scorer", "numpy", "onnxruntime", "orjson"} <= installed.keys(), installed
    code = "import signet_scorer.hook as h; print(h.__file__)\nimport signet_bench"
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=venv,
    )
    assert done.stdout.startswith(str(venv / "lib")), done.stdout  # the installed copy
    assert done.returncode == 1 and "No module named 'signet_bench'" in done.stderr, done.stderr


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return small_world(tmp_path_factory.mktemp("alone-world"))


def test_its_hook_ranks_a_session_start_as_the_workbenchs_copy_does(venv, world):
    """With a model: the installed hook's bytes are the ones the checkout's hook prints, the
    block in the scorer's order."""
    env, args = world.env(), HARNESS_ARGS["plain"]
    argv = [str(venv / "bin" / "signet-bench-hook"), *world.options(limit="25"), "session-start"]
    alone = run_process([*argv, *args], stdin_for("alone-ranked"), env)
    here = hook_prints(world, args, stdin_for("checkout-ranked"), env, limit="25")
    assert (alone.code, alone.stderr) == (0, b"")
    assert alone == here and header(25, SCORER_ORDER) in alone.stdout.decode()


@pytest.mark.parametrize("fmt", list(HARNESS_ARGS))
def test_its_hook_prints_exactly_what_the_standin_prints_when_it_cannot_rank(venv, world, fmt):
    env, args, stdin = world.env(), HARNESS_ARGS[fmt], stdin_for(f"alone-open-{fmt}")
    options = world.options(model="/nonexistent/model.onnx")
    argv = [str(venv / "bin" / "signet-bench-hook"), *options, "session-start", *args]
    assert run_process(argv, stdin, env) == signet_prints(world, args, stdin, env)
