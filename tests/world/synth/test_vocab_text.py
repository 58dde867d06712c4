"""Topic vocabularies and the sentences built from them."""

from __future__ import annotations

import re

import numpy as np

from signet_bench.store.content import content_hash
from signet_bench.world.synth.text import (
    MEMORY_TYPES,
    TIME_TEMPLATES,
    memory_text,
    prompt_text,
    replacement_text,
    template_words,
    tokens,
    unique_memory_text,
)
from signet_bench.world.synth.vocab import (
    GENERIC_WORDS,
    GLOBAL_TOPIC,
    TIME_WORDS,
    TOPICS,
    get_topic,
)


def test_about_thirty_topics_of_25_to_40_single_token_words():
    assert len(TOPICS) >= 30
    assert GLOBAL_TOPIC in TOPICS
    for t in TOPICS.values():
        assert 25 <= len(t.words) <= 40, t.name
        assert len(set(t.words)) == len(t.words), t.name
        assert all(re.fullmatch(r"[a-z0-9]+", w) for w in t.words), t.name


def test_content_words_belong_to_one_topic_and_are_not_generic():
    seen: dict[str, str] = {}
    for t in TOPICS.values():
        for w in t.words:
            assert w not in seen, f"{w} is in {seen[w]} and {t.name}"
            seen[w] = t.name
    assert not set(seen) & set(GENERIC_WORDS)
    assert not set(seen) & set(TIME_WORDS)


def test_every_template_word_is_known_to_the_embedder():
    known = set(GENERIC_WORDS) | set(TIME_WORDS) | {w for t in TOPICS.values() for w in t.words}
    assert template_words() - known == set()


def test_memory_text_is_a_sentence_of_the_topic():
    rng = np.random.default_rng(0)
    topic = get_topic("postgres")
    for mtype in MEMORY_TYPES:
        text, fields = memory_text(mtype, topic, "ledgerly", rng)
        assert text[0].isupper() and text.endswith(".")
        words = set(tokens(text))
        assert len(words & set(topic.words)) >= 2, text
        assert fields["obj"] in topic.objects


def test_global_memories_never_name_a_project():
    rng = np.random.default_rng(1)
    topic = get_topic(GLOBAL_TOPIC)
    for _ in range(50):
        text, _ = memory_text("preference", topic, None, rng)
        assert "{proj}" not in text and "  " not in text
        assert text.endswith("in every project.")


def test_time_patterned_text_carries_time_words():
    rng = np.random.default_rng(2)
    for name in TIME_TEMPLATES:
        text, _ = memory_text("procedural", get_topic("deploy"), "docsite", rng, time_pattern=name)
        assert set(tokens(text)) & set(TIME_WORDS), text


def test_replacement_keeps_the_object_and_changes_the_tool():
    rng = np.random.default_rng(3)
    topic = get_topic("caching")
    _, fields = memory_text("decision", topic, "shop", rng)
    new = replacement_text("decision", fields, topic, rng)
    words = set(tokens(new))
    assert fields["obj"] in words and fields["tool"] in words
    assert len(words & set(topic.tools)) == 2  # the old tool and a different new one


def test_unique_memory_text_never_repeats_a_hash():
    rng = np.random.default_rng(4)
    taken: set[str] = set()
    topic = get_topic("docs")
    texts = [
        unique_memory_text(lambda r: memory_text("fact", topic, "p", r), taken, rng)[0]
        for _ in range(400)
    ]
    assert len({content_hash(t) for t in texts}) == 400
    # a generator with a single possible sentence still yields distinct texts
    one = [unique_memory_text(lambda r: ("Same text.", {}), taken, rng)[0] for _ in range(3)]
    assert len(set(one)) == 3


def test_prompts_use_the_topic_and_an_optional_time_phrase():
    rng = np.random.default_rng(5)
    topic = get_topic("kubernetes")
    p = prompt_text(topic, rng, time_pattern="weekend")
    assert p.startswith("weekend:")
    assert set(tokens(p)) & set(topic.words)
