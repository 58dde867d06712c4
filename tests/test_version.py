"""`--version`: every console script answers with its distribution's installed version, and the
workbench pins the scorer it was released with."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points, requires, version
from pathlib import Path

import pytest

SCRIPTS = {  # console script: the distribution that installs it
    "signet-bench": "signet-bench",
    "signet-bench-hook": "signet-scorer",
    "signet-bench-predictor": "signet-scorer",
}


@pytest.mark.parametrize(("script", "dist"), SCRIPTS.items())
def test_every_console_script_answers_version_with_its_distributions(script, dist):
    argv = [str(Path(sys.executable).parent / script), "--version"]
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60)
    said = f"{script} {version(dist)}" + ("" if script == dist else f" ({dist})")
    assert (done.returncode, done.stdout, done.stderr) == (0, said + "\n", "")


def test_each_script_is_installed_by_its_own_distribution():
    """The hook and the sidecar come with the scorer, so settings that name them keep working
    whether the workbench is installed or not."""
    owners = {
        ep.name: ep.dist.name
        for ep in entry_points(group="console_scripts")
        if ep.name in SCRIPTS and ep.dist is not None
    }
    assert owners == SCRIPTS


def test_the_workbench_requires_the_scorer_of_its_own_version():
    pins = [r for r in requires("signet-bench") or [] if r.startswith("signet-scorer")]
    assert pins == [f"signet-scorer=={version('signet-scorer')}"]
    assert version("signet-scorer") == version("signet-bench")


def test_the_hook_answers_version_only_alone():
    """A harness puts its options before `session-start` and Signet's arguments after it:
    `--version` among either is not a request for the version (the session start then fails
    open to Signet's own output, tests/scorer/test_hook_fail_open.py)."""
    for argv in (["--version", "status", "x"], ["--limit", "5", "--version"]):
        hook = [sys.executable, "-m", "signet_scorer.hook", *argv]
        done = subprocess.run(hook, check=False, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and "unknown option" in done.stderr, (argv, done)
        assert "signet-scorer" not in done.stdout
