"""The ranker contract as a test mixin, and the sessions it is checked on.

Every ranker passes the same behavioural tests by adding one class::

    class TestMyRanker(RankerContract):
        def make_ranker(self) -> Ranker:
            return MyRanker(...)

`RankerContract` is not named Test*, so pytest collects it only through such subclasses. The
sessions come from real parts: a small `Corpus` of seeded random memories (embedded, text-only
with and without tokens, a zero vector, a NULL-importance constraint, exact duplicates under
other ids, memories of three source sessions and of none) turned into `SessionInputs` by
`candidates.session_inputs`, and one session read back from a Signet store written with
`store.write`. A contract class may give its sessions a query (`session_query`), so rankers that
read the lexical and entity signals are checked on sessions where they are not 0.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from signet_bench.daemon.candidates import SessionInputs, session_inputs
from signet_bench.daemon.ranking.ranker import Ranker, ranking_order
from signet_bench.daemon.session_query import NO_QUERY, SessionQuery
from signet_bench.store.corpus import Corpus, read_corpus
from signet_bench.store.schema import connect_writer, create_store
from signet_bench.store.timestamps import format_iso
from signet_bench.store.write import insert_embeddings, insert_memories
from signet_scorer.context import SessionContextVector
from signet_scorer.features import SessionInfo

DIM = 16  # native embedding dimension of every contract session
START = datetime(2026, 3, 10, 14, 30, tzinfo=UTC)
PROJECT = "alpha"
WORDS = (
    "sqlite",
    "wal",
    "index",
    "vector",
    "cosine",
    "schema",
    "daemon",
    "hook",
    "budget",
    "token",
    "rust",
    "onnx",
)

# (id, kind, project, pinned, constraint, importance); kind: "emb" = random embedding,
# "zero" = a zero vector flagged as embedded, "text" = no embedding, "empty" = no embedding and
# no tokens. Memories named dup-* are exact copies of the one they follow, under other ids.
_MEMORIES = (
    ("m-07", "emb", PROJECT, False, False, 0.9),
    ("m-03", "emb", None, False, False, 0.4),
    ("m-11", "emb", PROJECT, True, False, 0.2),
    ("m-01", "emb", "beta", False, False, 0.7),
    ("m-05", "emb", PROJECT, False, True, 0.6),
    ("m-09", "zero", PROJECT, False, False, 0.5),
    ("m-02", "text", None, False, False, 0.8),
    ("m-08", "text", PROJECT, False, False, 0.3),
    ("m-04", "empty", PROJECT, False, False, 0.5),
    ("m-06", "emb", None, False, True, float("nan")),
    ("dup-c", "emb", PROJECT, False, False, 0.65),
    ("dup-a", "copy", PROJECT, False, False, 0.65),
    ("dup-b", "copy", PROJECT, False, False, 0.65),
    ("dup-z", "text", PROJECT, False, False, 0.45),
    ("dup-y", "copy", PROJECT, False, False, 0.45),
)
_EMBEDDED = ("m-07", "m-03", "m-11", "m-01", "m-05", "m-06")
_TEXT = ("m-02", "m-08", "m-04")
# Session name -> candidate ids in input order. Duplicates come in descending id order, so
# keeping the input order on ties (a stable sort) breaks the memory-id rule.
SESSIONS: dict[str, tuple[str, ...]] = {
    "mixed": ("m-07", "m-02", "m-03", "m-09", "m-11", "m-08", "m-04", "m-01", "m-05", "m-06"),
    "text_only": ("m-08", "m-02", "m-04", "dup-z", "dup-y"),
    "embedded_only": _EMBEDDED,
    "zero_context": ("m-09", *_EMBEDDED, *_TEXT),
    "no_context": ("m-03", "m-02", "m-07", "m-04"),
    "duplicates": ("dup-z", "dup-y", "m-07", "dup-c", "dup-b", "dup-a", "m-02"),
    "single": ("m-03",),
    "single_text": ("m-02",),
    "empty": (),
}
MULTI = tuple(k for k, ids in SESSIONS.items() if len(ids) > 1)
# A query whose terms some contract contents hold (they are drawn from WORDS).
WORD_QUERY = SessionQuery(terms=("cosine", "index", "onnx"), entities=("Rust",))


def _unit(rng: np.random.Generator, dim: int = DIM) -> np.ndarray:
    v = rng.normal(size=dim)
    return (v / np.linalg.norm(v)).astype(np.float32)


def build_corpus(seed: int = 0) -> Corpus:
    """The contract corpus: `_MEMORIES` with seeded embeddings, ages, contents and usage."""
    rng = np.random.default_rng(seed)
    n = len(_MEMORIES)
    emb = np.zeros((n, DIM), dtype=np.float32)
    created = np.zeros(n)
    contents: list[str] = []
    access = np.zeros(n)
    for i, (_mid, kind, *_rest) in enumerate(_MEMORIES):
        if kind == "copy":
            emb[i], created[i], access[i] = emb[i - 1], created[i - 1], access[i - 1]
            contents.append(contents[-1])
            continue
        if kind == "emb":
            emb[i] = _unit(rng)
        created[i] = START.timestamp() - rng.uniform(0.5, 60.0) * 86_400.0
        access[i] = float(rng.integers(0, 12))
        words = rng.choice(WORDS, size=int(rng.integers(3, 8)))
        contents.append("" if kind == "empty" else " ".join(words))
    has = np.array([k in ("emb", "zero") for k in _kinds()], dtype=bool)
    ids = np.array([m[0] for m in _MEMORIES], dtype=object)
    sources: list[str | None] = []
    for i, (_mid, kind, *_rest) in enumerate(_MEMORIES):
        sources.append(sources[-1] if kind == "copy" else (None, "s-a", "s-b", "s-c")[i % 4])
    return Corpus(
        ids=ids,
        created_at=created,
        created_text=np.array(
            [format_iso(datetime.fromtimestamp(t, UTC)) for t in created], dtype=object
        ),
        importance=np.array([m[5] for m in _MEMORIES], dtype=np.float64),
        pinned=np.array([m[3] for m in _MEMORIES], dtype=bool),
        is_deleted=np.zeros(n, dtype=bool),
        deleted_at=np.full(n, np.nan),
        is_constraint=np.array([m[4] for m in _MEMORIES], dtype=bool),
        access_count=access,
        project=np.array([m[2] for m in _MEMORIES], dtype=object),
        contents=contents,
        embeddings=emb,
        has_embedding=has,
        superseded_at=np.full(n, np.nan),
        edited_at=tuple(np.zeros(0) for _ in range(n)),
        row_of={m: i for i, m in enumerate(ids)},
        source_session=np.array(sources, dtype=object),
    )


def _kinds() -> list[str]:
    """Each memory's kind, copies resolved to the kind of the memory they copy."""
    kinds: list[str] = []
    for _mid, kind, *_rest in _MEMORIES:
        kinds.append(kinds[-1] if kind == "copy" else kind)
    return kinds


