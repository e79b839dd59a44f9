"""What the store answers: matches, decisions and namespace statistics (frozen dataclasses).

Every datetime here is tz-aware, in UTC. The tables hold naive UTC times (SQLite and MySQL have
no time zones), so a time read back is given its zone here, at the boundary of the API.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from simstore.text.encoding import to_hex


@dataclass(frozen=True)
class Match:
    """A kept fingerprint near the one asked about.

    ``measure`` and ``score`` say which exact measure confirmed it (short texts, see
    ``simstore.policy.policies``); both are None when the Hamming distance alone decided.
    """

    key: str
    fingerprint: int
    distance: int
    added_at: datetime
    measure: str | None = None
    score: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "added_at", _aware(self.added_at))

    @property
    def hex(self) -> str:
        return to_hex(self.fingerprint)


@dataclass(frozen=True)
class Decision:
    """The outcome of one add: kept (``inserted``) or a near-duplicate of ``duplicate_of``.

    ``replayed``: the key was added before and this is its recorded decision. ``recorded_as``:
    the key a duplicate was recorded against, also when that kept text has since been removed or
    purged (then ``duplicate_of`` is None).
    """

    key: str
    fingerprint: int
    inserted: bool
    duplicate_of: Match | None = None
    matches: tuple[Match, ...] = field(default=())
    replayed: bool = False
    recorded_as: str | None = None

    @property
    def hex(self) -> str:
        return to_hex(self.fingerprint)


@dataclass(frozen=True)
class Stats:
    """What a namespace holds."""

    namespace: str
    preset: str
    kept: int
    decisions: int
    duplicates: int
    oldest: datetime | None
    newest: datetime | None
    partitions: int
    max_kept: int | None = None  # the namespace's cap (None: none)

    def __post_init__(self) -> None:
        for name in ("oldest", "newest"):
            moment = getattr(self, name)
            object.__setattr__(self, name, None if moment is None else _aware(moment))


def _aware(moment: datetime) -> datetime:
    """A naive UTC time (as the tables hold it) with its zone; an aware one as it is."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Purged:
    """What a purge deleted (``dry_run``: would delete), per table.

    ``before``: the kept rows and decisions of the namespace added before this moment (the start
    of the window rounded down to a partition of ``partition_seconds``) go; ``band_keys`` are
    their MinHash rows. ``partition_rows``: on a partitioned PostgreSQL database, the rows of
    every namespace in the partitions past the database's window, dropped whole. ``evicted``:
    kept rows past the namespace's cap ``max_kept``, oldest first (``keep`` and ``before`` are
    None when a capped namespace has no window).
    """

    keep: timedelta | None
    before: datetime | None
    partition_seconds: int
    fingerprints: int
    decisions: int
    band_keys: int
    partition_rows: int = 0
    dry_run: bool = False
    evicted: int = 0
    max_kept: int | None = None

    @property
    def rows(self) -> int:
        """Kept rows and decisions (the band keys are index rows of the kept ones)."""
        return self.fingerprints + self.decisions + self.partition_rows + self.evicted


def preference(distance: int, added_at: datetime, key: str) -> tuple[Any, ...]:
    """How near matches rank, best first: nearest, then oldest, then by key."""
    return (distance, added_at, key)


def sort_matches(matches: list[Match]) -> list[Match]:
    """Matches best first (``preference``)."""
    if len(matches) < 2:
        return matches
    return sorted(matches, key=lambda match: preference(match.distance, match.added_at, match.key))


@dataclass(frozen=True)
class Search:
    """What ``SimStore.search`` found for a text or fingerprint, and how it looked."""

    fingerprint: int
    max_distance: int
    policy: str  # the policy that decided, as ``Policy.describe`` puts it
    matches: list[Match]

    @property
    def hex(self) -> str:
        return to_hex(self.fingerprint)


@dataclass(frozen=True)
class Judged:
    """One candidate as the policy judged it: matched or refused, and why (``explain``).

    ``measure``/``score``/``threshold``: the measure that decided, the pair's score and the bar
    it had to reach (``"distance"``: the SimHash distance against the radius, where lower
    passes); ``reason`` says it in words: ``"duplicate"``, ``"score under the threshold"``,
    ``"look-alike: ..."``, ``"outside the retention window"``.
    """

    key: str
    fingerprint: int
    distance: int
    added_at: datetime
    measure: str
    score: float
    threshold: float
    reason: str
    matched: bool

    def __post_init__(self) -> None:
        object.__setattr__(self, "added_at", _aware(self.added_at))

    @property
    def hex(self) -> str:
        return to_hex(self.fingerprint)

    @property
    def margin(self) -> float:
        """How far the score stood from its bar (0: on it; a distance counts per bit)."""
        if self.measure == "distance":
            return abs(self.score - self.threshold) / 64
        return abs(self.score - self.threshold)
