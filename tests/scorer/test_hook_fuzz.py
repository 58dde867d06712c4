"""A seeded fuzz of the hook's fail-open path, in this process (`run_hook` with the stand-in's
answers and a loaded model): over 1,000 malformed stdins, malformed answers from Signet and
answers whose memories do not fit their inject text, the hook prints exactly what Signet's
command prints, byte for byte, with its exit code, in the harness's format."""

from __future__ import annotations

import functools
import json
import random

import pytest

from signet_scorer.hook.cli import run_hook
from signet_scorer.hook.opening import open_scorer
from tests.scorer.hook_support import HARNESS_ARGS, small_world, standin_runner, stdin_for

SEED = 20260420
_JS_SPACE = " \t\n\r\v\f\u00a0\ufeff\u2028\u2029\u3000"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return small_world(tmp_path_factory.mktemp("hook-fuzz"))


@pytest.fixture(scope="module")
def load(world):
    scorer = open_scorer(world.model)
    assert scorer[0] is not None, scorer[1]
    return functools.lru_cache(maxsize=None)(lambda path: scorer)


def _mutate(data: bytes, rng: random.Random) -> bytes:
    """One random damage: cut, flip, insert, delete, duplicate, wrap or replace."""
    kind = rng.randrange(7)
    i = rng.randrange(len(data) + 1)
    if kind == 0:
        return data[:i]
    if kind == 1 and data:
        j = min(i, len(data) - 1)
        return data[:j] + bytes([data[j] ^ (1 << rng.randrange(8))]) + data[j + 1 :]
    if kind == 2:
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4)))
        return data[:i] + junk + data[i:]
    if kind == 3:
        return data[:i] + data[i + rng.randrange(1, 6) :]
    if kind == 4:
        return data + data[: rng.randrange(1, 8)]
    if kind == 5:
        return rng.choice([b"[", b"{", b'"', b"\xef\xbb\xbf"]) + data
    return rng.choice([b"null", b"true", b"1", b'"x"', b"[]", b"NaN", b"{'a': 1}", b"\xff"])


def _is_object(data: bytes) -> bool:
    """Whether JavaScript's JSON.parse of the trimmed text gives an object (NaN and Infinity,
    which Python accepts, are no JSON)."""
    text = data.decode("utf-8", "replace").strip(_JS_SPACE)
    if not text:
        return True  # no input at all: not malformed, the hook may re-rank
    try:
        value = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict)


def _malformed(base: bytes, rng: random.Random, n: int, keep) -> list[bytes]:
    out: list[bytes] = []
    while len(out) < n:
        data = base
        for _ in range(rng.randrange(1, 4)):
            data = _mutate(data, rng)
        if keep(data):
            out.append(data)
    return out


def _check(world, load, fmt, stdin, env, rng) -> None:
    args = HARNESS_ARGS[fmt]
    runner = standin_runner(env)
    want = runner(args, stdin).result()
    argv = [*world.options(), "session-start", *args]
    got = run_hook(argv, stdin, env=env, runner=runner, load_scorer=load)
    assert (got.stdout, got.stderr, got.code) == (want.stdout, want.stderr, want.code), (
        fmt,
        stdin[:80],
        env.get("SIGNET_STANDIN_GARBAGE", "")[:80],
    )
    assert got.invocation["outcome"] == "signet", got.invocation


def test_malformed_stdin_never_changes_what_signet_prints(world, load):
    rng = random.Random(SEED)
    stdins = _malformed(stdin_for("fuzz"), rng, 450, lambda d: not _is_object(d))
    env = world.env()
    for stdin in stdins:
        _check(world, load, rng.choice(list(HARNESS_ARGS)), stdin, env, rng)


def test_malformed_json_from_signet_never_changes_what_signet_prints(world, load):
    rng = random.Random(SEED + 1)
    answer = world.answer.read_bytes()

    def broken(data: bytes) -> bool:  # as the stand-in will print it
        # (no output at all is not garbage: it is Signet without a daemon, where Codex gets the
        # empty object, tested with the stand-in's `offline` mode)
        if not data:
            return False
        try:
            json.loads(data.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            return True
        return False

    garbage = _malformed(answer, rng, 450, broken)
    for text in garbage:
        env = world.env(
            SIGNET_STANDIN_MODE="malformed", SIGNET_STANDIN_GARBAGE=text.decode("utf-8", "replace")
        )
        _check(world, load, rng.choice(list(HARNESS_ARGS)), stdin_for("fuzz"), env, rng)


def _break_shape(answer: dict, rng: random.Random) -> dict:
    """An answer whose memories no longer match its inject text, or are not memories."""
    a = json.loads(json.dumps(answer))
    mems = a["memories"]
    kind = rng.randrange(8)
    if kind == 0:
        del a["memories"]
    elif kind == 1:
        a["memories"] = rng.choice([None, "m", 3, {"id": "x"}])
    elif kind == 2:
        i, j = rng.sample(range(len(mems)), 2)
        if mems[i]["content"] == mems[j]["content"]:
            mems[i]["content"] += " (changed)"
        mems[i], mems[j] = mems[j], mems[i]
    elif kind == 3:
        rng.choice(mems)["content"] += rng.choice([" ", "x", "\n"])
    elif kind == 4:
        rng.choice(mems)["id"] = rng.choice([None, 7, ["a"]])
    elif kind == 5:
        a["inject"] = a["inject"][: rng.randrange(len(a["inject"]))]
    elif kind == 6:
        a["inject"] = rng.choice([None, ""])
    else:
        mems.append(dict(rng.choice(mems)))
    return a


def test_answers_whose_memories_do_not_fit_never_change_what_signet_prints(world, load, tmp_path):
    rng = random.Random(SEED + 2)
    answer = json.loads(world.answer.read_text())
    path = tmp_path / "answer.json"
    for _ in range(200):
        path.write_text(json.dumps(_break_shape(answer, rng)), encoding="utf-8")
        env = world.env(SIGNET_STANDIN_ANSWER=str(path))
        _check(world, load, rng.choice(list(HARNESS_ARGS)), stdin_for("fuzz"), env, rng)


def test_the_same_run_with_a_whole_answer_is_reranked(world, load):
    """The fuzz's runs fail open because of the damage, not for a reason of their own."""
    env = world.env()
    argv = [*world.options(), "session-start", *HARNESS_ARGS["plain"]]
    got = run_hook(argv, stdin_for("fuzz"), env=env, runner=standin_runner(env), load_scorer=load)
    assert got.invocation["outcome"] == "scorer" and got.invocation["reason"] is None


def test_a_fault_of_the_hooks_own_prints_what_signet_prints(world):
    """A loader that raises, a scorer that is not one: Signet's output, and the reason."""

    def raising(path):
        raise ZeroDivisionError("broken loader")

    class NotAScorer:
        info = None
        reason = None

    env = world.env()
    for fmt in HARNESS_ARGS:
        runner = standin_runner(env)
        want = runner(HARNESS_ARGS[fmt], stdin_for("fault")).result()
        argv = [*world.options(), "session-start", *HARNESS_ARGS[fmt]]
        for load, words in (
            (raising, "preparing failed: ZeroDivisionError: broken loader"),
            (lambda p: (NotAScorer(), None), "re-ranking failed"),
        ):
            got = run_hook(argv, stdin_for("fault"), env=env, runner=runner, load_scorer=load)
            assert (got.stdout, got.stderr, got.code) == (want.stdout, want.stderr, want.code)
            assert got.invocation["reason"].startswith(words), got.invocation["reason"]
