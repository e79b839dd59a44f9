"""The policy base: an item to decide, a kept row, ``Policy`` (what every policy must say) and the
two SimHash policies (``SimHashOnly``, ``SimHashVerification``). ``simstore.policy.policies`` is the
public face of this module and of ``_minhash_policy``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, Literal, NamedTuple, TypeVar

from simstore.errors import InvalidInput
from simstore.results import Judged, Match
from simstore.text import minhash
from simstore.text._algorithms import default_normalise
from simstore.text.encoding import bands
from simstore.text.lookalike import (
    NO_CONTEXT,
    Context,
)
from simstore.text.similarity import (
    char_ngrams,
    cosine,
    edit_ratio,
    jaccard,
    jaccard_of_sets,
)
from simstore.validate import check_bool, check_fraction, check_int

Measure = Literal["jaccard", "cosine", "edit"]
Thresholds = tuple[dict[str, tuple[tuple[str, float], ...]], tuple[tuple[str, float], ...]]
"""A policy's lines for a report: ``(label, value)`` score thresholds per measure, then radii."""
_P = TypeVar("_P", bound="Policy")
MEASURES: tuple[Measure, ...] = ("jaccard", "cosine", "edit")
OPENING_ALIGNED = 0.7  # the share of one opening aligned against the whole of the other
# two openings sharing fewer of their words than this are not one template filled in twice
OPENING_SHARED = 0.3


@dataclass
class Item:
    """One text or fingerprint to decide, with what its policy computed for it (``plan``)."""

    key: str
    fingerprint: int
    features: int | None
    radius: int  # SimHash search radius
    text: str | None = None  # the comparison text, kept in the row (short texts)
    threshold: float | None = None  # SimHashVerification: the exact measure must reach this
    normalised: str | None = None  # the text to sign (MinHash), before ``Policy.sign``
    signature: bytes | None = None  # MinHash signature (``simstore.text.minhash``)
    band_keys: tuple[int, ...] = ()  # its distinct LSH band keys, sorted
    planned: bool = False  # whether a policy planned it (else: decided by distance alone)
    mostly_cjk: bool = False  # most of its normalised characters are Chinese or Japanese
    context: Context = NO_CONTEXT  # its names and title (``simstore.text.lookalike``)
    # the keys of its lines set aside as boilerplate (``simstore.policy.boilerplate``)
    boilerplate: frozenset[int] = frozenset()
    whole: Whole | None = None  # what it was before they were set aside
    own_bands: tuple[int, int, int, int] = field(init=False)  # bands(fingerprint), split once

    def __post_init__(self) -> None:
        self.own_bands = bands(self.fingerprint)


class Whole(NamedTuple):
    """A planned item's comparison text and band keys before lines were set aside from it
    (``Policy.set_aside``): it is found by both sets of keys."""

    text: str
    band_keys: tuple[int, ...]


class Kept(NamedTuple):
    """What confirming a kept row (or an earlier item of a batch) needs of it."""

    key: str
    fingerprint: int
    added_at: datetime
    text: str | None
    signature: bytes | None
    whole: str | None = None  # its whole text, when lines were set aside from ``text``


def _score(measure: Measure, a: str, b: str) -> float:
    if measure == "jaccard":
        return jaccard(a, b, n=3, normalise=False)
    if measure == "cosine":
        return cosine(a, b, unit="char", normalise=False)
    return edit_ratio(a, b, normalise=False)


class _Scores:
    """A measure between normalised texts that makes the n-grams of a first text once, however
    often it is compared: one short text can have thousands of candidates in a call."""

    def __init__(self, measure: Measure) -> None:
        self.measure = measure
        self._grams: dict[str, set[str]] = {}

    def __call__(self, a: str, b: str) -> float:
        if self.measure != "jaccard":
            return _score(self.measure, a, b)
        return jaccard_of_sets(self.grams(a), char_ngrams(b, 3))

    def grams(self, text: str) -> set[str]:
        """The character 3-grams of a first text, made once."""
        grams = self._grams.get(text)
        if grams is None:
            grams = self._grams[text] = char_ngrams(text, 3)
        return grams


@functools.lru_cache(maxsize=16)
def _values_for(estimate: float) -> int:
    """The fewest equal signature values whose estimate (``minhash.jaccard``) reaches this."""
    return next(m for m in range(minhash.VALUES + 1) if minhash.jaccard(m) >= estimate)


def _check_measure(measure: object) -> None:
    if measure not in MEASURES:
        raise InvalidInput(f"measure must be one of {MEASURES}, not {measure!r}")


