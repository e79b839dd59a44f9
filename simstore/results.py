"""What the store answers: matches, decisions and namespace statistics (frozen dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

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
    """The outcome of one add: kept (``inserted``) or a near-duplicate of ``duplicate_of``."""

    key: str
    fingerprint: int
    inserted: bool
    duplicate_of: Match | None = None
    matches: tuple[Match, ...] = field(default=())

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
