"""`python -m signet_scorer.hook session-start ...`: the `signet-bench-hook` console script."""

from __future__ import annotations

from signet_scorer.hook.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
