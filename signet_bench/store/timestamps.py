"""Signet's two timestamp formats: JS ISO (`2026-03-14T21:40:46.123Z`) and SQLite
`datetime('now')` (`2026-03-14 21:40:46`), both UTC; and the machine's time zone name, the
default for the user's local time."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from signet_bench.errors import UserError

__all__ = ["TimestampError", "format_iso", "format_sqlite", "local_tz", "parse_ts"]


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


def local_tz(*, localtime: str | Path = "/etc/localtime") -> str:
    """The machine's IANA time zone name: the `TZ` variable (a zone name, or a path under a
    `zoneinfo` directory), else the zone `/etc/localtime` links to, else "UTC". A value that
    names no zone (a POSIX rule such as `CET-1CEST`) is skipped: zoneinfo could not use it."""
    try:
        linked = str(Path(localtime).resolve())
    except OSError:
        linked = ""
    for candidate in (os.environ.get("TZ", ""), linked):
        name = _zone_name(candidate)
        if name is not None:
            return name
    return "UTC"


def _zone_name(text: str) -> str | None:
    """The IANA name in a TZ value or a zoneinfo path; None when it names no known zone."""
    name = text.strip().lstrip(":")
    if "/zoneinfo/" in f"/{name}":
        name = f"/{name}".rsplit("/zoneinfo/", 1)[1]
    if not name or name.startswith("/"):
        return None
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None
    return name
