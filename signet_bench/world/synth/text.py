"""Readable memory sentences and user prompts built from a topic's vocabulary.

Each memory type has its own templates ("Decided to use X for Y because Z.", "Always run A
before B.", "Prefers ...", "Never ... in ..."), filled with the topic's tools, objects and
actions, so FTS5/BM25 and the hash-trick text path see the topic's words. Time-patterned
memories use their own templates with time words (Friday, evening oncall, ...). A replacement
keeps the slot (same object, same template family) and changes the tool: that is what
supersession looks like. `unique_memory_text` re-draws until the content hash is unused, as the
store's unique `content_hash` index requires. A memory about a knowledge-graph entity names it
(`name_entity`: "In paylane, decided to use ..."). A session's conversation
(`conversation_text`) is its prompts, each answered by the agent, citing the memories it used
where the prompt asked about them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from signet_bench.store.content import content_hash
from signet_bench.world.synth.vocab import Topic

__all__ = [
    "ENTITY_PHRASES",
    "MEMORY_TYPES",
    "PROMPT_TEMPLATES",
    "REPLACEMENT_TEMPLATES",
    "TEMPLATES",
    "TIME_PHRASES",
    "TIME_TEMPLATES",
    "conversation_text",
    "memory_text",
    "name_entity",
    "prompt_text",
    "replacement_text",
    "template_words",
    "tokens",
    "unique_memory_text",
]

MEMORY_TYPES = ("fact", "preference", "decision", "procedural", "constraint")

TEMPLATES: dict[str, tuple[str, ...]] = {
    "fact": (
        "The {obj} for {proj} lives in {tool}, next to the {obj2}.",
        "{tool} handles the {obj} and the {obj2} in {proj}.",
        "Our {obj} runs on {tool} with a separate {obj2} per {obj3}.",
        "The {obj2} depends on the {obj} that {tool} manages.",
        "In {proj} the {obj} is owned by {tool} and we {act} it with {tool2}.",
        "{tool} is pinned to the version that supports the {obj} and the {obj2}.",
    ),
    "preference": (
        "Prefers {tool} over {tool2} for the {obj}.",
        "Likes to {act} the {obj} by hand before touching the {obj2}.",
        "Prefers one {obj} per {obj2} and small {obj3} changes.",
        "Would rather {act} the {obj} in {tool} than in {tool2}.",
    ),
    "decision": (
        "Decided to use {tool} for the {obj} because the {obj2} was too slow.",
        "Chose {tool} instead of {tool2} for the {obj}; the {obj2} stays as is.",
        "We agreed to {act} the {obj} with {tool} from now on.",
        "Decided that the {obj} in {proj} should {act} the {obj2} through {tool}.",
    ),
    "procedural": (
        "Always {act} the {obj} before you {act2} the {obj2}.",
        "To {act} the {obj}, run {tool} first, then {act2} the {obj2}.",
        "Steps for the {obj}: {act} it, {act2} the {obj2}, then check {tool}.",
        "When the {obj} breaks, {act} the {obj2} with {tool} and retry.",
    ),
    "constraint": (
        "Never {act} the {obj} in {tool} without a {obj2}.",
        "Do not {act} the {obj} directly; the {obj2} must stay in {tool}.",
        "The {obj} must never exceed the {obj2} limit in {tool}.",
        "Never {act} the {obj} in {proj} while the {obj2} is running.",
    ),
}
"""Memory templates per type. `{proj}` templates are skipped for global memories."""

TIME_TEMPLATES: dict[str, tuple[str, ...]] = {
    "friday_deploy": (
        (
            "On Friday afternoons, only {act} the {obj} inside the deploy window; "
            "freeze the {obj2} after that."
        ),
        "Friday afternoon is the deploy window for the {obj}: {act} it with {tool}, then freeze.",
    ),
    "evening_oncall": (
        (
            "During the evening oncall shift, check {tool} first and {act} the {obj} "
            "if the {obj2} fails."
        ),
        "Evening oncall: when the {obj} pages at night, {act} the {obj2} in {tool}.",
    ),
    "monday_morning": (
        "Every Monday morning, {act} the {obj} and review the {obj2} in {tool}.",
        "Monday morning routine: {act} the {obj} with {tool} before the weekly {obj2} review.",
    ),
    "weekend": (
        "On weekends, only {act} the {obj} in {tool}; leave the {obj2} for weekdays.",
        "Weekend rule: {act} the {obj} with {tool}, never touch the {obj2} until Monday.",
    ),
    "nightly": (
        "Overnight, {tool} runs the nightly {obj} job; do not {act} the {obj2} until morning.",
        (
            "The nightly {obj} job in {tool} runs after midnight; {act} the {obj2} only "
            "once it is done."
        ),
    ),
}
"""Templates of time-patterned memories, by `persona.TIME_PATTERNS` name."""

REPLACEMENT_TEMPLATES: dict[str, str] = {
    "fact": "The {obj} now lives in {new} instead of {tool}, next to the {obj2}.",
    "preference": "Now prefers {new} over {tool} for the {obj} and the {obj2}.",
    "decision": "Switched the {obj} from {tool} to {new} because the {obj2} kept failing.",
    "procedural": "Updated steps for the {obj}: run {new} instead of {tool}, then {act2} "
    "the {obj2}.",
    "constraint": "Never {act} the {obj} in {new} without a {obj2}; the old {tool} rule no "
    "longer applies.",
}
"""The newer memory on the same slot: same object, a different tool."""

PROMPT_TEMPLATES: tuple[str, ...] = (
    "how do I {act} the {obj} with {tool}?",
    "why does the {obj} fail after we {act} the {obj2}?",
    "can you {act} the {obj} and check the {obj2}",
    "the {obj} in {tool} is slow again, any idea?",
    "please {act} the {obj2} before the {obj}",
    "{tool} {obj} {obj2} error",
    "what did we decide about the {obj} and {tool}?",
    "add a {obj} for the {obj2}",
    "fix the {obj}, {tool} keeps getting it wrong",
    "let us {act} the {obj} in {tool} today",
)
"""User prompts during a session (lower-case, as typed)."""

TIME_PHRASES: dict[str, str] = {
    "friday_deploy": "it is friday afternoon, deploy window:",
    "evening_oncall": "evening oncall shift:",
    "monday_morning": "monday morning review:",
    "weekend": "weekend:",
    "nightly": "overnight nightly job:",
}
"""Prefixes a prompt may carry when the session falls inside a time pattern's window."""

