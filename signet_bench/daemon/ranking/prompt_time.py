"""The daemon at a user's prompt: the candidate pool a prompt is ranked over and the memories
it injects.

The pool (`prompt_pool`) joins two sources, the memories already injected in the session, the
deleted and the superseded ones left out (no hook injects a memory twice in a session, and
none injects what the user removed):

- the release line's own prompt-time rule: Signet 0.58 recalls for the prompt (its
  `hybridRecall`, whose first `SIGNET058_RECALL` results are the rule's; they are in the
  recall below), current Signet (0.145) injects only entity-context lines, the active
  attributes of the `person` and `project` entities the prompt names (`named_entity_rows`;
  by name, without Signet's mention score or its drop of uncategorised attributes);
- the hybrid recall of the prompt over the store (`hybrid_recall`): the prompt's terms through
  FTS5 (Signet's query shape and BM25) and its embedding's cosine to every live memory, each
  leg's best `PromptLimits.recall`, merged as Signet merges them (0.7 vector + 0.3 keyword
  where both scored; else the one that did) and kept from `RECALL_MIN_SCORE` on.

The pool's order (its baseline) is the rule's memories first, then the recall's. The scorer
ranks it with the prompt as its query (the caller builds the inputs); `choose` takes the best
within Signet 0.58's prompt-time budget (`PromptLimits`: at most 5 memories in 500 characters
of content, a greedy prefix that stops at the first that does not fit).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from signet_bench.daemon.ranking.baseline import rank_order, top_k_indices
from signet_bench.daemon.ranking.fts import fts_search
from signet_bench.daemon.ranking.select import select_with_budget
from signet_bench.store.corpus import Corpus
from signet_bench.store.graph import EntityGraph
from signet_scorer.terms import recall_terms

__all__ = [
    "ENTITY_CONTEXT_TYPES",
    "PROMPT_CONTEXT_RULE",
    "RECALL_MIN_SCORE",
    "SIGNET058_RECALL",
    "PromptLimits",
    "PromptPool",
    "choose",
    "hybrid_recall",
    "named_entity_rows",
    "prompt_pool",
]

PROMPT_CONTEXT_RULE = "prompt"  # a prompt's context: its own embedding at unit length
VECTOR_WEIGHT = 0.7  # Signet's hybrid recall: alpha * vector + (1 - alpha) * bm25
RECALL_MIN_SCORE = 0.1  # Signet's `min_score`: merged scores below it are dropped
SIGNET058_RECALL = 10  # Signet 0.58's prompt-time recall limit
ENTITY_CONTEXT_TYPES = ("person", "project")  # current Signet's entity-context types
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, slots=True)
class PromptLimits:
    """How a prompt injects: at most `max_memories` whose contents fit in `chars` (Signet
    0.58's `selectWithBudget(results, 500).slice(0, 5)`), from a pool of each recall leg's
    best `recall` (Signet's `search.top_k`)."""

    max_memories: int = 5
    chars: int = 500
    recall: int = 20

    def __post_init__(self) -> None:
        for name in ("max_memories", "chars", "recall"):
            if getattr(self, name) < 1:
                raise ValueError(f"PromptLimits.{name}: expected >= 1, got {getattr(self, name)}")


@dataclass(frozen=True, eq=False)
class PromptPool:
    """A prompt's candidates (corpus rows, baseline order), each one's hybrid-recall score (0:
    the rule's alone) and whether the release line's own rule named it."""

    rows: np.ndarray  # (n,) int64
    recall_score: np.ndarray  # (n,) float64
    rule: np.ndarray  # (n,) bool

    def __len__(self) -> int:
        return len(self.rows)


def _live(corpus: Corpus, at_s: float, exclude: Collection[str]) -> np.ndarray:
    """(N,) bool: the memories a prompt at `at_s` may inject (created, not deleted, not
    superseded, not in `exclude`)."""
    ok = ~corpus.absent_at(at_s) & ~corpus.superseded_by(at_s)
    gone = [corpus.row_of[m] for m in exclude if m in corpus.row_of]
    ok[np.asarray(gone, dtype=np.int64)] = False
    return ok


def hybrid_recall(
    corpus: Corpus,
    con: sqlite3.Connection,
    text: str,
    vector: np.ndarray | None,
    ok: np.ndarray,
    k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The prompt's hybrid recall over the memories `ok` allows: (rows, merged scores), best
    first (ties: memory id). FTS: each term of the prompt's query shape, BM25 normalised by
    the batch's best; vector: cosine of the prompt's embedding (None: no vector leg)."""
    merged: dict[int, list[float]] = {}
    hits = fts_search(con, recall_terms(text), limit=4 * k)
    kept = [(int(corpus.row_of[m]), s) for m, s in hits if m in corpus.row_of]
    for row, s in [(r, s) for r, s in kept if ok[r]][:k]:
        merged[row] = [0.0, s]
    norm = 0.0 if vector is None else float(np.linalg.norm(vector))
    if norm > 0:
        cand = np.flatnonzero(ok & corpus.has_embedding)
        cos = corpus.embeddings[cand] @ (np.asarray(vector, dtype=np.float32) / norm)
        best = top_k_indices(cos, corpus.id_text[cand], k)
        for row, c in zip(cand[best].tolist(), cos[best].tolist(), strict=True):
            merged.setdefault(row, [0.0, 0.0])[0] = float(c)
    rows = np.fromiter(merged, dtype=np.int64, count=len(merged))
    scores = np.array(
        [
            VECTOR_WEIGHT * v + (1 - VECTOR_WEIGHT) * b if v > 0 and b > 0 else max(v, b)
            for v, b in merged.values()
        ],
        dtype=np.float64,
    )
    keep = scores >= RECALL_MIN_SCORE
    rows, scores = rows[keep], scores[keep]
    order = rank_order(scores, corpus.id_text[rows])
    return rows[order], scores[order]


def named_entity_rows(
    graph: EntityGraph, corpus: Corpus, text: str, at_s: float, ok: np.ndarray
) -> np.ndarray:
    """Current Signet's entity context for a prompt: the corpus rows of the active attribute
    memories of the `ENTITY_CONTEXT_TYPES` entities whose name the prompt holds (as whole
    words), in the graph's attribute order, those `ok` allows."""
    if len(graph.entity_id) == 0:
        return np.zeros(0, dtype=np.int64)
    words = f" {' '.join(_WORD.findall(text.lower()))} "
    named = [
        e
        for e, (name, kind) in enumerate(zip(graph.entity_name, graph.entity_type, strict=True))
        if kind in ENTITY_CONTEXT_TYPES
        and (phrase := " ".join(_WORD.findall(str(name).lower())))
        and f" {phrase} " in words
    ]
    if not named:
        return np.zeros(0, dtype=np.int64)
    active = ~(graph.attr_inactive_at <= at_s)  # NaN: active
    pick = np.isin(graph.attr_entity, named) & active
    rows = [corpus.row_of.get(str(m), -1) for m in graph.attr_memory[pick]]
    out = [r for r in dict.fromkeys(rows) if r >= 0 and ok[r]]
    return np.asarray(out, dtype=np.int64)


def prompt_pool(
    corpus: Corpus,
    con: sqlite3.Connection,
    graph: EntityGraph,
    prompt: tuple[str, np.ndarray | None, float],
    line: str,
    exclude: Collection[str] = (),
    limits: PromptLimits = PromptLimits(),
) -> PromptPool:
    """The pool of a prompt (`prompt`: its text, embedding and epoch time) on a store of
    release `line` ("0.58" or "current"), `exclude` (the session's injected memories) left
    out: the rule's memories, then the hybrid recall's (module doc)."""
    text, vector, at_s = prompt
    ok = _live(corpus, at_s, exclude)
    rows, scores = hybrid_recall(corpus, con, text, vector, ok, limits.recall)
    if line == "0.58":
        rule = np.arange(len(rows)) < SIGNET058_RECALL
        return PromptPool(rows, scores, rule)
    named = named_entity_rows(graph, corpus, text, at_s, ok)
    rest = ~np.isin(rows, named)
    return PromptPool(
        np.concatenate([named, rows[rest]]),
        np.concatenate([np.zeros(len(named)), scores[rest]]),
        np.concatenate([np.ones(len(named), bool), np.zeros(int(rest.sum()), bool)]),
    )


def choose(
    scores: np.ndarray | None,
    ids: np.ndarray,
    contents: Sequence[str],
    limits: PromptLimits = PromptLimits(),
) -> np.ndarray:
    """Positions of what a prompt injects, best first: the candidates by `scores` (None or
    no finite score: the pool's own order) as a greedy prefix within `limits` (it stops at the
    first that does not fit: `select.select_with_budget`, then the count)."""
    n = len(ids)
    if scores is None or not np.isfinite(np.asarray(scores, dtype=np.float64)).any():
        order = np.arange(n)
    else:
        order = rank_order(np.asarray(scores, dtype=np.float64), ids)
    return select_with_budget(order, contents, limits.chars)[: limits.max_memories]
