"""Sample assembly (signet_bench.learn.samples) on a store the simulated daemon wrote: one sample per
trainable scored session, the shapes the scorer expects, the text path for memories without an
embedding, and a store that is only read."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.session_query import start_query
from signet_bench.learn.model.params import signet_init_params
from signet_bench.learn.model.scorer import forward
from signet_bench.learn.samples import AFTER_START, Selection, load_samples
from signet_bench.learn.train import to_batch
from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.store.corpus import read_corpus
from signet_bench.store.read import read_memories, read_session_memories
from signet_bench.world.synth.build import build_persona_store
from signet_scorer.contract import N_FEATURES, N_SIGNALS
from signet_scorer.signals import lexical_scores, signal_column
from signet_scorer.tokenize import project_slot, token_buckets
from signet_scorer.track_record import read_track_record

TZ = "Europe/Berlin"  # the light persona's zone
SESSIONS = 40


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A small light-persona store with 40 sessions run by the daemon (random scorer), and the
    digests of the files in its directory before anything read it."""
    path = tmp_path_factory.mktemp("samples") / "memories.db"
    build_persona_store("light", path, seed=0, n_memories=150)
    simulate(path, SESSIONS, SimOptions(scorer="random", seed=0))
    return path, _files(path.parent)


@pytest.fixture(scope="module")
def store(built) -> Path:
    return built[0]


@pytest.fixture(scope="module")
def loaded(store):
    return load_samples(store, tz=TZ)


def assert_only_read(store: Path, before: dict[str, str]) -> None:
    """The store file and every file that was there before are byte-identical; the only new
    files are SQLite's WAL index and an empty WAL, which any reader of a WAL-mode database
    creates when they are missing (Signet's daemon keeps them while it runs)."""
    after = _files(store.parent)
    assert store.name in before
    assert {k: after.get(k) for k in before} == before
    extra = set(after) - set(before)
    assert extra <= {f"{store.name}-wal", f"{store.name}-shm"}
    wal = store.parent / f"{store.name}-wal"
    if wal.name in extra:
        assert wal.stat().st_size == 0


def _scored_sessions(store: Path) -> dict[str, float]:
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return dict(
            con.execute(
                "SELECT session_key, confidence FROM session_scores WHERE score IS NOT NULL"
            ).fetchall()
        )
    finally:
        con.close()


def _files(directory: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.iterdir())
        if p.is_file()
    }


def test_one_sample_per_confident_scored_session(store, loaded):
    samples, skipped = loaded
    scored = _scored_sessions(store)
    assert len(scored) == SESSIONS
    assert len(samples) + skipped == len(scored)
    keys = [s.session_key for s in samples]
    assert len(set(keys)) == len(keys)
    threshold = DEFAULT_CONFIG.min_scorer_confidence
    assert threshold == 0.6
    # the gate was exercised: some sessions fall below it, and none of them became a sample
    low = {k for k, c in scored.items() if c < threshold}
    assert low
    assert not low & set(keys)
    assert all(s.confidence >= threshold for s in samples)
    assert all(s.confidence == pytest.approx(scored[s.session_key]) for s in samples)
    # most confident sessions are trainable (the rest have too few labelled candidates)
    assert len(samples) >= 0.8 * (len(scored) - len(low))
    starts = [s.start for s in samples]
    assert starts == sorted(starts)


def test_sample_shapes_and_ranges(loaded):
    samples, _ = loaded
    assert samples
    for s in samples:
        n = len(s)
        assert n >= 2
        assert s.features.shape == (n, N_FEATURES) == (n, 17)
        assert s.features.dtype == np.float32
        assert np.isfinite(s.features).all()
        assert s.context.shape == (768,)
        assert np.linalg.norm(s.context.astype(np.float64)) == pytest.approx(1.0, abs=1e-5)
        assert s.cand_emb.shape == (n, 768)
        assert s.has_emb.shape == (n,)
        assert len(s.tokens) == n
        assert s.labels.shape == (n,)
        assert np.isfinite(s.labels).all()
        assert s.labels.min() >= -0.5
        assert s.labels.max() <= 1.0
        assert s.labels.max() - s.labels.min() >= DEFAULT_CONFIG.low_label_spread - 1e-9
        assert len(set(s.memory_ids.tolist())) == n
        assert s.project_slot == project_slot(s.project, DEFAULT_CONFIG.project_slots)
        # feature 10 says which path the candidate takes
        np.testing.assert_array_equal(s.features[:, 10], s.has_emb.astype(np.float32))
    # labels use more than the two extremes (injected relevance, soft/true negatives, ...)
    values = np.concatenate([s.labels for s in samples])
    assert len(np.unique(np.round(values, 3))) > 5


def test_features_carry_the_memory_columns(store, loaded):
    samples, _ = loaded
    mem = read_memories(store, include_deleted=True).frame
    importance = dict(zip(mem["id"].to_list(), mem["importance"].to_list(), strict=True))
    for s in samples[:5]:
        want = np.array([importance[m] for m in s.memory_ids], dtype=np.float32)
        np.testing.assert_allclose(s.features[:, 1], want, rtol=1e-6)
        assert (s.features[:, 0] >= 0).all()  # ln(age + 1), age from the session start


