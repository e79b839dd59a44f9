"""Verification policies: where a store's candidates come from, and what decides them.

``MinHashVerification`` (the default) finds candidates of every text through MinHash-LSH band
keys and decides them by similarity; see its docstring. ``Verification``, below, is the older
SimHash-only policy, kept for stores that want no side table.

SimHash at k = 3 works for long texts and misses most near-duplicates among short ones (under about
140 characters), whose fingerprints move many bits for a one-word edit; a wider radius alone lets
in look-alikes. So under ``Verification`` the store looks, for a short text, at every kept
fingerprint within ``short_radius`` bits whose normalised text it kept, and calls it a duplicate
when an exact measure over the two texts reaches ``threshold``. Long texts are decided by the
plain radius unless ``long_threshold`` is set. That recovers only part of the short
near-duplicates (wide radii cost hundreds of seeks), hence the MinHash default.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from simstore._algorithms import default_normalise
from simstore.errors import InvalidInput
from simstore.similarity import cosine, edit_ratio, jaccard

Measure = Literal["jaccard", "cosine", "edit"]
MEASURES: tuple[Measure, ...] = ("jaccard", "cosine", "edit")


@dataclass(frozen=True)
class Verification:
    """SimHash-only policy: short texts (and optionally long ones) decided exactly."""

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
            _check_fraction(name, getattr(self, name))
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
        return _score(self.measure, a, b)


def _check_fraction(name: str, value: float | None) -> None:
    if value is not None and not 0.0 <= value <= 1.0:
        raise InvalidInput(f"{name} must lie in [0, 1], got {value!r}")


def _score(measure: Measure, a: str, b: str) -> float:
    if measure == "jaccard":
        return jaccard(a, b, n=3, normalise=False)
    if measure == "cosine":
        return cosine(a, b, unit="char", normalise=False)
    return edit_ratio(a, b, normalise=False)


@dataclass(frozen=True)
class MinHashVerification:
    """The default policy: MinHash-LSH finds candidates of every text, a similarity decides.

    Every text gets a MinHash signature over its character 5-grams (``simstore.minhash``), kept
    in its row, and 24 band keys, kept in ``simstore_minhash``. A kept text with a signature is a
    candidate when it shares at least ``min_bands`` band keys with the new one; a row without one
    (kept from a fingerprint, or before simstore 0.2) when it lies within the store's SimHash
    radius, and then the distance decides. When both texts are shorter than ``short_length``
    normalised characters (their texts are kept), a candidate whose signature estimate reaches
    ``prefilter`` is decided by the exact ``measure`` (Jaccard over character 3-grams by default)
    >= ``threshold``; otherwise by the signature's estimate of the 5-gram Jaccard similarity >=
    ``long_threshold``. Defaults measured on ``benchmarks/quality``: F1 >= 0.96 in every group,
    precision ~1.0.
    """

    short_length: int = 300
    measure: Measure = "jaccard"
    threshold: float = 0.55
    prefilter: float = 0.35
    long_threshold: float = 0.55
    min_bands: int = 2
    strip_social: bool = False  # drop URLs, @mentions and repost markers before comparing
    fold_traditional: bool = False  # compare traditional Chinese as simplified (OpenCC, [zh])

    def __post_init__(self) -> None:
        if self.measure not in MEASURES:
            raise InvalidInput(f"measure must be one of {MEASURES}, not {self.measure!r}")
        for name in ("threshold", "prefilter", "long_threshold"):
            _check_fraction(name, getattr(self, name))
        for name, lowest in (("short_length", 0), ("min_bands", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
                raise InvalidInput(f"{name} must be an int >= {lowest}, got {value!r}")
        for name in ("strip_social", "fold_traditional"):
            if not isinstance(getattr(self, name), bool):
                raise InvalidInput(f"{name} must be True or False")
        if self.fold_traditional:
            _traditional_folder()  # fail now, not at the first add, when OpenCC is missing

    def score(self, a: str, b: str) -> float:
        """Similarity of two normalised texts under the policy's exact measure."""
        return _score(self.measure, a, b)

    def prepare(self, text: str) -> str:
        """The text as the policy compares it (before simstore's normalisation): social-media
        markers stripped and traditional characters folded, when asked. A text that would be left
        empty is kept whole, so that two bare links never look identical."""
        prepared = text
        if self.strip_social:
            prepared = _SOCIAL.sub(" ", prepared)
        if self.fold_traditional:
            prepared = _traditional_folder()(prepared)
        return prepared if default_normalise(prepared) else text


# Social-media markers that say nothing about the content: links, repost and reply markers
# ("RT @a:", "via @a", "//@a:", "转发微博", "回复@a:") and @mentions (not an e-mail address).
_SOCIAL = re.compile(
    r"https?://\S+|www\.\S+"
    r"|(?:\bRT\b|\bvia\b|//|回复)?\s*(?<![A-Za-z0-9._%+\-])@[\w.\-]+[:：]?"
    r"|\bRT\b[:：]?|转发(?:微博)?[:：]?",
    re.IGNORECASE,
)


@functools.cache
def _traditional_folder() -> Callable[[str], str]:
    try:
        import opencc
    except ImportError:
        raise InvalidInput("fold_traditional needs OpenCC: pip install 'simstore[zh]'") from None
    convert: Callable[[str], str] = opencc.OpenCC("t2s").convert
    return convert


Policy = Verification | MinHashVerification
