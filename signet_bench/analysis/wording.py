"""How the pages put numbers into words: one home for plurals and for the rank origin, so every
sentence reads "1 session" and "2 sessions", and every rank a person sees counts from 1.
"""

from __future__ import annotations

__all__ = ["plural", "rank_text"]


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`n` (thousands separated) and `noun` agreeing: "1 session", "2 sessions", "1,122
    memories" (a consonant's -y becomes -ies); `many` names an irregular plural."""
    if n == 1:
        return f"1 {noun}"
    if many is None:
        consonant_y = noun.endswith("y") and noun[-2:-1] not in "aeiou"
        many = noun[:-1] + "ies" if consonant_y else noun + "s"
    return f"{n:,} {many}"


def rank_text(rank: int | None) -> str:
    """A store's 0-based rank (Signet's `session_memories.rank`) as people count: "1" for the
    first, "-" when unranked. Every rank a page shows is 1-based."""
    return "-" if rank is None else str(rank + 1)
