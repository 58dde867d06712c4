"""`signet-bench-hook user-prompt-submit ...`: Signet's prompt hook with the scorer's memories
for the prompt added.

The harness's command `signet hook user-prompt-submit ARGS` becomes `signet-bench-hook
[OPTIONS] user-prompt-submit ARGS`: same arguments (`-H/--harness`, `--project`, `--json`,
`--codex-json`), same stdin. Signet's own command runs once, exactly as the harness asked, and
its bytes are kept: the wrapper only adds a section of its own after them,

    ## Memories for this prompt
    - <content> (<date>)

in the harness's format: plain, after Signet's text (a blank line between); Codex, at the end
of the envelope's `additionalContext`; `--json`, at the end of Signet's `inject` (what a harness
reading the JSON injects), with the memories also listed as `scorerMemories` (`id`, `content`,
`created_at`, `score`) and every other field as Signet wrote it. The memories are the scorer's
ranking of the prompt (`signet_scorer.hook.prompt_rank`): candidates the agent may be shown,
found by the daemon's recall of the prompt (`/api/memory/recall`, asked while Signet works, as
Signet's own clients ask it: `SIGNET_DAEMON_URL`, else `SIGNET_HOST`:`SIGNET_PORT`, default
127.0.0.1:3850, with `SIGNET_API_KEY` or `SIGNET_TOKEN`) and by the prompt's terms through
FTS5; none the session already injected (the hook log's rows for its session key and agent);
best first within `--max-chars` (`SIGNET_BENCH_MAX_CHARS`, default Signet's own
`hooks.userPromptSubmit.maxInjectChars`, 500), at most `--limit`.

**Fail-open, byte for byte**, as the session-start wrapper (`signet_scorer.hook.cli`): a setting
of the wrapper's own it cannot use runs Signet exactly as asked and passes its output on;
otherwise Signet's stdout, stderr and exit code are printed unchanged, with nothing added,
whenever Signet skipped the hook (it says so on stderr: daemon offline, an HTTP error such as a
body without a prompt, a timeout; its exit code is 0 all the same) or failed, when its output
cannot be reproduced exactly, stdin is not a JSON object or holds no prompt, there is no model
or store, no memory matches, the char budget admits none, or the time budget is spent. The
invocation is recorded in the hook log with hook `user-prompt-submit`: outcome "scorer" with the
memories added (their rows join the session's), or "signet" and the reason; `context_rule`
says where the candidates came from (`fts+recall`, or `fts` and why recall was not reached).
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable, Mapping, Sequence

from signet_scorer.budget import Budget, choose, utf16_units
from signet_scorer.hook.config import USER_PROMPT_SUBMIT, Command, HookConfig, read_command
from signet_scorer.hook.harness import (
    PROMPT_OPTIONS,
    HookInput,
    Invocation,
    answer_output,
    codex_output,
    is_text,
    parse_invocation,
    prompt_input,
)
from signet_scorer.hook.js import JsNumber, js_list, js_object, parse_json
from signet_scorer.hook.opening import failure_text, missing_model, open_scorer, open_store_for
from signet_scorer.hook.run import (
    HookRun,
    as_asked,
    as_run,
    bypassed,
    invocation_fields,
    open_log,
    utc_text,
)
from signet_scorer.hook.signet import SignetResult, SignetRunner, Worker, start_signet
from signet_scorer.workbench import served_at_prompt

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket
    from datetime import datetime
    from typing import Any

    from signet_scorer.hook.log import InjectionLog
    from signet_scorer.hook.resident_link import ResidentLink

__all__ = [
    "EVENT",
    "HEADING",
    "Recaller",
    "daemon_recall",
    "daemon_url",
    "extend_output",
    "http_post",
    "memory_date",
    "prompt_section",
    "run_prompt_hook",
]

COMMAND = USER_PROMPT_SUBMIT
EVENT = "UserPromptSubmit"  # the Codex envelope's hookEventName
HEADING = "## Memories for this prompt"
RECALL_PATH = "/api/memory/recall"
RECALL_LIMIT = 20  # the recall's memories asked for (its own default is 10)
RECALL_TIMEOUT_S = 1.0  # from the wrapper's start; past it the candidates are lexical only
MAX_REPLY = 4 << 20

# The daemon's recall of a prompt: (prompt, agent, environment, timeout) -> (memory ids best
# first, "recall") or (None, why it was not reached).
Recaller = Callable[[str, str, Mapping[str, str], float], "tuple[list[str] | None, str]"]


# --- the daemon's recall ------------------------------------------------------------------------


def daemon_url(env: Mapping[str, str]) -> str:
    """The daemon's origin as Signet's clients find it (`resolveSignetDaemonUrl`):
    `SIGNET_DAEMON_URL`, else `http://SIGNET_HOST:SIGNET_PORT` (127.0.0.1 and 3850)."""
    explicit = env.get("SIGNET_DAEMON_URL", "").strip()
    if explicit:
        return explicit.rstrip("/")
    host = env.get("SIGNET_HOST", "").strip() or "127.0.0.1"
    port = env.get("SIGNET_PORT", "").strip() or "3850"
    return f"http://{f'[{host}]' if ':' in host else host}:{port}"


def _dechunk(body: bytes) -> bytes:
    """A chunked HTTP body's data (ValueError when it is not one)."""
    out: list[bytes] = []
    pos = 0
    while True:
        end = body.index(b"\r\n", pos)
        size = int(body[pos:end].split(b";")[0], 16)
        if size == 0:
            return b"".join(out)
        out.append(body[end + 2 : end + 2 + size])
        pos = end + 4 + size


