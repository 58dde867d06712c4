"""The memories block of Signet's session-start text, found and rebuilt in another order (or
with a choice of its lines, the heading counting them).

Signet's daemon joins the parts of its inject text with newlines; the block is the part
`\\n## Relevant Memories (auto-loaded | scored by importance x recency | N results)\\n`
followed by one part per memory, `- <content>[ [<tags>]] (<date>)`, in the order of the
answer's `memories`. Everything before the block (preamble, date, peer sessions, identity)
and after it (status, secrets, constraints, recovery context) is kept as it is, and so is each
memory's line (its tags and Signet's date format); the heading keeps Signet's shape and says
who ordered the block (`SCORER_ORDER` once the scorer did). A block that does not read exactly so
(another release's wording, a block cut by Signet's own token budget) is not found, and the
caller keeps Signet's text. Standard library only (no `dataclasses`: the hook's start is on
every session's path).
"""

from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:  # the fields' types, for type checkers (`typing` stays unloaded)
    from typing import NamedTuple

    class _MemoryBlock(NamedTuple):
        prefix: str
        lines: tuple[str, ...]
        suffix: str
else:
    _MemoryBlock = namedtuple("MemoryBlock", "prefix lines suffix")

__all__ = ["SCORER_ORDER", "SIGNET_ORDER", "MemoryBlock", "find_block", "header"]

SIGNET_ORDER = "importance x recency"  # what Signet's heading says ordered the block
SCORER_ORDER = "signet-bench's scorer"  # what the heading says once the scorer ordered it

_TRAILER = re.compile(r"(?: \[[^\n]*\])? \([^()\n]*\)")  # tags, then a date without parentheses


def header(n: int, scored_by: str = SIGNET_ORDER) -> str:
    """The block's heading part for `n` memories ordered by `scored_by` (by default Signet's,
    as the daemon pushes it)."""
    return f"\n## Relevant Memories (auto-loaded | scored by {scored_by} | {n} results)\n"


class MemoryBlock(_MemoryBlock):
    """An inject text split around its memories block: the text before the heading
    (`prefix`), one line per memory (`lines`, in the answer's order) and the text after the
    last line (`suffix`)."""

    __slots__ = ()

    def text(self, order: Sequence[int] | None = None) -> str:
        """The inject text as found (`order` None), or with the lines at positions `order`
        under a heading that says the scorer ordered them."""
        if order is None:
            lines, by = list(self.lines), SIGNET_ORDER
        else:
            lines, by = [self.lines[i] for i in order], SCORER_ORDER
        if not lines:
            raise ValueError("a memories block needs at least one memory")
        return self.prefix + header(len(lines), by) + "\n" + "\n".join(lines) + self.suffix


def _lines_at(text: str, pos: int, contents: Sequence[str]) -> tuple[list[str], int] | None:
    """One line per content from `pos` on, each `- <content>` and its tags-and-date trailer,
    joined by newlines; (lines, end) or None when the text does not read so."""
    lines: list[str] = []
    for i, content in enumerate(contents):
        if i:
            if not text.startswith("\n", pos):
                return None
            pos += 1
        start = pos
        lead = "- " + content
        if not text.startswith(lead, pos):
            return None
        pos += len(lead)
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        if not _TRAILER.fullmatch(text, pos, end):
            return None
        lines.append(text[start:end])
        pos = end
    return lines, pos


def find_block(
    inject: str, contents: Sequence[str], scored_by: str = SIGNET_ORDER
) -> MemoryBlock | None:
    """The block of the memories whose contents are `contents` (the answer's order) under the
    heading of `scored_by` (Signet's by default), or None when the text holds no such block."""
    if not contents:
        return None
    head = header(len(contents), scored_by) + "\n"
    at = inject.find(head)
    while at >= 0:
        found = _lines_at(inject, at + len(head), contents)
        if found is not None:
            lines, end = found
            return MemoryBlock(inject[:at], tuple(lines), inject[end:])
        at = inject.find(head, at + 1)
    return None
