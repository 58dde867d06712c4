"""Per-candidate signals beside the 17 features: evidence the scorer reads as extra inputs,
computed by one definition on both sides (the trainer's samples and the server's requests call
these functions on the same values, so training and serving agree bit for bit).

Columns (`contract.SIGNAL_NAMES`), each in [0, 1], 0 where there is no evidence:

- **lexical**: BM25 (k1 1.2, b 0.75) of each candidate's text for the session's query terms,
  IDF over the candidate pool (SQLite FTS5's formula: ln((N − n + 0.5)/(n + 0.5)), floored at
  1e-6), normalised as Signet normalises its keyword leg: score / max in the pool. Text and
  terms are cut by the scorer's tokenizer (`signet_scorer.tokenize`) and lowercased, as FTS5 folds
  case. The query terms are the prompt's (Signet's query shape) or, at session start, Signet
  0.58's predicted-context terms (`session_start_terms`).
- **entity_match**: the share of the query's entities (`query_entities`: capitalised tokens not
  opening a sentence) that occur as tokens of the candidate's text, case kept.
- **source_neighbourhood**: the highest cosine(context, m′) over the *other* embedded
  candidates m′ of the candidate's source session (`source_neighbourhood`): a memory whose
  session-mates answer the query is likely part of the answer. No source, no mate: 0.
- **cosine_rank**: 1/(1 + r), r the number of embedded candidates whose cosine(context, m)
  (float64, `_context_cosines`) is strictly higher than the candidate's (ties share the best
  place, so the value does not depend on the candidates' order); 0 on the text path or
  without a context. The place, not the value: it reads alike whatever the embedder's scale.
- **hybrid_rank**: 1/(1 + r) of the candidate's `hybrid_scores` (that cosine, 0 on the text
  path, and the lexical column) among all candidates, ties as above.
- **length**: min(1, ln(1 + t)/ln(`LENGTH_TOKENS`)), t the tokens of the candidate's text
  (`signet_scorer.tokenize`); 0 without a text.
- **session_max**: the highest of that cosine over the candidate's source session, itself
  included: max(its cosine, source_neighbourhood) (a candidate without a source is a session
  of one).
- **session_best_rank**: the highest cosine_rank over the candidate's source session, itself
  included: whether the session holds one of the best matches (without a source: its own).

The last five were chosen by ablation of the base model (`signet_bench.learn.pairs`) on
LoCoMo's earlier questions; each needs only the pool's texts and embeddings, so they are
computed for every request (without query terms the hybrid is the cosine).
- **track_record**: the memory's own record in this user's sessions judged before this one,
  shrunk toward the user's mean (`signet_scorer.track_record`), given per candidate by the caller
  (the request's `candidate_track_record`); none given: 0 for every candidate.
- **adjacent_max**, **adjacent_best_rank**, **adjacent_hybrid_rank**: the highest cosine,
  cosine_rank and hybrid_rank over the candidate's neighbours in its source session's
  created_at order (`adjacent_best`: the other embedded members created at its own time or at
  the `ADJACENT_SPAN` nearest distinct times before and after it): facts extracted next to the
  answer belong to the same exchange. They need the candidates' creation times (the request's
  `candidate_created_at`); without them, or without sources: 0.

The last three were chosen by the same ablation on LoCoMo's earlier questions, once the store
gave each memory its place in the conversation (`world/locomo.py`: a turn id orders the store,
no signal reads it).

Free rankers on the same evidence: `hybrid_scores` is Signet's hybrid weighting
(`HYBRID_VECTOR_WEIGHT`·cosine + (1 − it)·lexical) without its both-legs rule; a fresh scorer
starts exactly at that order. Imports numpy and the standard library only.
"""

from __future__ import annotations

import functools
import math
import re
import sqlite3
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import NamedTuple

import numpy as np

from signet_scorer.contract import N_SIGNALS, SIGNAL_NAMES
from signet_scorer.tokenize import tokenize

