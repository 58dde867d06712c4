"""Signet's timestamp formats and the machine's time zone name."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from signet_bench.store.timestamps import TimestampError, format_iso, format_sqlite, parse_ts
from signet_scorer.timestamps import local_tz


def _link(tmp_path: Path, zone: str) -> Path:
    """A localtime symlink into a zoneinfo tree, as distributions install /etc/localtime."""
    target = tmp_path / "zoneinfo" / zone
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"TZif")
    link = tmp_path / "localtime"
    link.symlink_to(target)
    return link


@pytest.mark.parametrize(
    ("value", "zone"),
    [
        ("Europe/Berlin", "Europe/Berlin"),
        (":Asia/Tokyo", "Asia/Tokyo"),
        ("/usr/share/zoneinfo/America/New_York", "America/New_York"),
        ("UTC", "UTC"),
    ],
)
def test_tz_variable_wins(monkeypatch, tmp_path, value, zone):
    monkeypatch.setenv("TZ", value)
    assert local_tz(localtime=_link(tmp_path, "Europe/Lisbon")) == zone


def test_localtime_link_when_tz_unset(monkeypatch, tmp_path):
    monkeypatch.delenv("TZ", raising=False)
    assert local_tz(localtime=_link(tmp_path, "Australia/Adelaide")) == "Australia/Adelaide"


def test_tz_naming_no_zone_falls_back_to_the_link(monkeypatch, tmp_path):
    monkeypatch.setenv("TZ", "CET-1CEST,M3.5.0,M10.5.0/3")
    assert local_tz(localtime=_link(tmp_path, "Europe/Paris")) == "Europe/Paris"


def test_utc_when_nothing_tells(monkeypatch, tmp_path):
    monkeypatch.setenv("TZ", "")
    assert local_tz(localtime=tmp_path / "missing") == "UTC"
    plain = tmp_path / "localtime"
    plain.write_bytes(b"TZif")  # a copied zone file, not a link: its name is unknown
    assert local_tz(localtime=plain) == "UTC"


def test_machine_zone_is_usable(monkeypatch):
    monkeypatch.delenv("TZ", raising=False)
    ZoneInfo(local_tz())


def test_both_formats_parse_to_the_same_utc_instant():
    dt = datetime(2026, 3, 14, 21, 40, 46, 123000, tzinfo=UTC)
    assert format_iso(dt) == "2026-03-14T21:40:46.123Z"
    assert format_sqlite(dt) == "2026-03-14 21:40:46"
    assert parse_ts(format_iso(dt)) == dt
    assert parse_ts(format_sqlite(dt)) == dt.replace(microsecond=0)
    assert parse_ts("2026-03-14T22:40:46.123+01:00") == dt
    with pytest.raises(TimestampError, match="not a timestamp"):
        parse_ts("14/03/2026")
