"""Every datetime the API answers is tz-aware UTC, on every dialect (the tables hold naive UTC)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from simstore.store import SimStore

TEXT = "The harbour ferry timetable changes on Monday: boats leave every twenty minutes."
AT = datetime(2026, 3, 1, 10, 30, tzinfo=timezone(timedelta(hours=8)))  # 02:30 UTC


def test_matches_stats_and_purges_answer_aware_utc_times(
    make_store: Callable[..., SimStore], dialect: str
) -> None:
    store = make_store()
    store.add(TEXT, key="a", at=AT)
    repost = store.add(TEXT + "!", key="b", at=AT + timedelta(minutes=5))
    expected = datetime(2026, 3, 1, 2, 30, tzinfo=timezone.utc)
    assert repost.duplicate_of is not None
    assert repost.duplicate_of.added_at == expected
    assert repost.duplicate_of.added_at.utcoffset() == timedelta(0)
    [match] = store.query(TEXT, now=AT)
    assert match.added_at.tzinfo is not None and match.added_at == expected
    replayed = store.get("b")
    assert replayed is not None and replayed.duplicate_of is not None
    assert replayed.duplicate_of.added_at == expected
    stats = store.stats()
    assert stats.oldest == expected and stats.oldest.tzinfo is not None
    assert stats.newest is not None and stats.newest.tzinfo is not None
    purged = store.purge_counts(keep="1d", now=AT, dry_run=True)
    assert purged is not None and purged.before is not None and purged.before.tzinfo is not None
