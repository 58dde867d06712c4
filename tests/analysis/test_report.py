"""The benchmark output contract's timing helper."""

from __future__ import annotations

from signet_bench.analysis.report import percentiles, timed_ms


def test_timed_ms_times_only_the_calls_after_the_warmup():
    calls = []
    times = timed_ms(lambda: calls.append(len(calls)), warmup=3, repeats=5)
    assert len(calls) == 8 and len(times) == 5
    assert all(t >= 0.0 for t in times)
    p = percentiles(times, (50,))
    assert min(times) <= p["p50"] <= max(times)
