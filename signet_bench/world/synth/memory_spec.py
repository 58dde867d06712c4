"""One synthetic memory as the store builder plans it (`build`), which the graph planner
(`graph`) reads too."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["MemorySpec"]


@dataclass(slots=True)
class MemorySpec:
    """One `memories` row as first written, plus what the truth needs to know about it."""

    id: str
    project: str | None
    topic: str
    type: str
    content: str
    fields: dict[str, str]
    created: datetime
    importance: float
    time_pattern: str | None = None
    pinned: bool = False
    access_count: int = 0
    last_accessed: datetime | None = None
    final_content: str = ""
    stale_since: datetime | None = None
    deleted_at: datetime | None = None
    replaced_by: str | None = None
    supersede_mode: str | None = None
    usefulness: float = 1.0
