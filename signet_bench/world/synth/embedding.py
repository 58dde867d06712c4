"""`TopicEmbedder`: a fast, deterministic text embedder whose geometry follows the topics.

The generator (all draws from `numpy.random.default_rng([seed, ...])`, in the fixed order of
`vocab.TOPICS`):

- each domain (databases, frontend, ...) has a random unit vector `D`; each topic's center is
  `C = unit(DOMAIN_WEIGHT * D + own random unit vector)`, so topics of one domain are mildly
  similar (cosine about 0.2) and unrelated topics are nearly orthogonal;
- the time words (`vocab.TIME_WORDS`) get one more center of their own;
- a content word's vector is `unit(C + WORD_NOISE * g)`, `g` a random unit vector (a word in
  several topics uses the normalised sum of their centers);
- generic/template words (`vocab.GENERIC_WORDS`) get random vectors of length `GENERIC_NORM`,
  so they barely move a sentence's direction;
- any other word (a project name, a word from a real prompt or transcript) gets a random
  vector of length `UNSEEN_NORM`, seeded by `blake2b(seed, word)`: the same word always maps to
  the same vector, whatever else is embedded and in whatever order;
- `embed(text) = unit(sum of its tokens' vectors)` (the direction of their mean); tokens are
  lower-case `[a-z0-9]+`; a text without tokens embeds to the zero vector.

So memory embeddings cluster by topic, a prompt about a topic lands near that topic's memories,
and any text can be embedded consistently. That makes the topic label almost readable from the
embedding (`topic_separation_auc` about 1.0, where a real text embedder such as wordllama gives
about 0.77 on the same texts): fast and fine for tests, flattering for cosine in benchmarks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from signet_bench.world.synth.text import tokens
from signet_bench.world.synth.vocab import GENERIC_WORDS, TIME_WORDS, TOPICS

__all__ = [
    "DOMAIN_WEIGHT",
    "GENERIC_NORM",
    "UNSEEN_NORM",
    "WORD_NOISE",
    "TopicEmbedder",
    "topic_separation_auc",
]

DOMAIN_WEIGHT = 0.5
WORD_NOISE = 1.0
GENERIC_NORM = 0.15
UNSEEN_NORM = 0.5
_CHUNK = 1024  # texts per vectorised block (bounds the (tokens, dim) gather)


def _unit_rows(m: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(m, axis=-1, keepdims=True)
    return np.divide(m, n, out=np.zeros_like(m), where=n > 0)


class TopicEmbedder:
    """Embedder "synth-topic": topic-clustered word vectors, mean-pooled and normalised."""

    name = "synth-topic"

    def __init__(self, seed: int = 0, dim: int = 768) -> None:
        if dim < 2:
            raise ValueError(f"dim must be at least 2, got {dim}")
        self.seed = int(seed)
        self.dim = int(dim)
        rng = np.random.default_rng([self.seed, 0x70B1C])
        domains = list(dict.fromkeys(t.domain for t in TOPICS.values()))
        domain_vec = dict(
            zip(domains, _unit_rows(rng.standard_normal((len(domains), dim))), strict=True)
        )
        own = _unit_rows(rng.standard_normal((len(TOPICS) + 1, dim)))
        self.centers: dict[str, np.ndarray] = {}
        for i, t in enumerate(TOPICS.values()):
            self.centers[t.name] = _unit_rows(DOMAIN_WEIGHT * domain_vec[t.domain] + own[i])
        self.centers["_time"] = own[-1]

        word_centers: dict[str, np.ndarray] = {}
        for t in TOPICS.values():
            for w in t.words:
                word_centers[w] = word_centers.get(w, 0.0) + self.centers[t.name]
        for w in TIME_WORDS:
            word_centers[w] = word_centers.get(w, 0.0) + self.centers["_time"]
        content = list(word_centers)
        c = _unit_rows(np.stack([word_centers[w] for w in content]))
        noise = _unit_rows(rng.standard_normal((len(content), dim)))
        content_vecs = _unit_rows(c + WORD_NOISE * noise)
        generic = [w for w in GENERIC_WORDS if w not in word_centers]
        generic_vecs = GENERIC_NORM * _unit_rows(rng.standard_normal((len(generic), dim)))

        self._index: dict[str, int] = {w: i for i, w in enumerate(content + generic)}
        self._matrix = np.vstack([content_vecs, generic_vecs]).astype(np.float32)

    def _unseen(self, word: str) -> np.ndarray:
        digest = hashlib.blake2b(f"{self.seed}\x00{word}".encode(), digest_size=16).digest()
        v = np.random.default_rng(int.from_bytes(digest, "little")).standard_normal(self.dim)
        return UNSEEN_NORM * v / np.linalg.norm(v)

    def _ids(self, words: Sequence[str]) -> list[int]:
        new = [w for w in dict.fromkeys(words) if w not in self._index]
        if new:
            start = len(self._matrix)
            extra = np.stack([self._unseen(w) for w in new]).astype(np.float32)
            self._matrix = np.vstack([self._matrix, extra])
            for k, w in enumerate(new):
                self._index[w] = start + k
        return [self._index[w] for w in words]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 unit rows; zero rows for texts without tokens."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for lo in range(0, len(texts), _CHUNK):
            toks = [tokens(t) for t in texts[lo : lo + _CHUNK]]
            lengths = np.array([len(t) for t in toks], dtype=np.int64)
            ids = np.array(self._ids([w for t in toks for w in t]), dtype=np.int64)
            nonempty = np.flatnonzero(lengths)
            if len(nonempty) == 0:
                continue
            offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])[nonempty]
            sums = np.add.reduceat(self._matrix[ids], offsets, axis=0)
            out[lo + nonempty] = _unit_rows(sums)
        return out


def topic_separation_auc(
    embeddings: np.ndarray,
    project: np.ndarray,
    topic: np.ndarray,
    *,
    pairs: int = 100_000,
    seed: int = 0,
) -> float:
    """How well cosine alone tells a memory of the same project and topic from one of another
    project: the probability that a random same-topic pair is more similar than a random
    other-project pair (ROC AUC; 0.5 = no better than chance, 1.0 = perfectly). Memories
    without a project ("" or None: global ones) or without an embedding (zero rows) are left
    out; `pairs` random pairs are drawn (deterministic given `seed`)."""
    e = np.asarray(embeddings, dtype=np.float64)
    proj = np.asarray(project, dtype=object)
    has_project = np.array([bool(p) for p in proj], dtype=bool)
    keep = np.flatnonzero((np.linalg.norm(e, axis=1) > 0) & has_project)
    if len(keep) < 2:
        raise ValueError("topic_separation_auc: fewer than two memories with a project")
    unit, proj, top = _unit_rows(e[keep]), proj[keep], np.asarray(topic, dtype=object)[keep]
    i, j = np.random.default_rng(seed).integers(len(keep), size=(2, pairs))
    i, j = i[i != j], j[i != j]
    cos = np.concatenate(
        [
            np.einsum("ij,ij->i", unit[i[k : k + _CHUNK]], unit[j[k : k + _CHUNK]])
            for k in range(0, len(i), _CHUNK)
        ]
    )
    same = cos[(proj[i] == proj[j]) & (top[i] == top[j])]
    other = cos[proj[i] != proj[j]]
    if len(same) == 0 or len(other) == 0:
        raise ValueError("topic_separation_auc: needs same-topic pairs and other-project pairs")
    ranks = np.argsort(np.argsort(np.concatenate([same, other]), kind="stable")) + 1.0
    return float(
        (ranks[: len(same)].sum() - len(same) * (len(same) + 1) / 2) / (len(same) * len(other))
    )
