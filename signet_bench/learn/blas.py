"""OpenBLAS thread count for a command, chosen before numpy loads OpenBLAS (it reads it once).

Training multiplies (rows × 768) by (768 × 64) matrices, where every core helps, so training
commands leave the count to OpenBLAS (all cores). Every other command gets one thread: the
session-start path multiplies small matrices, where one thread is steadier on a busy 2-core
machine. A count the user has set is always kept.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

__all__ = ["blas_env", "configure"]


def blas_env(*, all_cores: bool, env: Mapping[str, str]) -> dict[str, str]:
    """The variables to add to `env`: one thread unless `all_cores` or the user set it."""
    if all_cores or "OPENBLAS_NUM_THREADS" in env:
        return {}
    return {"OPENBLAS_NUM_THREADS": "1"}


def configure(*, all_cores: bool) -> dict[str, str]:
    """Set the variables in this process (and so its children); returns what was set.
    Does nothing once numpy is loaded, since OpenBLAS has read its settings by then."""
    if "numpy" in sys.modules:
        return {}
    added = blas_env(all_cores=all_cores, env=os.environ)
    os.environ.update(added)
    return added