__all__ = [
    "ADJACENT_SPAN",
    "BM25_B",
    "BM25_K1",
    "HYBRID_VECTOR_WEIGHT",
    "JOB_TIME_SQL",
    "LENGTH_TOKENS",
    "START_MAX_TERMS",
    "START_TRANSCRIPTS",
    "Origins",
    "adjacent_best",
    "candidate_signals",
    "entity_match",
    "hybrid_scores",
    "length_signal",
    "lexical_scores",
    "query_entities",
    "rank_signal",
    "recent_transcripts",
    "session_best",
    "session_start_terms",
    "signal_column",
    "source_neighbourhood",
    "sqlite_time",
    "store_start_terms",
]

BM25_K1 = 1.2
BM25_B = 0.75
IDF_FLOOR = 1e-6  # FTS5's floor for a term in more than half the documents
HYBRID_VECTOR_WEIGHT = 0.7  # Signet's hybrid recall: 0.7 vector + 0.3 keyword
LENGTH_TOKENS = 256  # a text of this many tokens or more has length 1

# Signet 0.58's predicted-context query at session start (getPredictedContextMemories): the last
# 5 completed summary jobs of the project, the first 3000 characters of each transcript, terms of
# at least 4 characters [a-z0-9] found in at least 2 of them, the 10 most frequent.
START_TRANSCRIPTS = 5
START_TRANSCRIPT_CHARS = 3000
START_MIN_TERM_CHARS = 4
START_MIN_TRANSCRIPTS = 2
START_MAX_TERMS = 10

_START_TERM = re.compile(rf"[a-z0-9]{{{START_MIN_TERM_CHARS},}}")
_SENTENCE_END = re.compile(r"[.!?]+")


def signal_column(name: str) -> int:
    """The column of a signal in the (n, N_SIGNALS) matrix; a clear error for an unknown name."""
    try:
        return SIGNAL_NAMES.index(name)
    except ValueError:
        raise KeyError(f"no signal {name!r}; the signals are {', '.join(SIGNAL_NAMES)}") from None


# --- lexical ------------------------------------------------------------------------------------


# Caches sized for a store's memories (2,000-4,000 texts), so a long-running sidecar's memory
# stays bounded whatever texts it is sent.
_TEXT_CACHE = 1 << 13


class _Text(NamedTuple):
    """What the signals read of one candidate text, tokenized once."""

    counts: Counter[str]  # lowercased token -> count (BM25's term frequencies)
    length: int  # tokens (BM25's document length)
    lowered: frozenset[str]  # the lowercased tokens (does a query term occur at all?)
    tokens: frozenset[str]  # the tokens, case kept (entity match)


@functools.lru_cache(maxsize=_TEXT_CACHE)
def _text(text: str) -> _Text:
    """One text's tokens as the signals read them (cached: a pool is re-scored for every query
    of its session, and its texts recur across sessions)."""
    tokens = tokenize(text)
    counts = Counter(t.lower() for t in tokens)
    return _Text(counts, len(tokens), frozenset(counts), frozenset(tokens))


def _texts(candidate_texts: Sequence[str | None]) -> list[_Text]:
    """The pool's texts (`_text`); a missing text (None) is an empty document."""
    return [_text(t or "") for t in candidate_texts]


def _query_tokens(query_terms: Sequence[str]) -> list[str]:
    """The distinct lowercased tokens of the query terms, in first-seen order."""
    return list(dict.fromkeys(t.lower() for term in query_terms for t in tokenize(str(term))))


def lexical_scores(
    query_terms: Sequence[str] | None, candidate_texts: Sequence[str | None]
) -> np.ndarray:
    """(n,) float32 BM25 of each text for the query terms over this pool, divided by the
    pool's maximum; all 0 when no term matches (or there are no terms). A missing text (None)
    is an empty document."""
    return _lexical(query_terms, _texts(candidate_texts))


