"""What `signet hook session-start` takes and prints, as Signet's command line does it (its
`surfaces/cli/src/commands/hook.ts`), so the wrapper can call it once with `--json` and print
the harness's own format from that answer:

- arguments: `-H/--harness <name>` (required), `--project <dir>`, `--agent-id <id>`,
  `--context <text>`, and the flags `--json` and `--codex-json` (which wins over `--json`);
  an option's value is the next argument whatever it looks like, `--opt=value` and `-Hvalue`
  are accepted, the last repetition wins;
- stdin: read unless it is a terminal, trimmed, parsed as JSON; anything but an object counts
  as no input; the session key, project and agent are picked from it as the CLI picks them;
- output: plain is the answer's `inject` and a newline (nothing when it is empty); Codex is the
  compact `{"continue":true,"suppressOutput":true,"hookSpecificOutput":{...}}` with the trimmed
  inject as `additionalContext` (left out when empty); `--json` is the whole answer with a
  two-space indent. With `--json`, an answer-less run (daemon offline, no identity files)
  prints nothing, where Codex prints the empty object.

Standard library only; neither `dataclasses` nor `typing` is imported at run time (the hook's
start is on every session's path).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping, Sequence

from signet_scorer.hook.js import JsNumber, js_object, js_trim, parse_json, stringify, utf8

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple, TypeGuard

__all__ = [
    "OUTPUTS",
    "PROMPT_OPTIONS",
    "HookInput",
    "Invocation",
    "Unusable",
    "answer_output",
    "codex_output",
    "empty_output",
    "hook_input",
    "is_text",
    "parse_invocation",
    "prompt_input",
]

OUTPUTS = ("plain", "codex", "json")
_VALUE_OPTIONS = {
    "-H": "harness",
    "--harness": "harness",
    "--project": "project",
    "--agent-id": "agent_id",
    "--context": "context",
}
# `signet hook user-prompt-submit` takes neither `--agent-id` nor `--context`.
PROMPT_OPTIONS = {"-H": "harness", "--harness": "harness", "--project": "project"}
_FLAGS = {"--json": "json", "--codex-json": "codex"}
_SESSION_KEYS = ("session_key", "sessionKey", "session_id", "sessionId")
_PARENT_KEYS = (
    "parent_session_key",
    "parentSessionKey",
    "parent_key",
    "parentKey",
    "parent_id",
    "parentId",
    "parentID",
)


class Unusable(ValueError):
    """Signet's answer is not one whose harness output can be derived exactly."""


def is_text(value: Any) -> TypeGuard[str]:
    """A JSON string (not a number kept as text)."""
    return isinstance(value, str) and not isinstance(value, JsNumber)


if TYPE_CHECKING:  # the fields' types (`typing` stays unloaded)

    class _Invocation(NamedTuple):
        args: tuple[str, ...]
        options: dict[str, str]
        output: str
        json_args: tuple[str, ...]
else:
    _Invocation = namedtuple("Invocation", "args options output json_args")


class Invocation(_Invocation):
    """Signet's own arguments as the harness gave them (`args`), understood: `options`
    (harness, project, agent_id, context: as given), `output` (one of OUTPUTS) and
    `json_args`, the same call asking for `--json` (no `--codex-json`)."""

    __slots__ = ()


def _option(token: str, table: Mapping[str, str]) -> tuple[str, str | None] | None:
    """(option, inline value) of a value option token (`--project=x`, `-Hx`), else None."""
    name, eq, value = token.partition("=")
    if name in table and name.startswith("--"):
        return name, value if eq else None
    if token.startswith("-H") and not token.startswith("--"):
        return "-H", token[2:] or None
    return None


def parse_invocation(
    args: Sequence[str], table: Mapping[str, str] = _VALUE_OPTIONS
) -> Invocation | None:
    """The harness's arguments for `signet hook session-start` (`table`: its value options;
    `PROMPT_OPTIONS` for `user-prompt-submit`), or None when they hold anything the CLI's
    option table does not (an unknown option, a positional argument, a missing value, no
    harness): such a call is passed to Signet untouched."""
    options: dict[str, str] = {}
    flags: set[str] = set()
    kept: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        if token in _FLAGS:
            flags.add(_FLAGS[token])
            if token == "--json":
                kept.append(token)
            i += 1
            continue
        found = _option(token, table)
        if found is None:
            return None
        name, value = found
        if value is None:
            if i + 1 >= len(args):
                return None
            value = args[i + 1]
            kept += [token, value]
            i += 2
        else:
            kept.append(token)
            i += 1
        options[table[name]] = value
    if "harness" not in options:
        return None
    output = "codex" if "codex" in flags else "json" if "json" in flags else "plain"
    json_args = tuple(kept) if "json" in flags else (*kept, "--json")
    return Invocation(tuple(args), options, output, json_args)


# --- stdin --------------------------------------------------------------------------------------


def _pick(*values: Any) -> str:
    """The CLI's `pickString`: the first value that is a string with something besides white
    space, as it is; else ""."""
    for value in values:
        if is_text(value) and js_trim(value):
            return value
    return ""