ENTITY_PHRASES: dict[str, str] = {
    "project": "For {name}: {text}",
    "system": "In {name}, {text}",
    "tool": "With {name}, {text}",
    "person": "Per {name}: {text}",
}
"""How a memory names the entity it is about, by Signet entity type (generic words only, so
the name is the one new word a text gets)."""

_FIELD = re.compile(r"\{(\w+)\}")
_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    """Lower-case word tokens `[a-z0-9]+` (the unit of the topic vocabulary)."""
    return _TOKEN.findall(text.lower())


def template_words() -> frozenset[str]:
    """Every literal word of every template (the placeholders removed)."""
    words: set[str] = set()
    every = (
        [t for ts in TEMPLATES.values() for t in ts]
        + [t for ts in TIME_TEMPLATES.values() for t in ts]
        + list(REPLACEMENT_TEMPLATES.values())
        + list(PROMPT_TEMPLATES)
        + list(TIME_PHRASES.values())
    )
    for t in every:
        words.update(tokens(_FIELD.sub(" ", t)))
    return frozenset(words)


def _two(rng: np.random.Generator, pool: tuple[str, ...], k: int) -> list[str]:
    idx = rng.choice(len(pool), size=min(k, len(pool)), replace=False)
    return [pool[int(i)] for i in idx]


def _fields(topic: Topic, project: str | None, rng: np.random.Generator) -> dict[str, str]:
    tool, tool2 = _two(rng, topic.tools, 2)
    obj, obj2, obj3 = _two(rng, topic.objects, 3)
    act, act2 = _two(rng, topic.actions, 2)
    return {
        "tool": tool,
        "tool2": tool2,
        "obj": obj,
        "obj2": obj2,
        "obj3": obj3,
        "act": act,
        "act2": act2,
        "proj": project or "",
    }


def _fill(template: str, fields: Mapping[str, str]) -> str:
    text = template.format(**fields)
    return text[:1].upper() + text[1:]


def memory_text(
    memory_type: str,
    topic: Topic,
    project: str | None,
    rng: np.random.Generator,
    *,
    time_pattern: str | None = None,
) -> tuple[str, dict[str, str]]:
    """One memory sentence and the words it was built from (its slot)."""
    if time_pattern is not None:
        pool = TIME_TEMPLATES[time_pattern]
    else:
        pool = TEMPLATES[memory_type]
        if project is None:
            pool = tuple(t for t in pool if "{proj}" not in t)
    fields = _fields(topic, project, rng)
    text = _fill(pool[int(rng.integers(len(pool)))], fields)
    if project is None and time_pattern is None and memory_type != "fact":
        text = text[:-1] + ", in every project."
    return text, fields


