"""The candidates' signals (`signet_scorer.signals`): each function against its definition worked
out by hand or by brute force, the session-start terms from a real SQLite store, and the server
computing them from a request's own parameters."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.learn.export import model_bytes
from signet_bench.learn.model.checkpoint import CheckpointMeta
from signet_bench.learn.model.scorer import SessionArrays, score_session
from signet_bench.store.schema import connect_writer, create_store
from signet_bench.store.write import insert_summary_job
from signet_scorer import ScoreQuery, contract, signals
from signet_scorer.scorer import ParamError, Scorer, parse_score_params
from signet_scorer.signals import (
    Origins,
    adjacent_best,
    candidate_signals,
    entity_match,
    hybrid_scores,
    length_signal,
    lexical_scores,
    query_entities,
    rank_signal,
    recent_transcripts,
    session_best,
    session_start_terms,
    signal_column,
    source_neighbourhood,
    store_start_terms,
)
from signet_scorer.tokenize import token_buckets
from tests.scorer.conftest import generator, request

# --- lexical ------------------------------------------------------------------------------------


def bm25_by_hand(terms: list[str], docs: list[list[str]]) -> np.ndarray:
    """Okapi BM25 (k1 1.2, b 0.75, FTS5's IDF floor) written out term by term."""
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    out = []
    for d in docs:
        total = 0.0
        for t in terms:
            hits = sum(t in other for other in docs)
            if hits == 0:
                continue
            idf = max(math.log((n - hits + 0.5) / (hits + 0.5)), 1e-6)
            tf = d.count(t)
            total += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(d) / avgdl))
        out.append(total)
    top = max(out)
    return np.array(out) / top if top > 0 else np.zeros(n)


def test_lexical_is_bm25_over_the_pool_divided_by_its_maximum():
    texts = [
        "Deploy the cache fix to staging",
        "cache cache cache everywhere in the cache layer",
        "Rollback of the deploy failed",
        "unrelated words only here",
        "the the the the the",
        "the cache",
    ]
    docs = [t.lower().split() for t in texts]
    got = lexical_scores(["cache", "Deploy", "the"], texts)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, bm25_by_hand(["cache", "deploy", "the"], docs), rtol=1e-6)
    assert got.max() == 1.0 and got[3] == 0.0


def test_lexical_without_terms_or_matches_is_zero():
    texts = ["alpha beta", "gamma", None, ""]
    for terms in (None, [], ["delta"], ["   "]):
        np.testing.assert_array_equal(lexical_scores(terms, texts), np.zeros(4, np.float32))
    assert lexical_scores(["alpha"], []).shape == (0,)
    # a missing text is an empty document: it matches nothing but counts in the pool
    np.testing.assert_array_equal(lexical_scores(["gamma"], texts) > 0, [False, True, False, False])


def test_lexical_cuts_terms_as_the_tokenizer_does():
    """A hyphenated identifier is one token on both sides; case is folded."""
    texts = ["run pre-commit hooks", "commit often", "PRE-COMMIT config"]
    got = lexical_scores(["pre-commit"], texts)
    assert got[0] > 0 and got[2] > 0 and got[1] == 0


# --- session-start terms ------------------------------------------------------------------------


def test_start_terms_follow_signets_predicted_context_rule():
    transcripts = [
        "Fixed the Postgres index; postgres index again. tiny 123 abc",
        "postgres vacuum and INDEX tuning, deploy",
        "deploy deploy deploy cache",
        "cache warmup",
        "word " * 800 + "lateword",  # beyond 3000 characters: cut
        "lateword lateword",  # the sixth: not read
    ]
    terms = session_start_terms(transcripts)
    # in >= 2 transcripts, >= 4 characters, by total count then the term
    assert terms == ["deploy", "index", "postgres", "cache"]
    assert "lateword" not in terms and "word" not in terms  # one transcript each
    many = [" ".join(f"term{i:02d}" for i in range(15))] * 2
    assert session_start_terms(many) == [f"term{i:02d}" for i in range(10)]
    assert session_start_terms([]) == [] and session_start_terms(["only one"]) == []


