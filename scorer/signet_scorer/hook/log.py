"""The hooks' record of what they injected: `hook_injections.db`, a SQLite file
beside the workbench (never Signet's store, never `workbench.duckdb`, which the hook does not
open), written append-only, one transaction per invocation. The library reads it with
`signet_bench.store.hook_log`.

- `hook_invocations`: one row per invocation: when, the session key and agent, the harness,
  project and output format, whether the scorer's order was injected (`outcome` 'scorer') or
  Signet's own output was kept ('signet', with the `reason`), the model and its version, the
  pool size, how many memories were injected, Signet's exit code and the wrapper's time.
- `hook_injections`: one row per injected memory of a session key and agent: its rank in the
  injected block, its rank in Signet's answer, the scorer's probability (NULL when Signet's
  order was kept), who chose it and the model version. Idempotent per session key and agent:
  the first invocation that injected memories is the one recorded (a repeated session start
  gets a short stub from Signet, which must not overwrite what was injected).
- `hook` (on each invocation) names the hook: `session-start` or `user-prompt-submit`. A prompt's
  injections are added to its session's (a memory already recorded for the session key and agent
  is not recorded again: no hook injects a memory twice in one session). A log written before
  the column existed gains it, its rows read as `session-start`.
- `hook_prompts`: what a prompt's ranking saw, for training on prompts: the prompt's text, its
  candidate pool in the pool's order and the memories its own keyword search found (JSON lists
  of memory ids), and the context vector the scorer ranked with (little-endian float32; NULL:
  none), one row per prompt invocation that records it.

Standard library only; `typing` is not imported at run time (the hook's start is on every
session's path).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from signet_scorer.hook.config import SESSION_START, USER_PROMPT_SUBMIT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "INJECTION_COLUMNS",
    "INVOCATION_COLUMNS",
    "LOG_DDL",
    "PROMPT_COLUMNS",
    "InjectionLog",
    "record_invocation",
]

INVOCATION_COLUMNS = (
    "at",  # ISO time, UTC
    "session_key",  # "" when the harness gave none
    "agent_id",
    "harness",
    "project",
    "output",  # plain | codex | json
    "outcome",  # scorer | signet
    "reason",  # why Signet's output was kept (NULL when the scorer's order was injected)
    "model_path",
    "model_version",
    "pool",  # candidates scored
    "injected",  # memories in the printed block
    "context_rule",
    "signet_exit",
    "duration_ms",
    "hook",  # one of `hook.config.HOOK_COMMANDS`
)
INJECTION_COLUMNS = (
    "session_key",
    "agent_id",
    "memory_id",
    "invocation_id",
    "rank",  # 1-based, in the injected block
    "signet_rank",  # 1-based, in Signet's answer
    "score",  # the scorer's probability over the pool; NULL when Signet's order was kept
    "chosen_by",  # scorer | signet
    "model_version",
    "injected_at",
)
PROMPT_COLUMNS = (
    "invocation_id",
    "session_key",
    "agent_id",
    "prompt",  # the user's prompt
    "pool",  # JSON list: the candidates ranked, in the pool's order
    "hits",  # JSON list: the memories the prompt's own keyword search found, best first
    "context",  # BLOB: the context vector ranked with, little-endian float32; NULL: none
)
LOG_DDL = (
    """CREATE TABLE IF NOT EXISTS hook_invocations (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at TEXT NOT NULL, session_key TEXT NOT NULL, agent_id TEXT NOT NULL,
        harness TEXT, project TEXT, output TEXT NOT NULL, outcome TEXT NOT NULL, reason TEXT,
        model_path TEXT, model_version TEXT, pool INTEGER, injected INTEGER,
        context_rule TEXT, signet_exit INTEGER, duration_ms REAL,
        hook TEXT NOT NULL DEFAULT 'session-start')""",
    """CREATE TABLE IF NOT EXISTS hook_injections (
        session_key TEXT NOT NULL, agent_id TEXT NOT NULL, memory_id TEXT NOT NULL,
        invocation_id INTEGER NOT NULL REFERENCES hook_invocations(id),
        rank INTEGER NOT NULL, signet_rank INTEGER NOT NULL, score REAL,
        chosen_by TEXT NOT NULL, model_version TEXT, injected_at TEXT NOT NULL,
        PRIMARY KEY (session_key, agent_id, memory_id))""",
    """CREATE TABLE IF NOT EXISTS hook_prompts (
        invocation_id INTEGER PRIMARY KEY REFERENCES hook_invocations(id),
        session_key TEXT NOT NULL, agent_id TEXT NOT NULL, prompt TEXT NOT NULL,
        pool TEXT NOT NULL, hits TEXT NOT NULL, context BLOB)""",
)


_ADD_HOOK = "ALTER TABLE hook_invocations ADD COLUMN hook TEXT NOT NULL DEFAULT 'session-start'"


def _insert(table: str, columns: Sequence[str], tail: str = "") -> str:
    marks = ", ".join("?" * len(columns))
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks}){tail}"


# a prompt's memory the session already holds is skipped; any other constraint still fails
_SKIP_HELD = " ON CONFLICT (session_key, agent_id, memory_id) DO NOTHING"


class InjectionLog:
    """The log opened for writing (WAL, tables created): opened while Signet works, so what is
    left after the output is one short transaction. `shared`: used from several threads (the
    resident scorer's, which serialises its uses)."""

    def __init__(self, path: str | Path, *, shared: bool = False) -> None:
        self.con = sqlite3.connect(
            str(path), timeout=1.0, isolation_level=None, check_same_thread=not shared
        )
        try:
            self.con.execute("PRAGMA journal_mode = WAL")
            self.con.execute("PRAGMA synchronous = NORMAL")
            self._transaction(self._create)
        except BaseException:
            self.con.close()
            raise

    def _create(self) -> None:
        for ddl in LOG_DDL:
            self.con.execute(ddl)
        cols = {r[1] for r in self.con.execute("PRAGMA table_info(hook_invocations)")}
        if "hook" not in cols:
            self.con.execute(_ADD_HOOK)

    def _transaction(self, work: Callable[[], object]) -> None:
        """`work()` in one write transaction, rolled back when it raises (a function, not a
        `contextlib` context manager: `contextlib` is not loaded on the hooks' path)."""
        self.con.execute("BEGIN IMMEDIATE")
        try:
            work()
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    def injected(self, session_key: str, agent_id: str) -> set[str]:
        """The memories the log holds as injected for the session key and agent (none without
        a key): a prompt offers none of them again."""
        if not session_key:
            return set()
        sql = "SELECT memory_id FROM hook_injections WHERE session_key = ? AND agent_id = ?"
        return {r[0] for r in self.con.execute(sql, [session_key, agent_id])}

    def _held(self, invocation: Mapping[str, Any]) -> int | None:
        """The id of this invocation's row (the same session key, agent, time and duration)
        when the log holds it."""
        sql = (
            "SELECT id FROM hook_invocations WHERE session_key = ? AND agent_id = ? AND at = ?"
            " AND duration_ms = ? LIMIT 1"
        )
        keys = ("session_key", "agent_id", "at", "duration_ms")
        row = self.con.execute(sql, [invocation.get(k) for k in keys]).fetchone()
        return None if row is None else int(row[0])

    def record(
        self,
        invocation: Mapping[str, Any],
        injections: Sequence[Mapping[str, Any]],
        ranking: Mapping[str, Any] | None = None,
        *,
        once: bool = False,
    ) -> int:
        """Append one invocation and its injected memories, in one transaction; returns the
        invocation's id. Nothing is recorded without a session key; a session start records
        nothing once its session key and agent have injections; a prompt records the memories
        its session does not hold yet, and with `ranking` (`prompt`, `pool` and `hits` as
        lists of ids, `context` as bytes) what its ranking saw (`hook_prompts`). `once`: nothing
        is written when the log already holds this invocation (the resident scorer may have
        written it before it stopped answering)."""
        ids: list[int] = []

        def append() -> None:
            held = self._held(invocation) if once else None
            ids.append(held if held is not None else self._append(invocation, injections, ranking))

        self._transaction(append)
        return ids[0]

    def _append(
        self,
        invocation: Mapping[str, Any],
        injections: Sequence[Mapping[str, Any]],
        ranking: Mapping[str, Any] | None,
    ) -> int:
        """`record`'s rows, in the transaction it opened; the invocation's id."""
        con = self.con
        hook = invocation.get("hook") or SESSION_START
        cur = con.execute(
            _insert("hook_invocations", INVOCATION_COLUMNS),
            [{**invocation, "hook": hook}.get(c) for c in INVOCATION_COLUMNS],
        )
        rid = int(cur.lastrowid or 0)
        key, agent = invocation["session_key"], invocation["agent_id"]
        seen = con.execute(
            "SELECT 1 FROM hook_injections WHERE session_key = ? AND agent_id = ? LIMIT 1",
            [key, agent],
        ).fetchone()
        prompt = hook == USER_PROMPT_SUBMIT
        if key and (prompt or seen is None):
            con.executemany(
                _insert("hook_injections", INJECTION_COLUMNS, _SKIP_HELD if prompt else ""),
                [
                    [{**r, "invocation_id": rid}.get(c) for c in INJECTION_COLUMNS]
                    for r in injections
                ],
            )
        if key and prompt and ranking is not None:
            lists = {c: json.dumps(list(ranking[c])) for c in ("pool", "hits")}
            row = {**ranking, **lists, "invocation_id": rid, "session_key": key}
            row["agent_id"] = agent
            con.execute(
                _insert("hook_prompts", PROMPT_COLUMNS), [row.get(c) for c in PROMPT_COLUMNS]
            )
        return rid

    def close(self) -> None:
        self.con.close()


def record_invocation(
    path: str | Path, invocation: Mapping[str, Any], injections: Sequence[Mapping[str, Any]]
) -> int:
    """`InjectionLog.record` on a log opened for this one write."""
    log = InjectionLog(path)
    try:
        return log.record(invocation, injections)
    finally:
        log.close()
