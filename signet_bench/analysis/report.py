"""The benchmark output contract (docs/specification.md §12): a readable table and an optional JSON
file."""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

__all__ = ["Row", "machine_info", "percentiles", "render_table", "timed_ms", "write_report"]


@dataclass(frozen=True, slots=True)
class Row:
    """One result: `{"name", "metric", "value", "unit"}` plus optional interval and count."""

    name: str
    metric: str
    value: float
    unit: str
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    goal: str | None = None  # shown in the table only, e.g. "<= 20 s"

    def to_json(self) -> dict[str, object]:
        d = {k: v for k, v in asdict(self).items() if v is not None and k != "goal"}
        d["value"] = float(self.value)
        return d


def machine_info() -> dict[str, object]:
    """Cores, memory, Python and the versions of the libraries that shape the numbers."""
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        pages = 0
    versions = {}
    for pkg in ("numpy", "polars", "duckdb", "onnxruntime", "marimo"):
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return {
        "cores": os.cpu_count(),
        "memory_gib": round(pages / 2**30, 1),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "versions": versions,
    }


def timed_ms(fn: Callable[[], object], warmup: int, repeats: int) -> list[float]:
    """Milliseconds of each of `repeats` calls of `fn`, after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


def percentiles(samples_ms: list[float] | np.ndarray, qs: tuple[int, ...] = (50, 95, 99)):
    """The named percentiles of a list of timings."""
    arr = np.asarray(samples_ms, dtype=np.float64)
    return {f"p{q}": float(np.percentile(arr, q)) for q in qs}


def render_table(bench: str, rows: list[Row]) -> str:
    """A fixed-width table, one row per result."""
    head = ("name", "metric", "value", "unit", "n", "goal")
    body = [
        (
            r.name,
            r.metric,
            f"{r.value:.4g}" if abs(r.value) < 1e5 else f"{r.value:.0f}",
            r.unit,
            "" if r.n is None else str(r.n),
            r.goal or "",
        )
        for r in rows
    ]
    widths = [
        max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)
    ]
    line = "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))
    out = [f"bench {bench}", line, "-" * len(line)]
    out += ["  ".join(c.ljust(w) for c, w in zip(b, widths, strict=True)) for b in body]
    return "\n".join(out)


def write_report(path: str | Path, bench: str, rows: list[Row]) -> None:
    """Write the JSON document (docs/specification.md §12)."""
    doc = {"bench": bench, "machine": machine_info(), "results": [r.to_json() for r in rows]}
    Path(path).write_text(json.dumps(doc, indent=2) + "\n")