@pytest.fixture
def jobs_store(tmp_path):
    """A store whose completed summary jobs use both of Signet's timestamp formats."""
    db = tmp_path / "memories.db"
    create_store(db)
    con = connect_writer(db)
    t0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    rows = [  # (key, project, minutes after t0, status, transcript, iso format)
        ("a", "web", 0, "completed", "alpha deploy", True),
        ("b", "web", 10, "completed", "beta deploy", False),
        ("c", "api", 20, "completed", "gamma deploy", True),
        ("d", "web", 30, "pending", "delta deploy", True),
        ("e", "web", 40, "completed", "epsilon deploy alpha", False),
    ]
    with con:
        for key, project, minutes, status, text, iso in rows:
            at = t0 + timedelta(minutes=minutes)
            stamp = at.strftime("%Y-%m-%dT%H:%M:%S.000Z" if iso else "%Y-%m-%d %H:%M:%S")
            insert_summary_job(
                con,
                key,
                harness="test",
                project=project,
                transcript=text,
                status=status,
                created_at=stamp,
                completed_at=stamp if status == "completed" else None,
            )
    yield con, t0
    con.close()


def test_recent_transcripts_are_the_projects_completed_jobs_before_the_start(jobs_store):
    con, t0 = jobs_store
    assert recent_transcripts(con, "web") == ["epsilon deploy alpha", "beta deploy", "alpha deploy"]
    assert recent_transcripts(con, "web", t0 + timedelta(minutes=35)) == [
        "beta deploy",
        "alpha deploy",
    ]
    # the two formats order by time (a plain text comparison would put "2026-03-01 09:10" first)
    assert recent_transcripts(con, None, t0 + timedelta(minutes=25)) == [
        "gamma deploy",
        "beta deploy",
        "alpha deploy",
    ]
    assert recent_transcripts(con, "web", t0) == []
    assert store_start_terms(con, "web") == ["deploy", "alpha"]
    with pytest.raises(ValueError, match="naive"):
        recent_transcripts(con, "web", datetime(2026, 3, 1))


# --- entities -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("When did Caroline go to the LGBTQ support group?", ["Caroline", "LGBTQ"]),
        ("What did Melanie paint? Did Caroline see it", ["Melanie", "Caroline"]),
        ("Caroline said I should go", []),  # opens the sentence; one letter
        ("how is Jon's dance studio doing", ["Jon"]),
        ("", []),
    ],
)
def test_query_entities_are_capitalised_tokens_inside_sentences(text, names):
    assert query_entities(text) == names


def test_entity_match_is_the_share_of_names_in_the_text():
    texts = ["Caroline joined the LGBTQ group", "Melanie painted", "caroline lowercase", None]
    got = entity_match(["Caroline", "LGBTQ", "Caroline"], texts)
    np.testing.assert_array_equal(got, np.array([1.0, 0.0, 0.0, 0.0], np.float32))
    np.testing.assert_array_equal(entity_match(["Melanie", "Jon"], texts)[1], 0.5)
    np.testing.assert_array_equal(entity_match([], texts), np.zeros(4, np.float32))


# --- source neighbourhood -----------------------------------------------------------------------


def neighbourhood_by_brute_force(ctx, emb, has, sources) -> np.ndarray:
    out = np.zeros(len(sources))
    for i, s in enumerate(sources):
        mates = [
            float(emb[j] @ ctx / (np.linalg.norm(emb[j]) * np.linalg.norm(ctx)))
            if np.linalg.norm(emb[j]) > 0
            else 0.0
            for j in range(len(sources))
            if j != i and s is not None and sources[j] == s and has[j]
        ]
        out[i] = max(mates) if mates else 0.0
    return out


@pytest.mark.parametrize("seed", range(5))
def test_neighbourhood_is_the_best_other_member_of_the_source(seed):
    rng = np.random.default_rng(seed)
    n = 40
    emb = rng.normal(size=(n, 8)).astype(np.float32)
    emb[3] = 0.0  # a zero vector flagged as embedded
    has = rng.random(n) > 0.2
    sources = [None if rng.random() < 0.15 else f"s{int(rng.integers(0, 9))}" for _ in range(n)]
    ctx = rng.normal(size=8).astype(np.float32)
    got = source_neighbourhood(ctx, emb, has, sources)
    np.testing.assert_allclose(got, neighbourhood_by_brute_force(ctx, emb, has, sources), atol=1e-6)
    # ties: two best members each see the other
    emb[:2] = emb[0]
    tie = source_neighbourhood(ctx, emb, np.ones(n, bool), ["t", "t"] + [None] * (n - 2))
    assert tie[0] == tie[1] != 0.0 and not tie[2:].any()


