"""LoCoMo conversion on a small slice of the real file (read in place, never copied): counts,
evidence mapping, audit corrections, bad ids reported and skipped, sessions recorded."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from signet_bench.world.embed import get_embedder
from signet_bench.world.locomo import (
    CATEGORIES,
    audit_corrections,
    conversation_memories,
    conversation_queries,
    convert_locomo,
    memory_type_importance,
    parse_conversation,
    read_queries,
    relevance,
    split_dia_ids,
    turn_offsets,
)

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo"
LOCOMO = DATA / "locomo7.json"
AUDIT = DATA / "audit" / "errors.json"
SESSIONS = (1, 2)
# QA items kept whatever their evidence: empty evidence (conv-26) and a malformed id (conv-43).
KEEP = {"conv-26": {1, 30}, "conv-43": {18}}

needs_data = pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not present")


def slice_sample(sample: dict, sessions=SESSIONS, keep=frozenset()) -> dict:
    """The sample cut to `sessions`; QA items whose evidence lies elsewhere (and not in `keep`)
    become adversarial so the QA positions, which the audit's ids count, stay put."""
    s = copy.deepcopy(sample)
    conv = s["conversation"]
    for key in [k for k in conv if k.startswith("session_")]:
        n = int(key.split("_")[1])
        if n not in sessions:
            del conv[key]
    s["observation"] = {
        k: v for k, v in s["observation"].items() if int(k.split("_")[1]) in sessions
    }
    s["session_summary"] = {
        k: v for k, v in s["session_summary"].items() if int(k.split("_")[1]) in sessions
    }
    for i, qa in enumerate(s["qa"]):
        ids, _ = split_dia_ids(qa.get("evidence") or [])
        inside = ids and all(int(e[1:].split(":")[0]) in sessions for e in ids)
        if not inside and i not in keep:
            qa["category"] = 5
    return s


def slice_file(tmp: Path, samples=("conv-26", "conv-43")) -> Path:
    """A small derived LoCoMo file made from the real one."""
    docs = {d["sample_id"]: d for d in json.loads(LOCOMO.read_text())}
    out = [slice_sample(docs[s], keep=KEEP.get(s, set())) for s in samples]
    path = tmp / "slice.json"
    path.write_text(json.dumps(out))
    return path


def test_split_dia_ids_is_lenient_and_separates_malformed_ids():
    assert split_dia_ids(["D1:3"]) == (["D1:3"], [])
    assert split_dia_ids("D8:6; D9:17") == (["D8:6", "D9:17"], [])
    assert split_dia_ids("D26:14, D26:34") == (["D26:14", "D26:34"], [])
    assert split_dia_ids(["D", "D:11:26", "D2:1"]) == (["D2:1"], ["D", "D:11:26"])
    assert split_dia_ids([]) == ([], [])


def test_type_and_importance_heuristic():
    assert memory_type_importance("observation", "Caroline is planning to study") == (
        "decision",
        pytest.approx(0.7),
    )
    assert memory_type_importance("observation", "Mel loves pottery")[0] == "preference"
    assert memory_type_importance("observation", "Mel has two kids") == ("fact", 0.5)
    assert memory_type_importance("turn", "Thanks!")[1] == pytest.approx(0.1)
    assert memory_type_importance("summary", "They met.")[1] == pytest.approx(0.4)


def test_relevance_binary_and_graded():
    sources = [("D1:3",), ("D1:5",), ("D2:1",), ("D1:3", "D3:1"), ()]
    assert relevance(sources, ["D1:3"]).tolist() == [1, 0, 0, 1, 0]
    assert relevance(sources, ["D1:3"], graded=True).tolist() == [2, 1, 0, 2, 0]


@needs_data
def test_memories_queries_and_audit_on_a_slice():
    doc = {d["sample_id"]: d for d in json.loads(LOCOMO.read_text())}["conv-26"]
    sample = slice_sample(doc, keep=KEEP["conv-26"])
    problems: list = []
    conv = parse_conversation(sample, problems)
    assert sorted(conv.session_times) == list(SESSIONS)  # the extra date keys are ignored
    mems = conversation_memories(conv)
    n_obs = sum(len(v) for k, o in sample["observation"].items() for v in o.values())
    assert len(mems) == n_obs
    assert all(m.kind == "observation" and m.sources for m in mems)
    both = conversation_memories(conv, ("observation", "turn", "summary"))
    assert {m.kind for m in both} == {"observation", "turn", "summary"}
    assert len(both) <= n_obs + len(conv.turns) + len(SESSIONS)  # equal texts merged

    audit = json.loads(AUDIT.read_text())
    fixes = audit_corrections(audit, [sample], problems)
    assert fixes[("conv-26", 1)] == ("D1:14",)  # "When did Melanie paint a sunrise?"
    queries = {q.qa_index: q for q in conversation_queries(conv, fixes, problems)}
    assert queries[1].audited and queries[1].evidence == ("D1:14",)
    assert queries[0].evidence == ("D1:3",) and not queries[0].audited
    assert 30 not in queries  # empty evidence: reported and skipped
    assert any(p.where == "qa[30]" and p.reason == "no usable evidence" for p in problems)
    assert all(q.category in CATEGORIES and q.category != 5 for q in queries.values())
    relevant = [m for m in mems if "D1:14" in m.sources]
    assert relevant  # the corrected evidence is covered by an observation


