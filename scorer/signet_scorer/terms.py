"""A prompt's query terms: Signet's keyword shape for a user's prompt, one rule for every
place a prompt is searched or scored (the prompt hook, the replayed loop, the benches).

`recall_terms` reproduces handleUserPromptSubmit's query (docs/specification.md §3.8): the
prompt's substantive words (hyphenated identifiers first; >= 3 characters, no stopword, not
all digits), then new words of the last assistant message, at most 12; `fts_match_expression`
is the FTS5 MATCH string those terms are searched with. The standard library only: the
prompt hook's own process imports it before Signet starts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "MAX_RECALL_TERMS",
    "MIN_SUPPLEMENTAL_TERMS",
    "RECALL_STOPWORDS",
    "fts_match_expression",
    "recall_terms",
    "substantive_words",
]

MAX_RECALL_TERMS = 12  # total keyword terms per prompt
MIN_SUPPLEMENTAL_TERMS = 2  # the assistant adds up to max(2, #user terms)
MIN_TERM_LENGTH = 3

# Function words and conversational filler that match nearly every memory.
_STOPWORD_TEXT = """
    a about above actually after again against all almost also although always am among an and
    another any anybody anyone anything anyway are around as ask asked at away back be became
    because been before being below between both but by can cannot could did do does doing done
    down during each either else enough even ever every few for from further get gets getting give
    given go goes going gone good got great had has have having he hello her here hers herself hey
    hi him himself his how however i if in into is it its itself just kind know let like likely
    made make many may maybe me might mine more most much must my myself need needs never new no
    nor not nothing now of off often ok okay on once one only or other others our ours ourselves
    out over own please pretty quite rather really right said same say says see seem seems shall
    she should since so some something sometimes still such sure take tell than thank thanks that
    the their theirs them themselves then there these they thing things think this those though
    through thus to too try uh um under until up upon us use used using very want wants was way we
    well were what whatever when where whether which while who whom whose why will with within
    without would yeah yes yet you your yours yourself yourselves
"""
RECALL_STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

_MENTION_TAG = re.compile(r"<@!?\d+>")
_RECALL_MARKER = re.compile(r"\[signet:recall[^\]]*\]")
_FEEDBACK_BLOCK = re.compile(r"<memory-feedback>.*?</memory-feedback>", re.DOTALL)
_HYPHENATED = re.compile(r"[a-zA-Z][a-zA-Z0-9]*-[a-zA-Z0-9]+(?:-[a-zA-Z0-9]+)*")
_NON_WORD = re.compile(r"\W+", re.ASCII)  # JavaScript's \W is ASCII-only
_ALL_DIGITS = re.compile(r"^[0-9]+$")
_FTS_STRIP = re.compile(r"[:\"'()*^]")


def substantive_words(text: str) -> list[str]:
    """Hyphenated identifiers first, then `\\W+` words (>= 3 chars, no stopwords, not all
    digits), lowercased and deduplicated in first-seen order."""
    cleaned = _MENTION_TAG.sub("", text or "")
    hyphenated = [t.lower() for t in _HYPHENATED.findall(cleaned)]
    words = [
        w
        for w in _NON_WORD.split(cleaned.lower())
        if len(w) >= MIN_TERM_LENGTH and w not in RECALL_STOPWORDS and not _ALL_DIGITS.match(w)
    ]
    return list(dict.fromkeys(hyphenated + words))


def recall_terms(user_message: str, last_assistant: str | None = None) -> list[str]:
    """Signet's keyword terms for a prompt: the user's substantive words, then up to
    max(2, #user terms) new words from the last assistant message, at most 12 in all."""
    user_terms = substantive_words(user_message)
    assistant_terms: list[str] = []
    if last_assistant:
        cleaned = _FEEDBACK_BLOCK.sub("", _RECALL_MARKER.sub("", last_assistant))
        assistant_terms = substantive_words(cleaned)
    seen = set(user_terms)
    supplemental = [t for t in assistant_terms if t not in seen]
    budget = max(MIN_SUPPLEMENTAL_TERMS, len(user_terms))
    return (user_terms + supplemental[:budget])[:MAX_RECALL_TERMS]


def fts_match_expression(terms: Sequence[str]) -> str | None:
    """An FTS5 MATCH string: every token double-quoted (colons, quotes, parentheses, `*` and
    `^` stripped) and joined with ` OR `; None when nothing is left.

    Signet keeps bare OR/AND/NOT operators of its query text; here the OR is ours, so a term
    that spells an operator is searched as a word."""
    tokens: list[str] = []
    for term in terms:
        for tok in str(term).split():
            tok = _FTS_STRIP.sub("", tok)
            if tok:
                tokens.append(f'"{tok}"')
    tokens = list(dict.fromkeys(tokens))
    return " OR ".join(tokens) if tokens else None
