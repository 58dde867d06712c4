"""The peer rankers the learned scorer is compared with, each a `Ranker` under its bench name.

| name | ranker | what |
|---|---|---|
| `bm25` | `BM25Ranker` | FTS5 BM25 of the query over the candidates (`bm25.py`) |
| `cosine` | `CosineRanker` | cosine(context, memory) (`ranking.ranker`) |
| `signet_hybrid` | `SignetHybridRanker` | Signet's 0.7 vector + 0.3 BM25 recall (§11.1) |
| `effective` | `EffectiveScoreRanker` | Signet's effectiveScore baseline (§3.1) |
| `cogmem_v9` | `CogMemV9Ranker` | Cognitive Memory v9 (§11.4) |
| `cascade` | `CascadeRanker` | graph cascade retrieval (§11.3) |

Sections are those of docs/specification.md §3.1, §11.1, §11.3, §11.4.

Rankers with a keyword leg take the query text at construction (`query.py`); `for_query`
derives the ranker for one query. Fields a session lacks (tags, last access) come from
`store_fields.py` and are given at construction as well.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from signet_bench.daemon.ranking.peers.bm25 import BM25Ranker
from signet_bench.daemon.ranking.peers.cascade import CascadeRanker
from signet_bench.daemon.ranking.peers.cogmem_v9 import CogMemV9Ranker
from signet_bench.daemon.ranking.peers.signet_hybrid import SignetHybridRanker
from signet_bench.daemon.ranking.ranker import CosineRanker, EffectiveScoreRanker, Ranker

__all__ = ["peer_rankers"]


def peer_rankers(
    query: str = "",
    *,
    tags: Mapping[str, Collection[str]] | None = None,
    links: Mapping[str, Mapping[str, float]] | None = None,
    last_accessed: Mapping[str, float] | None = None,
) -> tuple[Ranker, ...]:
    """The six peers in the table's order, set to `query` and the given store fields."""
    return (
        BM25Ranker(query=query),
        CosineRanker(),
        SignetHybridRanker(query=query, last_accessed=last_accessed),
        EffectiveScoreRanker(name="effective"),
        CogMemV9Ranker(query=query, last_accessed=last_accessed),
        CascadeRanker(tags=tags or {}, links=links or {}),
    )
