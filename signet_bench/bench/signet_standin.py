"""A stand-in for Signet's command line, `signet hook session-start` and `signet hook
user-prompt-submit`, for the hook wrapper's tests and benchmark: a small script (`write_standin`) that prints what Signet's CLI
prints, in the harness's format, for a recorded daemon answer, and that can be told to fail.

What it prints follows Signet's CLI (`surfaces/cli/src/commands/hook.ts` of release 0.145):
plain is the answer's `inject` and a newline (nothing when empty); `--codex-json` (which wins
over `--json`) the compact `{"continue":true,"suppressOutput":true,"hookSpecificOutput":
{"hookEventName":"SessionStart","additionalContext":<inject trimmed>}}`, without
`additionalContext` when that is empty; `--json` the answer with a two-space indent. Numbers
are written as JavaScript writes them (an integral float without its `.0`). `-H` is
required; an unknown option fails as the CLI fails. `SIGNET_NO_HOOKS=1` or `SIGNET_BYPASS=1`:
nothing, exit 0.

`hook user-prompt-submit` (no `--agent-id` or `--context`) prints, as 0.145.7 does, the
daemon's prompt answer: `SIGNET_STANDIN_PROMPT_ANSWER` (a JSON file) or, without it, what the
daemon answers when no entity of the prompt is known (an empty inject); stdin without a prompt
gets the daemon's HTTP 400. Every failure exits 0 with its `[signet] ... hook skipped` line on
stderr (Codex: the empty envelope): `offline`/`identity` (daemon not running), `error` (HTTP
500); `malformed`, `crash` and `slow` as for session start.

Environment (read on every call):
- `SIGNET_STANDIN_ANSWER`: a JSON file holding the daemon's answer (`signet_answer` makes one);
- `SIGNET_STANDIN_MODE`: `answer` (default); `error` (the daemon answers an error: `Error: ...`
  on stderr, exit 1); `offline` (no daemon, no identity files: nothing, Codex's empty object);
  `identity` (no daemon, identity files: the static identity); `malformed` (a broken `signet`
  that prints the bytes of `SIGNET_STANDIN_GARBAGE` whatever the format, exit 0); `crash`
  (a stack trace on stderr, then killed by SIGTERM before printing); `slow` (sleeps
  `SIGNET_STANDIN_SLEEP_S` seconds, then answers);
- `SIGNET_STANDIN_STATE`: a folder; each call appends its arguments to `calls.jsonl` there, and
  a session key seen before gets the daemon's short stub (no memories), as the daemon does.

Standard library only: the script is this module's own text.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "EMPTY_PROMPT_ANSWER",
    "MODES",
    "PREAMBLE",
    "PROMPT_HOOK",
    "codex_output",
    "memory_line",
    "session_start",
    "signet_answer",
    "user_prompt_submit",
    "write_standin",
]

MODES = ("answer", "error", "offline", "identity", "malformed", "crash", "slow")
# The head of Signet's system prompt (its own bullet lines included: a block finder must not
# take them for memories).
PREAMBLE = (
    "[signet active]\nYou have persistent memory managed by Signet.\n\nMemory Check Loop:\n"
    "- when to use: before commands, file edits, architectural choices, bug fixes\n"
    "- verification: before acting, know what context you found\n\nMemory tools:\n"
    "- mcp__signet__memory_search: search stored memories by keyword or meaning\n"
)
STATIC_IDENTITY = "[signet: daemon offline — running with static identity]\n\n# Identity\nsignet"
STUB = "[signet active]\n[memory active | /remember | /recall]\n(session already started)"
_VALUE_OPTIONS = ("-H", "--harness", "--project", "--agent-id", "--context")
_PROMPT_OPTIONS = ("-H", "--harness", "--project")
PROMPT_HOOK = "user-prompt-submit"
# What 0.145.7's daemon answers a prompt naming no entity it knows (nothing to inject).
EMPTY_PROMPT_ANSWER = {"inject": "", "memoryCount": 0, "engine": "entity-context"}
# What JavaScript's `trim` removes: WhiteSpace and LineTerminator code points.
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000\ufeff")
)


def _js_number(value: Any) -> Any:
    """Numbers as JavaScript writes them: an integral float is an integer."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _js_number(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_js_number(v) for v in value]
    return value


def _dumps(value: Any, indent: int | None = None) -> str:
    seps = (",", ": ") if indent else (",", ":")
    return json.dumps(_js_number(value), ensure_ascii=False, indent=indent, separators=seps)


def memory_line(content: str, date: str, tags: str | None = None) -> str:
    """One memory's line in the inject text."""
    return f"- {content}{f' [{tags}]' if tags else ''} ({date})"


