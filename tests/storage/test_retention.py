"""Durations, times and partition numbers (``simstore.storage.retention``) at their edges: what is
accepted just inside each limit and refused, with its message, just outside; times shown and
stored in UTC whatever the machine's local time zone."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from simstore.errors import InvalidInput, InvalidType
from simstore.storage.retention import (
    EPOCH,
    LATEST,
    MAX_PART,
    format_duration,
    parse_duration,
    partition_of,
    utc_aware,
    utc_naive,
)

PLUS_8 = timezone(timedelta(hours=8))
CENTURY = timedelta(days=36_500)  # the longest duration taken


@pytest.fixture
def local_zone_plus_8(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's local time zone set to UTC+8 (a POSIX TZ string: no zone database needed)."""
    monkeypatch.setenv("TZ", "XST-8")
    time.tzset()
    assert time.localtime(0).tm_hour == 8
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize(
    ("given", "seconds"),
    [
        ("2d", 2 * 86400),
        (" 36H ", 36 * 3600),  # spaces and either case
        ("90m", 90 * 60),
        ("1w", 604800),
        ("1.5h", 5400),
        ("45s", 45),
        (timedelta(minutes=5), 300),
        (90, 90),
        (0.5, 0.5),
        ("36500d", CENTURY.total_seconds()),  # a century exactly: the longest taken
        (CENTURY, CENTURY.total_seconds()),
    ],
)
def test_durations_are_parsed(given: str | timedelta | float, seconds: float) -> None:
    assert parse_duration(given) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("given", "error", "message"),
    [
        (True, InvalidType, "a duration is a timedelta, seconds or text like '2d'"),
        ([1], InvalidType, "a duration is a timedelta, seconds or text, not list"),
        ("2 days", InvalidInput, "not a duration: '2 days' (use e.g. 30m, 12h, 2d, 1w)"),
        ("", InvalidInput, "not a duration: ''"),
        (0, InvalidInput, "a duration must be positive, got 0"),
        ("0s", InvalidInput, "a duration must be positive, got '0s'"),
        (timedelta(microseconds=-1), InvalidInput, "a duration must be positive, got datetime"),
        ("36501d", InvalidInput, "a duration must be at most 36500 days, got '36501d'"),
        (
            CENTURY.total_seconds() + 1,
            InvalidInput,
            "a duration must be at most 36500 days, got 315",
        ),
        (
            CENTURY + timedelta(microseconds=1),
            InvalidInput,
            "a duration must be at most 36500 days",
        ),
        (math.inf, InvalidInput, "a duration must be at most 36500 days, got inf"),
        (math.nan, InvalidInput, "a duration must be at most 36500 days, got nan"),
    ],
)
def test_bad_durations_are_refused_with_what_was_given(
    given: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=f"^{re.escape(message)}"):
        parse_duration(given)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (45, "45s"),
        (60, "1m"),
        (90, "90s"),  # no unit divides it but the second
        (5400, "90m"),
        (3600, "1h"),
        (36 * 3600, "36h"),
        (8 * 86400, "8d"),
        (604800, "1w"),
        (1209600, "2w"),
        (1.5, "1.5s"),
    ],
)
def test_a_duration_is_shown_in_the_largest_unit_that_divides_it(
    seconds: float, shown: str
) -> None:
    assert format_duration(timedelta(seconds=seconds)) == shown
    assert parse_duration(shown) == timedelta(seconds=seconds)  # and reads back


def test_times_are_taken_between_the_epoch_and_9999(local_zone_plus_8: None) -> None:
    assert utc_naive(EPOCH) == EPOCH
    last = LATEST - timedelta(microseconds=1)
    assert utc_naive(last) == last
    for outside in (EPOCH - timedelta(microseconds=1), LATEST):
        with pytest.raises(InvalidInput, match="times must lie between 1970-01-01 and 9999-01-01"):
            utc_naive(outside)
    with pytest.raises(InvalidType, match="a time must be a datetime, not str"):
        utc_naive("2026-03-01")  # type: ignore[arg-type]
    late = datetime(9999, 12, 31, 23, 0, tzinfo=timezone(timedelta(hours=-5)))
    with pytest.raises(InvalidInput, match="cannot be converted to UTC"):
        utc_naive(late)  # past datetime.max in UTC


def test_times_are_utc_whatever_the_local_zone(local_zone_plus_8: None) -> None:
    stored = datetime(2026, 3, 1, 2, 30)  # naive UTC, as the tables hold it
    aware = datetime(2026, 3, 1, 10, 30, tzinfo=PLUS_8)  # the same moment
    assert utc_naive(stored) == stored and utc_naive(aware) == stored
    for moment in (stored, aware):
        shown = utc_aware(moment)
        assert shown == aware and shown.utcoffset() == timedelta(0)
    before = datetime.now(timezone.utc).replace(tzinfo=None)
    now = utc_naive(None)
    assert before <= now <= datetime.now(timezone.utc).replace(tzinfo=None)


def test_the_last_partition_number_is_named_in_its_refusal() -> None:
    for seconds, length in ((60, "1m"), (90, "90s")):
        first_out = EPOCH + timedelta(seconds=(MAX_PART + 1) * seconds)
        with pytest.raises(InvalidInput) as refused:
            partition_of(first_out, seconds)
        said = re.fullmatch(
            rf"time {first_out} is past the last one this store's {length} partitions can "
            r"number \((.+)\); use a longer partition \(e\.g\. 1h\) for such times",
            str(refused.value),
        )
        assert said is not None, refused.value
        last = datetime.fromisoformat(said[1])  # the last time taken, to the second
        assert partition_of(last, seconds) == MAX_PART
        assert last + timedelta(seconds=1) == first_out
