"""Synthetic users with planted, known relevance: personas, vocabularies, memory text, a topic
embedder, the ground-truth relevance function, session plans and the store builder."""