def signet_answer(
    memories: Sequence[Mapping[str, Any]],
    *,
    now_line: str = "Saturday, March 21, 2026 at 6:00 PM (Europe/Berlin)",
    peers: Sequence[str] = (),
    after: str = "",
) -> dict[str, Any]:
    """A daemon answer as `/api/hooks/session-start` gives it, its inject built as the daemon
    builds it: parts joined by newlines (preamble, memory line, date, optional peer sessions,
    the memories block with one line per memory: each memory's `content`, `date` and optional
    `tags`), then `after` appended (e.g. an "Active Constraints" section)."""
    parts = [PREAMBLE, "[memory active | /remember | /recall]"]
    parts.append(f"\n# Current Date & Time\n{now_line}\n")
    if peers:
        parts += ["\n## Active Peer Sessions\n", "Other Signet agent sessions are active now:"]
        parts += [f"- {p}" for p in peers]
    if memories:
        n = len(memories)
        parts.append(
            f"\n## Relevant Memories (auto-loaded | scored by importance x recency | {n} results)\n"
        )
        parts += [memory_line(m["content"], m["date"], m.get("tags")) for m in memories]
    keys = ("id", "content", "type", "importance", "created_at")
    return {
        "identity": {"name": "signet"},
        "memories": [{k: m[k] for k in keys if k in m} for m in memories],
        "recentContext": None,
        "inject": "\n".join(parts) + after,
    }


def codex_output(context: str | None, event: str = "SessionStart") -> str:
    """What the CLI prints for Codex (compact, `additionalContext` only when not empty)."""
    trimmed = (context or "").strip(_JS_WHITESPACE)
    inner: dict[str, Any] = {"hookEventName": event}
    if trimmed:
        inner["additionalContext"] = trimmed
    return _dumps({"continue": True, "suppressOutput": True, "hookSpecificOutput": inner}) + "\n"


def _parse(args: Sequence[str]) -> tuple[dict[str, str], set[str]] | str:
    """(options, flags) of `hook session-start ARGS` or `hook user-prompt-submit ARGS`, or the
    CLI's error text."""
    if list(args[:2]) not in (["hook", "session-start"], ["hook", PROMPT_HOOK]):
        return "error: unknown command\n"
    table = _PROMPT_OPTIONS if args[1] == PROMPT_HOOK else _VALUE_OPTIONS
    opts: dict[str, str] = {}
    flags: set[str] = set()
    rest = list(args[2:])
    while rest:
        token = rest.pop(0)
        if token in ("--json", "--codex-json"):
            flags.add(token)
        elif token in table:
            if not rest:
                return f"error: option '{token}' argument missing\n"
            opts["harness" if token in ("-H", "--harness") else token] = rest.pop(0)
        else:
            return f"error: unknown option '{token}'\n"
    if "harness" not in opts:
        return "error: required option '-H, --harness <harness>' not specified\n"
    return opts, flags


def _stdin_text(stdin: bytes, keys: tuple[str, ...]) -> str:
    """The first of `keys` that holds a non-blank string in stdin's JSON object, else ""."""
    try:
        body = json.loads(stdin.decode("utf-8", "replace").strip() or "null")
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    for key in keys:
        if isinstance(body.get(key), str) and body[key].strip():
            return body[key]
    return ""


def _session_key(stdin: bytes) -> str:
    return _stdin_text(stdin, ("session_key", "sessionKey", "session_id", "sessionId"))


def _seen(state: Path, args: Sequence[str], stdin: bytes) -> bool:
    """Log the call in `state/calls.jsonl`; whether its session key was seen before."""
    calls = state / "calls.jsonl"
    key = _session_key(stdin)
    lines = calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []
    seen = {json.loads(line)["key"] for line in lines}
    with calls.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"args": list(args), "key": key}) + "\n")
    return bool(key) and key in seen


def _print_answer(answer: Any, flags: set[str]) -> tuple[bytes, bytes, int]:
    if isinstance(answer, dict) and answer.get("error"):
        return b"", f"Error: {answer['error']}\n".encode(), 1
    inject = answer.get("inject") if isinstance(answer, dict) else None
    if "--codex-json" in flags:
        return codex_output(inject).encode(), b"", 0
    if "--json" in flags:
        return (_dumps(answer, 2) + "\n").encode(), b"", 0
    return ((inject + "\n").encode() if inject else b""), b"", 0


def _offline(mode: str, flags: set[str]) -> tuple[bytes, bytes, int]:
    if mode == "offline":
        out = codex_output(None) if "--codex-json" in flags else ""
        return out.encode(), b"[signet] daemon not running, no identity files found\n", 0
    if "--codex-json" in flags:
        out = codex_output(STATIC_IDENTITY)
    elif "--json" in flags:
        out = _dumps({"inject": STATIC_IDENTITY, "identity": {"name": "signet"}, "memories": []})
        out += "\n"
    else:
        out = STATIC_IDENTITY + "\n"
    return out.encode(), "[signet] daemon offline — using static identity\n".encode(), 0


