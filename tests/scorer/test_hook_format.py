"""The hook's reproduction of Signet's command line: JavaScript's JSON and trim, the CLI's
arguments and stdin, its three output formats (against the stand-in, written from Signet's
source independently), and the memories block of the inject text."""

from __future__ import annotations

import json

import pytest

from signet_bench.bench.signet_standin import (
    codex_output,
    memory_line,
    session_start,
    signet_answer,
)
from signet_scorer.hook.harness import (
    Unusable,
    answer_output,
    empty_output,
    hook_input,
    parse_invocation,
)
from signet_scorer.hook.inject import SCORER_ORDER, SIGNET_ORDER, find_block, header
from signet_scorer.hook.js import JsNumber, js_trim, parse_json, stringify, utf8

# --- JavaScript ---------------------------------------------------------------------------------


def test_stringify_writes_strings_as_javascript_does():
    # U+2028 and DEL stay raw, control characters use lower-case \u escapes, a lone surrogate
    # is escaped (well-formed JSON.stringify), other text is written as it is
    value = {"a": 'x\u2028y\x01"\\\x7f\u00e9\U0001f600', "b": "\ud800"}
    assert stringify(value) == '{"a":"x\u2028y\\u0001\\"\\\\\x7f\u00e9\U0001f600","b":"\\ud800"}'


def test_stringify_indents_as_javascript_does():
    value = {"a": [JsNumber("1"), {}], "b": {"c": None, "d": True}, "e": []}
    assert stringify(value, 2) == (
        '{\n  "a": [\n    1,\n    {}\n  ],\n  "b": {\n    "c": null,\n    "d": true\n  },\n'
        '  "e": []\n}'
    )


def test_parse_keeps_every_number_as_written_and_refuses_nan():
    text = '{"i": 1e21, "f": 0.30000000000000004, "n": -0, "z": 1.50}'
    value = parse_json(text)
    assert value == {"i": "1e21", "f": "0.30000000000000004", "n": "-0", "z": "1.50"}
    assert all(isinstance(v, JsNumber) for v in value.values())
    assert stringify(value) == text.replace(" ", "")
    with pytest.raises(ValueError):
        parse_json('{"a": NaN}')
    with pytest.raises(ValueError):
        parse_json("Infinity")
    with pytest.raises(TypeError):
        stringify({"a": 0.5})  # a float the hook computed is never written as Signet's


def test_trim_and_utf8_follow_javascript_not_python():
    assert js_trim("\ufeff\u00a0 x \u3000\n") == "x"
    assert js_trim("\x1cx\x85") == "\x1cx\x85"  # not white space in JavaScript
    assert "\x1cx\x85".strip() == "x"
    assert utf8("a\ud800b") == b"a\xef\xbf\xbdb"


# --- arguments ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "output", "json_args"),
    [
        (
            ["-H", "claude-code", "--project", "/p"],
            "plain",
            ["-H", "claude-code", "--project", "/p", "--json"],
        ),
        (["-H", "codex", "--codex-json"], "codex", ["-H", "codex", "--json"]),
        (["--json", "-H", "x", "--codex-json"], "codex", ["--json", "-H", "x"]),
        (["-H", "x", "--json"], "json", ["-H", "x", "--json"]),
        (["-Hcodex", "--project=/a b"], "plain", ["-Hcodex", "--project=/a b", "--json"]),
        # an option's value is the next argument, whatever it looks like
        (
            ["--project", "--codex-json", "--harness", "x"],
            "plain",
            ["--project", "--codex-json", "--harness", "x", "--json"],
        ),
    ],
)
def test_invocation_reads_signets_option_table(args, output, json_args):
    inv = parse_invocation(args)
    assert inv is not None and inv.output == output and list(inv.json_args) == json_args


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--project", "/p"],
        ["-H"],
        ["-H", "x", "--verbose"],
        ["-H", "x", "extra"],
        ["-H", "x", "--", "--json"],
    ],
)
def test_arguments_outside_the_option_table_are_not_understood(args):
    assert parse_invocation(args) is None


def test_stdin_is_read_as_the_cli_reads_it():
    inv = parse_invocation(["-H", "claude-code"])
    assert inv is not None
    body = {"session_id": " ", "sessionId": "k2", "cwd": "/w", "agent_id": "native"}
    got = hook_input(("\ufeff " + json.dumps(body) + "\n").encode(), inv)
    # a blank key is skipped; Claude Code's agent_id is its own, not Signet's agent
    assert (got.session_key, got.project, got.agent_id, got.malformed) == (
        "k2",
        "/w",
        "default",
        False,
    )
    codex = parse_invocation(["-H", "codex", "--agent-id", "", "--project", "/p"])
    assert codex is not None
    got = hook_input(json.dumps({"agent_id": "a7", "cwd": "/w"}).encode(), codex)
    assert (got.agent_id, got.project) == ("a7", "/p")  # --project wins over cwd
    for bad in (b"[1]", b"null", b"{", b'"s"', b"\xff\xfe", b'{"a": NaN}'):
        assert hook_input(bad, inv).malformed, bad
    for none in (None, b"", b" \n\t"):
        got = hook_input(none, inv)
        assert not got.malformed and got.parsed is None and got.session_key == ""