def _connect(host: str, port: int, timeout_s: float) -> _socket.socket:
    """A TCP connection to `host`, as `socket.create_connection` makes it (each address in
    turn, the first one's error when none takes it), on `_socket`: `socket` builds its enums at
    import and a text host loads the `idna` codec, some 5 ms of every prompt together (an ASCII
    host is passed as bytes, which needs no codec)."""
    import _socket

    name = host.encode("ascii") if host.isascii() else host
    errors: list[OSError] = []
    for family, kind, proto, _, address in _socket.getaddrinfo(name, port, 0, _socket.SOCK_STREAM):
        sock = None
        try:
            sock = _socket.socket(family, kind, proto)
            sock.settimeout(timeout_s)
            sock.connect(address)
        except OSError as exc:
            errors.append(exc)
            if sock is not None:
                sock.close()
        else:
            return sock
    raise errors[0] if errors else OSError("getaddrinfo returns an empty list")


def http_post(
    url: str, path: str, body: bytes, headers: dict[str, str], timeout_s: float
) -> tuple[int, bytes]:
    """(status, body) of one HTTP/1.1 POST over a plain socket: `http.client` would load `ssl`
    and `email`, some 100 ms of every prompt. An https daemon takes `http.client`."""
    from urllib.parse import urlsplit

    u = urlsplit(url)
    if u.scheme == "https":
        import http.client

        conn = http.client.HTTPSConnection(u.hostname or "", u.port, timeout=timeout_s)
        try:
            conn.request("POST", path, body=body, headers=headers)
            res = conn.getresponse()
            return res.status, res.read(MAX_REPLY)
        finally:
            conn.close()
    if u.scheme != "http" or not u.hostname:
        raise ValueError(f"not an http(s) daemon address: {url}")
    host = f"[{u.hostname}]" if ":" in u.hostname else u.hostname
    head = [f"POST {path} HTTP/1.1", f"Host: {host}:{u.port or 80}", "Connection: close"]
    head += [f"{k}: {v}" for k, v in {**headers, "Content-Length": str(len(body))}.items()]
    data = b""
    sock = _connect(u.hostname, u.port or 80, timeout_s)
    try:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        while chunk := sock.recv(1 << 16):
            data += chunk
            if len(data) > MAX_REPLY:
                raise ValueError("the daemon's answer is too long")
    finally:
        sock.close()
    top, _, rest = data.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    fields = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    if fields.get("transfer-encoding", "").lower() == "chunked":
        rest = _dechunk(rest)
    return status, rest