def replacement_text(
    memory_type: str, fields: Mapping[str, str], topic: Topic, rng: np.random.Generator
) -> str:
    """The newer memory on the same slot as `fields`: the same object, a different tool."""
    others = tuple(t for t in topic.tools if t != fields["tool"])
    new = others[int(rng.integers(len(others)))]
    return _fill(REPLACEMENT_TEMPLATES[memory_type], {**fields, "new": new})


def unique_memory_text(
    make: Callable[[np.random.Generator], tuple[str, dict[str, str]]],
    taken: set[str],
    rng: np.random.Generator,
    *,
    attempts: int = 50,
) -> tuple[str, dict[str, str]]:
    """Call `make(rng) -> (text, fields)` until the content hash is not in `taken`; record it.

    After `attempts` collisions a short numbered note makes the text unique."""
    text, fields = make(rng)
    for _ in range(attempts):
        h = content_hash(text)
        if h not in taken:
            taken.add(h)
            return text, fields
        text, fields = make(rng)
    k = 2
    while content_hash(f"{text} See note {k}.") in taken:
        k += 1
    text = f"{text} See note {k}."
    taken.add(content_hash(text))
    return text, fields


def name_entity(text: str, name: str, entity_type: str, *, also: str | None = None) -> str:
    """`text` naming the entity `name` it is about (unless it already does), and, with `also`,
    an entity that one depends on ("... It depends on corekit.")."""
    if name.lower() not in tokens(text):
        body = text[:1].lower() + text[1:]
        text = ENTITY_PHRASES[entity_type].format(name=name, text=body)
    return f"{text} It depends on {also}." if also else text


def prompt_text(topic: Topic, rng: np.random.Generator, *, time_pattern: str | None = None) -> str:
    """One user prompt about `topic`, optionally prefixed with a time pattern's phrase."""
    fields = _fields(topic, None, rng)
    text = PROMPT_TEMPLATES[int(rng.integers(len(PROMPT_TEMPLATES)))].format(**fields)
    if time_pattern is not None:
        text = f"{TIME_PHRASES[time_pattern]} {text}"
    return text


CITING_ANSWERS: tuple[str, ...] = (
    "Going by what we noted before: {m}",
    "From memory: {m}",
    "Per an earlier note: {m}",
    "We settled this before: {m}",
)
"""How the agent's answer opens when it uses a remembered memory (`{m}`: the memory's text)."""
PLAIN_ANSWERS: tuple[str, ...] = (
    "Done; I ran it and the output looks right.",
    "Looked into it and made the change.",
    "Checked the logs; that works now.",
    "Here is the diff; the tests pass.",
)
"""The agent's answer to a prompt no remembered memory helped with."""


def _cited_prompts(prompts: Sequence[str], used: Sequence[str]) -> list[list[str]]:
    """Each used memory under the prompt whose topic words it shares most (ties: the prompt
    citing fewest so far, then the earliest), so the answer that uses it follows the question
    it answers."""
    plain = template_words()
    words = [set(tokens(p)) - plain for p in prompts]
    cited: list[list[str]] = [[] for _ in prompts]
    for memory in used:
        mine = set(tokens(memory)) - plain
        best = min(range(len(prompts)), key=lambda j: (-len(words[j] & mine), len(cited[j]), j))
        cited[best].append(memory)
    return cited


def conversation_text(header: str, prompts: Sequence[str], used: Sequence[str]) -> str:
    """A session's conversation as its transcript reads: `header`, then each of the user's
    `prompts` and the agent's answer, which cites the `used` memories (texts, most relevant
    first) that prompt needed (`_cited_prompts`); deterministic (no random draw)."""
    if not prompts:
        return "\n".join([header, *(f"assistant: {CITING_ANSWERS[0].format(m=m)}" for m in used)])
    lines = [header]
    for j, (prompt, memories) in enumerate(
        zip(prompts, _cited_prompts(prompts, used), strict=True)
    ):
        lines.append(f"user: {prompt}")
        if memories:
            first = CITING_ANSWERS[j % len(CITING_ANSWERS)].format(m=memories[0])
            lines.append(" ".join([f"assistant: {first}", *(f"Also: {m}" for m in memories[1:])]))
        else:
            lines.append(f"assistant: {PLAIN_ANSWERS[j % len(PLAIN_ANSWERS)]}")
    return "\n".join(lines)
