"""The stores the query, notebook and browser tests share, each built once per test session:
a small embedded demo (80 sessions, 200 memories: cold start, active mode, a drift reset, two
projects, training runs, an exported model, calibration labels, benchmark reports), a
young store still in cold start (5 sessions, never trained), a current store after its first
session, as Signet's daemon leaves it, and an architect store, whose knowledge graph names
each session's focal entities (12 sessions, 300 memories)."""

from __future__ import annotations

import functools
from pathlib import Path

from signet_bench.app.demo import DemoPaths, demo_paths, run_demo
from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.world.synth.build import build_persona_store
from tests.lines import as_signet_leaves_it

DEMO_SESSIONS = 80
DEMO_MEMORIES = 200
YOUNG_SESSIONS = 5
YOUNG_DB = "young.db"
ONE_SESSION_DB = "one-session.db"


@functools.cache
def small_demo(root: Path) -> DemoPaths:
    """The small demo under `root` (built on the first call of a test session)."""
    run_demo(root, DEMO_SESSIONS, memories=DEMO_MEMORIES)
    return demo_paths(root)


@functools.cache
def young_store(root: Path) -> Path:
    """A light persona after a few sessions: collecting data, no model yet."""
    root.mkdir(parents=True, exist_ok=True)
    db = root / YOUNG_DB
    build_persona_store("light", db, seed=3, n_memories=120)
    simulate(db, YOUNG_SESSIONS, SimOptions(scorer="model", seed=3))
    return db


@functools.cache
def one_session_store(root: Path) -> Path:
    """A current store on day one: a light persona after its first session, without the
    simulator's tables (what Signet's daemon leaves)."""
    root.mkdir(parents=True, exist_ok=True)
    db = root / "simulated.db"
    build_persona_store("light", db, seed=4, n_memories=120, schema="current")
    simulate(db, 1, SimOptions(scorer="none", seed=4))
    return as_signet_leaves_it(db, root / ONE_SESSION_DB)


ARCHITECT_SESSIONS = 12
ARCHITECT_MEMORIES = 300


def architect_db(schema: str) -> str:
    """The architect store's file name for release line `schema`."""
    return f"architect-{schema}.db"


@functools.cache
def architect_store(root: Path, schema: str = "0.58") -> Path:
    """The architect persona (a knowledge graph: four products, pinned entities) after a few
    sessions of the loop, which walks its graph at every session start."""
    root.mkdir(parents=True, exist_ok=True)
    db = root / architect_db(schema)
    build_persona_store("architect", db, seed=5, n_memories=ARCHITECT_MEMORIES, schema=schema)
    simulate(db, ARCHITECT_SESSIONS, SimOptions(scorer="random", seed=5))
    return db