def _prompt_text(stdin: bytes) -> str:
    keys = ("user_message", "userMessage", "prompt", "user_prompt", "userPrompt")
    return _stdin_text(stdin, keys).strip()


def _skipped(flags: set[str], said: str) -> tuple[bytes, bytes, int]:
    """The prompt hook's CLI when the daemon call fails: its line on stderr, exit 0."""
    out = codex_output(None, "UserPromptSubmit") if "--codex-json" in flags else ""
    return out.encode(), f"[signet] {said}, hook skipped\n".encode(), 0


def user_prompt_submit(
    flags: set[str], stdin: bytes, env: Mapping[str, str]
) -> tuple[bytes, bytes, int]:
    """(stdout, stderr, exit code) of `signet hook user-prompt-submit` (module docstring)."""
    mode = env.get("SIGNET_STANDIN_MODE", "answer")
    if mode == "malformed":
        return env.get("SIGNET_STANDIN_GARBAGE", '{"inject": "cut sh').encode(), b"", 0
    if mode in ("offline", "identity"):
        return _skipped(flags, "daemon not running")
    if mode == "error":
        return _skipped(flags, f"daemon {PROMPT_HOOK} failed with HTTP 500")
    if mode == "crash":
        return b"", b"TypeError: Cannot read properties of undefined\n    at hook.ts:230\n", -15
    if mode == "slow":
        time.sleep(float(env.get("SIGNET_STANDIN_SLEEP_S", "1")))
    if not _prompt_text(stdin):
        return _skipped(flags, f"daemon {PROMPT_HOOK} failed with HTTP 400")
    path = env.get("SIGNET_STANDIN_PROMPT_ANSWER")
    answer = json.loads(Path(path).read_text(encoding="utf-8")) if path else EMPTY_PROMPT_ANSWER
    inject = answer.get("inject") if isinstance(answer, dict) else None
    if "--codex-json" in flags:
        return codex_output(inject, "UserPromptSubmit").encode(), b"", 0
    if "--json" in flags:
        return (_dumps(answer, 2) + "\n").encode(), b"", 0
    return ((inject + "\n").encode() if inject else b""), b"", 0


def session_start(
    args: Sequence[str], stdin: bytes, env: Mapping[str, str]
) -> tuple[bytes, bytes, int]:
    """(stdout, stderr, exit code) of `signet ARGS` with this stdin (module docstring): either
    hook command."""
    if env.get("SIGNET_NO_HOOKS") == "1" or env.get("SIGNET_BYPASS") == "1":
        return b"", b"", 0
    parsed = _parse(args)
    if isinstance(parsed, str):
        return b"", parsed.encode(), 1
    _, flags = parsed
    if args[1] == PROMPT_HOOK:
        return user_prompt_submit(flags, stdin, env)
    mode = env.get("SIGNET_STANDIN_MODE", "answer")
    if mode == "malformed":
        return env.get("SIGNET_STANDIN_GARBAGE", '{"inject": "cut sh').encode(), b"", 0
    if mode in ("offline", "identity"):
        return _offline(mode, flags)
    if mode == "error":
        return _print_answer({"error": "session start failed: database is locked"}, flags)
    if mode == "slow":
        time.sleep(float(env.get("SIGNET_STANDIN_SLEEP_S", "1")))
    answer = json.loads(Path(env["SIGNET_STANDIN_ANSWER"]).read_text(encoding="utf-8"))
    if env.get("SIGNET_STANDIN_STATE") and _seen(Path(env["SIGNET_STANDIN_STATE"]), args, stdin):
        answer = {"identity": {"name": "signet"}, "memories": [], "inject": STUB}
    if mode == "crash":  # killed before it printed (SIGTERM), a trace already on stderr
        return b"", b"TypeError: Cannot read properties of undefined\n    at hook.ts:180\n", -15
    return _print_answer(answer, flags)


def main() -> int:
    """The script: read stdin (unless a terminal), answer, exit."""
    data = b"" if sys.stdin.isatty() else sys.stdin.buffer.read()
    out, err, code = session_start(sys.argv[1:], data, os.environ)
    sys.stdout.buffer.write(out)
    sys.stderr.buffer.write(err)
    if code < 0:  # killed by a signal
        sys.stdout.flush()
        sys.stderr.flush()
        os.kill(os.getpid(), -code)
    return code


def write_standin(folder: str | Path, name: str = "signet") -> Path:
    """The stand-in as an executable script `folder/name` (this module's text, run by this
    Python without site packages)."""
    path = Path(folder) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable} -IS\n" + Path(__file__).read_text(encoding="utf-8"))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


if __name__ == "__main__":
    sys.exit(main())
