"""The prompt hook (`signet-bench-hook user-prompt-submit`) on a current-release store shared by
several agents (isolated, shared and grouped, with deleted, superseded, archived, scoped and
NULL-visibility memories): it adds only memories Signet would show the agent (proved through
the real command, and over 1,000 seeded random prompts in this process with recalls that
return any memory of the store), keeps Signet's bytes in every format, and prints exactly what
Signet prints on every failure (daemon offline or erring, a repeated prompt, bad stdin, no
model, no store, a char budget too small), recording each in the hook log."""

from __future__ import annotations

import functools
import json
import random
import shutil
import sqlite3
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from signet_bench.bench.signet_standin import write_standin
from signet_bench.store.hook_log import hook_record, prompt_rankings
from signet_scorer.hook.access import agent_scope, visible_clause
from signet_scorer.hook.opening import open_scorer
from signet_scorer.hook.prompt import HEADING, daemon_url, run_prompt_hook
from signet_scorer.hook.prompt_rank import PromptAsk, prompt_candidates, rank_prompt
from signet_scorer.hook.rank import HookSession, RankError
from signet_scorer.hook.resident_link import resident_files, resident_status
from signet_scorer.hook.store import open_store
from signet_scorer.terms import recall_terms
from signet_scorer.workbench import HOOK_LOG_FILE, prompt_model_file, served_at_prompt
from tests.scorer.hook_support import NOW, World, run_process, signet_prints, standin_runner

HOOK = "user-prompt-submit"
PROJECT = "portfolio"
ARGS = {
    "plain": ["-H", "claude-code", "--project", PROJECT],
    "codex": ["-H", "codex", "--codex-json"],
    "json": ["-H", "claude-code", "--json"],
}
WRAPPER = [sys.executable, "-m", "signet_scorer.hook"]
# agent -> (read_policy, policy_group); "zed" has no row (isolated), "default" is shared
AGENTS = {
    "default": ("shared", None),
    "alice": ("isolated", None),
    "bob": ("isolated", None),
    "carol": ("group", "team"),
    "dave": ("group", "team"),
    "erin": ("shared", None),
}
ASKERS = [*AGENTS, "zed"]


@functools.cache
def _two_agent_world(root: Path) -> World:
    """A light persona's current-release store (80 memories) whose memories are spread over
    the agents, with a share deleted, superseded, archived, scoped or of NULL visibility; a
    fresh exported model beside its workbench; the stand-in `signet`."""
    from signet_bench.learn.export import model_bytes
    from signet_bench.learn.model.checkpoint import CheckpointMeta
    from signet_bench.learn.model.params import init_params
    from signet_bench.world.synth.build import build_persona_store

    root.mkdir(parents=True, exist_ok=True)
    db = root / "memories.db"
    build_persona_store("light", db, seed=11, n_memories=80, schema="current")
    rng = random.Random(5)
    con = sqlite3.connect(db)
    with con:
        con.execute(
            "CREATE TABLE agents (id TEXT PRIMARY KEY, name TEXT, read_policy TEXT NOT NULL "
            "DEFAULT 'isolated', policy_group TEXT, created_at TEXT NOT NULL, updated_at TEXT "
            "NOT NULL)"
        )
        for agent, (policy, group) in AGENTS.items():
            con.execute(
                "INSERT INTO agents VALUES (?, ?, ?, ?, '2026-01-01', '2026-01-01')",
                [agent, agent, policy, group],
            )
        ids = [r[0] for r in con.execute("SELECT id FROM memories ORDER BY id")]
        for i, mid in enumerate(ids):
            vis = rng.choices(["global", "private", "archived", None], [6, 3, 1, 0.5])[0]
            con.execute(
                "UPDATE memories SET agent_id = ?, visibility = ? WHERE id = ?",
                [list(AGENTS)[i % len(AGENTS)], vis, mid],
            )
        for mid in rng.sample(ids, 8):
            con.execute(
                "UPDATE memories SET is_deleted = 1, deleted_at = '2026-02-01' WHERE id = ?", [mid]
            )
        for mid in rng.sample(ids, 4):
            con.execute("UPDATE memories SET scope = 'memorybench:q1' WHERE id = ?", [mid])
        for n, mid in enumerate(rng.sample(ids, 6)):
            con.execute(
                "INSERT INTO entity_attributes (id, aspect_id, agent_id, memory_id, kind, "
                "content, normalized_content, confidence, importance, status, superseded_by, "
                "created_at, updated_at) VALUES (?, 'a', 'default', ?, 'attribute', 'x', 'x', "
                "1, 0.5, 'superseded', NULL, '2026-01-01', '2026-01-02')",
                [f"sup-{n}", mid],
            )
    con.close()
    model = root / "wb" / "model.onnx"
    model.parent.mkdir()
    model.write_bytes(model_bytes(init_params(seed=1), CheckpointMeta()))
    answer = root / "answer.json"  # session start's, unused here but the stand-in reads it
    answer.write_text(json.dumps({"inject": "", "memories": []}), encoding="utf-8")
    return World(db, model, answer, write_standin(root / "bin"))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return _two_agent_world(tmp_path_factory.mktemp("hook-prompt"))