def test_neighbourhood_does_not_depend_on_the_embeddings_layout_or_precision():
    """The trainer's samples and the server's requests hold the same vectors in arrays of other
    layouts (a column-major block, a strided view, float64): every one gives the same bits."""
    rng = np.random.default_rng(11)
    n, dim = 60, 300
    emb = rng.normal(size=(n, dim)).astype(np.float32)
    has = rng.random(n) > 0.2
    sources = [f"s{i % 7}" for i in range(n)]
    ctx = rng.normal(size=dim).astype(np.float32)
    want = source_neighbourhood(ctx, emb, has, sources)
    wide = np.zeros((n, 2 * dim), np.float32)
    wide[:, ::2] = emb
    for other in (np.asfortranarray(emb), wide[:, ::2], emb.astype(np.float64)):
        np.testing.assert_array_equal(source_neighbourhood(ctx, other, has, sources), want)


@pytest.mark.parametrize("dim", [3, 64, 768, 1536])
def test_neighbourhood_by_blas_rounds_as_the_reference(dim, monkeypatch):
    """The BLAS cosines give the reference's float32 values to the bit, duplicates, scaled
    and nearly equal mates, zero and orthogonal rows included (then the reference runs)."""
    rng = np.random.default_rng(dim)
    for _ in range(40):
        n = int(rng.integers(2, 120))
        emb = rng.normal(size=(n, dim)) * rng.choice([1.0, 1e-3, 1e3])
        for i, j in rng.integers(0, n, size=(n // 3, 2)):
            emb[i] = rng.choice([1.0, 2.0, 0.0]) * emb[j] + 1e-7 * rng.normal(size=dim)
        emb = emb.astype(np.float32)
        has = rng.random(n) > 0.1
        ctx = emb[: int(rng.integers(1, 6))].mean(axis=0)
        sources = [None if rng.random() < 0.1 else f"s{int(rng.integers(0, 8))}" for _ in range(n)]
        got = source_neighbourhood(ctx, emb, has, sources)
        with monkeypatch.context() as m:
            m.setattr(
                signals,
                "_fast_context_cosines",
                lambda c, e, h, used: signals._context_cosines(c, e, h),
            )
            want = source_neighbourhood(ctx, emb, has, sources)
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    one_hot = np.eye(4, dtype=np.float32)  # exact zero cosines: the reference decides
    got = source_neighbourhood(one_hot[0], one_hot, np.ones(4, bool), ["a"] * 4)
    np.testing.assert_array_equal(got, [0.0, 1.0, 1.0, 1.0])


def test_ordinary_vectors_take_the_blas_path(monkeypatch):
    """The reference computation is the exception: 100 random 768-d candidates never need it."""
    rng = np.random.default_rng(5)
    emb = rng.normal(size=(100, 768)).astype(np.float32)
    sources = [f"s{i // 10}" for i in range(100)]

    def refuse(*_: object) -> None:
        raise AssertionError("the reference cosines ran")

    monkeypatch.setattr(signals, "_context_cosines", refuse)
    assert source_neighbourhood(emb[:10].mean(axis=0), emb, np.ones(100, bool), sources).all()


def test_a_value_near_a_float32_midpoint_does_not_round_alike():
    low = np.float32(0.3)
    mid = (float(low) + float(np.nextafter(low, np.float32(1)))) / 2
    assert not signals._rounds_alike(np.array([0.1, mid]), 1e-12)
    assert signals._rounds_alike(np.array([0.1, mid + 2e-12, float(low)]), 1e-12)
    assert not signals._rounds_alike(np.array([mid + 2e-12]), 3e-12)


def test_neighbourhood_without_context_or_sources_is_zero():
    emb = np.eye(3, dtype=np.float32)
    has = np.ones(3, bool)
    assert not source_neighbourhood(None, emb, has, ["a", "a", "a"]).any()
    assert not source_neighbourhood(emb[0], emb, has, [None, None, None]).any()
    assert not source_neighbourhood(emb[0], emb, has, ["a", "b", "c"]).any()


def test_candidate_signals_are_the_columns_in_contract_order():
    texts = ["Caroline likes the cache", "cache", "Melanie"]
    emb = np.eye(3, dtype=np.float32)
    got = candidate_signals(
        query_terms=["cache"],
        query_entities=["Caroline"],
        candidate_texts=texts,
        context=np.ones(3, np.float32),
        embeddings=emb,
        has_embedding=np.ones(3, bool),
        origins=Origins(["s", "s", None]),
    )
    assert got.shape == (3, contract.N_SIGNALS) and got.dtype == np.float32
    np.testing.assert_array_equal(
        got[:, signal_column("lexical")], lexical_scores(["cache"], texts)
    )
    np.testing.assert_array_equal(got[:, signal_column("entity_match")], [1.0, 0.0, 0.0])
    assert got[0, signal_column("source_neighbourhood")] == pytest.approx(1 / math.sqrt(3))
    with pytest.raises(KeyError, match="lexical, entity_match"):
        signal_column("bm25")


def test_rank_is_the_reciprocal_place_with_ties_sharing_the_best():
    values, valid = np.array([0.3, 0.5, 0.5, 0.9, 0.1]), np.array([1, 1, 1, 1, 0], bool)
    got = rank_signal(values, valid)
    np.testing.assert_array_equal(got, np.float32([1 / 4, 1 / 2, 1 / 2, 1.0, 0.0]))
    perm = np.array([4, 2, 0, 3, 1])  # the candidates' order does not matter
    np.testing.assert_array_equal(rank_signal(values[perm], valid[perm]), got[perm])


def test_session_best_is_the_best_of_the_source_itself_included():
    got = session_best(np.array([0.2, 0.7, 0.4, 0.1]), ["a", "b", "a", None])
    np.testing.assert_array_equal(got, np.float32([0.4, 0.7, 0.4, 0.1]))
    np.testing.assert_array_equal(session_best(np.array([0.2, 0.7]), None), np.float32([0.2, 0.7]))


def adjacent_by_brute_force(values, valid, sources, at, span) -> np.ndarray:
    out = np.zeros(len(values))
    member = [
        j for j in range(len(values)) if valid[j] and sources[j] is not None and np.isfinite(at[j])
    ]
    for i in member:
        mates = [j for j in member if sources[j] == sources[i]]
        times = sorted({at[j] for j in mates})
        d = times.index(at[i])
        window = set(times[max(0, d - span) : d + span + 1])
        near = [values[j] for j in mates if j != i and at[j] in window]
        out[i] = max(near) if near else 0.0
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("span", [1, 2])
def test_adjacent_is_the_best_other_member_at_the_nearest_times_of_the_source(seed, span):
    rng = np.random.default_rng(seed)
    n = 50
    values = rng.normal(size=n)
    valid = rng.random(n) > 0.15
    sources = [None if rng.random() < 0.1 else f"s{int(rng.integers(0, 5))}" for _ in range(n)]
    at = rng.integers(0, 12, size=n).astype(np.float64)  # shared times: a turn's several facts
    at[rng.random(n) < 0.1] = np.nan
    got = adjacent_best(values, valid, sources, at, span)
    want = adjacent_by_brute_force(values, valid, sources, at, span)
    np.testing.assert_allclose(got, want, atol=1e-6)
    perm = rng.permutation(n)  # the candidates' order does not matter
    shuffled = adjacent_best(values[perm], valid[perm], [sources[i] for i in perm], at[perm], span)
    np.testing.assert_array_equal(shuffled, got[perm])


def test_adjacent_skips_gaps_of_time_and_needs_sources_and_times():
    values = np.array([0.9, 0.1, 0.5, 0.7, 0.3])
    at = np.array([10.0, 20.0, 500.0, 20.0, 900.0])  # the memories' order, not their distance
    got = adjacent_best(values, np.ones(5, bool), ["a"] * 5, at, span=1)
    np.testing.assert_allclose(got, [0.7, 0.9, 0.7, 0.9, 0.5])
    wider = adjacent_best(values, np.ones(5, bool), ["a"] * 5, at, span=2)
    np.testing.assert_allclose(wider, [0.7, 0.9, 0.9, 0.9, 0.7])
    assert not adjacent_best(values, np.ones(5, bool), None, at).any()
    assert not adjacent_best(values, np.ones(5, bool), ["a"] * 5, None).any()
    assert not adjacent_best(values, np.ones(5, bool), ["a", "b", "c", "d", "e"], at).any()


def test_length_grows_with_the_tokens_up_to_one():
    got = length_signal(["", "one", "one two three", " ".join(["w"] * 400), None])
    assert got[0] == 0.0 and got[4] == 0.0 and got[3] == 1.0
    assert 0 < got[1] < got[2] < 1
    assert got[1] == np.float32(math.log(2) / math.log(signals.LENGTH_TOKENS))


def test_pool_signals_are_ranks_and_session_aggregates_of_the_cosine():
    rng = np.random.default_rng(7)
    emb = rng.normal(size=(9, 16)).astype(np.float32)
    ctx = rng.normal(size=16).astype(np.float32)
    has = np.array([True] * 7 + [False] * 2)
    sources = ["a", "a", "b", "b", "b", None, "c", "a", None]
    texts = [f"deploy note {i}" if i % 2 else "cache" for i in range(9)]
    got = candidate_signals(
        query_terms=["cache"],
        query_entities=None,
        candidate_texts=texts,
        context=ctx,
        embeddings=emb,
        has_embedding=has,
        origins=Origins(sources, np.arange(9, dtype=np.float64) % 4),
    )
    cos = np.where(has, emb @ ctx / np.linalg.norm(emb, axis=1) / np.linalg.norm(ctx), 0.0)
    col = {n: got[:, signal_column(n)] for n in contract.SIGNAL_NAMES}
    better = (cos[has][None, :] > cos[:, None] + 1e-9).sum(axis=1)
    np.testing.assert_allclose(col["cosine_rank"], np.where(has, 1 / (1 + better), 0), rtol=1e-6)
    hyb = hybrid_scores(cos, col["lexical"])
    above = (hyb[None, :] > hyb[:, None] + 1e-9).sum(axis=1)
    np.testing.assert_allclose(col["hybrid_rank"], 1 / (1 + above), rtol=1e-6)
    for i, s in enumerate(sources):
        group = [j for j, t in enumerate(sources) if s is not None and t == s] or [i]
        others = [cos[j] for j in group if has[j] and j != i]
        # max(own cosine, source_neighbourhood), the latter 0 without an embedded mate
        mate = max(others) if others else 0.0
        assert col["session_max"][i] == pytest.approx(max(cos[i], mate), abs=1e-6)
        assert col["session_best_rank"][i] == max(col["cosine_rank"][j] for j in group)
    np.testing.assert_array_equal(col["length"], length_signal(texts))
    at = np.arange(9, dtype=np.float64) % 4
    for name, values in (("adjacent_max", cos), ("adjacent_best_rank", col["cosine_rank"])):
        want = adjacent_by_brute_force(values, has, sources, at, signals.ADJACENT_SPAN)
        np.testing.assert_allclose(col[name], want, atol=1e-6)
    assert col["adjacent_max"].any()


def test_hybrid_is_signets_weighting():
    np.testing.assert_allclose(hybrid_scores([1.0, 0.0], [0.0, 1.0]), [0.7, 0.3])


# --- the server ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def golden(golden_onnx) -> Scorer:
    scorer = Scorer.open(golden_onnx)
    assert scorer.ready, scorer.reason
    return scorer


def with_query(req: dict) -> dict:
    n = len(req["candidate_ids"])
    return {
        **req,
        "candidate_texts": [
            f"deploy cache note {i} Caroline" if i % 4 else "other" for i in range(n)
        ],
        "query_terms": ["deploy", "cache"],
        "query_entities": ["Caroline"],
        "candidate_sources": [f"s{i % 3}" if i % 5 else None for i in range(n)],
        "candidate_created_at": [None if i == 2 else 1.7e9 + 60.0 * (i // 2) for i in range(n)],
    }


def created_of(req: dict) -> np.ndarray:
    """The request's creation times as the server reads them (null: NaN)."""
    return np.array([np.nan if v is None else v for v in req["candidate_created_at"]])


def test_the_server_computes_the_signals_from_the_request(golden):
    req = with_query(request(n=12, seed=3))
    inputs = parse_score_params(req, golden.info).inputs
    has = inputs[contract.INPUT_HAS_EMBEDDING]
    expected = candidate_signals(
        query_terms=req["query_terms"],
        query_entities=req["query_entities"],
        candidate_texts=req["candidate_texts"],
        context=inputs[contract.INPUT_CONTEXT],
        embeddings=np.where(has[:, None], inputs[contract.INPUT_CANDIDATE_EMBEDDINGS], 0.0),
        has_embedding=has,
        origins=Origins(req["candidate_sources"], created_of(req)),
    )
    got = inputs[contract.INPUT_SIGNALS]
    np.testing.assert_array_equal(got, expected)
    assert got[:, 0].any() and got[:, 1].any() and got[:, 2].any()
    assert got[:, signal_column("adjacent_max")].any()
    old = {k: v for k, v in req.items() if k != "candidate_created_at"}  # a request before it
    older = parse_score_params(old, golden.info).inputs[contract.INPUT_SIGNALS]
    assert not older[:, signal_column("adjacent_max") :].any()
    plain = golden.score_request(request(n=12, seed=3))
    assert golden.score_request(req) != plain  # the golden model weighs the lexical signal


def test_a_request_without_query_parameters_has_only_the_pool_signals(golden):
    req = request(n=5)
    inputs = parse_score_params(req, golden.info).inputs
    got = inputs[contract.INPUT_SIGNALS]
    query = [signal_column(n) for n in ("lexical", "entity_match", "source_neighbourhood")]
    np.testing.assert_array_equal(got[:, query], np.zeros((5, 3), np.float32))
    expected = candidate_signals(
        query_terms=None,
        query_entities=None,
        candidate_texts=req["candidate_texts"],
        context=inputs[contract.INPUT_CONTEXT],
        embeddings=inputs[contract.INPUT_CANDIDATE_EMBEDDINGS],
        has_embedding=inputs[contract.INPUT_HAS_EMBEDDING],
        origins=Origins(),
    )
    np.testing.assert_array_equal(got, expected)
    assert got[:, signal_column("cosine_rank")].any() and got[:, signal_column("length")].any()


def test_in_process_keywords_reach_the_signals(golden):
    req = with_query(request(n=6, seed=1))
    via_api = golden.score(ScoreQuery(**{**req, "query_terms": tuple(req["query_terms"])}))
    assert via_api.ok and via_api.scores == golden.score_request(req)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"query_terms": "deploy"}, "query_terms"),
        ({"query_terms": ["ok", 3]}, "query_terms[1]"),
        ({"query_entities": {"a": 1}}, "query_entities"),
        ({"query_terms": ["x"] * (contract.MAX_QUERY_TERMS + 1)}, "query_terms"),
        ({"candidate_sources": ["a", 7]}, "candidate_sources[1]"),
        ({"candidate_sources": ["a"] * 40}, "candidate_sources"),
        ({"candidate_created_at": [1.0, "2026-01-01"]}, "candidate_created_at[1]"),
        ({"candidate_created_at": [1.0, float("inf")]}, "candidate_created_at[1]"),
        ({"candidate_created_at": 5}, "candidate_created_at"),
    ],
)
def test_bad_query_parameters_name_the_field(golden, change, field):
    with pytest.raises(ParamError) as err:
        parse_score_params({**request(n=6), **change}, golden.info)
    assert err.value.field == field


