"""`signet-bench-hook session-start`: the real console entry (`python -m signet_scorer.hook`) around
the stand-in `signet` script, on a small store with an exported model.

Whatever fails, the harness gets exactly what Signet's own command prints for its arguments,
byte for byte, with its exit code: Signet's errors, broken or empty output, a slow Signet
past the budget, no model, no store, stdin that is not a JSON object, arguments outside
Signet's option table, Signet's own off switches; and Signet is called once per invocation.
When nothing fails the memories are re-ordered and the rest of the output is Signet's."""

from __future__ import annotations

import json
import sys

import pytest

from signet_bench.store.hook_log import read_hook_injections, read_hook_invocations
from signet_scorer.budget import estimate_tokens
from signet_scorer.hook.inject import SCORER_ORDER, find_block, header
from tests.scorer.hook_support import (
    HARNESS_ARGS,
    hook_prints,
    run_process,
    signet_prints,
    small_world,
    stdin_for,
)

FORMATS = list(HARNESS_ARGS)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return small_world(tmp_path_factory.mktemp("hook-world"))


def _same(world, fmt, stdin, env, **options):
    """The hook's and the stand-in's (stdout, stderr, exit code) for one format."""
    args = HARNESS_ARGS[fmt]
    return hook_prints(world, args, stdin, env, **options), signet_prints(world, args, stdin, env)