def _judged(
    kept: Kept,
    distance: int,
    measure: str,
    score: float,
    threshold: float,
    reason: str,
    matched: bool = True,
) -> Judged:
    return Judged(
        kept.key,
        kept.fingerprint,
        distance,
        kept.added_at,
        measure,
        round(score, 6),
        threshold,
        reason,
        matched,
    )


def _judged_by_distance(kept: Kept, distance: int, radius: int, matched: bool) -> Judged:
    """A pair the SimHash distance decided, against the radius that decided it."""
    reason = "duplicate" if matched else f"{distance} bits apart, more than {radius}"
    return _judged(kept, distance, "distance", distance, radius, reason, matched)


def _by_distance(item: Item, kept: Kept, distance: int, radius: int) -> Match | None:
    return (
        Match(kept.key, kept.fingerprint, distance, kept.added_at) if distance <= radius else None
    )


RECIPE_VERSION = 2
"""The form of ``Policy.recipe``; a recipe of another form is refused, never guessed at. A
version-1 recipe (simstore 0.4.0) is read with the values the options had before they were
recorded (``policies._BEFORE_OPTION``), so its namespace decides as it always did."""

REGISTERED: dict[str, type[Policy]] = {}
"""simstore's own policy classes by name (``registered``); a recipe names another by its path."""


def class_path(cls: type) -> str:
    """The dotted path a recipe names a policy class by when it is not a registered one."""
    return f"{cls.__module__}.{cls.__qualname__}"


def registered(cls: type[_P]) -> type[_P]:
    """Register one of simstore's own policy classes under its ``name``."""
    REGISTERED[cls.name] = cls
    return cls


