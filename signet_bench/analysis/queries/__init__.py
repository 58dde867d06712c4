"""The frames the notebooks show, computed from a Signet store (through DuckDB, read-only
views) and the workbench file: one module per panel family.

`source` (connections, per-action workbench access, child processes), `sessions` (one row per
session, filters, slices, drift resets), `status` (status card, status line, health),
`training` (training curve, latency, errors, benchmark results), `inspector` (one session in
detail, its event timeline), `derived` (what only the library's reader computes: a current
store's comparisons, the label sources), `entities` (focal entities per session),
`injections` (Signet's injections against the scorer's picks), `dashboard` (the dashboard's
load and per-filter view), `calibration` (the human labeler), `drift` (judge drift signal over
time), `feature_drift` and `stattests` (feature distributions and drift tests). Nothing here
uses the stdlib `sqlite3` on the store: what needs it runs in a child process.
"""
