"""Session-start ranking: baseline, BM25/FTS5, pre-filter, RRF fusion, topic diversity,
exploration, selection, and the Signet 0.58 compatibility pool.

Every ordering in this package breaks ties by (score desc, memory id asc) unless a function
says it reproduces Signet's stable JavaScript sort instead.
"""