def make_session(
    corpus: Corpus,
    ids: tuple[str, ...] | list[str],
    *,
    context: np.ndarray | None,
    key: str = "contract",
    project: str | None = PROJECT,
    query: SessionQuery = NO_QUERY,
) -> SessionInputs:
    """The session's inputs for candidates `ids` (in that order) of `corpus`."""
    return session_inputs(
        corpus,
        corpus.rows(list(ids)) if ids else np.zeros(0, dtype=np.int64),
        key,
        SessionInfo(START, "Europe/Berlin", project, START - timedelta(days=2, hours=3)),
        SessionContextVector(context, "given" if context is not None else "none"),
        query=query,
    )


def session(name: str, seed: int = 0, query: SessionQuery = NO_QUERY) -> SessionInputs:
    """A named contract session (`SESSIONS`), built afresh from the seeded corpus."""
    corpus = build_corpus(seed)
    if name == "no_context":
        context = None
    elif name == "zero_context":
        context = np.zeros(DIM, dtype=np.float32)
    else:
        context = _unit(np.random.default_rng([seed, 1]))
    return make_session(corpus, SESSIONS[name], context=context, key=name, query=query)


def store_session(path: Path, seed: int = 0, query: SessionQuery = NO_QUERY) -> SessionInputs:
    """A session over every memory of a Signet store written at `path` and read back (its
    memories record one of three source sessions in `source_id`)."""
    rng = np.random.default_rng(seed)
    create_store(path, now=START)
    rows = [
        {
            "id": f"s-{i:02d}",
            "content": " ".join(rng.choice(WORDS, size=5)) + f" note {i}",
            "created_at": START - timedelta(days=float(rng.uniform(0.5, 40.0))),
            "importance": float(rng.uniform(0.1, 1.0)),
            "project": PROJECT if i % 3 else None,
            "type": "constraint" if i == 4 else "fact",
            "pinned": i == 7,
            "access_count": int(rng.integers(0, 9)),
            "source_id": f"session-{i % 3}",
        }
        for i in range(12)
    ]
    embedded = [r["id"] for r in rows[::2]]
    con = connect_writer(path)
    try:
        insert_memories(con, rows)
        insert_embeddings(con, embedded, np.stack([_unit(rng) for _ in embedded]), "contract")
    finally:
        con.close()
    corpus = read_corpus(path)
    return make_session(corpus, list(corpus.ids), context=_unit(rng), key="store", query=query)


def _snapshot(inputs: SessionInputs) -> dict[str, object]:
    """Copies of every array of a session, to check that scoring leaves them alone."""
    return {
        k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else v)
        for k, v in vars(inputs).items()
    }


def _assert_valid(scores: np.ndarray, n: int) -> None:
    assert isinstance(scores, np.ndarray)
    assert scores.shape == (n,)
    assert scores.dtype == np.float64
    assert np.isfinite(scores).all(), scores


