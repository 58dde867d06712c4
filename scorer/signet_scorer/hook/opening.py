"""What the session-start hook opens, in the hook, its resident scorer and the doctor alike:
the served model, the store read-only and the session's basis; each says why it cannot be. Its
top imports nothing: the modules behind it load once Signet runs."""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

__all__ = ["failure_text", "missing_model", "open_scorer", "open_store_for", "read_basis"]


def failure_text(exc: BaseException) -> str:
    """What the hook records of an exception: its type and the start of its message."""
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def missing_model(path: str | Path) -> str | None:
    """Why there is no model to open at `path` (None: a file is there)."""
    return None if os.path.isfile(path) else f"no model at {path}"


def open_scorer(path: str | Path) -> tuple[Any, str | None]:
    """The served model, ONNX only (a checkpoint would need the library to convert it, which
    takes seconds); onnxruntime is imported only when the file is there."""
    missing = missing_model(path)
    if missing is not None:
        return None, missing
    # here: numpy, onnxruntime and the model load once Signet runs (start-up time)
    from signet_scorer.scorer import Scorer, model_kind

    if model_kind(path) != "onnx":
        return None, f"{path} is not an ONNX model (signet-bench export writes one)"
    scorer = Scorer.open(path, threads=1)
    return (scorer, None) if scorer.ready else (None, scorer.reason)


def open_store_for(db: str | Path, timeout_s: float) -> tuple[Any, str | None]:
    """(the store opened read-only, None) or (None, why it cannot be)."""
    # here: sqlite3 and the store's reader load once Signet runs (start-up time)
    import sqlite3

    from signet_scorer.hook.store import open_store

    try:
        return open_store(db, timeout_s), None
    except (OSError, sqlite3.Error) as exc:
        return None, f"cannot open the store {db}: {exc}"


def read_basis(con: Any, session: dict[str, Any], info: Any) -> Any:
    """The session's basis (`rank.session_basis`, read while Signet works), or None when it
    cannot be read: the ranking then reads it again and reports why."""
    # here: the ranking (numpy) loads once Signet runs (start-up time)
    from signet_scorer.hook.rank import HookSession, session_basis

    try:
        return session_basis(con, HookSession(**session), info.native_dim)
    except Exception:  # noqa: BLE001 - the ranking meets the same fault and names it
        return None
