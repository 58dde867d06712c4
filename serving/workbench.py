"""Where a store's workbench lives and the files the serving side keeps in it: the served model
and the session-start hook's injection log. Standard library only; the library's readers
(`signet_bench.analysis.queries.source`, `signet_bench.store.hook_log`) use the same names."""

from __future__ import annotations

from pathlib import Path

__all__ = ["HOOK_LOG_FILE", "SERVED_MODEL_FILE", "WORKBENCH_FILE", "default_workbench"]

WORKBENCH_FILE = "workbench.duckdb"
SERVED_MODEL_FILE = "model.onnx"  # the exported model beside the workbench
HOOK_LOG_FILE = "hook_injections.db"  # what the session-start hook injected (SQLite)


def default_workbench(db: str | Path) -> Path:
    """The workbench of a store: the simulated daemon's (`<db>.predictor/workbench.duckdb`) when
    it exists, else `workbench.duckdb` beside the store."""
    p = Path(db)
    sim = p.with_name(p.name + ".predictor") / WORKBENCH_FILE
    return sim if sim.exists() else p.with_name(WORKBENCH_FILE)
