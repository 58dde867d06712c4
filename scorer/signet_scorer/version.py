"""`--version` of the console scripts: the installed version of a distribution, read from its
metadata (`importlib.metadata`), so the answer is what pip installed, not a copy in the code."""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "version_line"]

DISTRIBUTION = "signet-scorer"  # scorer/pyproject.toml: the hook and the sidecar


def version_line(prog: str, distribution: str = DISTRIBUTION) -> str:
    """`PROG VERSION`, with `(DISTRIBUTION)` when the script is not named after it, or `not
    installed` in place of the version when the distribution is not (a bare checkout)."""
    # here: importlib.metadata costs every command's start-up; only --version needs it
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version(distribution)
    except PackageNotFoundError:
        found = "not installed"
    return f"{prog} {found}" if prog == distribution else f"{prog} {found} ({distribution})"
