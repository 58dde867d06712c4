"""Signet's two timestamp formats: JS ISO (`2026-03-14T21:40:46.123Z`) and SQLite
`datetime('now')` (`2026-03-14 21:40:46`). Both are UTC."""

from __future__ import annotations

from datetime import UTC, datetime

from signet_bench.errors import UserError

__all__ = ["TimestampError", "days_between", "format_iso", "format_sqlite", "parse_ts"]


class TimestampError(UserError, ValueError):
    """A timestamp text that is in neither of Signet's formats."""


def parse_ts(text: str) -> datetime:
    """Parse either Signet format (or any ISO-8601 with offset) into an aware UTC datetime."""
    if not isinstance(text, str) or not text:
        raise TimestampError(f"not a timestamp: {text!r}")
    s = text.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(s)
    except ValueError as exc:
        raise TimestampError(f"not a timestamp: {text!r}") from exc
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def format_iso(dt: datetime) -> str:
    """JS `toISOString()` form: millisecond precision, `Z` suffix."""
    dt = dt.astimezone(UTC) if dt.tzinfo else dt.replace(tzinfo=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def format_sqlite(dt: datetime) -> str:
    """SQLite `datetime('now')` form: seconds, no T, no zone (UTC)."""
    dt = dt.astimezone(UTC) if dt.tzinfo else dt.replace(tzinfo=UTC)
    return dt.strftime("%Y-%m-%d %H:%M:%S")


def days_between(later: datetime, earlier: datetime) -> float:
    """Fractional days from `earlier` to `later` (negative when reversed)."""
    return (later - earlier).total_seconds() / 86_400.0