def test_a_graph_exported_before_the_signals_still_serves(golden_onnx, tmp_path):
    """An older graph has no signal input: it loads, and a request with query terms scores
    exactly as one without."""
    import onnx
    from onnx import helper

    model = onnx.load(str(golden_onnx))
    graph = model.graph
    # the signal columns become zeros made from the features, and the input goes
    n_signals = len(contract.SIGNAL_NAMES)
    zeros = [
        helper.make_node("Constant", [], ["old/bounds"], value_ints=[0, n_signals, 1]),
        helper.make_node("Split", ["old/bounds"], ["old/start", "old/stop", "old/axis"], axis=0),
        helper.make_node(
            "Slice", [contract.INPUT_FEATURES, "old/start", "old/stop", "old/axis"], ["old/cols"]
        ),
        helper.make_node("Constant", [], ["old/zero"], value_float=0.0),
        helper.make_node("Mul", ["old/cols", "old/zero"], [contract.INPUT_SIGNALS]),
    ]
    nodes = zeros + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    inputs = [i for i in graph.input if i.name != contract.INPUT_SIGNALS]
    del graph.input[:]
    graph.input.extend(inputs)
    old = tmp_path / "old.onnx"
    onnx.save(model, str(old))
    scorer = Scorer.open(old)
    assert scorer.ready, scorer.reason
    assert scorer.info.n_signals == 0
    req = with_query(request(n=8, seed=2))
    ours = ("candidate_sources", "candidate_created_at")
    plain = {k: v for k, v in req.items() if not k.startswith("query_") and k not in ours}
    assert scorer.score_request(req) == scorer.score_request(plain)


