"""Signet's two timestamp formats written and parsed: JS ISO (`2026-03-14T21:40:46.123Z`) and
SQLite `datetime('now')` (`2026-03-14 21:40:46`), both UTC. The parser and the machine's time
zone are defined once in `signet_scorer.timestamps` (the session-start hook reads them without
this package); here a text in neither format is a `UserError`."""

from __future__ import annotations

from datetime import UTC, datetime

from signet_bench.errors import UserError
from signet_scorer.timestamps import parse_utc

__all__ = ["TimestampError", "format_iso", "format_sqlite", "parse_ts"]


class TimestampError(UserError, ValueError):
    """A timestamp text that is in neither of Signet's formats."""


def parse_ts(text: str) -> datetime:
    """Parse either Signet format (or any ISO-8601 with offset) into an aware UTC datetime."""
    try:
        return parse_utc(text)
    except ValueError as exc:
        raise TimestampError(str(exc)) from exc


def format_iso(dt: datetime) -> str:
    """JS `toISOString()` form: millisecond precision, `Z` suffix."""
    dt = dt.astimezone(UTC) if dt.tzinfo else dt.replace(tzinfo=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def format_sqlite(dt: datetime) -> str:
    """SQLite `datetime('now')` form: seconds, no T, no zone (UTC)."""
    dt = dt.astimezone(UTC) if dt.tzinfo else dt.replace(tzinfo=UTC)
    return dt.strftime("%Y-%m-%d %H:%M:%S")
