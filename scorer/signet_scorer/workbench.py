"""Where Signet's store and a store's workbench live, and the files kept beside the workbench:
the trained checkpoint, the served model and the hooks' injection log; and the agent Signet
names when none is given (`DEFAULT_AGENT`); the one home of these names, for the scorer and the workbench alike. Standard library only; the library's readers (`signet_bench.analysis.queries.source`,
`signet_bench.store.hook_log`) use the same names."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "CHECKPOINT_FILE",
    "DEFAULT_AGENT",
    "HOOK_LOG_FILE",
    "MODEL_DIR_SUFFIX",
    "SERVED_MODEL_FILE",
    "SIGNET_PATH_VAR",
    "WORKBENCH_FILE",
    "default_store",
    "default_workbench",
    "prompt_model_file",
    "served_at_prompt",
]

WORKBENCH_FILE = "workbench.duckdb"
SERVED_MODEL_FILE = "model.onnx"  # the exported model beside the workbench
CHECKPOINT_FILE = "model.sbm"  # the trained checkpoint beside it (the library's own format)
MODEL_DIR_SUFFIX = ".predictor"  # the simulated daemon's folder of a store: `<db>.predictor/`
HOOK_LOG_FILE = "hook_injections.db"  # what the hooks injected (SQLite)
SIGNET_PATH_VAR = "SIGNET_PATH"  # Signet's own way to move its folder, `~/.agents`
DEFAULT_AGENT = "default"
"""Signet's agent id where none is named: whose memories and sessions a current store's readers
return unless told otherwise (a 0.58 store has no agents)."""


def default_store(env: Mapping[str, str] | None = None) -> Path:
    """Signet's store as Signet finds it: `$SIGNET_PATH/memory/memories.db` when the variable is
    set (and not empty), else `~/.agents/memory/memories.db` (`~`: the `HOME` of `env`, the
    environment read, default ours)."""
    env = os.environ if env is None else env
    home = env.get("HOME") or "~"
    root = env.get(SIGNET_PATH_VAR) or os.path.join(home, ".agents")
    return Path(root).expanduser() / "memory" / "memories.db"


def default_workbench(db: str | Path) -> Path:
    """The workbench of a store: the simulated daemon's (`<db>.predictor/workbench.duckdb`) when
    it exists, else `workbench.duckdb` beside the store."""
    p = Path(db)
    sim = p.with_name(p.name + MODEL_DIR_SUFFIX) / WORKBENCH_FILE
    return sim if sim.exists() else p.with_name(WORKBENCH_FILE)


def prompt_model_file(model: str | Path) -> Path:
    """Where the model served at the user's prompts is kept beside `model` (the session-start
    model): `model.prompt.onnx` beside `model.onnx`, `model.prompt.sbm` beside `model.sbm`.
    Each hook serves what its own held-out rankings chose; a training without prompt samples
    writes none, and the prompts are served `model` (`served_at_prompt`)."""
    p = Path(model)
    return p.with_name(f"{p.stem}.prompt{p.suffix}")


def served_at_prompt(model: str | Path) -> Path:
    """The model the user-prompt-submit hook ranks with: the prompt's own beside `model` when
    a training wrote one (`prompt_model_file`), else `model`."""
    own = prompt_model_file(model)
    return own if own.exists() else Path(model)
