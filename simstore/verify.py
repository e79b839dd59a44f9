"""Verifying short texts: SimHash finds candidates at a wider radius, an exact measure decides.

SimHash at k = 3 works for long texts and misses most near-duplicates among short ones (under about
140 characters), whose fingerprints move many bits for a one-word edit; a wider radius alone lets
in look-alikes. So for a short text the store looks at every kept fingerprint within
``short_radius`` bits whose normalised text it kept, and calls it a duplicate when an exact measure
over the two texts reaches ``threshold``. Long texts are decided by the plain radius unless
``long_threshold`` is set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from simstore.errors import InvalidInput
from simstore.similarity import cosine, edit_ratio, jaccard

Measure = Literal["jaccard", "cosine", "edit"]
MEASURES: tuple[Measure, ...] = ("jaccard", "cosine", "edit")


@dataclass(frozen=True)
class Verification:
    """The store's policy for deciding short texts (and, optionally, long ones) exactly."""

    short_length: int = 300  # normalised characters; shorter texts are verified
    short_radius: int = 7  # candidate radius for short texts (<= 7 keeps PostgreSQL's band locks)
    measure: Measure = "jaccard"
    threshold: float = 0.8  # provisional: on the sample corpus 0.8 keeps precision >= 0.96
    long_radius: int | None = None  # None: long texts use the store's max_distance
    long_threshold: float | None = None  # None: long texts are not verified

    def __post_init__(self) -> None:
        if self.measure not in MEASURES:
            raise InvalidInput(f"measure must be one of {MEASURES}, not {self.measure!r}")
        for name in ("threshold", "long_threshold"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise InvalidInput(f"{name} must lie in [0, 1], got {value!r}")
        for name in ("short_length", "short_radius", "long_radius"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise InvalidInput(f"{name} must be a non-negative int, got {value!r}")

    def plan(self, normalised_length: int, max_distance: int) -> tuple[int, float | None]:
        """(candidate radius, threshold or None) for a text of this normalised length."""
        if normalised_length < self.short_length:
            return max(self.short_radius, max_distance), self.threshold
        radius = max_distance if self.long_radius is None else self.long_radius
        return radius, self.long_threshold

    def score(self, a: str, b: str) -> float:
        """Similarity of two normalised texts under the policy's measure."""
        if self.measure == "jaccard":
            return jaccard(a, b, n=3, normalise=False)
        if self.measure == "cosine":
            return cosine(a, b, unit="char", normalise=False)
        return edit_ratio(a, b, normalise=False)
