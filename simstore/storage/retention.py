"""Time partitions and retention windows.

Every row carries ``part = floor(seconds since the epoch / partition length)``. Rows older than the
window never match (queries filter on it); purging deletes whole partitions that lie entirely before
the window, in bounded batches.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, timezone

from simstore.errors import InvalidInput, InvalidType

_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
EPOCH = datetime(1970, 1, 1)
LATEST = datetime(9999, 1, 1)
MAX_PART = 2**31 - 1  # partition numbers are INT columns on every dialect
MAX_DURATION = timedelta(days=36_500)  # a century: longer windows or partitions are mistakes


def _seconds(seconds: float, given: object) -> timedelta:
    if not math.isfinite(seconds) or abs(seconds) > MAX_DURATION.total_seconds():
        raise InvalidInput(f"a duration must be at most {MAX_DURATION.days} days, got {given!r}")
    return timedelta(seconds=seconds)


def parse_duration(value: str | timedelta | int | float) -> timedelta:
    """``"2d"``, ``"36h"``, ``"90m"``, ``"1w"``, a timedelta, or a number of seconds."""
    if isinstance(value, timedelta):
        duration = value
    elif isinstance(value, bool):
        raise InvalidType("a duration is a timedelta, seconds or text like '2d'")
    elif isinstance(value, (int, float)):
        duration = _seconds(value, value)
    elif isinstance(value, str):
        match = _DURATION.fullmatch(value)
        if not match:
            raise InvalidInput(f"not a duration: {value!r} (use e.g. 30m, 12h, 2d, 1w)")
        duration = _seconds(float(match[1]) * _UNIT_SECONDS[match[2].lower()], value)
    else:
        raise InvalidType(f"a duration is a timedelta, seconds or text, not {type(value).__name__}")
    if duration <= timedelta(0):
        raise InvalidInput(f"a duration must be positive, got {value!r}")
    if duration > MAX_DURATION:
        raise InvalidInput(f"a duration must be at most {MAX_DURATION.days} days, got {value!r}")
    return duration


def utc_naive(moment: datetime | None) -> datetime:
    """A naive UTC datetime (what simstore stores); naive input is taken to be UTC already."""
    if moment is None:
        return datetime.now(timezone.utc).replace(tzinfo=None)
    if not isinstance(moment, datetime):
        raise InvalidType(f"a time must be a datetime, not {type(moment).__name__}")
    if moment.tzinfo is not None:
        try:
            moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
        except OverflowError as error:
            raise InvalidInput(f"time {moment!r} cannot be converted to UTC") from error
    if not EPOCH <= moment < LATEST:
        raise InvalidInput(
            f"times must lie between {EPOCH:%Y-%m-%d} and {LATEST:%Y-%m-%d}, got {moment}"
        )
    return moment


def utc_aware(moment: datetime) -> datetime:
    """A stored naive UTC time as the API shows it: tz-aware, in UTC (aware input is converted)."""
    if moment.tzinfo is not None:
        return moment.astimezone(timezone.utc)
    return moment.replace(tzinfo=timezone.utc)


def format_duration(duration: timedelta) -> str:
    """``1h``, ``2d``, ``90m``, ``1w``: the largest unit that divides it (``parse_duration``'s
    units), else seconds."""
    seconds = duration.total_seconds()
    for unit in ("w", "d", "h", "m"):
        if seconds >= _UNIT_SECONDS[unit] and seconds % _UNIT_SECONDS[unit] == 0:
            return f"{int(seconds // _UNIT_SECONDS[unit])}{unit}"
    return f"{seconds:g}s"


def partition_of(moment: datetime, partition_seconds: int) -> int:
    """The partition number of a naive UTC time; InvalidInput past the last number an INT column
    holds (``MAX_PART``: with one-minute partitions, times after 6053-01-23), on every dialect
    alike (SQLite would store it, PostgreSQL and MariaDB fail with "integer out of range")."""
    part = int((moment - EPOCH).total_seconds() // partition_seconds)
    if part > MAX_PART:
        last = EPOCH + timedelta(seconds=(MAX_PART + 1) * partition_seconds - 1)
        length = format_duration(timedelta(seconds=partition_seconds))
        raise InvalidInput(
            f"time {moment} is past the last one this store's {length} "
            f"partitions can number ({last}); use a longer partition (e.g. 1h) for such times"
        )
    return part


def window_start(now: datetime, keep: timedelta | None) -> datetime | None:
    """The oldest time still inside the window (None: no window, everything matches)."""
    if keep is None:
        return None
    try:
        return now - keep
    except OverflowError:
        return datetime.min  # the window reaches back beyond the calendar: everything is inside