def test_candidates_without_embedding_take_the_text_path(store, loaded):
    samples, _ = loaded
    mem = read_memories(store, include_deleted=True).frame
    content = dict(zip(mem["id"].to_list(), mem["content"].to_list(), strict=True))
    has = dict(zip(mem["id"].to_list(), mem["has_embedding"].to_list(), strict=True))
    text = [(s, j) for s in samples for j in np.flatnonzero(~s.has_emb)]
    assert text, "the light store leaves a few memories without an embedding"
    for s, j in text:
        mid = s.memory_ids[j]
        assert not has[mid]
        assert not s.cand_emb[j].any()
        assert s.features[j, 10] == 0.0
        np.testing.assert_array_equal(
            s.tokens[j], token_buckets(content[mid], DEFAULT_CONFIG.hash_buckets)
        )
        assert len(s.tokens[j]) > 0

    # in a batch, their tokens are routed to the hash embeddings and nothing else is
    sample = next(s for s, _ in text)
    text_pos = np.flatnonzero(~sample.has_emb)
    batch = to_batch([sample], with_labels=False)
    np.testing.assert_array_equal(batch.has_emb[0], sample.has_emb)
    assert set(np.unique(batch.tok_owner).tolist()) == set(text_pos.tolist())

    params = signet_init_params(native_dim=768)  # a fresh model's hash rows start unused
    before = forward(params, batch).logits[0]
    moved = dict(params)
    buckets = np.unique(np.concatenate([sample.tokens[j] for j in text_pos]))
    moved["hash_embeddings"] = params["hash_embeddings"].copy()
    moved["hash_embeddings"][buckets] += np.random.default_rng(0).normal(
        0, 1, (len(buckets), params["hash_embeddings"].shape[1])
    )
    after = forward(moved, batch).logits[0]
    assert np.all(after[text_pos] != before[text_pos])
    np.testing.assert_array_equal(after[sample.has_emb], before[sample.has_emb])


def test_load_samples_does_not_change_the_store(built):
    store, pristine = built
    load_samples(store, tz=TZ)
    load_samples(store, tz=TZ, select=Selection(limit=3))
    assert_only_read(store, pristine)


def test_limit_keeps_the_newest_and_seed_is_deterministic(store, loaded):
    samples, _ = loaded
    newest, _ = load_samples(store, tz=TZ, select=Selection(limit=5))
    assert [s.session_key for s in newest] == [s.session_key for s in samples[-5:]]
    again, _ = load_samples(store, tz=TZ)
    assert len(again) == len(samples)
    for a, b in zip(again, samples, strict=True):
        np.testing.assert_array_equal(a.memory_ids, b.memory_ids)
        np.testing.assert_array_equal(a.labels, b.labels)


def test_signals_are_the_session_starts_lexical_evidence(store, loaded):
    """Each sample's signals are the lexical BM25 of the session-start query (the terms of the
    project's transcripts done before the session started, asked of the store itself): over
    the session-start pool for its candidates, as session start scored them, and over every
    recorded candidate for those recorded later (prompt recalls); the light store records no
    source sessions and the session-start query has no names, so the entity and source signals
    are 0 (the pool signals, computed from texts and embeddings, are not); the track record is
    the shared reader's (`signet_scorer.track_record`)."""
    samples, _ = loaded
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        queries = {s.session_key: start_query(con, s.project, s.start) for s in samples}
        tracks = {
            s.session_key: read_track_record(con, s.memory_ids.tolist(), s.start).values
            for s in samples
        }
    finally:
        con.close()
    corpus = read_corpus(store)
    pools = {k: g for (k,), g in read_session_memories(store).group_by("session_key")}
    matched = 0
    for s in samples:
        assert s.signals.shape == (len(s), N_SIGNALS) and s.signals.dtype == np.float32
        pool = pools[s.session_key].sort([pl.col("source") == "fts_only", "rank", "memory_id"])
        pool = pool.filter(pl.col("memory_id").is_in(list(corpus.row_of)))
        at_start = pool.filter(pl.col("source") != "fts_only")["memory_id"].to_list()
        lexical = {}
        for ids in (pool["memory_id"].to_list(), at_start):  # the start pool's values win
            texts = [corpus.contents[corpus.row_of[m]] for m in ids]
            got = lexical_scores(queries[s.session_key].terms, texts)
            lexical.update(zip(ids, got, strict=True))
        np.testing.assert_array_equal(s.signals[:, 0], [lexical[m] for m in s.memory_ids])
        assert not s.signals[:, 1:3].any()
        assert s.signals[:, signal_column("length")].all()  # the pool signals are computed
        track = s.signals[:, signal_column("track_record")]
        np.testing.assert_array_equal(track, tracks[s.session_key])
        matched += int(s.signals[:, 0].any())
    assert matched > len(samples) // 2  # the transcripts name the sessions' topics


def test_the_start_pool_is_every_row_but_those_recorded_after_the_start(loaded, store):
    """`SessionSample.start_pool` marks the rows session start ranked: the prompts' recalls
    (`source` fts_only) are labelled and kept, but outside it."""
    samples, _ = loaded
    sources = {
        (k, m): src
        for k, m, src in read_session_memories(store)
        .select("session_key", "memory_id", "source")
        .iter_rows()
    }
    later = 0
    for s in samples:
        want = [sources[(s.session_key, m)] not in AFTER_START for m in s.memory_ids]
        got = np.ones(len(s), dtype=bool) if s.start_pool is None else s.start_pool
        assert got.tolist() == want
        later += len(s) - int(got.sum())
    assert later > 0  # the light user's prompts recalled memories the start had not
