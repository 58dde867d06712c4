"""The one base class for input problems a user can fix: the CLI prints them, no traceback."""

from __future__ import annotations

__all__ = ["UserError"]


class UserError(Exception):
    """Bad input (path, file, row, field, option); the message says which and why."""