@needs_data
def test_memories_are_created_in_the_conversations_order():
    """A memory's created_at is its session's time plus one second per turn before its
    earliest source turn in that session: distinct times within a session, in turn order,
    turns and the facts drawn from them at the same second; a summary at the session's time."""
    doc = {d["sample_id"]: d for d in json.loads(LOCOMO.read_text())}["conv-26"]
    conv = parse_conversation(slice_sample(doc), [])
    offsets = turn_offsets(conv)
    mems = conversation_memories(conv, ("observation", "turn", "summary"))
    for m in mems:
        start = conv.session_times[m.session]
        own = [offsets[d] for d in m.sources if d.startswith(f"D{m.session}:")]
        want = 0 if m.kind == "summary" else min(own)
        assert (m.created_at - start).total_seconds() == want, m
    facts = [m for m in mems if m.kind == "observation"]
    earliest = {min(m.sources, key=offsets.get) for m in facts if m.session == 1}
    assert len({m.created_at for m in facts if m.session == 1}) == len(earliest) > 5
    first = {d: m.created_at for m in mems if m.kind == "turn" for d in m.sources}
    assert all(m.created_at == first[min(m.sources, key=offsets.get)] for m in facts)
    last_of_1 = max(m.created_at for m in mems if m.session == 1)
    assert last_of_1 < min(m.created_at for m in mems if m.session == 2)


@needs_data
def test_audit_entries_that_do_not_match_are_reported_not_applied():
    doc = {d["sample_id"]: d for d in json.loads(LOCOMO.read_text())}["conv-26"]
    entry = next(e for e in json.loads(AUDIT.read_text()) if e["question_id"] == "locomo_0_qa1")
    wrong = dict(entry, question="Something else?")
    other = dict(entry, question_id="locomo_9_qa1")  # conv-50: not among the samples
    problems: list = []
    assert audit_corrections([wrong, other], [doc], problems) == {}
    assert [(p.where, p.reason) for p in problems] == [("audit locomo_0_qa1", "question differs")]


@needs_data
def test_convert_writes_one_store_per_conversation_with_recorded_sessions(tmp_path):
    data = slice_file(tmp_path)
    res = convert_locomo(data, tmp_path / "out", get_embedder("wordllama"), audit=[AUDIT])
    assert set(res.stores) == {"conv-26", "conv-43"}
    malformed = [p for p in res.problems if p.reason == "malformed evidence id"]
    assert [(p.sample_id, p.where, p.value) for p in malformed] == [
        ("conv-43", "qa[18]", "D:11:26")
    ]
    con = sqlite3.connect(res.stores["conv-26"])
    try:
        n_mem = con.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        assert n_mem == res.memories["conv-26"]
        assert con.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0] == n_mem
        queries = read_queries(con)
        assert len(queries) == res.queries["conv-26"]
        q, _at, vec = next(x for x in queries if x[0].qa_index == 1)
        assert q.evidence == ("D1:14",) and vec.shape == (256,)
        rows = con.execute(
            "SELECT m.source_id, sm.was_injected, sm.relevance_score FROM session_memories sm"
            " JOIN memories m ON m.id = sm.memory_id WHERE sm.session_key = ?",
            (q.key,),
        ).fetchall()
        assert len(rows) == n_mem  # every memory is a candidate of the question
        for src, injected, rel in rows:
            assert bool(injected) == ("D1:14" in src.split(","))
            assert rel in (0.0, 0.5, 1.0)
        score = con.execute(
            "SELECT score, confidence FROM session_scores WHERE session_key = ?", (q.key,)
        ).fetchone()
        assert score == (1.0, 1.0)
    finally:
        con.close()
    with pytest.raises(Exception, match="already exists"):
        convert_locomo(data, tmp_path / "out", get_embedder("wordllama"))


@needs_data
def test_the_training_code_runs_on_a_converted_store_unchanged(tmp_path):
    from signet_bench.learn.samples import load_samples

    res = convert_locomo(
        slice_file(tmp_path, ("conv-26",)), tmp_path / "s", get_embedder("wordllama")
    )
    samples, skipped = load_samples(res.stores["conv-26"])
    assert len(samples) + skipped == res.queries["conv-26"]
    assert samples and all(np.isfinite(s.labels).all() for s in samples)
    assert all(s.labels.max() > s.labels.min() for s in samples)
