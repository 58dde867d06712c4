"""Choosing what gets injected from the final (post-diversity) order.

Constraints (the scorer specification: "non-negotiable surfaced context. The predictor may rank
them, but cannot suppress required constraints"). A constraint walks the budget like any candidate:
when it falls inside the budgeted prefix it is charged to the 2,000-char budget; every constraint
the walk did not reach is appended after it, in final order, uncharged. This is Signet's
session start (docs/specification.md §3.6): ``selectWithBudget`` walks every fused candidate,
constraints included, and the "Active Constraints" section has its space reserved outside
that budget. Never charging constraints would give the main list room Signet never gives it.
So the ranking decides whether a constraint takes budget, never whether it is injected.

Superseded memories (the specification's verification list: "superseded memories get negative
labels, excluded from injection") stay candidates (ranked, scored, labelled −0.3) but leave the walk
before selection: they take no budget and are never injected. Staleness wins over the
constraint rule: a superseded constraint is outdated context, exactly the harm the −0.3 label
encodes, so it is not injected either.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from signet_bench.config import DEFAULT_CONFIG
from signet_scorer.budget import Budget, choose, length_tokens

__all__ = [
    "content_lengths",
    "select_chosen",
    "select_injected",
    "select_top_k",
    "select_with_budget",
    "with_constraints",
]


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
    """The first k of `order` (the specification's "top-k from diversity-adjusted ranks")."""
    return np.asarray(order, dtype=np.int64)[: max(0, int(k))]


def select_chosen(order: np.ndarray, lengths: np.ndarray, choice: Budget) -> np.ndarray:
    """The rows of `order` the budget's choice keeps (`signet_scorer.budget.choose`: best
    first, at most K, within its tokens); `lengths` (UTF-16 units) is indexed by the rows."""
    order = np.asarray(order, dtype=np.int64)
    costs = [length_tokens(u) for u in np.asarray(lengths)[order].tolist()]
    return order[np.asarray(choose(costs, choice), dtype=np.int64)]


def with_constraints(
    selected: np.ndarray, order: np.ndarray, is_constraint: np.ndarray
) -> np.ndarray:
    """`selected` followed by every constraint of `order` not yet in it, in `order`'s order."""
    selected = np.asarray(selected, dtype=np.int64)
    order = np.asarray(order, dtype=np.int64)
    cons = np.asarray(is_constraint, dtype=bool)
    missing = order[cons[order] & ~np.isin(order, selected)]
    return np.concatenate([selected, missing])


def select_injected(
    order: np.ndarray,
    lengths: np.ndarray,
    is_constraint: np.ndarray,
    *,
    is_superseded: np.ndarray | None = None,
    budget_chars: int | None = DEFAULT_CONFIG.injection_budget_chars,
    top_k: int | None = None,
    choice: Budget | None = None,
) -> np.ndarray:
    """The injected rows, best first: superseded rows leave `order`, then the greedy budget
    (None = no budget), then the first `top_k` (None = all), then the remaining constraints.
    A `choice` (K and tokens, `select_chosen`) takes the place of the character budget and
    `top_k`; constraints are still added after it.

    `lengths`, `is_constraint` and `is_superseded` are indexed by the values in `order`."""
    walk = np.asarray(order, dtype=np.int64)
    if is_superseded is not None:
        walk = walk[~np.asarray(is_superseded, dtype=bool)[walk]]
    if choice is not None:
        return with_constraints(select_chosen(walk, lengths, choice), walk, is_constraint)
    selected = walk if budget_chars is None else select_with_budget(walk, lengths, budget_chars)
    if top_k is not None:
        selected = select_top_k(selected, top_k)
    return with_constraints(selected, walk, is_constraint)
