"""A prompt's query terms, Signet's shape (docs/specification.md §3.8): the one rule the prompt
hook and the replayed loop search and score a prompt by."""

from __future__ import annotations

from signet_scorer.terms import RECALL_STOPWORDS, fts_match_expression, recall_terms


def test_recall_terms_shape():
    terms = recall_terms("Can you fix the KA-6 pre-compaction bug in 2024 for the daemon?")
    assert terms[:2] == ["ka-6", "pre-compaction"]
    assert "the" not in terms and "you" not in terms and "2024" not in terms
    assert "fix" in terms and "bug" in terms and "daemon" in terms
    assert all(len(t) >= 3 for t in terms)
    assert len(terms) == len(set(terms))


def test_recall_terms_assistant_supplement_and_cap():
    user = "sqlite wal checkpoint"
    assistant = "We discussed sqlite, fsync, journaling, vacuum, pragma and busy timeouts."
    terms = recall_terms(user, assistant)
    assert terms[:3] == ["sqlite", "wal", "checkpoint"]
    assert terms[3:] == ["discussed", "fsync", "journaling"]  # max(2, 3) new terms
    assert recall_terms("one", "alpha beta gamma") == ["alpha", "beta"]  # max(2, 0)
    long = " ".join(f"term{c}x" for c in "abcdefghijklmnop")
    assert len(recall_terms(long, "other words here")) == 12


def test_recall_terms_strip_feedback_blocks_and_stopwords():
    assistant = '<memory-feedback>{"abc": 1}</memory-feedback> [signet:recall 3] rollout'
    assert recall_terms("the and but", assistant) == ["rollout"]
    assert {"the", "and", "with", "what"} <= RECALL_STOPWORDS


def test_fts_match_expression():
    assert fts_match_expression(["wal", 'a"b', "x:y", "(z)*", "^q"]) == (
        '"wal" OR "ab" OR "xy" OR "z" OR "q"'
    )
    assert fts_match_expression([]) is None
    assert fts_match_expression(["*", '""']) is None