class Policy(ABC):
    """What a policy must say: how to plan a text, which rows are candidates, what confirms one."""

    name: ClassVar[str]
    # whether texts are decided by SimHash distance, so that a radius given with a text means
    # something (under MinHash a text is decided by similarity; its radius is for fingerprints)
    decides_texts_by_distance: ClassVar[bool] = True
    min_bands: int = 1  # shared band keys that make two signed texts candidates
    # the MinHash band layout of its texts' keys (``minhash.LAYOUTS``): what ``sign`` makes, and
    # what purge, remove, a hand-over and a kept row's reading recompute from a signature
    minhash_bands: str = minhash.LAYOUT
    # True: a duplicate found moves its kept text to the duplicate's time (``added_at`` and time
    # partition), so retention and a cap drop what has not been seen for the window, not what was
    # first seen long ago (``simstore.storage.expiry``). Each policy declares it as a field, so
    # that the recipe records it.
    expire_by_last_seen: bool = False

    @abstractmethod
    def plan(self, item: Item, text: str, max_distance: int) -> None:
        """Fill in what the policy decides ``item`` (a text) by: radius, comparison text, ..."""

    def sign(self, items: Sequence[Item]) -> None:  # noqa: B027 - optional, a no-op by default
        """Compute what ``plan`` left to a batch pass (signatures); nothing by default."""

    def plan_many(
        self, items: Sequence[Item], texts: Sequence[str], max_distance: int
    ) -> list[Item]:
        """``plan`` each item with its text, then ``sign`` them all in one pass."""
        for item, text in zip(items, texts, strict=True):
            self.plan(item, text, max_distance)
            item.planned = True
        self.sign(items)
        return list(items)

    def plan_kept(self, item: Item, max_distance: int) -> None:  # noqa: B027 - optional
        """Fill in, for a kept row read back as an item (``near_misses``, ``explain``), the
        radius and bars its text was planned with that its row does not hold; the row's
        fingerprint, kept text and signature are there, the radius is the store's."""

    @staticmethod
    def by_radius(item: Item, signature: bytes | None) -> bool:
        """Whether a kept row with this signature is a candidate of ``item`` by SimHash radius:
        only when it has none. A signed row is found by its MinHash band keys alone, so the
        SimHash band indexes leave it out (``schema.SIMHASH_BAND_INDEXES``): a fingerprint, which
        has no band keys, meets only the rows kept without a signature."""
        return signature is None

    def min_shared(self, item: Item) -> int:
        """How many band keys a kept text must share with ``item`` to be its candidate."""
        return self.min_bands

    @property
    def boilerplate_least(self) -> int | None:
        """The texts that must have carried a line before a text for it to be boilerplate there
        (``simstore.policy.boilerplate``); None: the policy keeps no memory of boilerplate."""
        return None

    def set_aside(self, item: Item, common: frozenset[int]) -> bool:
        """Leave the lines of a planned item whose keys are in ``common`` out of what it is
        compared by; whether that changed it (it must be signed again). Nothing by default."""
        return False

    def least_equal_values(self) -> int | None:
        """The fewest MinHash signature values two signed texts can share and still match (a bar
        under every rule of the policy: a kept row below it is passed over unconfirmed); None
        when the policy has no such bar."""
        return None

    def is_candidate(self, item: Item, kept: Item, shared_band_keys: int) -> bool:
        """Whether an earlier ``kept`` item is a candidate of ``item`` (the store's rule, for
        candidates found without the database: ``simstore.policy.batch``, in-batch items)."""
        if item.band_keys and kept.band_keys and shared_band_keys >= self.min_shared(item):
            return True
        distance = (item.fingerprint ^ kept.fingerprint).bit_count()
        return distance <= item.radius and self.by_radius(item, kept.signature)

    def confirm(self, item: Item, kept: Kept, max_distance: int) -> Match | None:
        """The Match if candidate ``kept`` is a near-duplicate of ``item`` (window checked by the
        caller), with the measure and score that decided; None otherwise."""
        distance = (kept.fingerprint ^ item.fingerprint).bit_count()
        if not item.planned:
            return _by_distance(item, kept, distance, item.radius)
        return self._confirm(item, kept, distance, max_distance)

    def confirm_many(
        self, items: Sequence[Item], kept: Sequence[Kept], max_distance: int
    ) -> list[Match | None]:
        """``confirm`` over aligned pairs (``items[i]`` against ``kept[i]``)."""
        return [self.confirm(a, b, max_distance) for a, b in zip(items, kept, strict=True)]

    def judge(self, item: Item, kept: Kept, max_distance: int) -> Judged:
        """``confirm`` with its reasons, for people (``SimStore.near_misses``): the verdict is
        ``confirm``'s own; the measure, score, bar and reason say why. A pair matched by a
        measure is shown against ``item.threshold``, the bar that measure had to reach (a policy
        whose bar is another overrides this, as ``MinHashVerification`` does); a pair decided by
        distance against ``item.radius``."""
        match = self.confirm(item, kept, max_distance)
        distance = (kept.fingerprint ^ item.fingerprint).bit_count()
        if match is not None and match.measure is not None and match.score is not None:
            # the bar, not the score: a score on its own bar would show every match at margin 0
            bar = match.score if item.threshold is None else item.threshold
            return _judged(kept, distance, match.measure, match.score, bar, "duplicate")
        return _judged_by_distance(kept, distance, item.radius, match is not None)

    @abstractmethod
    def _confirm(self, item: Item, kept: Kept, distance: int, max_distance: int) -> Match | None:
        """``confirm`` for a planned item."""

    @abstractmethod
    def describe(self, max_distance: int) -> str:
        """One line for people: the policy and its thresholds."""

    def thresholds(self, max_distance: int) -> Thresholds:
        """The lines a report draws: score thresholds per measure, then the SimHash radii that
        decide by distance alone, each as ``(label, value)``."""
        return {}, (("radius", max_distance),)

    def recipe(self) -> str:
        """The policy with every parameter, as the canonical, versioned JSON a namespace records
        (``policy_from_recipe`` makes the policy again)."""
        name = self.name if REGISTERED.get(self.name) is type(self) else class_path(type(self))
        params = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        return json.dumps(
            {"policy": name, "recipe": RECIPE_VERSION, "params": params},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )


@registered
@dataclass(frozen=True)
class SimHashOnly(Policy):
    """Plain SimHash: a kept fingerprint within the store's ``max_distance`` bits is a duplicate.

    A text with fewer than ``min_features`` features (see ``simstore.analyze``) matches only at
    distance 0, i.e. (barring hash collisions) the same normalised content: without that rule all
    near-empty texts would sit a few bits apart and match each other by accident.
    """

    name: ClassVar[str] = "simhash"
    min_features: int = 3
    expire_by_last_seen: bool = False  # see Policy.expire_by_last_seen

    def __post_init__(self) -> None:
        check_int("min_features", self.min_features, lowest=0)
        check_bool("expire_by_last_seen", self.expire_by_last_seen)

    def plan(self, item: Item, text: str, max_distance: int) -> None:
        near_empty = item.features is not None and item.features < self.min_features
        item.radius = 0 if near_empty else max_distance

    def _confirm(self, item: Item, kept: Kept, distance: int, max_distance: int) -> Match | None:
        return _by_distance(item, kept, distance, item.radius)

    def describe(self, max_distance: int) -> str:
        return f"simhash (distance <= {max_distance})"