def daemon_recall(
    prompt: str, agent: str, env: Mapping[str, str], timeout_s: float
) -> tuple[list[str] | None, str]:
    """The ids the daemon's recall returns for the prompt as the agent (no session key: the
    wrapper's question is not the session's recall and must not be recorded as one)."""
    import json

    headers = {"Content-Type": "application/json"}
    token = env.get("SIGNET_API_KEY", "").strip() or env.get("SIGNET_TOKEN", "").strip()
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = json.dumps({"query": prompt[:2000], "limit": RECALL_LIMIT, "agentId": agent})
    try:
        status, data = http_post(
            daemon_url(env), RECALL_PATH, body.encode(), headers, max(timeout_s, 1e-3)
        )
    except (OSError, ValueError, IndexError) as exc:
        return None, f"daemon not reached ({type(exc).__name__}: {str(exc)[:120]})"
    if status != 200:
        return None, f"daemon answered HTTP {status}"
    try:
        answer = js_object(json.loads(data))
    except ValueError:
        answer = None
    rows = js_list(answer.get("results")) if answer is not None else None
    if rows is None:
        return None, "daemon's recall answer is not its JSON"
    found = (js_object(r) for r in rows)
    return [str(r["id"]) for r in found if r is not None and is_text(r.get("id"))], "recall"


