"""Graph cascade retrieval as a ranker: embedding seeds, then BFS over tags, clusters and
links.

The design's algorithm with its parameters (docs/specification.md §11.3):

1. seeds: the top 10 candidates by cosine(context, embedding) among those with similarity
   >= 0.4, each scored by its similarity;
2. BFS to depth 2 over a graph of memories, tag nodes and cluster nodes:
   memory–tag edges (HasTag, 0.8), memory–cluster edges (InCluster, 0.6), memory -> memory links
   (RelatesTo, the link's own weight); a memory reached at depth d scores
   `edge_weight·0.7^d`, d the depth it is reached at. Tag and cluster edges are walked
   both ways: the design follows them from a memory to the other memories of its tag or cluster,
   which a Memory -> Tag edge alone never reaches;
3. "dedupe, sort": a memory keeps its best entry.

The design skips a neighbour already popped from its queue, which depends on the queue's order.
Here BFS runs level by level and a node gets entries only at its BFS depth (its distance from the
nearest seed), from the edges out of the level before: the same for any candidate order.

The design returns max_results = 10; the ranker orders every candidate: the cascade's
results first by (cascade score desc, similarity desc, id asc), then the others by (similarity
desc, id asc) — the design's similarity search, continued. A candidate's score is
(n − position)/n.

Graph data a session does not carry:
- clusters (the design runs HDBSCAN over all embeddings, periodically): computed over the session's
  embedded candidates as connected components of cosine >= `cluster_threshold` (0.8, our
  choice), components of at least 2 memories — deterministic and independent of candidate order;
- tags: `tags` at construction, memory id -> tag names, e.g.
  `store_fields.read_tags` (`memories.tags`) merged with `store_fields.project_tags`;
- links: `links` at construction, memory id -> {memory id: weight in [0, 1]}; a
  Signet 0.58 store has no memory-to-memory relations, so there are none by default.
The graph spans the session's candidates only (a non-candidate cannot be ranked, so paths through
one are lost). Supersedes / Contradicts / DerivedFrom edges and the sidecar's
verification have no data here and are left out.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from signet_bench.daemon.candidates import SessionInputs
from signet_bench.daemon.ranking.baseline import as_ids, top_k_indices
from signet_bench.daemon.ranking.peers.query import vector_searchable
from signet_bench.daemon.ranking.ranker import CosineRanker

__all__ = ["CascadeGraph", "CascadeRanker", "cascade_scores", "embedding_clusters"]

Node = tuple[str, int | str]  # ("m", position) | ("t", tag name) | ("c", cluster label)


def embedding_clusters(
    embeddings: np.ndarray, has_embedding: np.ndarray, threshold: float
) -> np.ndarray:
    """(n,) cluster label per candidate, -1 for none: connected components of the graph joining
    embedded candidates whose cosine is >= `threshold`, components of 2+ candidates only."""
    emb = np.asarray(embeddings, dtype=np.float64)
    n = len(emb)
    labels = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return labels
    norms = np.linalg.norm(emb, axis=1)
    pos = np.flatnonzero(np.asarray(has_embedding, dtype=bool) & (norms > 0))
    if len(pos) < 2:
        return labels
    unit = emb[pos] / norms[pos, None]
    adjacent = (unit @ unit.T) >= threshold
    comp = np.arange(len(pos))
    while True:  # each component takes its smallest member index (min-label propagation)
        nxt = np.minimum(comp, np.where(adjacent, comp[None, :], len(pos)).min(axis=1))
        nxt = nxt[nxt]  # a label's own label is no larger and in the same component
        if np.array_equal(nxt, comp):
            break
        comp = nxt
    sizes = np.bincount(comp, minlength=len(pos))
    labels[pos] = np.where(sizes[comp] >= 2, comp, -1)
    return labels


@dataclass(frozen=True, eq=False)
class CascadeGraph:
    """The session's graph: per candidate its tags, cluster label (-1: none) and out-links
    (candidate position -> weight), with the design's tag and cluster edge weights."""

    tags: tuple[frozenset[str], ...]
    clusters: np.ndarray
    links: tuple[Mapping[int, float], ...]
    tag_weight: float = 0.8
    cluster_weight: float = 0.6

    def neighbours(self, node: Node) -> Iterator[tuple[Node, float]]:
        """(neighbour, edge weight) of a node; tag and cluster nodes lead to their members."""
        kind, key = node
        if kind == "m":
            i = int(key)
            yield from ((("t", t), self.tag_weight) for t in self.tags[i])
            if self.clusters[i] >= 0:
                yield ("c", int(self.clusters[i])), self.cluster_weight
            yield from ((("m", j), w) for j, w in self.links[i].items())
        elif kind == "t":
            members = (i for i, t in enumerate(self.tags) if key in t)
            yield from ((("m", i), self.tag_weight) for i in members)
        else:
            members = np.flatnonzero(self.clusters == key)
            yield from ((("m", int(i)), self.cluster_weight) for i in members)


