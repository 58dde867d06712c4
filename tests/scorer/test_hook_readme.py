"""The user guide's install section (docs/user-guide.md §3.1), taken at its word: the hook
settings blocks it gives for Claude Code and Codex parse, hold Signet's own command with
`signet-bench-hook` in Signet's place, and their command, run through a shell as the harness runs it
(the venv's console script on PATH, the stand-in `signet` beside it, the store and model in their
default places under HOME), prints exactly what Signet prints without a model and the scorer's order
with one; its training line puts the model where the hook and `doctor` look for it."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from signet_bench.store.hook_log import read_hook_injections, read_hook_invocations
from signet_scorer.hook.inject import SCORER_ORDER, find_block, header
from tests.scorer.hook_support import PROJECT, run_process, small_world, stdin_for

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "user-guide.md"
HOOK = Path(sys.executable).parent / "signet-bench-hook"  # the venv's console script
# Signet's own session-start commands, as its setup writes them for each harness
SIGNETS = {
    "claude-code": 'signet hook session-start -H claude-code --project "$(pwd)"',
    "codex": "signet hook session-start -H codex --codex-json",
}


def readme_block(marker: str) -> str:
    """The fenced block that follows `<!-- hook-install: MARKER -->` in the user guide, dedented."""
    text = GUIDE.read_text(encoding="utf-8")
    found = re.search(
        rf"<!-- hook-install: {re.escape(marker)} -->\n( *)```\w*\n(.*?)\n\1```", text, re.DOTALL
    )
    assert found is not None, f"the user guide has no block marked {marker!r}"
    indent = found.group(1)
    lines = found.group(2).split("\n")
    assert all(line.startswith(indent) or not line for line in lines)
    return "\n".join(line[len(indent) :] for line in lines)


def hook_command(harness: str) -> str:
    """The session-start command of the guide's settings block for `harness`."""
    settings = json.loads(readme_block(harness))
    (group,) = settings["hooks"]["SessionStart"]
    (handler,) = group["hooks"]
    assert handler["type"] == "command"
    return handler["command"]


@pytest.mark.parametrize("harness", list(SIGNETS))
def test_the_settings_blocks_hold_signets_command_with_the_hook_in_its_place(harness):
    command = hook_command(harness)
    assert command.startswith("signet-bench-hook session-start ")
    assert command.replace("signet-bench-hook", "signet hook", 1) == SIGNETS[harness]
    settings = json.loads(readme_block(harness))
    if harness == "codex":  # the shape of Signet's own hooks.json, its markers included
        assert settings["_signet"] is True and settings["hooks"]["SessionStart"][0]["_signet"]
        assert settings["hooks"]["SessionStart"][0]["hooks"][0]["timeout"] == 20


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return small_world(tmp_path_factory.mktemp("readme-world"))


def _home(root: Path, world, *, model: bool) -> Path:
    """A user's HOME with the world's store where Signet keeps it and, with `model`, the model
    where the guide's training line puts it; the workbench's path."""
    db = root / "home" / ".agents" / "memory" / "memories.db"
    db.parent.mkdir(parents=True)
    shutil.copy(world.db, db)
    folder = db.with_name(db.name + ".predictor")
    if model:
        folder.mkdir()
        duckdb.connect(str(folder / "workbench.duckdb")).close()
        shutil.copy(world.model, folder / "model.onnx")
    return folder / "workbench.duckdb"


def _env(root: Path, world) -> dict[str, str]:
    env = {k: v for k, v in world.env().items() if not k.startswith("SIGNET_BENCH")}
    path = os.pathsep.join([str(world.signet.parent), str(HOOK.parent), "/usr/bin", "/bin"])
    return {**env, "HOME": str(root / "home"), "PATH": path}


def _shell(command: str, stdin: bytes, env, cwd: Path):
    """The command run as a harness runs a hook command: through a shell, in the project."""
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    return done.stdout, done.stderr, done.returncode


def _project(root: Path) -> Path:
    cwd = root / PROJECT
    cwd.mkdir(exist_ok=True)
    return cwd


@pytest.mark.parametrize("harness", list(SIGNETS))
def test_without_a_model_the_readmes_command_prints_exactly_what_signet_prints(
    tmp_path, world, harness
):
    assert HOOK.is_file()
    workbench = _home(tmp_path, world, model=False)
    env, cwd = _env(tmp_path, world), _project(tmp_path)
    ours = _shell(hook_command(harness), stdin_for("readme-1", str(cwd)), env, cwd)
    theirs = _shell(SIGNETS[harness], stdin_for("readme-1", str(cwd)), env, cwd)
    assert ours == theirs and theirs[2] == 0 and b"scored by importance x recency" in theirs[0]
    # the workbench is then beside the store, and so is the record of why nothing was re-ranked
    db = workbench.parent.with_suffix("")
    runs = read_hook_invocations(db.with_name("workbench.duckdb"))
    assert runs["outcome"].to_list() == ["signet"]
    assert runs["reason"].to_list() == [f"no model at {db.with_name('model.onnx')}"]