def _reference_order(scores: np.ndarray, ids: np.ndarray) -> list[int]:
    """Score desc, then memory id asc, by a plain sort (independent of `ranking_order`)."""
    return sorted(range(len(scores)), key=lambda i: (-float(scores[i]), str(ids[i])))


class RankerContract:
    """Behaviour every `Ranker` must show (mix into a Test* class that defines `make_ranker`).

    `identical_inputs_tie`: candidates whose inputs are identical (ids aside) get equal scores.
    A ranker that legitimately looks candidates up by id (e.g. in a graph) may set it False."""

    identical_inputs_tie = True
    session_query: SessionQuery = NO_QUERY

    def make_ranker(self) -> Ranker:
        raise NotImplementedError

    def session(self, name: str) -> SessionInputs:
        """The named contract session with this class's query."""
        return session(name, query=self.session_query)

    def test_implements_the_protocol(self) -> None:
        ranker = self.make_ranker()
        assert isinstance(ranker, Ranker)
        assert isinstance(ranker.name, str) and ranker.name

    @pytest.mark.parametrize("name", list(SESSIONS))
    def test_one_finite_float_score_per_candidate(self, name: str) -> None:
        inputs = self.session(name)
        _assert_valid(self.make_ranker().score(inputs), len(SESSIONS[name]))

    def test_empty_session_has_no_scores(self) -> None:
        inputs = self.session("empty")
        _assert_valid(self.make_ranker().score(inputs), 0)
        assert ranking_order(self.make_ranker(), inputs).shape == (0,)

    @pytest.mark.parametrize("name", ["single", "single_text"])
    def test_single_candidate(self, name: str) -> None:
        inputs = self.session(name)
        _assert_valid(self.make_ranker().score(inputs), 1)
        assert ranking_order(self.make_ranker(), inputs).tolist() == [0]

    @pytest.mark.parametrize("name", MULTI)
    def test_deterministic(self, name: str) -> None:
        ranker, inputs = self.make_ranker(), self.session(name)
        first = ranker.score(inputs)
        np.testing.assert_array_equal(ranker.score(inputs), first)
        np.testing.assert_array_equal(self.make_ranker().score(self.session(name)), first)

    @pytest.mark.parametrize("name", MULTI)
    def test_scoring_leaves_inputs_unchanged(self, name: str) -> None:
        inputs = self.session(name)
        before = _snapshot(inputs)
        self.make_ranker().score(inputs)
        for key, value in _snapshot(inputs).items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(value, before[key], err_msg=key)
            else:
                assert value == before[key], key

    @pytest.mark.parametrize("name", MULTI)
    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_invariant_to_candidate_order(self, name: str, seed: int) -> None:
        ranker, inputs = self.make_ranker(), self.session(name)
        perm = np.random.default_rng(seed).permutation(len(inputs))
        scores = ranker.score(inputs)
        permuted = ranker.score(inputs.take(perm))
        scale = float(np.abs(scores).max())
        np.testing.assert_allclose(permuted, scores[perm], rtol=1e-9, atol=1e-9 * scale)
        ids = inputs.memory_ids
        moved = inputs.take(perm).memory_ids
        assert moved[ranking_order(ranker, inputs.take(perm))].tolist() == (
            ids[ranking_order(ranker, inputs)].tolist()
        )

    @pytest.mark.parametrize("name", MULTI)
    def test_order_is_score_desc_then_id_asc(self, name: str) -> None:
        ranker, inputs = self.make_ranker(), self.session(name)
        scores = ranker.score(inputs)
        expected = _reference_order(scores, inputs.memory_ids)
        assert ranking_order(ranker, inputs).tolist() == expected

    def test_ties_between_identical_candidates_break_by_id(self) -> None:
        ranker, inputs = self.make_ranker(), self.session("duplicates")
        scores = ranker.score(inputs)
        ids = inputs.memory_ids.tolist()
        pos = {m: i for i, m in enumerate(ids)}
        if self.identical_inputs_tie:
            for group in (("dup-a", "dup-b", "dup-c"), ("dup-y", "dup-z")):
                assert len({float(scores[pos[m]]) for m in group}) == 1, (group, scores)
        ranked = [ids[i] for i in ranking_order(ranker, inputs)]
        for group in (("dup-a", "dup-b", "dup-c"), ("dup-y", "dup-z")):
            if len({float(scores[pos[m]]) for m in group}) == 1:  # input order: id desc
                at = [ranked.index(m) for m in group]
                assert at == sorted(at), ranked

    def test_session_read_from_a_store(self, tmp_path: Path) -> None:
        ranker, inputs = (
            self.make_ranker(),
            store_session(tmp_path / "memories.db", query=self.session_query),
        )
        scores = ranker.score(inputs)
        _assert_valid(scores, len(inputs))
        perm = np.random.default_rng(3).permutation(len(inputs))
        scale = float(np.abs(scores).max())
        np.testing.assert_allclose(
            ranker.score(inputs.take(perm)), scores[perm], rtol=1e-9, atol=1e-9 * scale
        )
