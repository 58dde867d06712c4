"""Replace a file atomically: write a temporary file beside it, fsync it, rename it over the
target, fsync the directory. A crash at any point leaves either the old file or the new one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_write", "atomic_write_bytes"]


def atomic_write(path: str | Path, write: Callable[[BinaryIO], object]) -> Path:
    """Write `path` through `write(file)` so that readers see the old or the new file, never a
    part of one. The target's directory must exist."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # persist the rename itself (POSIX; best effort)
        dir_fd = os.open(p.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return p


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """`atomic_write` of a byte string."""
    return atomic_write(path, lambda f: f.write(data))
