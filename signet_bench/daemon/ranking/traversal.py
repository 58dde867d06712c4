"""Knowledge-graph traversal at session start: the memories (and constraints) the graph adds to
the candidate pool. Pure functions over a store's `EntityGraph`.

The rule, as Signet's session start walks its graph:

1. **Focal entities.** The pinned entities (most recently pinned first); then the project's
   entities: those of type 'project' whose name contains one of the last two parts of the
   session's project path (lower-cased, characters other than a-z, 0-9, '_' and '-' dropped,
   parts of at least two characters), most mentioned first, at most 5; only when the project
   names none, the entities whose name holds one of the session's query terms as a word, most
   mentioned first, at most 20.
2. **One pass over the focal entities.** Their active constraints (kept apart: they are always
   injected); their aspects by weight, at most `maxAspectsPerEntity` each; each aspect's active
   attributes by importance, at most `maxAttributesPerAspect`, taken by importance across all
   the aspects until `maxTraversalPaths` distinct memories are reached; while room remains, the
   memories that mention a focal entity (by mention confidence, then memory importance).
3. **One hop.** Each focal entity's outgoing dependencies with confidence × strength >=
   `minDependencyStrength` and confidence >= `minConfidence` (an unrecorded confidence reads
   0.7) to an entity that is not focal, its `maxBranching` strongest; their targets are walked
   as in 2 while room remains.
4. **Score.** A reached memory's traversal score is clamp01(the highest importance among its
   active attributes, else the memory's importance, else 0.5), undecayed.

Only memories live at the session start are reached, and an attribute counts as active until
its status changed. Each reached memory keeps the path that first reached it: focal entity →
[dependency → entity] → aspect (none for a mention) → memory, recorded as Signet records it
(`path_json`: entity_ids, aspect_ids, dependency_ids).

**The share cap** (`traversalMaxShare`), against a failure seen in the field, where one pinned
entity's memories filled the whole injection: the graph alone brings at most that share of
`candidatePoolSize` into the pool (`pool_quota`), and memories whose score the graph raised
take at most that share of the injection budget (`injection_overflow`); constraints are exempt.

The graph is indexed once per store and corpus (`graph_index`, cached on the graph); a session
start then costs a few vectorised gathers over the focal entities' slices.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.store.graph import EntityGraph

__all__ = [
    "PROJECT_FOCAL_LIMIT",
    "QUERY_FOCAL_LIMIT",
    "Focal",
    "GraphIndex",
    "Traversal",
    "TraversalFlags",
    "candidate_flags",
    "focal_entities",
    "graph_index",
    "injection_overflow",
    "pool_quota",
    "project_tokens",
    "query_tokens",
    "session_traversal",
    "traverse",
]

PROJECT_FOCAL_LIMIT = 5  # project entities matched per session
QUERY_FOCAL_LIMIT = 20  # entities matched by query terms per session
UNRECORDED_CONFIDENCE = 0.7  # a dependency's confidence when the store has none
_NOT_TOKEN = re.compile(r"[^a-z0-9_-]")
_WORD_SPLIT = re.compile(r"[^0-9a-z]+")
_NONE = np.zeros(0, dtype=np.int64)


def _token(value: str) -> str:
    return _NOT_TOKEN.sub("", value.lower()).strip()


def project_tokens(project: str | None) -> list[str]:
    """The last two parts of a project path as Signet matches them against entity names."""
    parts = [_token(p) for p in re.split(r"[\\/]+", project or "")]
    parts = [p for p in parts if len(p) >= 2]
    return list(dict.fromkeys(parts[-2:]))


def query_tokens(terms: Iterable[str]) -> list[str]:
    """Query terms as entity-name words: normalised, at least two characters, unique."""
    return list(dict.fromkeys(t for t in (_token(x) for x in terms) if len(t) >= 2))


# --- the index ---------------------------------------------------------------------------------


def _grouped(groups: np.ndarray, n_groups: int, *keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Items with a group (>= 0) ordered by group, then by `keys` (np.lexsort's order: the last
    key first), and each group's start in that order (n_groups + 1 entries)."""
    items = np.flatnonzero(groups >= 0)
    order = items[np.lexsort(tuple(k[items] for k in keys) + (groups[items],))]
    starts = np.searchsorted(groups[order], np.arange(n_groups + 1))
    return order, starts.astype(np.int64)


