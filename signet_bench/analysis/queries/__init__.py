"""The frames the notebooks show, computed from a Signet store (through DuckDB, read-only
views) and the workbench file: one module per panel family.

`source` (connections and per-action workbench access), `sessions` (one row per session,
filters, slices, drift resets), `status` (status card, status line, health), `training`
(training curve, latency, errors, benchmark results), `inspector` (one session in detail, its
event timeline), `dashboard` (the dashboard's load and per-filter view), `calibration` (the
human labeler), `drift` (judge drift signal over time), `features` and `stattests` (feature
distributions and drift tests). Nothing here uses the stdlib `sqlite3` on the store.
"""
