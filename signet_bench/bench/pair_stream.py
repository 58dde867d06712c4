"""`signet-bench bench pairs`: the memory of the base trainer's stream against reading the pairs
whole.

A pair file of 2,000,000 rows (200,000 with --quick) in 40,000 sessions of 50 candidates, the
export's columns and row groups (`pairs.write_pairs`), is written to a temporary folder; then, each
in a fresh child process (`python -m signet_bench.bench.pair_stream --child MODE PATH`), it is
read three ways and the child's peak resident set size (VmHWM) recorded:

  pairs_<R>rows  import_rss   MiB   the interpreter with polars and numpy, nothing read
                 stream_rss   MiB   every session through `read_pair_sessions` (default slices)
                 whole_rss    MiB   the file read whole (`polars.read_parquet`)
                 stream_wall  s     the stream's wall time
                 file_size    MiB   the Parquet file

The stream's peak does not grow with the file (a slice, one session, the interpreter); the
whole read's does.
"""

from __future__ import annotations

import json
import logging
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from signet_bench.analysis.report import Row
from signet_bench.learn.pairs import PAIR_COLUMNS, read_pair_sessions, write_pairs

_log = logging.getLogger(__name__)

__all__ = ["pair_stream_rows"]

FULL_ROWS, QUICK_ROWS = 2_000_000, 200_000
SESSION_ROWS = 50
MODES = ("import", "stream", "whole")


def _write(path: Path, rows: int, seed: int) -> Path:
    """A pair file of `rows` rows, random numbers in the export's columns and row groups."""
    rng = np.random.default_rng(seed)
    cols = {c: rng.random(rows) for c in PAIR_COLUMNS}
    cols["session"] = np.arange(rows) // SESSION_ROWS
    return write_pairs(pl.DataFrame(cols).select(PAIR_COLUMNS), path)


def _child(mode: str, path: str) -> dict:
    """Read the file one way; the sessions or rows seen, the wall time and the peak RSS."""
    start = time.perf_counter()
    if mode == "stream":
        seen = sum(1 for _ in read_pair_sessions([path]))
    elif mode == "whole":
        seen = pl.read_parquet(path).height
    else:
        seen = 0
    wall = time.perf_counter() - start
    return {"seen": seen, "wall_s": wall, "peak_rss_mib": _peak_rss_mib()}


def _peak_rss_mib() -> float:
    """This process's peak resident set: Linux's VmHWM, which starts afresh at exec (unlike
    `ru_maxrss`, which a child keeps from the parent that wrote the file); else `ru_maxrss`."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kib = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(kib) / 1024


def _measure(mode: str, path: Path) -> dict:
    """Run `_child` in a fresh interpreter; its measurements."""
    cmd = [sys.executable, "-m", "signet_bench.bench.pair_stream", "--child", mode, str(path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"bench pairs child failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def pair_stream_rows(*, quick: bool = False, seed: int = 0) -> list[Row]:
    """Write the pair file, read it each way in a child process; the rows."""
    rows = QUICK_ROWS if quick else FULL_ROWS
    name = f"pairs_{rows}rows"
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp) / "pairs.parquet", rows, seed)
        size = path.stat().st_size / 2**20
        _log.info(f"bench pairs: {rows:,} rows, {size:.0f} MiB of Parquet; three child reads ...")
        m = {mode: _measure(mode, path) for mode in MODES}
    if m["stream"]["seen"] != rows // SESSION_ROWS or m["whole"]["seen"] != rows:
        seen = f"{m['stream']['seen']} sessions, {m['whole']['seen']} rows"
        raise RuntimeError(f"bench pairs: the reads saw {seen}")
    return [
        *(Row(name, f"{mode}_rss", m[mode]["peak_rss_mib"], "MiB", n=1) for mode in MODES),
        Row(name, "stream_wall", m["stream"]["wall_s"], "s", n=1),
        Row(name, "file_size", size, "MiB", n=1),
    ]


def _main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "--child" and argv[1] in MODES:
        print(json.dumps(_child(argv[1], argv[2])))
        return 0
    print("usage: python -m signet_bench.bench.pair_stream --child MODE PATH", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
