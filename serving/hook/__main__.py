"""`python -m serving.hook session-start ...`: the `signet-bench-hook` console script."""

from __future__ import annotations

from serving.hook.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