def _ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positions lo[i]..hi[i]-1 of every range, concatenated, and each one's range index."""
    lens = np.maximum(np.asarray(hi, np.int64) - np.asarray(lo, np.int64), 0)
    total = int(lens.sum())
    if total == 0:
        return _NONE, _NONE
    seg = np.repeat(np.arange(len(lens)), lens)
    offsets = np.repeat(np.cumsum(lens) - lens, lens)
    return np.arange(total) - offsets + np.repeat(np.asarray(lo, np.int64), lens), seg


def _rank_in_group(seg: np.ndarray) -> np.ndarray:
    """Each item's 0-based place within its group (`seg` non-decreasing)."""
    return np.arange(len(seg)) - np.searchsorted(seg, seg)


def _first_unique(values: np.ndarray) -> np.ndarray:
    """Positions of the first occurrence of each value, in order."""
    _, first = np.unique(values, return_index=True)
    return np.sort(first)


@dataclass(frozen=True, eq=False)
class GraphIndex:
    """A graph laid out for traversal against one corpus: each entity's aspects by weight, each
    aspect's attributes by importance, each entity's constraints, mentions and dependencies,
    each memory's attributes; memory ids resolved to corpus rows (-1: not in the corpus)."""

    graph: EntityGraph
    importance: np.ndarray  # (N,) the corpus' memory importance, NULL read as 0.5
    names: np.ndarray  # (E,) str: lower-cased name and canonical name, for project matches
    is_project: np.ndarray  # (E,) bool
    by_mentions: np.ndarray  # (E,) int: rank by mentions desc, then id asc
    words: dict[str, np.ndarray]  # name word -> entity positions (most mentioned first)
    attr_row: np.ndarray  # (T,) corpus row of each attribute's memory
    mention_row: np.ndarray  # (M,) corpus row of each mention's memory
    dep_weight: np.ndarray  # (D,) confidence × strength
    dep_conf: np.ndarray  # (D,) confidence (unrecorded: 0.7)
    aspects: tuple[np.ndarray, np.ndarray]  # per entity, weight desc
    attrs: tuple[np.ndarray, np.ndarray]  # per aspect, importance desc
    constraints: tuple[np.ndarray, np.ndarray]  # per entity, importance desc
    mentions: tuple[np.ndarray, np.ndarray]  # per entity, confidence desc, importance desc
    deps: tuple[np.ndarray, np.ndarray]  # per source entity, weight desc
    memory_attrs: tuple[np.ndarray, np.ndarray]  # per corpus row
    _focal: dict[str | None, np.ndarray] = field(default_factory=dict, repr=False)


def _words(g: EntityGraph, by_mentions: np.ndarray) -> dict[str, np.ndarray]:
    found: dict[str, list[int]] = {}
    for e in np.argsort(by_mentions).tolist():
        for w in set(_WORD_SPLIT.split(str(g.entity_name[e]).lower())) - {""}:
            found.setdefault(w, []).append(e)
    return {w: np.asarray(v, dtype=np.int64) for w, v in found.items()}


