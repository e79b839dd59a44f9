"""Exact similarity measures used to verify SimHash candidates (short texts above all).

All scores lie in [0, 1], 1 meaning identical. Texts are compared after the default normalisation
(NFKC, casefold, punctuation dropped) unless ``normalise=False``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from rapidfuzz.distance import Levenshtein

from simstore._algorithms import default_normalise
from simstore.errors import InvalidInput, InvalidType


def _text(value: object, normalise: bool) -> str:
    if not isinstance(value, str):
        raise InvalidType(f"expected a str, not {type(value).__name__}")
    return default_normalise(value) if normalise else value


def char_ngrams(text: str, n: int = 3) -> set[str]:
    """The set of character n-grams of ``text`` (the whole text when it is shorter than n)."""
    if n < 1:
        raise InvalidInput(f"n must be at least 1, got {n}")
    if len(text) <= n:
        return {text} if text else set()
    return {text[i : i + n] for i in range(len(text) - n + 1)}


def jaccard(a: str, b: str, *, n: int = 3, normalise: bool = True) -> float:
    """Jaccard similarity of the character n-gram sets of two texts (two empty texts score 1)."""
    left, right = char_ngrams(_text(a, normalise), n), char_ngrams(_text(b, normalise), n)
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


def cosine_vectors(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of two equal-length vectors (0 when either is all zeros)."""
    if len(a) != len(b):
        raise InvalidInput(f"vectors differ in length: {len(a)} and {len(b)}")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0


def cosine(
    a: str, b: str, *, unit: Literal["word", "char"] = "word", normalise: bool = True
) -> float:
    """Cosine similarity of the term-frequency vectors of two texts, over words or characters."""
    left, right = _text(a, normalise), _text(b, normalise)
    if unit == "word":
        counts_a, counts_b = Counter(left.split()), Counter(right.split())
    elif unit == "char":
        counts_a = Counter(left.replace(" ", "") if normalise else left)
        counts_b = Counter(right.replace(" ", "") if normalise else right)
    else:
        raise InvalidInput(f"unit must be 'word' or 'char', not {unit!r}")
    if not counts_a and not counts_b:
        return 1.0
    terms = sorted(counts_a.keys() | counts_b.keys())
    return cosine_vectors([counts_a[t] for t in terms], [counts_b[t] for t in terms])


def edit_ratio(a: str, b: str, *, normalise: bool = True) -> float:
    """1 - Levenshtein distance / length of the longer text (rapidfuzz); two empty texts score 1."""
    return float(Levenshtein.normalized_similarity(_text(a, normalise), _text(b, normalise)))
