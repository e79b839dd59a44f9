"""What the store answers: matches, decisions and namespace statistics (frozen dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from simstore.encoding import to_hex


@dataclass(frozen=True)
class Match:
    """A kept fingerprint near the one asked about.

    ``measure`` and ``score`` say which exact measure confirmed it (short texts, see
    ``simstore.verify``); both are None when the Hamming distance alone decided.
    """

    key: str
    fingerprint: int
    distance: int
    added_at: datetime
    measure: str | None = None
    score: float | None = None

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