if TYPE_CHECKING:

    class _HookInput(NamedTuple):
        parsed: dict[str, Any] | None
        malformed: bool
        session_key: str
        project: str
        agent_id: str
else:
    _HookInput = namedtuple("HookInput", "parsed malformed session_key project agent_id")


class HookInput(_HookInput):
    """What the CLI reads from the harness's stdin, and the fields the wrapper uses: `parsed`
    (the stdin object; None when stdin is a terminal, empty or not one), `malformed` (stdin
    held something that is not a JSON object), `session_key`, `project` and `agent_id`
    (Signet's agent, "default" when none is named)."""

    __slots__ = ()


def hook_input(data: bytes | None, inv: Invocation) -> HookInput:
    """The stdin as the CLI takes it (`readJson`, `buildSessionStartBody`); `data` None when
    stdin is a terminal (not read)."""
    text = js_trim(data.decode("utf-8", "replace")) if data else ""
    body: dict[str, Any] | None = None
    if text:
        try:
            value = parse_json(text)
        except (ValueError, RecursionError):
            value = None
        body = js_object(value)
    b = body or {}
    harness = inv.options["harness"]
    native = _pick(b.get("agent_id")) if harness == "claude-code" or _has_parent(b) else ""
    agent = _pick(
        inv.options.get("agent_id"),
        b.get("signet_agent_id"),
        b.get("signetAgentId"),
        b.get("agentId"),
        "" if native else b.get("agent_id"),
    )
    return HookInput(
        parsed=body,
        malformed=bool(text) and body is None,
        session_key=_pick(*(b.get(k) for k in _SESSION_KEYS)),
        project=_pick(inv.options.get("project"), b.get("cwd")),
        agent_id=agent or "default",
    )


def prompt_input(data: bytes | None, inv: Invocation) -> tuple[HookInput, str]:
    """The stdin as the CLI takes it (`buildUserPromptSubmitBody`) and the daemon resolves
    it, and the user's prompt (trimmed; "" when none): the prompt is `user_message`/`userMessage`, else `prompt`/`user_prompt`/`userPrompt`;
    the agent is named by `signet_agent_id`/`signetAgentId`/`agentId` (or `agent_id` when it is
    not Claude Code's own), else by an `agent:<id>:...` session key, else "default"."""
    base = hook_input(data, inv)
    b = base.parsed or {}
    native = _pick(b.get("agent_id")) if inv.options["harness"] == "claude-code" else ""
    agent = _pick(
        b.get("signet_agent_id"),
        b.get("signetAgentId"),
        b.get("agentId"),
        "" if native else b.get("agent_id"),
    )
    agent = js_trim(agent)
    parts = base.session_key.split(":")
    if not agent and parts[0] == "agent" and len(parts) > 1 and js_trim(parts[1]):
        agent = js_trim(parts[1])
    prompt = _pick(b.get("prompt"), b.get("user_prompt"), b.get("userPrompt"))
    message = _pick(b.get("user_message"), b.get("userMessage"), prompt)
    return base._replace(agent_id=agent or "default"), js_trim(message) or js_trim(prompt)


def _has_parent(body: Mapping[str, Any]) -> bool:
    return bool(_pick(*(body.get(k) for k in _PARENT_KEYS)))


# --- output -------------------------------------------------------------------------------------


def codex_output(context: str | None, event: str = "SessionStart") -> bytes:
    """The CLI's Codex envelope for `event` (`buildCodexHookOutput`): compact, the trimmed
    context as `additionalContext`, left out when empty."""
    trimmed = js_trim(context) if context is not None else ""
    inner: dict[str, Any] = {"hookEventName": event}
    if trimmed:
        inner["additionalContext"] = trimmed
    body = {"continue": True, "suppressOutput": True, "hookSpecificOutput": inner}
    return utf8(stringify(body)) + b"\n"


def empty_output(output: str) -> bytes:
    """What the CLI prints when its `--json` call printed nothing (no daemon, no identity)."""
    return codex_output(None) if output == "codex" else b""


def _truthy(value: Any) -> bool:
    """JavaScript truthiness of a parsed JSON value."""
    if isinstance(value, JsNumber):
        return float(value) != 0
    return value not in (None, False, "")


def _inject(answer: Any) -> str | None:
    """The answer's `inject` when the CLI's use of it can be reproduced: a string, or absent
    or null (None); anything else (a number, a boolean, an object, or an `error` the CLI would
    have exited on) is Unusable."""
    obj = js_object(answer)
    if obj is None:
        return None  # an array or a scalar answer has no fields
    if _truthy(obj.get("error")):
        raise Unusable("the answer holds an error but the command succeeded")
    inject = obj.get("inject")
    if inject is None or is_text(inject):
        return inject
    raise Unusable(f"the answer's inject is not a string ({stringify(inject)[:40]})")


def answer_output(output: str, answer: Any) -> bytes:
    """What `signet hook session-start` prints for the harness's format, given the answer its
    `--json` call printed (parsed with `js.parse_json`)."""
    if output == "json":
        return utf8(stringify(answer, 2)) + b"\n"
    inject = _inject(answer)
    if output == "codex":
        return codex_output(inject)
    return utf8(inject) + b"\n" if inject else b""
