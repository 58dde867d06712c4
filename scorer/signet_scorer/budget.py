"""The choice of what a session start injects: from a ranked list, the best memories up to K
and a token budget (`Budget`). One rule for the session-start hook (the lines of Signet's
answer) and the replayed loop (the candidates' contents).

A text's tokens are estimated as Signet estimates them for its own inject budget: a quarter
of its length, rounded up, the length counted as JavaScript counts it (UTF-16 code units), so
the estimate of a line the hook prints is the one Signet's `maxInjectTokens` would charge.

The walk goes best first; a memory that does not fit the tokens left is passed over and the
walk goes on (one long memory does not end the choice), until K are chosen or the list ends.
The chosen keep the list's order. Standard library only, and neither `dataclasses` nor
`typing` at run time: the hook reads its budget before Signet starts.
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:  # the fields' types, for type checkers (`typing` stays unloaded)
    from collections.abc import Iterable, Sequence
    from typing import NamedTuple, Self

    class _Budget(NamedTuple):
        k: int | None
        tokens: int | None
else:
    _Budget = namedtuple("Budget", "k tokens")

__all__ = [
    "CHARS_PER_TOKEN",
    "Budget",
    "choose",
    "estimate_tokens",
    "length_tokens",
    "token_costs",
    "utf16_units",
]

CHARS_PER_TOKEN = 4  # Signet's estimate: a token per four characters, rounded up


class Budget(_Budget):
    """At most `k` memories and at most `tokens` estimated tokens (None: no cap on that)."""

    __slots__ = ()

    def __new__(cls, k: int | None = None, tokens: int | None = None) -> Self:
        for name, value in (("k", k), ("tokens", tokens)):
            if value is not None and (type(value) is not int or value < 0):
                raise ValueError(
                    f"a budget's {name} must be an integer >= 0 or None, got {value!r}"
                )
        return super().__new__(cls, k, tokens)

    def __str__(self) -> str:
        k = "all" if self.k is None else str(self.k)
        tokens = "no token cap" if self.tokens is None else f"{self.tokens} tokens"
        return f"top {k}, {tokens}"


def length_tokens(units: int) -> int:
    """The tokens Signet counts for a text of `units` UTF-16 code units: ceil(units / 4)."""
    return -(-int(units) // CHARS_PER_TOKEN)


def utf16_units(text: str) -> int:
    """Its length as JavaScript counts it (UTF-16 code units: an astral character is two)."""
    return len(text) + sum(1 for c in text if c > "\uffff")


def estimate_tokens(text: str) -> int:
    """The tokens Signet counts for `text` (`length_tokens` of its UTF-16 length)."""
    return length_tokens(utf16_units(text))


def token_costs(texts: Iterable[str]) -> list[int]:
    """Each text's estimated tokens (`estimate_tokens`)."""
    return [estimate_tokens(t) for t in texts]


def choose(costs: Sequence[int], budget: Budget) -> list[int]:
    """The positions chosen from a list ranked best first whose items cost `costs` tokens:
    best first, an item that does not fit the tokens left is passed over, at most `budget.k`;
    in the list's order."""
    left = budget.tokens
    chosen: list[int] = []
    for i, cost in enumerate(costs):
        if budget.k is not None and len(chosen) >= budget.k:
            break
        if left is not None:
            if cost > left:
                continue
            left -= cost
        chosen.append(i)
    return chosen