# --- output -------------------------------------------------------------------------------------

ANSWERS = [
    signet_answer([{"id": "m1", "content": "a b", "date": "Mar 1, 2026", "importance": 0.5}]),
    {"inject": "  \n", "memories": []},
    {"inject": "", "memories": []},
    {"memories": [], "identity": {"name": "x"}},
    {"inject": None},
    {"inject": "trail \u00a0\ufeff", "n": 1.0, "x": [1, 2.5, {"y": []}]},
    ["not", "an", "object"],
    "just a string",
]


@pytest.mark.parametrize("answer", ANSWERS)
@pytest.mark.parametrize("flags", [[], ["--codex-json"], ["--json"], ["--json", "--codex-json"]])
def test_each_format_is_what_the_cli_prints_for_the_answer(tmp_path, answer, flags):
    path = tmp_path / "answer.json"
    path.write_text(json.dumps(answer), encoding="utf-8")
    env = {"SIGNET_STANDIN_ANSWER": str(path)}
    want, _, code = session_start(["hook", "session-start", "-H", "x", *flags], b"", env)
    printed, _, _ = session_start(["hook", "session-start", "-H", "x", "--json"], b"", env)
    inv = parse_invocation(["-H", "x", *flags])
    assert inv is not None and code == 0
    assert answer_output(inv.output, parse_json(printed.decode())) == want


def test_an_answer_the_cli_could_not_print_is_unusable():
    for answer in ({"inject": 5}, {"inject": True}, {"inject": {"a": 1}}, {"error": "x"}):
        with pytest.raises(Unusable):
            answer_output("plain", parse_json(json.dumps(answer)))
    assert answer_output("plain", parse_json('{"error": "", "inject": "i"}')) == b"i\n"


def test_no_answer_prints_nothing_or_codex_empty_object():
    assert empty_output("plain") == empty_output("json") == b""
    assert empty_output("codex") == codex_output(None).encode()
    assert json.loads(empty_output("codex")) == {
        "continue": True,
        "suppressOutput": True,
        "hookSpecificOutput": {"hookEventName": "SessionStart"},
    }


# --- the memories block -------------------------------------------------------------------------

MEMS = [
    {"id": "a", "content": "first\nspans two lines", "date": "Jan 2, 2026"},
    {
        "id": "b",
        "content": "- looks like a bullet (Feb 1, 2026)",
        "date": "Feb 3, 2026",
        "tags": "x,y",
    },
    {"id": "c", "content": header(3).strip(), "date": "Mar 4, 2026"},
    {"id": "d", "content": "", "date": "Invalid Date"},
]
AFTER = "\n\n## Active Constraints\n\nConstraints for entities in scope.\n- [x] never (y)"


def _inject(mems, after=AFTER, peers=("agent (codex) session=s [seen 2m ago]",)):
    return signet_answer(mems, peers=peers, after=after)["inject"]


def test_the_block_is_found_and_rebuilt_unchanged():
    text = _inject(MEMS)
    block = find_block(text, [m["content"] for m in MEMS])
    assert block is not None
    assert block.text() == text
    assert block.lines == tuple(memory_line(m["content"], m["date"], m.get("tags")) for m in MEMS)
    assert block.suffix == AFTER


def test_the_block_in_another_order_is_signets_text_under_the_scorers_heading():
    order = [3, 0, 2]
    block = find_block(_inject(MEMS), [m["content"] for m in MEMS])
    assert block is not None
    signets = _inject([MEMS[i] for i in order])
    ours = block.text(order)
    assert SIGNET_ORDER != SCORER_ORDER
    assert ours == signets.replace(header(3), header(3, SCORER_ORDER), 1)
    assert (
        "## Relevant Memories (auto-loaded | scored by signet-bench's scorer | 3 results)\n" in ours
    )
    assert "importance x recency" not in ours.replace(MEMS[2]["content"], "")
    with pytest.raises(ValueError):
        block.text([])


@pytest.mark.parametrize(
    "text",
    [
        _inject(MEMS, after="")[:-5],  # cut by Signet's token budget
        _inject(MEMS, after="")[:-30] + "\n[context truncated]",
        _inject(MEMS[:3]),  # the heading counts 3, the answer has 4
        _inject(MEMS).replace("(Mar 4, 2026)", "Mar 4, 2026"),
        _inject(MEMS, after="(tail)"),  # a date trailer that runs on
        _inject([]),
    ],
)
def test_a_block_not_written_as_signet_writes_it_is_not_found(text):
    assert find_block(text, [m["content"] for m in MEMS]) is None