def _lexical(query_terms: Sequence[str] | None, docs: Sequence[_Text]) -> np.ndarray:
    """`lexical_scores` over tokenized texts. Only the texts holding a query term are scored
    (the others score 0 whatever the IDF); every value is computed as over the whole pool."""
    n = len(docs)
    out = np.zeros(n, dtype=np.float32)
    query = _query_tokens(query_terms or ())
    if n == 0 or not query:
        return out
    wanted = frozenset(query)
    matched = [i for i, d in enumerate(docs) if not wanted.isdisjoint(d.lowered)]
    if not matched:
        return out
    # token counts are whole numbers, so this sum is exact and the mean is numpy's to the bit
    mean = max(sum(d.length for d in docs) / n, 1e-12)
    score = dict.fromkeys(matched, 0.0)
    for term in query:
        tfs = [(i, docs[i].counts[term]) for i in matched if term in docs[i].counts]
        if not tfs:
            continue
        idf = max(math.log((n - len(tfs) + 0.5) / (len(tfs) + 0.5)), IDF_FLOOR)
        for i, tf in tfs:
            norm = BM25_K1 * (1.0 - BM25_B + BM25_B * docs[i].length / mean)
            score[i] += idf * tf * (BM25_K1 + 1.0) / (tf + norm)
    top = max(score.values())
    out[matched] = np.array([score[i] / top for i in matched], dtype=np.float64).astype(np.float32)
    return out


def session_start_terms(transcripts: Sequence[str]) -> list[str]:
    """Signet 0.58's session-start query terms from the last transcripts (newest first):
    lowercased runs of >= 4 characters [a-z0-9] in the first 3000 characters of each, kept when
    they occur in >= 2 transcripts, the 10 most frequent over all of them (ties: the term)."""
    counts: Counter[str] = Counter()
    spread: Counter[str] = Counter()
    for text in list(transcripts)[:START_TRANSCRIPTS]:
        found = _START_TERM.findall(str(text or "")[:START_TRANSCRIPT_CHARS].lower())
        counts.update(found)
        spread.update(set(found))
    kept = [t for t in counts if spread[t] >= START_MIN_TRANSCRIPTS]
    return sorted(kept, key=lambda t: (-counts[t], t))[:START_MAX_TERMS]


# When a summary job was done, as text that orders correctly across Signet's two formats
# (`2026-03-14T21:40:46.123Z` and `2026-03-14 21:40:46`).
JOB_TIME_SQL = "REPLACE(REPLACE(COALESCE(completed_at, created_at), 'T', ' '), 'Z', '')"


def sqlite_time(at: datetime) -> str:
    """An aware time as SQLite's text form in UTC, comparable with both of Signet's formats
    once their `T` and `Z` are normalised away (`recent_transcripts`)."""
    if at.tzinfo is None:
        raise ValueError(f"{at!r}: a naive time (give one with a time zone)")
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def recent_transcripts(
    con: sqlite3.Connection, project: str | None, before: datetime | None = None
) -> list[str]:
    """The transcripts (first 3000 characters) of the last 5 completed `summary_jobs` of the
    project (every project when None), newest first; with `before`, only jobs completed
    before it (a replayed session start sees what was done by then)."""
    when = JOB_TIME_SQL
    where = ["status = 'completed'"]
    args: list[object] = []
    if project:
        where.append("project = ?")
        args.append(project)
    if before is not None:
        where.append(f"{when} < ?")
        args.append(sqlite_time(before))
    sql = (
        f"SELECT SUBSTR(transcript, 1, {START_TRANSCRIPT_CHARS}) FROM summary_jobs "
        f"WHERE {' AND '.join(where)} ORDER BY {when} DESC, id DESC LIMIT {START_TRANSCRIPTS}"
    )
    return [str(r[0] or "") for r in con.execute(sql, args).fetchall()]


def store_start_terms(
    con: sqlite3.Connection, project: str | None, before: datetime | None = None
) -> list[str]:
    """A session start's query terms from the store (`recent_transcripts` →
    `session_start_terms`): what a hook, the session loop and the trainer all send."""
    return session_start_terms(recent_transcripts(con, project, before))


# --- entities -----------------------------------------------------------------------------------