def _entity_keys(g: EntityGraph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lower-cased names (name and canonical name), the project mask, the mentions rank."""
    names = np.asarray(
        [f"{n}\n{c}".lower() for n, c in zip(g.entity_name, g.entity_canonical, strict=True)],
        dtype=str,
    )
    types = g.entity_type
    recorded = any(t is not None for t in types)
    is_project = np.asarray([t == "project" or not recorded for t in types], dtype=bool)
    order = np.lexsort((g.entity_id.astype(str), -g.entity_mentions)) if len(names) else _NONE
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return names, is_project, rank


def _build_index(g: EntityGraph, ids: np.ndarray, importance: np.ndarray) -> GraphIndex:
    row_of = {m: i for i, m in enumerate(ids.tolist())}
    imp = np.where(np.isnan(importance), 0.5, importance)
    attr_row = np.fromiter((row_of.get(m, -1) for m in g.attr_memory), np.int64, len(g.attr_memory))
    men_row = np.fromiter(
        (row_of.get(m, -1) for m in g.mention_memory), np.int64, len(g.mention_memory)
    )
    conf = np.where(np.isnan(g.dep_confidence), UNRECORDED_CONFIDENCE, g.dep_confidence)
    weight = conf * g.dep_strength
    n_e, n_a = len(g.entity_id), len(g.aspect_id)
    reach = np.where(attr_row >= 0, g.attr_aspect, -1)
    cons = np.where((attr_row >= 0) & g.attr_constraint, g.attr_entity, -1)
    mem_ids = g.attr_memory.astype(str)
    men_imp = imp[np.maximum(men_row, 0)] if len(men_row) else np.zeros(0)
    men_conf = np.where(np.isnan(g.mention_confidence), -np.inf, g.mention_confidence)
    men_group = np.where(men_row >= 0, g.mention_entity, -1)
    names, is_project, rank = _entity_keys(g)
    return GraphIndex(
        graph=g,
        importance=imp,
        names=names,
        is_project=is_project,
        by_mentions=rank,
        words=_words(g, rank),
        attr_row=attr_row,
        mention_row=men_row,
        dep_weight=weight,
        dep_conf=conf,
        aspects=_grouped(g.aspect_entity, n_e, g.aspect_id.astype(str), -g.aspect_weight),
        attrs=_grouped(reach, n_a, mem_ids, -g.attr_importance),
        constraints=_grouped(cons, n_e, mem_ids, -g.attr_importance),
        mentions=_grouped(men_group, n_e, g.mention_memory.astype(str), -men_imp, -men_conf),
        deps=_grouped(g.dep_source, n_e, g.dep_id.astype(str), -weight),
        memory_attrs=_grouped(attr_row, len(ids), -g.attr_importance),
    )


def graph_index(graph: EntityGraph, ids: np.ndarray, importance: np.ndarray) -> GraphIndex:
    """The graph's index against a corpus (`ids`, `importance` aligned), built once per corpus
    and kept on the graph."""
    key = "index"
    hit = graph._cache.get(key)
    if hit is not None and hit[0] is ids:
        return hit[1]
    index = _build_index(graph, np.asarray(ids, dtype=object), np.asarray(importance, np.float64))
    graph._cache[key] = (ids, index)  # the corpus' array itself: its id cannot be reused
    return index


# --- focal entities ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Focal:
    """The focal entities of a session (entity positions, in order) and what named them:
    'project', 'query', or 'pinned' (only pinned entities) or 'none'."""

    entities: np.ndarray
    source: str


def _by_project(index: GraphIndex, project: str | None) -> np.ndarray:
    hit = index._focal.get(project)
    if hit is not None:
        return hit
    tokens = project_tokens(project)
    match = np.zeros(len(index.names), dtype=bool)
    for tok in tokens:
        match |= np.char.find(index.names, tok) >= 0
    found = np.flatnonzero(match & index.is_project)
    found = found[np.argsort(index.by_mentions[found])][:PROJECT_FOCAL_LIMIT]
    index._focal[project] = found
    return found


def _by_terms(index: GraphIndex, terms: Sequence[str]) -> np.ndarray:
    hits = [index.words[t] for t in query_tokens(terms) if t in index.words]
    if not hits:
        return _NONE
    found = np.unique(np.concatenate(hits))
    return found[np.argsort(index.by_mentions[found])][:QUERY_FOCAL_LIMIT]


def focal_entities(index: GraphIndex, project: str | None, terms: Sequence[str] = ()) -> Focal:
    """The session's focal entities: pinned ones, then the project's, else the query's."""
    named, source = _by_project(index, project), "project"
    if not len(named):
        named, source = _by_terms(index, terms), "query"
    pinned = index.graph.pinned_order
    both = np.concatenate([pinned, named])
    entities = both[_first_unique(both)] if len(both) else _NONE
    if not len(named):
        source = "pinned" if len(pinned) else "none"
    return Focal(entities.astype(np.int64), source)


# --- the walk ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Reach:
    """Memories reached from a list of entities, in the walk's order."""

    rows: np.ndarray  # corpus rows
    via: np.ndarray  # index into the entity list walked
    entity: np.ndarray  # entity position
    aspect: np.ndarray  # aspect position, -1 through a mention
    is_constraint: np.ndarray

    def arrays(self) -> tuple[np.ndarray, ...]:
        return (self.rows, self.via, self.entity, self.aspect, self.is_constraint)

    def take(self, keep: np.ndarray) -> _Reach:
        return _Reach(*(a[keep] for a in self.arrays()))


def _reach_attributes(
    index: GraphIndex, ents: np.ndarray, active: np.ndarray, live: np.ndarray, cfg: PredictorConfig
) -> _Reach:
    """Step 2's attribute walk over `ents`, before the distinct-memory budget."""
    g = index.graph
    order, start = index.aspects
    lo = start[ents]
    apos, aseg = _ranges(lo, np.minimum(start[ents + 1], lo + cfg.max_aspects_per_entity))
    aspects = order[apos]
    order, start = index.attrs
    tpos, tseg = _ranges(start[aspects], start[aspects + 1])
    attrs = order[tpos]
    ok = active[attrs] & live[index.attr_row[attrs]]
    attrs, tseg = attrs[ok], tseg[ok]
    keep = _rank_in_group(tseg) < cfg.max_attributes_per_aspect
    attrs, tseg = attrs[keep], tseg[keep]
    by_imp = np.argsort(-g.attr_importance[attrs], kind="stable")
    attrs, tseg = attrs[by_imp], tseg[by_imp]
    asp = aspects[tseg]
    return _Reach(
        index.attr_row[attrs], aseg[tseg], g.aspect_entity[asp], asp, g.attr_constraint[attrs]
    )


def _reach_mentions(index: GraphIndex, ents: np.ndarray, live: np.ndarray) -> _Reach:
    """Step 2's fallback: the memories mentioning `ents`, best mention first."""
    g = index.graph
    order, start = index.mentions
    mpos, mseg = _ranges(start[ents], start[ents + 1])
    ms = order[mpos]
    ok = live[index.mention_row[ms]]
    ms, mseg = ms[ok], mseg[ok]
    conf = np.where(np.isnan(g.mention_confidence[ms]), -np.inf, g.mention_confidence[ms])
    rows = index.mention_row[ms]
    best = np.lexsort((-index.importance[rows], -conf))
    ms, mseg, rows = ms[best], mseg[best], rows[best]
    none = np.full(len(ms), -1, dtype=np.int64)
    return _Reach(rows, mseg, g.mention_entity[ms], none, np.zeros(len(ms), dtype=bool))


def _concat(parts: Sequence[_Reach]) -> _Reach:
    return _Reach(*(np.concatenate(x) for x in zip(*(p.arrays() for p in parts), strict=True)))


def _add(have: np.ndarray, new: _Reach, room: int) -> _Reach:
    """The first `room` distinct memories of `new` not in `have`."""
    fresh = new.take(~np.isin(new.rows, have))
    return fresh.take(_first_unique(fresh.rows)[: max(room, 0)])


def _collect(
    index: GraphIndex,
    ents: np.ndarray,
    budget: int,
    active: np.ndarray,
    live: np.ndarray,
    cfg: PredictorConfig,
) -> _Reach:
    """Steps 2 for a list of entities: attributes, then mentions while room remains."""
    got = _add(_NONE, _reach_attributes(index, ents, active, live, cfg), budget)
    room = budget - len(got.rows)
    if room > 0:
        mentions = _reach_mentions(index, ents, live)
        head = mentions.take(np.arange(min(room, len(mentions.rows))))
        got = _concat([got, _add(got.rows, head, room)])
    return got


def _hops(index: GraphIndex, focal: np.ndarray, cfg: PredictorConfig) -> np.ndarray:
    """Step 3's dependencies: per focal entity its strongest qualifying edges to entities that
    are not focal, strongest first overall, one per target."""
    order, start = index.deps
    dpos, dseg = _ranges(start[focal], start[focal + 1])
    ds = order[dpos]
    ok = (index.dep_weight[ds] >= cfg.min_dependency_strength) & (
        index.dep_conf[ds] >= cfg.min_confidence
    )
    ok &= ~np.isin(index.graph.dep_target[ds], focal)
    ds, dseg = ds[ok], dseg[ok]
    ds = ds[_rank_in_group(dseg) < cfg.max_branching]
    ds = ds[np.argsort(-index.dep_weight[ds], kind="stable")]
    return ds[_first_unique(index.graph.dep_target[ds])] if len(ds) else ds


@dataclass(frozen=True, slots=True)
class Traversal:
    """What the graph gave a session: the memories reached (corpus rows, in the walk's order)
    with their traversal score, constraint flag and path, and the focal entities' active
    constraints (corpus rows, most important first)."""

    rows: np.ndarray
    score: np.ndarray  # clamp01(max active attribute importance | memory importance | 0.5)
    is_constraint: np.ndarray  # reached through a constraint attribute
    focal: np.ndarray  # the focal entity each walk started from
    entity: np.ndarray  # the entity whose aspect (or mention) reached it
    aspect: np.ndarray  # -1: reached through a mention
    dependency: np.ndarray  # -1: no hop
    constraint_rows: np.ndarray
    constraint_score: np.ndarray  # the constraints' traversal scores
    focal_entities: Focal
    graph: EntityGraph = field(repr=False)

    @property
    def empty(self) -> bool:
        """Nothing reached and no constraint: the session start runs as without a graph."""
        return not len(self.rows) and not len(self.constraint_rows)

    def path(self, i: int) -> dict[str, list[str]]:
        """The i-th memory's path as Signet records it (entity, aspect and dependency ids)."""
        g = self.graph
        ents = [g.entity_id[self.focal[i]]]
        if self.entity[i] != self.focal[i]:
            ents.append(g.entity_id[self.entity[i]])
        return {
            "entity_ids": [str(e) for e in ents],
            "aspect_ids": [str(g.aspect_id[self.aspect[i]])] if self.aspect[i] >= 0 else [],
            "dependency_ids": [str(g.dep_id[self.dependency[i]])]
            if self.dependency[i] >= 0
            else [],
        }

    def path_json(self, i: int) -> str:
        """`path` as the compact JSON text Signet writes to `session_memories.path_json`."""
        return json.dumps(self.path(i), separators=(",", ":"))


def _scores(index: GraphIndex, rows: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Step 4's traversal score of the memories at corpus `rows`."""
    order, start = index.memory_attrs
    pos, seg = _ranges(start[rows], start[rows + 1])
    attrs = order[pos]
    ok = active[attrs]
    best = np.full(len(rows), -np.inf)
    np.maximum.at(best, seg[ok], index.graph.attr_importance[attrs[ok]])
    return np.clip(np.where(np.isfinite(best), best, index.importance[rows]), 0.0, 1.0)


def _constraints(
    index: GraphIndex, focal: np.ndarray, active: np.ndarray, live: np.ndarray
) -> np.ndarray:
    order, start = index.constraints
    cpos, _ = _ranges(start[focal], start[focal + 1])
    cs = order[cpos]
    cs = cs[active[cs] & live[index.attr_row[cs]]]
    cs = cs[np.argsort(-index.graph.attr_importance[cs], kind="stable")]
    rows = index.attr_row[cs]
    return rows[_first_unique(rows)] if len(rows) else _NONE


def traverse(
    index: GraphIndex,
    focal: Focal,
    now_epoch: float,
    live: np.ndarray,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> Traversal:
    """Walk the graph from the focal entities (steps 2-4) at `now_epoch`; `live` marks the
    corpus rows that may be reached (not deleted, already created)."""
    g, ents = index.graph, focal.entities
    active = g.attr_active_at(now_epoch)
    live = np.asarray(live, dtype=bool)
    budget = cfg.max_traversal_paths
    direct = _collect(index, ents, budget, active, live, cfg)
    focal_of, dep = ents[direct.via], np.full(len(direct.rows), -1, dtype=np.int64)
    reach = [direct]
    room = budget - len(direct.rows)
    if room > 0 and len(ents):
        ds = _hops(index, ents, cfg)
        hop = _add(direct.rows, _collect(index, g.dep_target[ds], room, active, live, cfg), room)
        reach.append(hop)
        focal_of = np.concatenate([focal_of, g.dep_source[ds[hop.via]]])
        dep = np.concatenate([dep, ds[hop.via]])
    got = _concat(reach)
    cons = _constraints(index, ents, active, live)
    return Traversal(
        rows=got.rows,
        score=_scores(index, got.rows, active),
        is_constraint=got.is_constraint,
        focal=focal_of,
        entity=got.entity,
        aspect=got.aspect,
        dependency=dep,
        constraint_rows=cons,
        constraint_score=_scores(index, cons, active),
        focal_entities=focal,
        graph=g,
    )


def session_traversal(
    graph: EntityGraph | None,
    ids: np.ndarray,
    importance: np.ndarray,
    project: str | None,
    terms: Sequence[str],
    now_epoch: float,
    live: np.ndarray,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> Traversal | None:
    """A session start's traversal over a corpus (`ids`, `importance`, `live` aligned); None
    without a graph or when it reaches nothing (the session start then runs as without one)."""
    if graph is None or not graph.has_graph:
        return None
    index = graph_index(graph, ids, importance)
    walked = traverse(index, focal_entities(index, project, terms), now_epoch, live, cfg)
    return None if walked.empty else walked


@dataclass(frozen=True, slots=True)
class TraversalFlags:
    """What the graph says of each candidate of a session start (aligned with its candidates):
    `is_traversal` joined the pool through the graph alone (recorded with source
    'ka_traversal'), `carried` owes its place to the graph (joined, or its score raised),
    `is_constraint` must be injected (a constraint of the session's scope or of a focal
    entity), `walk_index` its place in the traversal (-1: the graph did not reach it)."""

    is_traversal: np.ndarray
    carried: np.ndarray
    is_constraint: np.ndarray
    walk_index: np.ndarray
    walked: Traversal = field(repr=False)

    @property
    def path_json(self) -> np.ndarray:
        """(n,) object: the traversal path of each candidate the graph reached (else None), as
        `session_memories.path_json` records it; rendered when asked for."""
        paths = np.full(len(self.walk_index), None, dtype=object)
        for k in np.flatnonzero(self.walk_index >= 0).tolist():
            paths[k] = self.walked.path_json(int(self.walk_index[k]))
        return paths


def candidate_flags(
    walked: Traversal,
    cand: np.ndarray,
    joined: np.ndarray,
    carried: np.ndarray,
    is_constraint: np.ndarray,
) -> TraversalFlags:
    """The flags of the candidates at corpus rows `cand`; `joined` and `carried` are
    corpus-aligned, `is_constraint` aligned with `cand`."""
    cand = np.asarray(cand, dtype=np.int64)
    by_row = np.argsort(walked.rows)
    at = np.minimum(np.searchsorted(walked.rows[by_row], cand), max(len(by_row) - 1, 0))
    found = by_row[at] if len(by_row) else np.zeros(len(cand), dtype=np.int64)
    hit = (walked.rows[found] == cand) if len(by_row) else np.zeros(len(cand), dtype=bool)
    return TraversalFlags(
        is_traversal=np.asarray(joined, dtype=bool)[cand],
        carried=np.asarray(carried, dtype=bool)[cand],
        is_constraint=np.asarray(is_constraint, dtype=bool),
        walk_index=np.where(hit, found, -1),
        walked=walked,
    )


# --- the share cap -------------------------------------------------------------------------------


def pool_quota(cfg: PredictorConfig = DEFAULT_CONFIG) -> int:
    """How many memories the graph alone may bring into the pool."""
    return math.floor(cfg.traversal_max_share * cfg.candidate_pool_size)


def injection_overflow(
    order: np.ndarray,
    carried: np.ndarray,
    lengths: np.ndarray,
    *,
    budget_chars: int | None,
    top_k: int | None,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> np.ndarray:
    """Candidates left out of the injection because the graph's share is used up: walking
    `order`, the `carried` rows (the graph raised their score; constraints are never carried)
    take at most `traversalMaxShare` of the budget's characters, or of `top_k` rows without a
    budget; the ones past it overflow. Indexed like `carried`."""
    carried = np.asarray(carried, dtype=bool)
    over = np.zeros(len(carried), dtype=bool)
    walk = np.asarray(order, dtype=np.int64)
    walk = walk[carried[walk]]
    if budget_chars is not None:
        used = np.cumsum(np.asarray(lengths, dtype=np.int64)[walk])
        over[walk[used > cfg.traversal_max_share * budget_chars]] = True
    elif top_k is not None:
        over[walk[math.floor(cfg.traversal_max_share * top_k) :]] = True
    return over