class _Recall:
    """The daemon's recall of the prompt, asked in a thread while Signet works."""

    def __init__(self, recall: Recaller, prompt: str, agent: str, env: Mapping[str, str]) -> None:
        self.result: tuple[list[str] | None, str] = (None, "no answer in time")
        self._worker = Worker(lambda: self._run(recall, prompt, agent, env))

    def _run(self, recall: Recaller, prompt: str, agent: str, env: Mapping[str, str]) -> None:
        try:
            self.result = recall(prompt, agent, env, RECALL_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - lexical candidates then
            self.result = (None, f"recall failed: {failure_text(exc)}")

    def wait(self, until: float) -> tuple[list[str] | None, str]:
        self._worker.wait(until - time.monotonic())
        return self.result


# --- the section and the output -----------------------------------------------------------------


def memory_date(created_at: str) -> str:
    """Signet's date of a memory line (`toLocaleDateString("en-US", {month: "short", day:
    "numeric", year: "numeric"})` in UTC: `Mar 5, 2026`)."""
    from signet_scorer.timestamps import parse_utc

    dt = parse_utc(created_at)
    return f"{dt:%b} {dt.day}, {dt.year}"


def prompt_section(
    memories: Sequence[tuple[str, str]], max_chars: int, limit: int
) -> tuple[str, list[int]]:
    """(the section, the positions of `memories` in it) for (content, created_at) pairs ranked
    best first: the heading and one line per memory, best first, a memory whose line does not
    fit the characters left passed over (`signet_scorer.budget.choose`); ("", []) when none
    fits."""
    lines = ["- " + " ".join(c.split()) + f" ({memory_date(t)})" for c, t in memories]
    room = max_chars - utf16_units(HEADING)
    if room <= 0:
        return "", []
    chosen = choose([utf16_units(line) + 1 for line in lines], Budget(limit, room))
    if not chosen:
        return "", []
    return "\n".join([HEADING, *(lines[i] for i in chosen)]), chosen


def _score_text(score: float) -> JsNumber:
    """A score as JavaScript would write it, to six places."""
    return JsNumber(f"{score:.6f}".rstrip("0").rstrip(".") or "0")


def extend_output(
    output: str, res: SignetResult, section: str, listed: list[dict[str, Any]]
) -> tuple[bytes | None, str | None]:
    """(Signet's output with the section added in the harness's format, None) or (None, why
    Signet's bytes cannot be extended); `listed`: the memories as `--json` lists them."""
    if res.code != 0:
        return None, f"signet exited with {res.code}"
    if res.stderr:
        said = res.stderr.decode("utf-8", "replace").strip().splitlines()
        return None, f"signet skipped the hook: {(said or [''])[0][:200]}"
    if output == "plain":
        return res.stdout + (b"\n" if res.stdout else b"") + section.encode() + b"\n", None
    try:
        answer = parse_json(res.stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None, "signet's output is not JSON"
    obj = js_object(answer)
    if output == "codex":
        inner = js_object(obj.get("hookSpecificOutput")) if obj is not None else None
        ctx = inner.get("additionalContext") if inner is not None else None
        if not (ctx is None or is_text(ctx)) or codex_output(ctx, EVENT) != res.stdout:
            return None, "signet's Codex output is not written as Signet writes it"
        return codex_output((ctx + "\n\n" if ctx else "") + section, EVENT), None
    inject = obj.get("inject") if obj is not None else None
    if obj is None or not (inject is None or is_text(inject)):
        return None, "signet's JSON has no inject text"
    try:
        same = answer_output("json", answer) == res.stdout
    except (TypeError, RecursionError):
        same = False
    if not same:
        return None, "signet's JSON is not written as Signet writes it"
    added = {**obj, "inject": (inject + "\n\n" if inject else "") + section}
    return answer_output("json", {**added, "scorerMemories": listed}), None


# --- one invocation -----------------------------------------------------------------------------


class _Prompt:
    """One invocation while it runs: what it was given, what it found, why it stopped."""

    __slots__ = (
        "cfg",
        "down",
        "inp",
        "inv",
        "link",
        "now",
        "prompt",
        "ranked",
        "reason",
        "recall",
        "version",
        "writer",
    )

    def __init__(
        self, cfg: HookConfig, inv: Invocation, given: tuple[HookInput, str], now: datetime
    ) -> None:
        self.cfg, self.inv, self.now = cfg, inv, now
        self.inp, self.prompt = given  # the harness's stdin and the user's prompt
        self.reason: str | None = None
        self.ranked: dict[str, Any] | None = None  # the ranking's reply
        self.version: str | None = None
        self.down: str | None = None  # why the resident did not answer
        self.recall = "not asked"
        self.link: ResidentLink | None = None  # the resident that answered: it records
        self.writer: InjectionLog | None = None  # else the log, opened here

    def fail(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason

    def ask(self, recalled: list[str] | None, exclude: set[str] | None) -> dict[str, Any]:
        """The `prompt` request's fields (`signet_scorer.hook.resident_link`); `exclude` None:
        the resident reads the session's injections from the log it holds."""
        inp = self.inp
        session = {
            "now": self.now.isoformat(),
            **self.cfg.zone_fields(),
            "project": inp.project or None,
            "session_key": inp.session_key,
            "agent_id": inp.agent_id,
        }
        return {
            "db": self.cfg.db,
            "model": served_at_prompt(self.cfg.model),
            "timeout_s": self.cfg.budget_ms / 1000.0,
            "session": session,
            "prompt": self.prompt,
            "recalled": recalled,
            "exclude": None if exclude is None else sorted(exclude),
            "limit": self.cfg.limit,
        }


def _rank_resident(p: _Prompt, ask: dict[str, Any], left: float) -> bool:
    """Whether the resident scorer answered (its ranking, or why not, kept in `p`, and its
    connection, over which it writes the record)."""
    from signet_scorer.hook.resident_link import ResidentLink, Unavailable

    try:
        link = ResidentLink.connect(p.cfg.socket, left)
        try:
            reply, why = link.prompt(ask, left)
        except BaseException:
            link.close()
            raise
    except Unavailable as exc:
        p.down = str(exc)
        return False
    p.link = link
    if why is not None:
        p.fail(why)
    else:
        p.ranked, p.version = reply, reply.get("model_version")
    return True


def _rank_here(p: _Prompt, ask: dict[str, Any], load: Callable[[Any], Any]) -> None:
    """The ranking in this process: the model and the store opened here."""
    scorer, why = load(ask["model"])
    if scorer is None:
        p.fail(why or "no model")
        return
    con, why = open_store_for(ask["db"], ask["timeout_s"])
    if why is not None:
        p.fail(why)
        return
    from signet_scorer.hook.prompt_rank import prompt_ask, rank_prompt, ranking_reply

    try:
        p.ranked = ranking_reply(rank_prompt(con, scorer, prompt_ask(ask)))
        p.version = scorer.info.model_version if scorer.info is not None else None
    except Exception as exc:  # noqa: BLE001 - fail open: Signet's output is printed
        p.fail(f"ranking failed: {failure_text(exc)}")
    finally:
        con.close()


def _rank(p: _Prompt, recall: _Recall | None, load: Callable[[Any], Any]) -> None:
    """While Signet works: the candidates' recall, the session's injections, the ranking: the
    resident's (it reads the injections from the log it holds), else this process's."""
    started = time.monotonic()
    recalled, p.recall = recall.wait(started + RECALL_TIMEOUT_S) if recall else (None, "no prompt")
    if p.cfg.resident == "auto":
        from signet_scorer.hook.resident_link import ANSWER_TIMEOUT_S

        if _rank_resident(p, p.ask(recalled, None), ANSWER_TIMEOUT_S):
            return
    p.writer = open_log(p.cfg.log)
    held: set[str] = set()
    if p.writer is not None:
        held = p.writer.injected(p.inp.session_key, p.inp.agent_id)
    _rank_here(p, p.ask(recalled, held), load)


def _rows(p: _Prompt, chosen: list[int]) -> list[dict[str, Any]]:
    """The hook log's rows of the memories added: rank in the section, rank in the candidate
    pool before scoring (`signet_rank`), the scorer's probability."""
    assert p.ranked is not None
    at = utc_text(p.now)
    mems = p.ranked["memories"]
    return [
        {
            "session_key": p.inp.session_key,
            "agent_id": p.inp.agent_id,
            "memory_id": mems[i][0],
            "rank": r,
            "signet_rank": mems[i][4],
            "score": mems[i][3],
            "chosen_by": "scorer",
            "model_version": p.version,
            "injected_at": at,
        }
        for r, i in enumerate(chosen, 1)
    ]


def _finish(p: _Prompt, res: SignetResult, started: float) -> tuple[bytes, list[dict[str, Any]]]:
    """What to print and the rows of the memories added (none: Signet's bytes)."""
    section, chosen = "", []
    if p.reason is None and p.ranked is not None:
        mems = p.ranked["memories"]
        section, chosen = prompt_section([(m[1], m[2]) for m in mems], p.cfg.max_chars, p.cfg.limit)
        if not chosen:
            p.fail(f"the char budget ({p.cfg.max_chars}) admits no memory of the prompt")
    if p.reason is None and (time.monotonic() - started) * 1000.0 > p.cfg.budget_ms:
        p.fail(f"over the time budget ({p.cfg.budget_ms:g} ms)")
    if p.reason is not None:
        return res.stdout, []
    mems: list[Any] = p.ranked["memories"] if p.ranked is not None else []
    listed: list[dict[str, Any]] = [
        {"id": m[0], "content": m[1], "created_at": m[2], "score": _score_text(m[3])}
        for m in (mems[i] for i in chosen)
    ]
    out, why = extend_output(p.inv.output, res, section, listed)
    if out is None:
        p.fail(why or "signet's output cannot be extended")
        return res.stdout, []
    return out, _rows(p, chosen)


def _invocation(p: _Prompt, res: SignetResult, rows: list[Any], ms: float) -> dict[str, Any]:
    ranked = p.ranked if p.reason is None else None
    rule = None
    if p.ranked is not None:
        rule = p.ranked["context_rule"]
        if p.recall != "recall":
            rule += f" (recall: {p.recall})"
    return {
        **invocation_fields(p.inv, p.inp, p.cfg, p.reason, utc_text(p.now)),
        "model_version": p.version,
        "pool": None if ranked is None else ranked["pool"],
        "injected": len(rows),
        "context_rule": rule,
        "signet_exit": res.code,
        "duration_ms": ms,
        "hook": USER_PROMPT_SUBMIT,
    }


def _ranking_record(p: _Prompt) -> dict[str, Any] | None:
    """What the served ranking saw, as the log keeps it for training on prompts (the context
    as little-endian float32); None from a resident that does not say it."""
    ranked = p.ranked or {}
    pool, context = ranked.get("candidates"), ranked.get("context")
    if not pool or not context:
        return None
    vector = struct.pack(f"<{len(context)}f", *context)
    return {"prompt": p.prompt, "pool": pool, "hits": ranked.get("hits") or [], "context": vector}


def run_prompt_hook(
    argv: Sequence[str],
    stdin: bytes | None,
    *,
    env: Mapping[str, str] | None = None,
    runner: SignetRunner | None = None,
    load_scorer: Callable[[Any], Any] = open_scorer,
    now: datetime | None = None,
    command: Command | None = None,
    recall: Recaller = daemon_recall,
) -> HookRun:
    """One invocation of `user-prompt-submit` (module docstring): what to print, the exit code
    and the record. `stdin` None: a terminal (not read); `env` the harness's environment (Signet
    gets it); `runner` reaches Signet (default: the binary `--signet` names); `load_scorer`
    loads the model when it is ranked in this process; `now` the prompt's time (default: the
    wall clock); `command`: `argv` as already read; `recall`: the daemon's recall."""
    started = time.monotonic()
    env = os.environ if env is None else env
    command = command or read_command(argv, env)
    cfg, args = command.config, command.args
    run = runner or start_signet(cfg.signet, env, USER_PROMPT_SUBMIT)
    data = stdin or b""
    if command.problems:  # a setting of the wrapper's own: Signet exactly as asked
        return as_asked(command, stdin, run(args, data), started, time.monotonic, COMMAND)
    inv = None if bypassed(env) else parse_invocation(args, PROMPT_OPTIONS)
    if inv is None:  # Signet exactly as asked
        return as_run(run(args, data).result())
    call = run(args, data)
    from datetime import UTC, datetime

    p, printed, rows = None, None, []
    try:
        p = _Prompt(cfg, inv, prompt_input(stdin, inv), now or datetime.now(UTC))
        if p.inp.malformed:
            p.fail("stdin is not a JSON object")
        elif not p.prompt:
            p.fail("stdin holds no prompt")
        elif (missing := missing_model(cfg.model)) is not None:
            p.fail(missing)
        if p.reason is None:
            _rank(p, _Recall(recall, p.prompt, p.inp.agent_id, env), load_scorer)
    except Exception as exc:  # noqa: BLE001 - fail open: Signet's output is printed
        if p is not None:
            p.fail(f"preparing failed: {failure_text(exc)}")
    if p is not None and p.link is None and p.writer is None:
        p.writer = open_log(cfg.log)
    res = call.result()
    if p is None:
        return as_run(res)
    failure = getattr(call, "failure", None)
    if failure is not None:
        p.fail(failure)
    try:
        printed, rows = _finish(p, res, started)
    except Exception as exc:  # noqa: BLE001 - fail open: Signet's output is printed
        p.fail(f"adding the section failed: {failure_text(exc)}")
        printed, rows = res.stdout, []
    done = HookRun(printed, res.stderr, res.code, log=cfg.log, writer=p.writer)
    if p.link is not None:  # the resident that answered writes the record
        from signet_scorer.hook.resident_link import ResidentRecord

        done.resident = ResidentRecord(p.link, cfg.log)
    try:
        done.invocation = _invocation(p, res, rows, (time.monotonic() - started) * 1000.0)
        done.injections = rows
        done.ranking = _ranking_record(p) if rows else None
    except Exception:  # noqa: BLE001 - the record is best effort, the harness is served
        done.invocation = {}
    done.start_resident = cfg.resident == "auto" and p.down is not None
    return done
