"""Where Signet's store and a store's workbench live, and the files kept beside the workbench:
the trained checkpoint, the served model and the hooks' injection log; and the agent Signet
names when none is given (`DEFAULT_AGENT`); the one home of these names, for the scorer and the workbench alike. Standard library only; the library's readers (`signet_bench.analysis.queries.source`,
`signet_bench.store.hook_log`) use the same names. Neither `pathlib` nor `re` is imported
(with what they load, some milliseconds): the hooks read these paths before Signet starts. A
function given a `Path` returns one, given a `str` a `str`, as `pathlib` would write it."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import TypeVar

    P = TypeVar("P", str, Path)

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
    "path_text",
    "prompt_model_file",
    "pure_text",
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


def path_text(text: str) -> str:
    """`str(Path(text).expanduser())` without `pathlib`: a leading `~` or `~user` expanded
    (kept as it is when there is no such home), then `pure_text`."""
    clean = pure_text(text)
    head, sep, rest = clean.partition("/")
    return pure_text(os.path.expanduser(head) + sep + rest) if head[:1] == "~" else clean


def pure_text(text: str) -> str:
    """`str(PurePosixPath(text))`: empty and `.` parts dropped (`..` kept), no trailing slash,
    `.` for nothing, and a leading `//` kept (POSIX leaves its meaning open)."""
    root = "//" if text[:2] == "//" and text[2:3] != "/" else "/" if text[:1] == "/" else ""
    return root + "/".join(p for p in text.split("/") if p not in ("", ".")) or "."


def _sibling(path: str, name: str) -> str:
    """`str(PurePosixPath(path).with_name(name))` for a `pure_text` path."""
    return os.path.join(os.path.dirname(path), name)


def default_store(env: Mapping[str, str] | None = None) -> str:
    """Signet's store as Signet finds it: `$SIGNET_PATH/memory/memories.db` when the variable is
    set (and not empty), else `~/.agents/memory/memories.db` (`~`: the `HOME` of `env`, the
    environment read, default ours)."""
    env = os.environ if env is None else env
    home = env.get("HOME") or "~"
    root = env.get(SIGNET_PATH_VAR) or os.path.join(home, ".agents")
    return path_text(os.path.join(root, "memory", "memories.db"))


def default_workbench(db: P) -> P:
    """The workbench of a store: the simulated daemon's (`<db>.predictor/workbench.duckdb`) when
    it exists, else `workbench.duckdb` beside the store."""
    p = pure_text(os.fspath(db))
    sim = os.path.join(p + MODEL_DIR_SUFFIX, WORKBENCH_FILE)
    return type(db)(sim if os.path.exists(sim) else _sibling(p, WORKBENCH_FILE))


def prompt_model_file(model: P) -> P:
    """Where the model served at the user's prompts is kept beside `model` (the session-start
    model): `model.prompt.onnx` beside `model.onnx`, `model.prompt.sbm` beside `model.sbm`.
    Each hook serves what its own held-out rankings chose; a training without prompt samples
    writes none, and the prompts are served `model` (`served_at_prompt`)."""
    p = pure_text(os.fspath(model))
    name = os.path.basename(p)
    dot = name.rfind(".")  # the suffix as `pathlib` reads it: not a leading or a final dot
    stem, suffix = (name[:dot], name[dot:]) if 0 < dot < len(name) - 1 else (name, "")
    return type(model)(_sibling(p, f"{stem}.prompt{suffix}"))


def served_at_prompt(model: P) -> P:
    """The model the user-prompt-submit hook ranks with: the prompt's own beside `model` when
    a training wrote one (`prompt_model_file`), else `model`."""
    own = prompt_model_file(model)
    return own if os.path.exists(own) else model