@registered
@dataclass(frozen=True)
class SimHashVerification(Policy):
    """SimHash only, short texts (and optionally long ones) confirmed by an exact measure.

    SimHash at k = 3 misses most near-duplicates among short texts (a one-word edit moves many
    bits), and a wider radius alone lets in look-alikes. So a text shorter than ``short_length``
    normalised characters looks at every kept fingerprint within ``short_radius`` bits whose
    normalised text was kept, and is a duplicate when ``measure`` over the two texts reaches
    ``threshold``. Long texts are decided by the store's radius unless ``long_threshold`` is set.
    """

    name: ClassVar[str] = "simhash-verified"
    short_length: int = 300  # normalised characters; shorter texts are verified
    short_radius: int = 7  # candidate radius for short texts (<= 7 keeps PostgreSQL's band locks)
    measure: Measure = "jaccard"
    threshold: float = 0.8  # on the sample corpus 0.8 keeps precision >= 0.96
    long_radius: int | None = None  # None: long texts use the store's max_distance
    long_threshold: float | None = None  # None: long texts are not verified
    expire_by_last_seen: bool = False  # see Policy.expire_by_last_seen

    def __post_init__(self) -> None:
        check_bool("expire_by_last_seen", self.expire_by_last_seen)
        _check_measure(self.measure)
        check_fraction("threshold", self.threshold)
        check_fraction("long_threshold", self.long_threshold)
        for name in ("short_length", "short_radius", "long_radius"):
            check_int(name, getattr(self, name), lowest=0, optional=name == "long_radius")

    def radius_and_threshold(
        self, normalised_length: int, max_distance: int
    ) -> tuple[int, float | None]:
        """(candidate radius, threshold or None) for a text of this normalised length."""
        if normalised_length < self.short_length:
            return max(self.short_radius, max_distance), self.threshold
        radius = max_distance if self.long_radius is None else self.long_radius
        return radius, self.long_threshold

    def plan(self, item: Item, text: str, max_distance: int) -> None:
        normalised = default_normalise(text)
        item.radius, item.threshold = self.radius_and_threshold(len(normalised), max_distance)
        item.text = normalised if item.threshold is not None else None

    def plan_kept(self, item: Item, max_distance: int) -> None:
        # a row keeps its normalised text exactly when it was verified (``plan``): its length
        # gives the radius and bar it was decided by
        if item.text is not None:
            item.radius, item.threshold = self.radius_and_threshold(len(item.text), max_distance)

    def score(self, a: str, b: str) -> float:
        """Similarity of two normalised texts under the policy's measure."""
        return _score(self.measure, a, b)

    def _confirm(self, item: Item, kept: Kept, distance: int, max_distance: int) -> Match | None:
        if distance > item.radius:
            return None
        if item.threshold is None:
            return _by_distance(item, kept, distance, item.radius)
        if kept.text is None or item.text is None:
            # nothing to compare with (kept from a fingerprint or as a long text): distance rules
            return _by_distance(item, kept, distance, max_distance)
        score = self.score(item.text, kept.text)
        if score < item.threshold:
            return None
        return Match(
            kept.key, kept.fingerprint, distance, kept.added_at, self.measure, round(score, 6)
        )

    def judge(self, item: Item, kept: Kept, max_distance: int) -> Judged:
        judged = super().judge(item, kept, max_distance)
        distance = judged.distance
        if item.threshold is None:
            return judged  # not verified: the distance decided, at the item's radius
        if kept.text is None or item.text is None:
            # nothing to compare: the distance decides at the store's radius (``_confirm``),
            # not at the wider radius the item's candidates are found within
            return _judged_by_distance(kept, distance, max_distance, judged.matched)
        if judged.matched or distance > item.radius:
            return judged
        score = self.score(item.text, kept.text)
        reason = "score under the threshold"
        return _judged(kept, distance, self.measure, score, item.threshold, reason, False)

    def describe(self, max_distance: int) -> str:
        return (
            f"simhash-verified (short texts: distance <= {max(self.short_radius, max_distance)}, "
            f"{self.measure} >= {self.threshold}; long: distance <= {max_distance})"
        )

    def thresholds(self, max_distance: int) -> Thresholds:
        scored = [("short texts", self.threshold)]
        if self.long_threshold is not None:
            scored.append(("long texts", self.long_threshold))
        long_radius = max_distance if self.long_radius is None else self.long_radius
        short_radius = max(self.short_radius, max_distance)
        radii: list[tuple[str, float]] = [("short-text candidates", short_radius)]
        if long_radius != short_radius:
            radii.append(("long texts", long_radius))
        return {self.measure: tuple(scored)}, tuple(radii)