def query_entities(text: str | None) -> list[str]:
    """The names in a query: tokens (`signet_scorer.tokenize`) of two or more characters that start
    with a capital letter and do not open a sentence (a sentence opens the text and follows
    `.`, `!` or `?`), distinct, case kept ("When did Caroline go to the LGBTQ group?" →
    Caroline, LGBTQ)."""
    found: list[str] = []
    for sentence in _SENTENCE_END.split(text or ""):
        found += [t for t in tokenize(sentence)[1:] if len(t) >= 2 and t[0].isupper()]
    return list(dict.fromkeys(found))


def entity_match(
    entities: Sequence[str] | None, candidate_texts: Sequence[str | None]
) -> np.ndarray:
    """(n,) float32: the share of `entities` that are tokens of each text (0 without
    entities; a missing text matches none)."""
    return _entity_match(entities, _texts(candidate_texts))


def _entity_match(entities: Sequence[str] | None, docs: Sequence[_Text]) -> np.ndarray:
    """`entity_match` over tokenized texts."""
    names = frozenset(entities or ())
    hits = np.zeros(len(docs), dtype=np.float64)
    if not names:
        return hits.astype(np.float32)
    for i, d in enumerate(docs):
        if not names.isdisjoint(d.tokens):
            hits[i] = len(names & d.tokens)
    return (hits / len(names)).astype(np.float32)


# --- source neighbourhood -----------------------------------------------------------------------


def _context_cosines(context: np.ndarray, embeddings: np.ndarray, has: np.ndarray) -> np.ndarray:
    """cosine(context, embedding) in float64 by elementwise sums over a C-ordered copy (no
    BLAS, so the value does not depend on the arrays' layout or thread count); 0 where either
    vector is zero or the candidate has no embedding. The signal's definition: the float32
    values `source_neighbourhood` returns are these cosines rounded."""
    ctx = np.asarray(context, dtype=np.float64).reshape(-1)
    emb = np.ascontiguousarray(embeddings, dtype=np.float64)
    dots = np.einsum("ij,j->i", emb, ctx)
    norms = np.sqrt(np.einsum("ij,ij->i", emb, emb)) * math.sqrt(float(np.dot(ctx, ctx)))
    return np.divide(dots, norms, out=np.zeros_like(dots), where=has & (norms > 0))


def _fast_context_cosines(
    context: np.ndarray, embeddings: np.ndarray, has: np.ndarray, used: np.ndarray
) -> np.ndarray:
    """`_context_cosines` by BLAS dot products (half the time), or by that function itself
    when the rows in `used` might round to other float32 values or pick another best mate.

    Any float64 cosine of n-dim vectors is within e = (2n + 4)·2^-53 of the exact one (the
    standard bound for a sum of products, a square root, a product and a quotient), so the
    two computations differ by at most 2e. A value more than 2e (plus its own rounding)
    from every float32 rounding midpoint therefore rounds as the reference does; and when
    all used values are, two mates the computations order differently lie within 4e of each
    other with no midpoint between them, so either choice rounds to the same float32 value.
    Only float32 vectors take this path (their squares and products are exact in float64,
    with no underflow); anything else, and any value too near a midpoint, takes the
    reference computation."""
    if np.asarray(embeddings).dtype != np.float32 or np.asarray(context).dtype != np.float32:
        return _context_cosines(context, embeddings, has)
    ctx = np.asarray(context, dtype=np.float64).reshape(-1)
    emb = np.ascontiguousarray(embeddings, dtype=np.float64)
    norms = np.sqrt(np.vecdot(emb, emb)) * math.sqrt(float(np.dot(ctx, ctx)))
    cos = np.divide(np.vecdot(emb, ctx), norms, out=np.zeros(len(emb)), where=has & (norms > 0))
    margin = (4 * ctx.size + 12) * 2.0**-53 * 1.01
    if not _rounds_alike(cos[used[norms[used] > 0]], margin):  # a zero vector's 0 is exact
        return _context_cosines(context, embeddings, has)
    return cos