@pytest.fixture(scope="module")
def rows(world):
    """Each memory's (agent_id, visibility, is_deleted, scope, superseded), by id."""
    con = sqlite3.connect(world.db)
    sup = {
        r[0]
        for r in con.execute("SELECT memory_id FROM entity_attributes WHERE status = 'superseded'")
    }
    out = {
        r[0]: (r[1], r[2], r[3], r[4], r[0] in sup)
        for r in con.execute("SELECT id, agent_id, visibility, is_deleted, scope FROM memories")
    }
    con.close()
    return out


def may_see(row: tuple, asker: str) -> bool:
    """Signet's rule, written here independently of the hook: never deleted, superseded,
    scoped or archived (NULL visibility: never); then by the asker's read policy."""
    owner, vis, deleted, scope, superseded = row
    if deleted != 0 or scope is not None or superseded or vis is None or vis == "archived":
        return False
    policy, group = AGENTS.get(asker, ("isolated", None))
    if policy == "shared":
        return vis == "global" or owner == asker
    if policy == "group" and group:
        team = {a for a, (_, g) in AGENTS.items() if g == group}
        return (vis == "global" and owner in team) or owner == asker
    return owner == asker


def _prompt_stdin(key: str, prompt: str, agent: str | None = None) -> bytes:
    body = {"session_id": key, "cwd": PROJECT, "prompt": prompt}
    if agent is not None:
        body["agentId"] = agent
    return json.dumps(body).encode()


def _vocabulary(world: World) -> list[str]:
    con = sqlite3.connect(world.db)
    words = sorted(
        {
            w.lower()
            for (c,) in con.execute("SELECT content FROM memories")
            for w in c.split()
            if len(w) > 3 and w.isalpha()
        }
    )
    con.close()
    return words


def _common_terms(world: World, n: int) -> list[str]:
    """The `n` search terms (`recall_terms`) found in the most memories, ties alphabetical: a
    prompt of them matches more memories than one prompt's budget shows."""
    con = sqlite3.connect(world.db)
    found = Counter(
        t for (c,) in con.execute("SELECT content FROM memories") for t in recall_terms(c)
    )
    con.close()
    return sorted(found, key=lambda t: (-found[t], t))[:n]


def _logged(world: World, key: str) -> list[tuple]:
    path = world.workbench.parent / HOOK_LOG_FILE
    con = sqlite3.connect(path)
    try:
        return con.execute(
            "SELECT i.hook, i.outcome, i.reason, i.context_rule, i.agent_id, "
            "(SELECT group_concat(memory_id) FROM hook_injections j WHERE j.invocation_id = i.id)"
            " FROM hook_invocations i WHERE session_key = ? ORDER BY i.id",
            [key],
        ).fetchall()
    finally:
        con.close()


