"""Choosing what gets injected from the final (post-diversity) order.

Constraints policy: constraints are non-negotiable surfaced context (seed 000), so every
constraint in the candidate pool is injected, appended after the budgeted selection in final
order and not charged to the 2,000-char budget. This mirrors Signet, which keeps its
"Active Constraints" section outside the main memory budget and never drops it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from signet_bench.config import DEFAULT_CONFIG

__all__ = ["content_lengths", "select_top_k", "select_with_budget", "with_constraints"]


def content_lengths(contents: Sequence[str] | np.ndarray) -> np.ndarray:
    """Lengths as JavaScript counts them (UTF-16 code units); numeric input passes through."""
    arr = np.asarray(contents) if not isinstance(contents, np.ndarray) else contents
    if arr.dtype.kind in "iuf":
        return arr.astype(np.int64)
    return np.fromiter(
        (len(str(c).encode("utf-16-le")) // 2 for c in contents), dtype=np.int64, count=len(arr)
    )


def select_with_budget(
    order: np.ndarray,
    contents: Sequence[str] | np.ndarray,
    budget_chars: int = DEFAULT_CONFIG.injection_budget_chars,
) -> np.ndarray:
    """Signet selectWithBudget: the longest prefix of `order` whose content fits the budget;
    it stops at the first row that does not fit (a later, shorter row is not tried)."""
    order = np.asarray(order, dtype=np.int64)
    lengths = content_lengths(contents)[order]
    fits = int(np.searchsorted(np.cumsum(lengths), budget_chars, side="right"))
    return order[:fits]


def select_top_k(order: np.ndarray, k: int) -> np.ndarray:
    """The first k of `order` (the seed's "top-k from diversity-adjusted ranks")."""
    return np.asarray(order, dtype=np.int64)[: max(0, int(k))]


def with_constraints(
    selected: np.ndarray, order: np.ndarray, is_constraint: np.ndarray
) -> np.ndarray:
    """`selected` followed by every constraint of `order` not yet in it, in `order`'s order."""
    selected = np.asarray(selected, dtype=np.int64)
    order = np.asarray(order, dtype=np.int64)
    cons = np.asarray(is_constraint, dtype=bool)
    missing = order[cons[order] & ~np.isin(order, selected)]
    return np.concatenate([selected, missing])