FAILURES = {
    "signet error": ({"SIGNET_STANDIN_MODE": "error"}, {}),
    "signet crash": ({"SIGNET_STANDIN_MODE": "crash"}, {}),
    "malformed JSON": ({"SIGNET_STANDIN_MODE": "malformed"}, {}),
    "empty output": ({"SIGNET_STANDIN_MODE": "offline"}, {}),
    "static identity": ({"SIGNET_STANDIN_MODE": "identity"}, {}),
    "slow beyond the budget": (
        {"SIGNET_STANDIN_MODE": "slow", "SIGNET_STANDIN_SLEEP_S": "0.6"},
        {"budget_ms": "300"},
    ),
    "no time at all": ({}, {"budget_ms": "0"}),
    "no model": ({}, {"model": "/nonexistent/model.onnx"}),
    "no store": ({}, {"db": "/nonexistent/memories.db"}),
    "SIGNET_NO_HOOKS": ({"SIGNET_NO_HOOKS": "1"}, {}),
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("failure", list(FAILURES))
def test_every_failure_prints_what_signet_prints(world, failure, fmt):
    env_extra, options = FAILURES[failure]
    stdin = stdin_for(f"fail-{failure}-{fmt}")
    hook, signet = _same(world, fmt, stdin, world.env(**env_extra), **options)
    assert hook == signet


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("stdin", [b"{", b"[1, 2]", b"null", b"\xff\xfe{}", b'"session"'])
def test_stdin_that_is_not_an_object_prints_what_signet_prints(world, fmt, stdin):
    hook, signet = _same(world, fmt, stdin, world.env())
    assert hook == signet and signet.code == 0


@pytest.mark.parametrize(
    "args", [["-H", "x", "--unknown"], ["--project", "/p"], ["-H", "x", "positional"]]
)
def test_arguments_outside_signets_table_print_what_signet_prints(world, args):
    env = world.env()
    hook = hook_prints(world, args, stdin_for("args"), env)
    signet = signet_prints(world, args, stdin_for("args"), env)
    assert hook == signet and signet.code == 1 and signet.stderr.startswith(b"error:")


def test_a_non_object_answer_from_signet_prints_what_signet_prints(world, tmp_path):
    for i, answer in enumerate(([], "text", {"memories": "none", "inject": "x"}, {})):
        path = tmp_path / f"answer{i}.json"
        path.write_text(json.dumps(answer))
        for fmt in FORMATS:
            hook, signet = _same(
                world, fmt, stdin_for(f"odd{i}{fmt}"), world.env(SIGNET_STANDIN_ANSWER=str(path))
            )
            assert hook == signet, (answer, fmt)


def test_a_missing_signet_ends_as_a_shell_would_and_says_nothing(world, tmp_path):
    """No `signet` to run: a shell's exit code for a command it cannot find, and no bytes of
    the wrapper's own (the reason is in the log)."""
    env = world.env(PATH=str(tmp_path))  # no signet there, and none named
    options = world.options(signet=None)
    argv = [sys.executable, "-m", "signet_scorer.hook", *options, "session-start", "-H", "codex"]
    got = run_process(argv, stdin_for("no-signet"), env)
    assert got == (b"", b"", 127)
    run = read_hook_invocations(world.workbench).filter(session_key="no-signet")
    assert run["outcome"].to_list() == ["signet"]
    assert run["reason"].to_list() == ["cannot run signet: No such file or directory"]


def test_a_signet_option_that_cannot_run_falls_back_to_signet_on_path(world):
    env = world.env(PATH=f"{world.signet.parent}:/usr/bin:/bin")
    args, stdin = HARNESS_ARGS["codex"], stdin_for("signet-fallback")
    got = hook_prints(world, args, stdin, env, signet="/nonexistent/signet")
    assert got == signet_prints(world, args, stdin, env) and got.code == 0
    run = read_hook_invocations(world.workbench).filter(session_key="signet-fallback")
    why = "cannot be run (no executable file); signet on PATH runs"
    assert run["reason"].to_list() == [f"--signet '/nonexistent/signet' (command line): {why}"]


def test_the_wrappers_own_commands_name_their_bad_options(world):
    """Without `session-start` a problem is the wrapper's usage error (exit 2), naming the
    setting, its source and value; with it, Signet runs (`test_hook_fail_open`)."""
    cases = {
        ("--limit", "0", "status"): b"--limit '0' (command line): expected an integer >= 1",
        ("--tz", "Mars/Olympus", "stop"): b"--tz 'Mars/Olympus' (command line): not a known",
        ("--budget-ms", "soon", "status"): b"--budget-ms 'soon' (command line): expected a",
        ("--frobnicate", "1", "status"): b"--frobnicate (command line): unknown option",
        ("--db", "x"): b"missing the command: session-start",
        ("status", "now"): b"status 'now' (command line): takes no arguments",
    }
    for argv, words in cases.items():
        got = run_process([sys.executable, "-m", "signet_scorer.hook", *argv], b"", world.env())
        assert got.code == 2 and words in got.stderr and got.stdout == b"", (argv, got)
        assert b"usage: signet-bench-hook" in got.stderr
    env = world.env(SIGNET_BENCH_RESIDENT="on")
    got = run_process([sys.executable, "-m", "signet_scorer.hook", "status"], b"", env)
    assert got.code == 2 and b"SIGNET_BENCH_RESIDENT='on' (environment): expected one of" in (
        got.stderr
    )


# --- when nothing fails -------------------------------------------------------------------------


def _block(text: str, answer: dict):
    block = find_block(text, [m["content"] for m in answer["memories"]])
    assert block is not None, text[:200]
    return block


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_scorer_reorders_and_keeps_the_rest_of_signets_output(world, fmt, tmp_path):
    env = world.env(SIGNET_STANDIN_STATE=str(tmp_path))
    stdin = stdin_for(f"ok-{fmt}")
    hook = hook_prints(world, HARNESS_ARGS[fmt], stdin, env, limit="25")
    calls = [json.loads(line) for line in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert [c["args"][-1] for c in calls] == ["--json"]  # Signet was asked once, for its JSON
    signet = signet_prints(world, HARNESS_ARGS[fmt], stdin_for(f"other-{fmt}"), env)
    assert (hook.stderr, hook.code) == (signet.stderr, signet.code) == (b"", 0)
    answer = json.loads(world.answer.read_text())
    theirs = answer["inject"]
    if fmt == "plain":
        ours = hook.stdout.decode()
        assert ours.endswith("\n") and signet.stdout.decode() == theirs + "\n"
        ours = ours[:-1]
    elif fmt == "codex":
        doc = json.loads(hook.stdout)
        assert set(doc) == {"continue", "suppressOutput", "hookSpecificOutput"}
        ours, theirs = doc["hookSpecificOutput"]["additionalContext"], theirs.strip()
    else:
        doc = json.loads(hook.stdout)
        ours = doc["inject"]
        assert [m["id"] for m in doc["memories"]] == _order(world, f"ok-{fmt}")
        assert {k: v for k, v in doc.items() if k not in ("inject", "memories")} == {
            k: v for k, v in answer.items() if k not in ("inject", "memories")
        }
    ids = [m["id"] for m in answer["memories"]]
    order = _order(world, f"ok-{fmt}")
    assert len(order) == 25 and order != ids[:25]
    # Signet's text with its own lines in the scorer's order: preamble, date and the text after
    # the block unchanged
    assert ours == _block(theirs, answer).text([ids.index(m) for m in order])
    # the heading says who ordered the block, in Signet's shape
    assert header(25, SCORER_ORDER) in ours and header(40) in theirs
    assert "scored by importance x recency" not in ours


def test_a_token_budget_chooses_the_best_that_fit_and_says_how_many(world, tmp_path):
    """K 40 of Signet's 40 within a third of their tokens: fewer lines, the heading's count
    theirs, the lines Signet's own, within the budget, in the scorer's order."""
    answer = json.loads(world.answer.read_text())
    theirs = _block(answer["inject"], answer)
    total = sum(estimate_tokens(line) for line in theirs.lines)
    budget = total // 3
    env = world.env(SIGNET_STANDIN_STATE=str(tmp_path))
    hook = hook_prints(
        world,
        HARNESS_ARGS["json"],
        stdin_for("budget-json"),
        env,
        limit="40",
        max_tokens=str(budget),
    )
    doc = json.loads(hook.stdout)
    order = _order(world, "budget-json")
    assert [m["id"] for m in doc["memories"]] == order and 0 < len(order) < 40
    ours = find_block(doc["inject"], [m["content"] for m in doc["memories"]], SCORER_ORDER)
    assert ours is not None and header(len(order), SCORER_ORDER) in doc["inject"]
    assert set(ours.lines) <= set(theirs.lines)
    assert sum(estimate_tokens(line) for line in ours.lines) <= budget
    run = read_hook_invocations(world.workbench).filter(session_key="budget-json")
    assert run.select(["outcome", "injected"]).rows() == [("scorer", len(order))]


def test_a_token_budget_no_memory_fits_keeps_signets_output(world, tmp_path):
    env = world.env(SIGNET_STANDIN_STATE=str(tmp_path))
    hook = hook_prints(world, HARNESS_ARGS["plain"], stdin_for("budget-none"), env, max_tokens="1")
    signet = signet_prints(world, HARNESS_ARGS["plain"], stdin_for("budget-none-2"), env)
    assert hook == signet
    run = read_hook_invocations(world.workbench).filter(session_key="budget-none")
    assert run.select(["outcome", "reason"]).rows() == [
        ("signet", "the token budget (1) admits no memory of the answer")
    ]


def _order(world, key: str) -> list[str]:
    rows = read_hook_injections(world.workbench).filter(session_key=key).sort("rank")
    assert rows["chosen_by"].unique().to_list() == ["scorer"]
    scores = rows["score"].to_list()
    assert scores == sorted(scores, reverse=True)
    return rows["memory_id"].to_list()


def test_a_repeated_session_key_keeps_the_first_injection(world, tmp_path):
    env = world.env(SIGNET_STANDIN_STATE=str(tmp_path))
    first = hook_prints(world, HARNESS_ARGS["plain"], stdin_for("twice"), env)
    before = read_hook_injections(world.workbench).filter(session_key="twice")
    second = hook_prints(world, HARNESS_ARGS["plain"], stdin_for("twice"), env)
    after = read_hook_injections(world.workbench).filter(session_key="twice")
    assert first.stdout != second.stdout and b"session already started" in second.stdout
    assert before.height == 40 and after.equals(before)
    runs = read_hook_invocations(world.workbench).filter(session_key="twice")
    assert runs["outcome"].to_list() == ["scorer", "signet"]
    assert runs["reason"].to_list()[1] == "signet's answer has no memories"


def test_a_failure_is_recorded_with_its_reason_and_signets_order(world, tmp_path):
    """No model where the workbench's folder has it (the default): Signet's output, and its
    order recorded as injected."""
    workbench = tmp_path / "workbench.duckdb"
    hook_prints(
        world,
        HARNESS_ARGS["codex"],
        stdin_for("no-model-run"),
        world.env(),
        workbench=str(workbench),
        model=None,
    )
    run = read_hook_invocations(workbench).filter(session_key="no-model-run")
    assert run["outcome"].to_list() == ["signet"]
    assert run["reason"].to_list() == [f"no model at {tmp_path / 'model.onnx'}"]
    rows = read_hook_injections(workbench).filter(session_key="no-model-run").sort("rank")
    answer = json.loads(world.answer.read_text())
    assert rows["memory_id"].to_list() == [m["id"] for m in answer["memories"]]
    assert rows["chosen_by"].unique().to_list() == ["signet"] and rows["score"].null_count() == 40


def test_a_model_option_that_is_not_there_is_recorded_as_the_setting(world):
    hook_prints(
        world,
        HARNESS_ARGS["codex"],
        stdin_for("no-model-given"),
        world.env(),
        model="/nonexistent/model.onnx",
    )
    run = read_hook_invocations(world.workbench).filter(session_key="no-model-given")
    assert run.select(["outcome", "reason", "injected"]).rows() == [
        ("signet", "--model '/nonexistent/model.onnx' (command line): no such file", None)
    ]