def _signal_params() -> dict[str, np.ndarray]:
    """The golden weights with every signal weighed (the new ones too)."""
    params = generator().golden_params()
    params["signal_weights"] = np.random.default_rng(42).normal(0.0, 2.0, contract.N_SIGNALS)
    return params


def test_a_request_ranks_as_the_numpy_model_with_every_signal(tmp_path):
    """Trainer/server parity: the server's signals (computed from the request) fed to the
    graph rank the candidates exactly as the numpy model fed `candidate_signals`."""
    params = _signal_params()
    path = tmp_path / "signals.onnx"
    path.write_bytes(model_bytes(params, CheckpointMeta()))
    scorer = Scorer.open(path)
    assert scorer.ready, scorer.reason
    req = with_query(request(n=16, seed=5))
    track = np.linspace(0.1, 0.9, 16)
    req["candidate_track_record"] = track.tolist()
    inputs = parse_score_params(req, scorer.info).inputs
    has = inputs[contract.INPUT_HAS_EMBEDDING]
    expected = candidate_signals(
        query_terms=req["query_terms"],
        query_entities=req["query_entities"],
        candidate_texts=req["candidate_texts"],
        context=inputs[contract.INPUT_CONTEXT],
        embeddings=inputs[contract.INPUT_CANDIDATE_EMBEDDINGS],
        has_embedding=has,
        origins=Origins(req["candidate_sources"], created_of(req)),
        track_record=track,
    )
    assert expected[:, 3:].any(axis=0).all()  # every new signal is in play
    session = SessionArrays(
        inputs[contract.INPUT_CONTEXT],
        inputs[contract.INPUT_CANDIDATE_EMBEDDINGS],
        has,
        [
            None if h else token_buckets(t, DEFAULT_CONFIG.hash_buckets)
            for h, t in zip(has, req["candidate_texts"], strict=True)
        ],
        inputs[contract.INPUT_FEATURES],
        req["project_slot"],
        signals=expected,
    )
    probs = score_session(params, session)
    served = scorer.score_request(req)
    numpy_order = [req["candidate_ids"][i] for i in np.argsort(-probs, kind="stable")]
    assert [i for i, _ in served] == numpy_order
    np.testing.assert_allclose([s for _, s in served], np.sort(probs)[::-1], rtol=1e-4, atol=1e-6)