def _rounds_alike(values: np.ndarray, margin: float) -> bool:
    """True when every float64 value rounds to the same float32 as anything within `margin`
    of it: no float32 rounding midpoint lies in [value − margin, value + margin]."""
    return np.array_equal(
        (values - margin).astype(np.float32), (values + margin).astype(np.float32)
    )


def source_neighbourhood(
    context: np.ndarray | None,
    embeddings: np.ndarray,
    has_embedding: np.ndarray,
    sources: Sequence[str | None],
) -> np.ndarray:
    """(n,) float32: for each candidate, the highest cosine(context, m′) over the other
    embedded candidates m′ with the same source (its memory's source session); 0 without a
    context, without a source or without such a mate."""
    if context is None or len(sources) == 0:
        return np.zeros(len(sources), dtype=np.float32)
    has = np.asarray(has_embedding, dtype=bool)
    group, n_groups = _source_groups(sources)
    mates = np.flatnonzero((group >= 0) & has)
    if mates.size < 2:
        return np.zeros(len(sources), dtype=np.float32)
    cos = _fast_context_cosines(context, embeddings, has, mates)
    return _best_mates(cos, has, group, n_groups)


def _source_groups(sources: Sequence[str | None]) -> tuple[np.ndarray, int]:
    """Each candidate's source session as a group number (-1 without a source), and how many."""
    codes: dict[str, int] = {}
    group = np.array([-1 if s is None else codes.setdefault(str(s), len(codes)) for s in sources])
    return group, len(codes)


