"""Which memories of the store Signet would show an agent, as its recall shows them (0.145.7,
`platform/daemon/src/memory-access-scope.ts` `buildAgentScopeClause`, `agent-id.ts`
`getAgentScope`, `memory-search.ts`): one SQL condition on the memories table (alias `m`),
applied to every candidate the prompt hook considers, whatever found it.

- **Agent**: by the agent's `read_policy` in the `agents` table: `shared` sees global memories
  and its own; `group` (with a `policy_group`) sees the global memories of the agents of its
  group and its own; any other policy, an agent without a row, or a store whose `agents` table
  cannot be read: isolated, its own only. A store without the table (written before Signet's
  migration 043, which creates it with `default` shared) reads as that migration leaves it.
- **Visibility**: never `archived`. The SQL is Signet's, NULLs included (a memory whose
  visibility is NULL is shown to no one, as Signet's `!=` shows it to no one).
- **Never** deleted (`is_deleted` set), never superseded (a soft delete, or a memory behind a
  knowledge-graph attribute that is superseded: `status = 'superseded'` or `superseded_by`
  set), never scoped (`scope` set: recall leaves scoped memories out unless asked for one).

Columns a store lacks take the defaults Signet's migrations give them (agent `default`,
visibility `global`, no scope, not deleted). Standard library only.
"""

from __future__ import annotations

import sqlite3

from signet_scorer.workbench import DEFAULT_AGENT

__all__ = ["AgentScope", "agent_scope", "visible_clause"]


class AgentScope:
    """An agent and what it may read: `read_policy` (shared | group | isolated) and its
    `policy_group` (None: none)."""

    __slots__ = ("agent_id", "policy_group", "read_policy")

    def __init__(self, agent_id: str, read_policy: str, policy_group: str | None) -> None:
        self.agent_id, self.read_policy, self.policy_group = agent_id, read_policy, policy_group

    def __repr__(self) -> str:
        return f"AgentScope({self.agent_id!r}, {self.read_policy!r}, {self.policy_group!r})"


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


def _text(value: object) -> str | None:
    """`parseScopeValue`: a string with something besides white space, trimmed; else None."""
    return value.strip() or None if isinstance(value, str) else None


def agent_scope(con: sqlite3.Connection, agent_id: str) -> AgentScope:
    """The agent's read policy as `getAgentScope` reads it (module docstring)."""
    try:
        cols = _columns(con, "agents")
        if not cols:  # before migration 043: it inserts `default` as shared
            policy = "shared" if agent_id == DEFAULT_AGENT else "isolated"
            return AgentScope(agent_id, policy, None)
        group = "policy_group" if "policy_group" in cols else "NULL"
        row = con.execute(
            f"SELECT read_policy, {group} FROM agents WHERE id = ?", [agent_id]
        ).fetchone()
    except sqlite3.Error:
        return AgentScope(agent_id, "isolated", None)
    if row is None:
        return AgentScope(agent_id, "isolated", None)
    return AgentScope(agent_id, _text(row[0]) or "isolated", _text(row[1]))


def _superseded(con: sqlite3.Connection) -> str:
    """The condition that `m` is behind a superseded attribute ("0" when the store has none)."""
    cols = _columns(con, "entity_attributes")
    both = (
        ("ea.status = 'superseded'", "status"),
        ("ea.superseded_by IS NOT NULL", "superseded_by"),
    )
    conds = [c for c, col in both if col in cols]
    if "memory_id" not in cols or not conds:
        return "0"
    return (
        f"EXISTS (SELECT 1 FROM entity_attributes ea WHERE ea.memory_id = m.id "
        f"AND ({' OR '.join(conds)}))"
    )


def visible_clause(con: sqlite3.Connection, scope: AgentScope) -> tuple[str, list[object]]:
    """(SQL condition on `m`, its arguments): the memories `scope`'s agent may be shown."""
    m = _columns(con, "memories")
    agent = "m.agent_id" if "agent_id" in m else f"'{DEFAULT_AGENT}'"
    vis = "m.visibility" if "visibility" in m else "'global'"
    parts = ["m.is_deleted = 0" if "is_deleted" in m else "1"]  # Signet's: NULL is not 0
    if "scope" in m:
        parts.append("m.scope IS NULL")
    parts.append(f"NOT {_superseded(con)}")
    args: list[object]
    if scope.read_policy == "shared":
        who = f"({vis} = 'global' OR {agent} = ?)"
        args = [scope.agent_id]
    elif scope.read_policy == "group" and scope.policy_group:
        who = (
            f"(({vis} = 'global' AND {agent} IN (SELECT id FROM agents WHERE policy_group = ?))"
            f" OR {agent} = ?)"
        )
        args = [scope.policy_group, scope.agent_id]
    else:
        who = f"{agent} = ?"
        args = [scope.agent_id]
    parts += [who, f"{vis} != 'archived'"]
    return " AND ".join(parts), args
