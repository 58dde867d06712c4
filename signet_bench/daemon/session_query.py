"""The query side of a session beyond its context vector: the keyword terms and the names the
candidates' signals are computed from (`signet_scorer.signals`).

- At a **prompt** (or a LoCoMo question) the terms are Signet's prompt query shape
  (`signet_scorer.terms.recall_terms`, the prompt hook's too) and the entities the names in the text (`query_entities`).
- At a **session start** they are Signet 0.58's predicted-context terms: the frequent words of
  the project's last completed transcripts (`signet_scorer.signals.store_start_terms`), with no
  entities. The session loop asks the store per session (`start_query`); the trainer, which
  assembles every session of a store, reads the jobs once (`StartQueries`) and picks the same
  transcripts for each session.
"""

from __future__ import annotations

import bisect
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from signet_bench.store.read import table_names
from signet_scorer.signals import (
    JOB_TIME_SQL,
    START_TRANSCRIPT_CHARS,
    START_TRANSCRIPTS,
    query_entities,
    session_start_terms,
    sqlite_time,
    store_start_terms,
)
from signet_scorer.terms import recall_terms

__all__ = ["NO_QUERY", "SessionQuery", "StartQueries", "prompt_query", "start_query"]


@dataclass(frozen=True, slots=True)
class SessionQuery:
    """A session's keyword terms and entity names (both empty: no lexical or entity evidence)."""

    terms: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("terms", "entities"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(t, str) for t in value):
                raise TypeError(f"SessionQuery.{name}: expected a sequence of str, got {value!r}")


NO_QUERY = SessionQuery()


def prompt_query(text: str, last_assistant: str | None = None) -> SessionQuery:
    """The query of a prompt or question: its recall terms and the names in it."""
    return SessionQuery(tuple(recall_terms(text, last_assistant)), tuple(query_entities(text)))


def start_query(con: sqlite3.Connection, project: str | None, start: datetime) -> SessionQuery:
    """A session start's query from the store: the predicted-context terms of the project's
    transcripts completed before `start`."""
    return SessionQuery(tuple(store_start_terms(con, project, start)))


@dataclass(frozen=True)
class StartQueries:
    """Every completed summary job of a store, read once, so each session start's query is
    found without another read (the same transcripts `start_query` selects)."""

    by_project: dict[str | None, list[tuple[str, str, str]]] = field(default_factory=dict)
    # project (None: every project) -> (time text, id, transcript head), oldest first

    @classmethod
    def read(cls, con: sqlite3.Connection) -> StartQueries:
        """The completed jobs' times, ids and the first characters of their transcripts."""
        if "summary_jobs" not in table_names(con):
            return cls()
        rows = con.execute(
            f"SELECT {JOB_TIME_SQL}, id, project, SUBSTR(transcript, 1, {START_TRANSCRIPT_CHARS})"
            " FROM summary_jobs WHERE status = 'completed'"
        ).fetchall()
        by_project: dict[str | None, list[tuple[str, str, str]]] = {None: []}
        for when, jid, project, head in rows:
            if when is None:  # no time: never before a session start
                continue
            job = (str(when), str(jid), str(head or ""))
            by_project[None].append(job)
            if project:
                by_project.setdefault(project, []).append(job)
        return cls({k: sorted(v) for k, v in by_project.items()})

    def transcripts(self, project: str | None, start: datetime) -> list[str]:
        """The last `START_TRANSCRIPTS` transcripts of the project done before `start`,
        newest first."""
        jobs: Sequence[tuple[str, str, str]] = self.by_project.get(project or None, [])
        end = bisect.bisect_left(jobs, (sqlite_time(start),))
        return [head for _, _, head in reversed(jobs[max(0, end - START_TRANSCRIPTS) : end])]

    def query(self, project: str | None, start: datetime) -> SessionQuery:
        """The session start's query (`start_query` without reading the store)."""
        return SessionQuery(tuple(session_start_terms(self.transcripts(project, start))))