class _Daemon:
    """A real HTTP server standing in for the daemon's recall: it answers every recall with
    `ids` (any memories of the store, other agents' and deleted ones included), or `status`."""

    def __init__(self, ids: list[str], status: int = 200) -> None:
        daemon = self
        self.ids, self.status, self.asked = ids, status, []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                daemon.asked.append((self.path, json.loads(body)))
                out = json.dumps({"results": [{"id": m, "score": 1} for m in daemon.ids]})
                self.send_response(daemon.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(out.encode())

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def env(self) -> dict[str, str]:
        return {"SIGNET_DAEMON_URL": f"http://127.0.0.1:{self.server.server_port}"}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _hook(world: World, args, stdin: bytes, env, **options):
    argv = [*WRAPPER, *world.options(**options), HOOK, *args]
    return run_process(argv, stdin, env)


# --- only what Signet would show the agent -------------------------------------------------------


def test_the_rule_is_signets_clause_for_every_agent(world, rows):
    """The SQL condition (`access.visible_clause`) admits exactly the rows the independent
    rule admits, for every agent, the one without a row included."""
    con = open_store(world.db, 5.0)
    try:
        for asker in ASKERS:
            where, args = visible_clause(con, agent_scope(con, asker))
            got = {r[0] for r in con.execute(f"SELECT m.id FROM memories m WHERE {where}", args)}
            want = {m for m, row in rows.items() if may_see(row, asker)}
            assert got == want, asker
            assert (asker == "zed") != bool(want) and len(want) < len(rows)  # zed owns none
    finally:
        con.close()


def test_another_agents_memories_never_appear_through_the_command(world, rows):
    """Alice (isolated) and Bob (isolated) ask the same prompt through the real command, with
    a recall that returns every memory of the store: each gets only its own."""
    every = sorted(rows)
    daemon = _Daemon(every)
    try:
        env = world.env(**daemon.env)
        words = " ".join(_vocabulary(world)[:60])
        got: dict[str, set[str]] = {}
        for agent in ("alice", "bob"):
            key = f"two-agents-{agent}"
            out = _hook(world, ARGS["plain"], _prompt_stdin(key, words, agent), env)
            assert out.code == 0 and out.stderr == b"" and out.stdout.startswith(HEADING.encode())
            logged = _logged(world, key)
            assert logged[0][:3] == (HOOK, "scorer", None) and logged[0][3].startswith("fts+recall")
            got[agent] = set(logged[0][5].split(","))
            assert all(rows[m][0] == agent and may_see(rows[m], agent) for m in got[agent])
        assert got["alice"] and got["bob"] and not got["alice"] & got["bob"]
        assert {a["agentId"] for _, a in daemon.asked} == {"alice", "bob"}
        assert all(p == "/api/memory/recall" and "sessionKey" not in a for p, a in daemon.asked)
    finally:
        daemon.close()


def test_the_agent_comes_from_stdin_or_an_agent_session_key(world, rows):
    env = world.env(SIGNET_DAEMON_URL="http://127.0.0.1:9")  # nothing listens: lexical
    words = " ".join(_vocabulary(world)[:60])
    for key, agent, want in (("agent:carol:s1", None, "carol"), ("plain-key", None, "default")):
        out = _hook(world, ARGS["plain"], _prompt_stdin(key, words, agent), env)
        assert out.code == 0
        logged = _logged(world, key)
        assert logged[0][4] == want and "recall: daemon not reached" in logged[0][3]
        assert all(may_see(rows[m], want) for m in logged[0][5].split(","))


def test_a_thousand_random_prompts_leak_nothing(world, rows):
    """The goal's fuzz, in this process: 1,200 seeded prompts from the store's words, by a
    random agent, with a recall returning random memories of the whole store (others',
    deleted, superseded, archived) and random injections already made: every memory ranked
    is one the agent may see and the session has not injected."""
    rng = random.Random(20260421)
    vocab, ids = _vocabulary(world), sorted(rows)
    scorer, why = open_scorer(world.model)
    assert scorer is not None, why
    con = open_store(world.db, 5.0)
    forbidden_offered = ranked = 0
    try:
        for i in range(1200):
            asker = rng.choice(ASKERS)
            recalled = rng.sample(ids, rng.randrange(0, 30)) if rng.random() < 0.7 else None
            forbidden_offered += sum(not may_see(rows[m], asker) for m in recalled or ())
            ask = PromptAsk(
                session=HookSession(NOW, "UTC", rng.choice([PROJECT, None]), f"f{i}", asker),
                prompt=" ".join(rng.choices(vocab, k=rng.randrange(1, 12)))
                + rng.choice(["", " ?", ' "OR" NEAR(', " * - ^"]),
                recalled=None if recalled is None else tuple(recalled),
                exclude=frozenset(rng.sample(ids, rng.randrange(0, 10))),
                limit=rng.randrange(1, 20),
            )
            pool = prompt_candidates(con, ask)
            assert all(may_see(rows[m], asker) and m not in ask.exclude for m in pool), i
            if i % 4 == 0 and pool:  # the whole ranking on a share of them
                try:
                    got = rank_prompt(con, scorer, ask)
                except RankError as exc:  # fail open: nothing added
                    assert "no context" in str(exc)
                    continue
                assert set(got.ids) <= set(pool) and len(got.ids) <= ask.limit
                ranked += 1
    finally:
        con.close()
    assert forbidden_offered > 1000 and ranked > 100


# --- the formats ---------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", list(ARGS))
def test_signets_bytes_are_kept_and_the_section_added_in_the_harness_format(world, fmt, tmp_path):
    """With an entity-context answer from Signet: its bytes come first (plain), its context
    leads the Codex envelope's, its JSON keeps every field and its inject leads."""
    answer = tmp_path / "prompt.json"
    inject = "# Current Date & Time\nnow\n\n## Relevant Entity Context\n- [attribute] x: y"
    answer.write_text(json.dumps({"inject": inject, "memoryCount": 1, "engine": "entity-context"}))
    env = world.env(
        SIGNET_STANDIN_PROMPT_ANSWER=str(answer), SIGNET_DAEMON_URL="http://127.0.0.1:9"
    )
    stdin = _prompt_stdin(f"fmt-{fmt}", " ".join(_vocabulary(world)[:40]))
    own = signet_prints(world, ARGS[fmt], stdin, env, HOOK)
    out = _hook(world, ARGS[fmt], stdin, env)
    assert out.code == own.code == 0 and out.stderr == own.stderr == b""
    if fmt == "plain":
        assert out.stdout.startswith(own.stdout + b"\n" + HEADING.encode())
        return
    got, was = json.loads(out.stdout), json.loads(own.stdout)
    if fmt == "codex":
        ctx = got["hookSpecificOutput"]["additionalContext"]
        assert got["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
        assert ctx.startswith(was["hookSpecificOutput"]["additionalContext"] + "\n\n" + HEADING)
        assert (
            out.stdout
            == json.dumps(got, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
        )
        return
    assert got["inject"].startswith(inject + "\n\n" + HEADING)
    assert {k: v for k, v in got.items() if k not in ("inject", "scorerMemories")} == {
        k: v for k, v in was.items() if k != "inject"
    }
    lines = got["inject"].split(HEADING + "\n")[1].splitlines()
    assert len(lines) == len(got["scorerMemories"]) >= 1
    assert all(line.startswith("- ") and line.endswith(")") for line in lines)


def test_the_section_holds_to_the_char_budget(world):
    env = world.env(SIGNET_DAEMON_URL="http://127.0.0.1:9")
    stdin = _prompt_stdin("budget-300", " ".join(_vocabulary(world)[:60]))
    out = _hook(world, ARGS["plain"], stdin, env, max_chars="300")
    section = out.stdout.decode().rstrip("\n")
    assert section.startswith(HEADING) and 0 < len(section) <= 300
    wide = _hook(
        world, ARGS["plain"], _prompt_stdin("budget-big", stdin.decode()), env, max_chars="5000"
    )
    assert len(wide.stdout) > len(out.stdout)


def test_daemon_url_is_found_as_signets_clients_find_it():
    assert daemon_url({}) == "http://127.0.0.1:3850"
    assert daemon_url({"SIGNET_HOST": "::1", "SIGNET_PORT": "4000"}) == "http://[::1]:4000"
    assert (
        daemon_url({"SIGNET_DAEMON_URL": " https://x.example:8443/ "}) == "https://x.example:8443"
    )


# --- every failure prints what Signet prints ---------------------------------------------------


def _failures(world: World, tmp_path: Path) -> dict[str, tuple[dict, dict, bytes, str]]:
    """name -> (options, environment, stdin, what the log's reason holds)."""
    words = " ".join(_vocabulary(world)[:30])
    ok = _prompt_stdin("x", words)
    return {
        "daemon offline": ({}, {"SIGNET_STANDIN_MODE": "offline"}, ok, "daemon not running"),
        "daemon error": ({}, {"SIGNET_STANDIN_MODE": "error"}, ok, "HTTP 500"),
        "signet crashes": ({}, {"SIGNET_STANDIN_MODE": "crash"}, ok, "signet exited with -15"),
        "signet garbage": ({}, {"SIGNET_STANDIN_MODE": "malformed"}, ok, "not JSON"),
        "stdin not json": ({}, {}, b"  not json", "stdin is not a JSON object"),
        "stdin an array": ({}, {}, b"[1, 2]", "stdin is not a JSON object"),
        "stdin no prompt": ({}, {}, b'{"session_id": "x"}', "stdin holds no prompt"),
        "no model": (
            {"model": None, "workbench": str(tmp_path / "wb.duckdb")},
            {},
            ok,
            "no model at",
        ),
        "model option missing": ({"model": "/nonexistent/m.onnx"}, {}, ok, "--model"),
        "no store": ({"db": None}, {"HOME": str(tmp_path / "home")}, ok, "cannot open the store"),
        "store option missing": ({"db": "/nonexistent/m.db"}, {}, ok, "--db"),
        "budget 0": ({"max_chars": "0"}, {}, ok, "--max-chars '0'"),
        "budget too small": ({"max_chars": "40"}, {}, ok, "char budget (40) admits no memory"),
        "no match": ({}, {}, _prompt_stdin("x", "zzzqqq xxyyzz"), "matches the prompt"),
    }


@pytest.mark.parametrize("fmt", list(ARGS))
def test_every_failure_prints_what_signet_prints_and_says_why(world, tmp_path, fmt):
    (tmp_path / "home").mkdir()
    failed = []
    for i, (name, (options, extra, stdin, needle)) in enumerate(_failures(world, tmp_path).items()):
        key = f"fail-{fmt}-{i}"
        stdin = stdin.replace(b'"x"', f'"{key}"'.encode())
        env = world.env(SIGNET_DAEMON_URL="http://127.0.0.1:9", **extra)
        own = signet_prints(world, ARGS[fmt], stdin, env, HOOK)
        out = _hook(world, ARGS[fmt], stdin, env, **options)
        if name == "signet garbage" and fmt == "plain":  # any text is Signet's plain inject
            assert out.stdout.startswith(own.stdout + b"\n" + HEADING.encode())
            continue
        if out != own:
            failed.append((name, out, own))
            continue
        if b'"x"' in stdin or key.encode() in stdin:
            log = world.workbench.parent if options.get("workbench") is None else tmp_path
            path = Path(log) / HOOK_LOG_FILE
            con = sqlite3.connect(path)
            got = con.execute(
                "SELECT hook, outcome, reason FROM hook_invocations WHERE session_key = ?", [key]
            ).fetchall()
            con.close()
            if not (len(got) == 1 and got[0][:2] == (HOOK, "signet") and needle in got[0][2]):
                failed.append((name, "log", got))
    assert failed == []


@pytest.mark.parametrize("resident", ["off", "auto"])
def test_a_repeated_prompt_adds_only_what_the_session_has_not_had(world, resident):
    """In this process or by the resident scorer (which reads the session's injections from the
    log it holds, and writes the records)."""
    from tests.scorer.hook_support import ServedResident

    env = world.env(SIGNET_DAEMON_URL="http://127.0.0.1:9")
    prompt = " ".join(_common_terms(world, 8))
    key = f"repeat-{resident}"
    stdin = _prompt_stdin(key, prompt)
    seen: set[str] = set()
    served = ServedResident(world) if resident == "auto" else None
    try:
        runs = 0
        while runs < 12:
            runs += 1
            out = _hook(world, ARGS["json"], stdin, env, resident=resident)
            assert out.code == 0 and out.stderr == b""
            added = {m["id"] for m in json.loads(out.stdout).get("scorerMemories", [])}
            assert not added & seen
            if not added:
                break
            seen |= added
        if served is not None:  # each prompt ranked and recorded by it, and this status
            status = resident_status(resident_files(world.model.parent))
            assert status["requests"] == 2 * runs + 1
    finally:
        if served is not None:
            assert served.close() == 0
    logged = _logged(world, key)
    assert logged[-1][1:3][0] == "signet" and "matches the prompt" in logged[-1][2]
    assert len(seen) > 1 and sum(1 for r in logged if r[1] == "scorer") >= 2
    # each served prompt's ranking is recorded for training: its pool held only what the
    # session had not had, and what it added
    asked = prompt_rankings(world.workbench, hook_record(world.workbench)).filter(
        pl.col("session_key") == key
    )
    assert asked.height == sum(1 for r in logged if r[1] == "scorer")
    had: set[str] = set()
    for row in asked.iter_rows(named=True):
        assert set(row["injected"]) <= set(row["pool"]) and not had & set(row["pool"])
        context = np.frombuffer(row["context"], "<f4")
        assert row["prompt"] == prompt and abs(float(np.linalg.norm(context)) - 1) < 1e-5
        had |= set(row["injected"])
    assert had == seen


def test_in_process_the_run_is_what_the_command_prints(world):
    """`run_prompt_hook` with the stand-in in this process and no daemon: Signet's empty
    answer and the section, the record's rows those of the section."""
    env = world.env(SIGNET_DAEMON_URL="http://127.0.0.1:9")
    stdin = _prompt_stdin("in-process", " ".join(_vocabulary(world)[:50]))
    argv = [*world.options(), HOOK, *ARGS["plain"]]
    run = run_prompt_hook(
        argv,
        stdin,
        env=env,
        runner=standin_runner(env, HOOK),
        recall=lambda *a: (None, "not asked in this test"),
    )
    lines = run.stdout.decode().splitlines()
    assert lines[0] == HEADING and len(lines) - 1 == len(run.injections) >= 1
    assert run.invocation["hook"] == HOOK and run.invocation["outcome"] == "scorer"
    assert run.invocation["context_rule"].endswith("(recall: not asked in this test)")


def test_doctor_lists_the_prompts_beside_the_session_starts(world):
    env = world.env(SIGNET_DAEMON_URL="http://127.0.0.1:9")
    out = _hook(
        world, ARGS["plain"], _prompt_stdin("doctor", " ".join(_vocabulary(world)[:60])), env
    )
    assert out.stdout.startswith(HEADING.encode())
    doctor = run_process([*WRAPPER, *world.options(), "doctor"], b"", env)
    text = doctor.stdout.decode()
    assert (
        "doctor  claude-code portfolio prompt: served: the scorer's memories for the prompt" in text
    )
    assert "invocations (prompts marked)" in text


def test_with_the_resident_the_prompt_hooks_own_process_loads_neither_numpy_nor_onnxruntime(
    world,
):
    """The resident ranks the prompt; the hook's process stays on the standard library."""
    from tests.scorer.hook_support import ServedResident

    resident = ServedResident(world)
    try:
        stdin = _prompt_stdin("light", " ".join(_vocabulary(world)[:60]))
        probe = (
            "import json, sys\n"
            "from signet_scorer.hook.prompt import run_prompt_hook\n"
            "from signet_scorer.hook.run import save_record\n"
            f"run = run_prompt_hook({[*world.options(resident='auto'), HOOK, *ARGS['plain']]!r},"
            f" {stdin!r})\n"
            "save_record(run)\n"
            "print(json.dumps([run.invocation['outcome'], run.start_resident,"
            " sorted({m.split('.')[0] for m in sys.modules})]))\n"
        )
        env = world.env(SIGNET_DAEMON_URL="http://127.0.0.1:9")
        out = run_process([sys.executable, "-c", probe], b"", env)
        outcome, started, modules = json.loads(out.stdout)
        assert (outcome, started) == ("scorer", False), out.stderr
        assert "numpy" not in modules and "onnxruntime" not in modules
    finally:
        resident.close()


def test_the_prompt_hook_ranks_with_the_prompt_hooks_own_model_where_one_is_served(world):
    """A training that judged the prompts on their own writes their model beside session
    start's (`prompt_model_file`); the prompt hook loads it, and session start's without it."""
    env = world.env(SIGNET_DAEMON_URL="http://127.0.0.1:9")
    stdin = _prompt_stdin("own-model", " ".join(_vocabulary(world)[:50]))
    argv = [*world.options(), HOOK, *ARGS["plain"]]
    loaded: list[Path] = []

    def load(path):
        loaded.append(Path(path))
        return open_scorer(path)

    def run():
        got = run_prompt_hook(
            argv,
            stdin,
            env=env,
            runner=standin_runner(env, HOOK),
            load_scorer=load,
            recall=lambda *a: (None, "not asked in this test"),
        )
        assert got.invocation["outcome"] == "scorer"

    own = prompt_model_file(world.model)
    assert served_at_prompt(world.model) == world.model
    run()
    try:
        shutil.copyfile(world.model, own)
        assert served_at_prompt(world.model) == own
        run()
    finally:
        own.unlink()
    assert loaded == [world.model, own]
