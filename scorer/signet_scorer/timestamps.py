"""Signet's timestamps and the user's time zone, for the serving side and the workbench alike
(`signet_bench.store.timestamps` adds the writers and the workbench's parse error): both of
Signet's formats, JS ISO (`2026-03-14T21:40:46.123Z`) and SQLite `datetime('now')`
(`2026-03-14 21:40:46`), are UTC. Standard library only, and not `pathlib`: the prompt hook reads timestamps, and its
process imports neither it nor its `re`, `fnmatch` and `urllib`."""

from __future__ import annotations

import os
from datetime import UTC, datetime

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["local_tz", "parse_utc"]


def parse_utc(text: object) -> datetime:
    """Either Signet format (or any ISO-8601 with an offset) as an aware UTC datetime; a
    ValueError naming the text for anything else."""
    if not isinstance(text, str) or not text:
        raise ValueError(f"not a timestamp: {text!r}")
    s = text.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        raise ValueError(f"not a timestamp: {text!r}") from None
    if dt.tzinfo is None:
        return dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def local_tz(*, localtime: str | Path = "/etc/localtime", tz_var: str | None = None) -> str:
    """The machine's IANA time zone name: the `TZ` variable (a zone name, or a path under a
    `zoneinfo` directory; `tz_var`: its value in the process asking, None: this process's),
    else the zone `/etc/localtime` links to, else "UTC". A value that names no zone (a POSIX
    rule such as `CET-1CEST`) is skipped: zoneinfo could not use it."""
    try:
        linked = os.path.realpath(localtime)  # `Path.resolve`'s text
    except OSError:
        linked = ""
    var = os.environ.get("TZ", "") if tz_var is None else tz_var
    for candidate in (var, linked):
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
    # here: the prompt hook parses timestamps without the zones' module (start-up time)
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None
    return name