@pytest.mark.parametrize("harness", list(SIGNETS))
def test_with_a_model_the_readmes_command_prints_signets_text_in_the_scorers_order(
    tmp_path, world, harness
):
    workbench = _home(tmp_path, world, model=True)
    env, cwd = _env(tmp_path, world), _project(tmp_path)
    try:
        ours = _shell(hook_command(harness), stdin_for("readme-2", str(cwd)), env, cwd)
    finally:  # the hook started the resident scorer for the next session start: stop it
        subprocess.run([str(HOOK), "stop"], env=env, capture_output=True, timeout=60, check=True)
    theirs = _shell(SIGNETS[harness], stdin_for("readme-2", str(cwd)), env, cwd)
    assert (ours[1], ours[2]) == (theirs[1], theirs[2]) == (b"", 0)
    answer = json.loads(world.answer.read_text(encoding="utf-8"))
    if harness == "codex":
        ours_text = json.loads(ours[0])["hookSpecificOutput"]["additionalContext"]
        signets = answer["inject"].strip()
    else:
        ours_text, signets = ours[0].decode().removesuffix("\n"), answer["inject"]
    runs = read_hook_invocations(workbench)
    assert runs["outcome"].to_list() == ["scorer"], runs["reason"].to_list()
    assert runs["project"].to_list() == [str(cwd)]  # --project, or the cwd of its stdin
    rows = read_hook_injections(workbench).filter(session_key="readme-2").sort("rank")
    ids = [m["id"] for m in answer["memories"]]
    order = [ids.index(m) for m in rows["memory_id"]]
    assert order != sorted(order)  # re-ranked
    block = find_block(signets, [m["content"] for m in answer["memories"]])
    assert block is not None and ours_text == block.text(order)
    assert header(len(order), SCORER_ORDER) in ours_text
    done = run_process([str(HOOK), "doctor"], b"", env)
    assert (done.code, done.stdout.decode().splitlines()[-1]) == (
        0,
        "verdict:   the scorer is serving",
    )


def _expanded_train_line(env) -> list[list[str]]:
    """The guide's training commands as the shell expands them (each command's words)."""
    assign, line = readme_block("train").split("\n")
    assert assign.startswith("P=") and line.count("signet-bench ") == 2
    shown = line.replace("signet-bench ", "printf '%s\\n' + signet-bench ")
    out = subprocess.run(
        ["/bin/sh", "-c", f"{assign}\n{shown}"],
        capture_output=True,
        env=env,
        timeout=30,
        check=True,
    ).stdout.decode()
    return [c.split("\n")[:-1] for c in out.split("+\n")[1:]]


@pytest.mark.parametrize("signet_path", [None, "moved"])
def test_the_readmes_training_line_puts_the_model_where_the_hook_looks(
    tmp_path, world, signet_path
):
    env = _env(tmp_path, world)
    if signet_path:
        env["SIGNET_PATH"] = str(tmp_path / signet_path)
    train, export = _expanded_train_line(env)
    assert train[:2] == ["signet-bench", "train"] and export[:2] == ["signet-bench", "export"]
    args = {c[1]: dict(zip(c[2::2], c[3::2], strict=True)) for c in (train, export)}
    db, folder = Path(args["train"]["--db"]), Path(args["train"]["--out"])
    assert args["export"]["--model"] == str(folder / "model.sbm")  # what `train --out` saves
    # what doctor says the hook uses, before training (with its verdict's command) and after
    root = Path(env["SIGNET_PATH"]) if signet_path else tmp_path / "home" / ".agents"
    assert db == root / "memory" / "memories.db"
    db.parent.mkdir(parents=True)
    shutil.copy(world.db, db)
    before = json.loads(run_process([str(HOOK), "doctor", "--json"], b"", env).stdout)
    assert before["settings"][0]["value"] == str(db)
    assert before["verdict"].endswith(shlex.join(train[:6]) + " && " + shlex.join(export[:6]))
    folder.mkdir()
    duckdb.connect(str(folder / "workbench.duckdb")).close()
    after = json.loads(run_process([str(HOOK), "doctor", "--json"], b"", env).stdout)
    paths = {r["field"]: r["value"] for r in after["settings"]}
    assert paths["model"] == args["export"]["--out"] == str(folder / "model.onnx")
