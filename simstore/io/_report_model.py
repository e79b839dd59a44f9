"""The report's data: what ``simstore.io.report.gather`` reads and ``_report_html`` draws.

Plain frozen dataclasses and the page's constants, so that gathering and rendering each import
them and not each other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from simstore.results import Judged

SCORE_BINS = 100  # score histograms: bins of 0.01
DISTANCE_MEASURE = "distance"  # how the page names decisions made by SimHash distance alone
MAX_SAMPLE = 10_000  # near-threshold pairs on one page at the most
TEXT_CHARACTERS = 3_000  # each side of a pair is cut to this many characters

Texts = Mapping[str, str] | Callable[[frozenset[str]], Mapping[str, str]]
"""Source texts by key: a mapping, or a function given the keys wanted that returns theirs."""

NearMisses = Callable[[str], Sequence[Judged]]
"""A kept key's candidates as the policy judges them, nearest its bars first
(``SimStore.near_misses``)."""


@dataclass(frozen=True)
class Threshold:
    """A line drawn on a histogram: what it is for and where it lies."""

    label: str
    value: float


@dataclass(frozen=True)
class Day:
    """One day's decisions (by ``date(decided_at)``, UTC)."""

    day: str
    kept: int
    duplicates: int


@dataclass(frozen=True)
class Histogram:
    """Counts of the duplicates of one measure per bin of ``unit`` (score or distance)."""

    measure: str
    unit: str  # "score" (bins of 1/SCORE_BINS) or "distance" (whole bits)
    counts: dict[int, int]  # bin -> duplicates; a score bin b holds [b, b + 1) / SCORE_BINS
    thresholds: tuple[Threshold, ...]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class Measure:
    """How many duplicates one measure decided, and their score range."""

    measure: str
    duplicates: int
    lowest: float | None
    highest: float | None


@dataclass(frozen=True)
class Cluster:
    """A kept key with the duplicates recorded against it (``size`` counts the kept text)."""

    key: str
    size: int
    kept_at: datetime | None  # None: the kept row has since been removed or purged
    last_at: datetime
    text: str | None  # the kept normalised text (short texts), else None


@dataclass(frozen=True)
class Near:
    """A duplicate decision near a threshold, with what is known of its two texts."""

    key: str
    duplicate_of: str
    decided_at: datetime
    distance: int | None
    measure: str  # DISTANCE_MEASURE when the distance alone decided
    score: float | None
    threshold: Threshold
    margin: float  # how far inside (> 0) or outside (< 0) the threshold, in its own unit
    kept_text: str | None = None  # the normalised text the store kept for duplicate_of
    kept_row: bool = False  # whether duplicate_of still has a kept row
    source_kept: str | None = None  # from ``texts``, normalised as the policy compares
    source_new: str | None = None


@dataclass(frozen=True)
class Refused:
    """A kept text's nearest candidate that the policy refused, and why (``near_misses``)."""

    key: str  # the kept text
    candidate: str  # the earlier kept text it was not merged with
    measure: str  # DISTANCE_MEASURE when the distance decided
    score: float
    threshold: float
    reason: str
    added_at: datetime
    kept_text: str | None = None  # the candidate's normalised text, where the store keeps it
    new_text: str | None = None  # the kept text's own
    merged_by: str | None = None  # the option change that would have merged them (or none found)
    source_kept: str | None = None  # from ``texts``, normalised as the policy compares
    source_new: str | None = None


@dataclass(frozen=True)
class Report:
    """Everything the page shows, gathered by ``gather``."""

    namespace: str
    database: str  # the URL, password redacted
    preset: str
    policy: str
    generated_at: datetime
    since: datetime | None
    kept_rows: int  # rows in simstore_fingerprints (added since ``since``)
    kept_with_text: int  # of those, how many keep their normalised text
    decisions: int
    kept: int  # decisions that kept the text
    duplicates: int
    orphaned: int  # duplicates whose kept row has since been removed or purged
    days: tuple[Day, ...]
    measures: tuple[Measure, ...]
    histograms: tuple[Histogram, ...]
    clusters: tuple[Cluster, ...]
    nearest: tuple[Near, ...]
    sample: int
    texts_given: bool
    refused: tuple[Refused, ...] = ()  # kept texts' candidates refused nearest a threshold
    probed: int = 0  # how many kept texts were looked at for ``refused``

    def explain_command(self, key: str) -> str:
        """The command that shows a decision again."""
        import shlex

        namespace = (
            "" if self.namespace == "default" else f"--namespace {shlex.quote(self.namespace)} "
        )
        return f"simstore {namespace}explain {shlex.quote(key)}"