def test_a_graph_exported_with_three_signals_loads_and_reads_the_first_three(tmp_path):
    """A graph whose signal input has the first three columns (exported before the pool signals
    existed) loads, is fed the first three of the server's signals and scores as the current
    graph with the later signal columns at zero."""
    import onnx
    from onnx import helper

    params = _signal_params()
    full = tmp_path / "full.onnx"
    full.write_bytes(model_bytes(params, CheckpointMeta()))
    model = onnx.load(str(full))
    graph = model.graph
    # the signal input becomes three columns, padded with zeros to the width the graph reads
    pad = contract.N_SIGNALS - 3
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name == contract.INPUT_SIGNALS:
                node.input[k] = "old/signals_full"
    front = [
        helper.make_node("Constant", [], ["old/pads"], value_ints=[0, 0, 0, pad]),
        helper.make_node("Pad", [contract.INPUT_SIGNALS, "old/pads"], ["old/signals_full"]),
    ]
    nodes = front + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    signal_input = next(i for i in graph.input if i.name == contract.INPUT_SIGNALS)
    signal_input.type.tensor_type.shape.dim[1].dim_value = 3
    old = tmp_path / "old3.onnx"
    onnx.save(model, str(old))
    scorer = Scorer.open(old)
    assert scorer.ready, scorer.reason
    assert scorer.info.n_signals == 3 and scorer.model is not None
    now = Scorer.open(full).model
    assert now is not None
    req = with_query(request(n=10, seed=4))
    feed = parse_score_params(req, now.info).inputs
    cut = {**feed, contract.INPUT_SIGNALS: feed[contract.INPUT_SIGNALS].copy()}
    cut[contract.INPUT_SIGNALS][:, 3:] = 0.0
    _, want = now.run(cut)
    _, got = scorer.model.run(feed)
    np.testing.assert_array_equal(got, want)
    _, uncut = now.run(feed)
    assert not np.array_equal(uncut, want)  # the later signals do move the full graph