def cascade_scores(
    graph: CascadeGraph, seeds: Mapping[int, float], max_depth: int, decay: float
) -> np.ndarray:
    """(n,) best cascade entry per candidate, -inf where not reached: the seeds' own scores, and
    `edge_weight·decay^d` for a memory first reached at depth d <= max_depth (level-wise BFS)."""
    best = np.full(len(graph.tags), -np.inf)
    level: set[Node] = {("m", i) for i in seeds}
    for i, s in seeds.items():
        best[i] = s
    seen = set(level)
    for depth in range(max_depth):
        reached: dict[Node, float] = {}
        for node in level:
            for nb, w in graph.neighbours(node):
                if nb not in seen:
                    reached[nb] = max(reached.get(nb, -np.inf), w)
        for (kind, key), w in reached.items():
            if kind == "m":
                best[int(key)] = w * decay ** (depth + 1)
        seen.update(reached)
        level = set(reached)
    return best


def _check_graph_data(
    tags: Mapping[str, Collection[str]], links: Mapping[str, Mapping[str, float]]
) -> None:
    """Tags must be collections of names (not one string); link weights must be in [0, 1]."""
    for mid, names in tags.items():
        if isinstance(names, str) or not isinstance(names, Collection):
            raise TypeError(f"cascade tags of {mid}: expected a collection of names, got {names!r}")
    for src, targets in links.items():
        for dst, w in targets.items():
            if not (isinstance(w, (int, float)) and 0.0 <= w <= 1.0):
                raise ValueError(f"cascade link {src} -> {dst}: weight {w!r} is not in [0, 1]")


@dataclass(frozen=True, eq=False)
class CascadeRanker:
    """The cascade design's retrieval over a session's candidates (module docstring)."""

    name: str = "cascade"
    tags: Mapping[str, Collection[str]] = field(default_factory=dict)
    links: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    max_initial_hits: int = 10
    similarity_threshold: float = 0.4
    max_depth: int = 2
    edge_decay: float = 0.7
    tag_weight: float = 0.8
    cluster_weight: float = 0.6
    cluster_threshold: float = 0.8

    def __post_init__(self) -> None:
        _check_graph_data(self.tags, self.links)

    def graph(self, inputs: SessionInputs) -> CascadeGraph:
        """The candidates' tags, embedding clusters and links among themselves."""
        ids = [str(m) for m in inputs.memory_ids]
        pos = {m: i for i, m in enumerate(ids)}
        links = tuple(
            {pos[d]: float(w) for d, w in self.links.get(m, {}).items() if d in pos and d != m}
            for m in ids
        )
        return CascadeGraph(
            tags=tuple(frozenset(self.tags.get(m, ())) for m in ids),
            clusters=embedding_clusters(
                inputs.embeddings, inputs.has_embedding, self.cluster_threshold
            ),
            links=links,
            tag_weight=self.tag_weight,
            cluster_weight=self.cluster_weight,
        )

    def score(self, inputs: SessionInputs) -> np.ndarray:
        n = len(inputs)
        sim = CosineRanker().score(inputs)
        ids = as_ids(inputs.memory_ids)
        hits = np.flatnonzero(vector_searchable(inputs) & (sim >= self.similarity_threshold))
        top = hits[top_k_indices(sim[hits], ids[hits], self.max_initial_hits)]
        seeds = {int(i): float(sim[i]) for i in top}
        best = cascade_scores(self.graph(inputs), seeds, self.max_depth, self.edge_decay)
        reached = np.isfinite(best)
        order = np.lexsort((ids, -sim, -np.where(reached, best, 0.0), ~reached))
        out = np.empty(n, dtype=np.float64)
        out[order] = (n - np.arange(n, dtype=np.float64)) / max(n, 1)
        return out
