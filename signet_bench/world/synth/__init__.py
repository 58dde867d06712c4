"""Synthetic users with planted, known relevance: personas, vocabularies, memory text, a topic
embedder, the ground-truth relevance function (and how much of it each planted effect carries),
session plans, the simulated judge and agent, the world a replayed daemon runs in (`world`), and
the store builder."""