def _best_mates(cos: np.ndarray, has: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """`source_neighbourhood` from the candidates' cosines (`_context_cosines` values)."""
    out = np.zeros(group.size, dtype=np.float32)
    mates = np.flatnonzero((group >= 0) & has)
    if mates.size < 2:
        return out
    # per group, the best and second-best embedded member: a member's best mate is the
    # group's best unless it is that best itself, then the second
    order = mates[np.lexsort((mates, -cos[mates], group[mates]))]
    in_order = group[order]
    first = np.empty(order.size, dtype=bool)
    first[0] = True
    np.not_equal(in_order[1:], in_order[:-1], out=first[1:])
    best = np.full(n_groups, -1, dtype=np.int64)
    second = np.full(n_groups, -1, dtype=np.int64)
    best[group[order[first]]] = order[first]
    after = np.flatnonzero(first) + 1
    after = after[after < order.size]
    after = after[in_order[after] == in_order[after - 1]]
    second[group[order[after]]] = order[after]
    known = group >= 0
    g = group[known]
    pick = np.where(best[g] == np.flatnonzero(known), second[g], best[g])
    value = np.where(pick >= 0, cos[np.maximum(pick, 0)], 0.0)
    out[known] = value.astype(np.float32)
    return out


# --- adjacency in the store's order ------------------------------------------------------------

# the two nearest distinct created_at on each side (LoCoMo's earlier questions, leave one
# conversation out, the base with all three adjacency signals: recall@10 over signet_hybrid
# +3.17 / +3.59 / +3.14 with 1 / 2 / 3 on each side, wordllama; +2.32 / +3.61 with 1 / 2, MiniLM)
ADJACENT_SPAN = 2


def adjacent_best(
    values: np.ndarray,
    valid: np.ndarray,
    sources: Sequence[str | None] | None,
    created_at: np.ndarray | None,
    span: int = ADJACENT_SPAN,
) -> np.ndarray:
    """(n,) float32: for each candidate, the highest of `values` over its neighbours in its
    source session's created_at order: the *other* `valid` members of the same source whose
    created_at is the candidate's own or among the `span` nearest distinct ones of `valid`
    members before and after it (memories extracted at the same or adjacent moments of one
    session: the talk around the fact). Ties of time are whole places, so the value does not
    depend on the candidates' order; 0 for a candidate not `valid` itself, without a source,
    a created_at (NaN) or a neighbour, and for all without `sources` or `created_at`."""
    return _adjacent(values, _adjacent_slots(valid, sources, created_at), span)


class _Slots(NamedTuple):
    """The places `adjacent_best` compares: the members (valid, with a source and a time) in
    (source, time) order, each one's source and slot (a distinct time within its source), and
    each slot's source. Values aside, the same for every adjacency signal of a request."""

    order: np.ndarray
    group: np.ndarray
    slot: np.ndarray
    slot_group: np.ndarray


def _adjacent_slots(
    valid: np.ndarray, sources: Sequence[str | None] | None, created_at: np.ndarray | None
) -> _Slots | None:
    """`_Slots` of the candidates; None when fewer than two are members."""
    if sources is None or created_at is None or len(sources) == 0:
        return None
    at = np.asarray(created_at, dtype=np.float64).reshape(-1)
    group, _ = _source_groups(sources)
    member = np.flatnonzero((group >= 0) & np.asarray(valid, dtype=bool) & np.isfinite(at))
    if member.size < 2:
        return None
    # each member's place: (group, distinct time within the group) as one slot number
    order = member[np.lexsort((at[member], group[member]))]
    g, t = group[order], at[order]
    new_slot = np.ones(order.size, dtype=bool)
    new_slot[1:] = (g[1:] != g[:-1]) | (t[1:] != t[:-1])
    return _Slots(order, g, np.cumsum(new_slot) - 1, g[new_slot])


def _adjacent(values: np.ndarray, slots: _Slots | None, span: int) -> np.ndarray:
    """`adjacent_best` of `values` over the `slots` of the candidates."""
    out = np.zeros(len(values), dtype=np.float32)
    if slots is None:
        return out
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    order, g, slot, slot_group = slots
    n_slots = int(slot[-1]) + 1
    # per slot: the best value and its member, and the second best (a member's own slot
    # gives its best other member)
    by_value = np.lexsort((order, -x[order], slot))
    ranked, ranked_slot = order[by_value], slot[by_value]
    first = np.ones(ranked.size, dtype=bool)
    first[1:] = ranked_slot[1:] != ranked_slot[:-1]
    best = np.full(n_slots, -np.inf)
    best_of = np.full(n_slots, -1, dtype=np.int64)
    best[ranked_slot[first]], best_of[ranked_slot[first]] = x[ranked[first]], ranked[first]
    second = np.full(n_slots, -np.inf)
    after = np.flatnonzero(first) + 1
    after = after[(after < ranked.size)]
    after = after[ranked_slot[after] == ranked_slot[after - 1]]
    second[ranked_slot[after]] = x[ranked[after]]
    top = np.full(order.size, -np.inf)
    for d in range(-span, span + 1):
        s = slot + d
        ok = (s >= 0) & (s < n_slots)
        s = np.where(ok, s, 0)
        ok &= slot_group[s] == g
        if d == 0:
            value = np.where(best_of[s] == order, second[s], best[s])
        else:
            value = best[s]
        top = np.maximum(top, np.where(ok, value, -np.inf))
    out[order] = np.where(np.isfinite(top), top, 0.0).astype(np.float32)
    return out


# --- ranks and length ---------------------------------------------------------------------------


def rank_signal(values: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """(n,) float32 1/(1 + r), r the number of `valid` values strictly above each one (ties share
    the best place, whatever their order); 0 where not `valid` (default: all valid)."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    ok = np.ones(x.size, dtype=bool) if valid is None else np.asarray(valid, dtype=bool)
    pool = np.sort(x[ok])
    above = pool.size - np.searchsorted(pool, x, side="right")
    return np.where(ok, 1.0 / (1.0 + above), 0.0).astype(np.float32)


def session_best(values: np.ndarray, sources: Sequence[str | None] | None) -> np.ndarray:
    """(n,) float32: the highest of `values` over each candidate's source session, itself
    included (a candidate without a source, or without `sources`, keeps its own value)."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if sources is None or x.size == 0:
        return x.astype(np.float32)
    group, n_groups = _source_groups(sources)
    best = np.full(n_groups + 1, -np.inf)  # the last slot: no source
    np.maximum.at(best, group, x)
    return np.where(group >= 0, best[group], x).astype(np.float32)


def length_signal(candidate_texts: Sequence[str | None]) -> np.ndarray:
    """(n,) float32 min(1, ln(1 + tokens)/ln(`LENGTH_TOKENS`)) of each text (0 without one)."""
    return _length(_texts(candidate_texts))


def _length(docs: Sequence[_Text]) -> np.ndarray:
    t = np.array([d.length for d in docs], dtype=np.float64)
    return np.minimum(1.0, np.log1p(t) / math.log(LENGTH_TOKENS)).astype(np.float32)


# --- all signals --------------------------------------------------------------------------------


class Origins(NamedTuple):
    """Where each candidate came from: its source session(s) (None: none known) and its creation
    time (epoch seconds, NaN unknown; None: none known), which group and order the source
    neighbourhood and adjacency signals; without them those signals are 0."""

    sources: Sequence[str | None] | None = None
    created_at: np.ndarray | None = None


def candidate_signals(
    *,
    query_terms: Sequence[str] | None,
    query_entities: Sequence[str] | None,
    candidate_texts: Sequence[str | None],
    context: np.ndarray | None,
    embeddings: np.ndarray,
    has_embedding: np.ndarray,
    origins: Origins,
    track_record: np.ndarray | None = None,
) -> np.ndarray:
    """(n, N_SIGNALS) float32, columns in `SIGNAL_NAMES` order (module docstring);
    `origins`: where each candidate came from (`Origins`); `track_record`: the candidates'
    track records (`signet_scorer.track_record`), None: 0."""
    sources, created_at = origins
    docs = _texts(candidate_texts)
    out = np.zeros((len(docs), N_SIGNALS), dtype=np.float32)
    out[:, signal_column("lexical")] = _lexical(query_terms, docs)
    out[:, signal_column("entity_match")] = _entity_match(query_entities, docs)
    has = np.asarray(has_embedding, dtype=bool)
    slots = _adjacent_slots(has, sources, created_at)  # one order for the adjacency signals
    cos = np.zeros(len(docs))
    if context is not None and len(docs):
        # one cosine pass for every signal: the neighbourhood reads the same exact values
        cos = _context_cosines(context, embeddings, has)
        if sources is not None:
            group, n_groups = _source_groups(sources)
            column = signal_column("source_neighbourhood")
            out[:, column] = _best_mates(cos, has, group, n_groups)
        rank = rank_signal(cos, has)
        out[:, signal_column("cosine_rank")] = rank
        mates = out[:, signal_column("source_neighbourhood")].astype(np.float64)
        out[:, signal_column("session_max")] = np.maximum(cos, mates)
        out[:, signal_column("session_best_rank")] = session_best(rank, sources)
        out[:, signal_column("adjacent_max")] = _adjacent(cos, slots, ADJACENT_SPAN)
        out[:, signal_column("adjacent_best_rank")] = _adjacent(rank, slots, ADJACENT_SPAN)
    lexical = out[:, signal_column("lexical")]
    hybrid = rank_signal(hybrid_scores(cos, lexical))
    out[:, signal_column("hybrid_rank")] = hybrid
    out[:, signal_column("adjacent_hybrid_rank")] = _adjacent(hybrid, slots, ADJACENT_SPAN)
    out[:, signal_column("length")] = _length(docs)
    if track_record is not None:
        out[:, signal_column("track_record")] = np.asarray(track_record, dtype=np.float32)
    return out


def hybrid_scores(cosine: np.ndarray, lexical: np.ndarray) -> np.ndarray:
    """(n,) float64 `HYBRID_VECTOR_WEIGHT`·cosine + (1 − it)·lexical: the free ranker a fresh
    scorer starts at (Signet's weights, on every candidate rather than only where both legs
    score)."""
    a = HYBRID_VECTOR_WEIGHT
    return a * np.asarray(cosine, dtype=np.float64) + (1.0 - a) * np.asarray(lexical, np.float64)
