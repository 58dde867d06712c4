"""The memories block of Signet's session-start text, found and rebuilt in another order.

Signet's daemon joins the parts of its inject text with newlines; the block is the part
`\\n## Relevant Memories (auto-loaded | scored by importance x recency | N results)\\n`
followed by one part per memory, `- <content>[ [<tags>]] (<date>)`, in the order of the
answer's `memories`. Everything before the block (preamble, date, peer sessions, identity)
and after it (status, secrets, constraints, recovery context) is kept as it is, and so is each
memory's line (its tags and Signet's date format). A block that does not read exactly so
(another release's wording, a block cut by Signet's own token budget) is not found, and the
caller keeps Signet's text. Standard library only (no `dataclasses`: the hook's start is on
every session's path).
"""

from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Sequence

__all__ = ["MemoryBlock", "find_block", "header"]

_TRAILER = re.compile(r"(?: \[[^\n]*\])? \([^()\n]*\)")  # tags, then a date without parentheses


def header(n: int) -> str:
    """The block's heading part for `n` memories (as the daemon pushes it)."""
    return f"\n## Relevant Memories (auto-loaded | scored by importance x recency | {n} results)\n"


class MemoryBlock(namedtuple("MemoryBlock", "prefix lines suffix")):
    """An inject text split around its memories block: the text before the heading
    (`prefix`), one line per memory (`lines`, in the answer's order) and the text after the
    last line (`suffix`)."""

    __slots__ = ()

    def text(self, order: Sequence[int] | None = None) -> str:
        """The inject text with the lines at positions `order` (all, as found, when None)."""
        lines = self.lines if order is None else [self.lines[i] for i in order]
        if not lines:
            raise ValueError("a memories block needs at least one memory")
        return self.prefix + header(len(lines)) + "\n" + "\n".join(lines) + self.suffix


def _lines_at(text: str, pos: int, contents: Sequence[str]) -> tuple[list[str], int] | None:
    """One line per content from `pos` on, each `- <content>` and its tags-and-date trailer,
    joined by newlines; (lines, end) or None when the text does not read so."""
    lines = []
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


def find_block(inject: str, contents: Sequence[str]) -> MemoryBlock | None:
    """The block of the memories whose contents are `contents` (the answer's order), or None
    when the text holds no such block."""
    if not contents:
        return None
    head = header(len(contents)) + "\n"
    at = inject.find(head)
    while at >= 0:
        found = _lines_at(inject, at + len(head), contents)
        if found is not None:
            lines, end = found
            return MemoryBlock(inject[:at], tuple(lines), inject[end:])
        at = inject.find(head, at + 1)
    return None
