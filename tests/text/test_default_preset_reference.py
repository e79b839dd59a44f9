"""simstore-v1 against a small independent implementation written from its documented steps.

INDEPENDENT: the reference below imports nothing from simstore. It is written in plain Python
integers from the preset's description (simstore/text/presets.py, _algorithms.py): NFKC, casefold,
the runs of word characters joined by one space; character 4-grams of that string (a shorter
non-empty string is one feature); each feature hashed by folding its code points into splitmix64
from a fixed seed; one vote per occurrence; a bit is set when its sum of +1/-1 votes is positive.
It shares no code with simstore's numpy path, so a change to either shows up here.
"""

from __future__ import annotations

import re
import unicodedata

import pytest

from simstore import fingerprint, fingerprint_many

MASK = (1 << 64) - 1
SEED = 0x5EED5EED5EED5EED
GOLDEN = 0x9E3779B97F4A7C15  # splitmix64's increment (Steele, Lea, Flood 2014)
NGRAM = 4


def splitmix64(state: int) -> int:
    """One splitmix64 step: advance the state by the golden increment, then finalise it."""
    z = (state + GOLDEN) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def normalise(text: str) -> str:
    return " ".join(re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold()))


def feature_hash(feature: str) -> int:
    value = SEED
    for char in feature:
        value = splitmix64(value ^ ord(char))
    return value


def reference(text: str) -> int:
    content = normalise(text)
    if not content:
        return 0
    if len(content) < NGRAM:
        features = [content]
    else:
        features = [content[i : i + NGRAM] for i in range(len(content) - NGRAM + 1)]
    sums = [0] * 64
    for feature in features:
        value = feature_hash(feature)
        for bit in range(64):
            sums[bit] += 1 if value >> bit & 1 else -1
    return sum(1 << bit for bit in range(64) if sums[bit] > 0)


TEXTS = [
    "abc",  # shorter than one 4-gram: one feature, the whole string
    "abcd",
    "Hello, World!",
    "The quick brown fox jumps over the lazy dog.",
    "STRASSE Straße",  # casefold: ß is ss
    "ＡＢＣＤ　ｅｆ１２",  # NFKC: fullwidth letters, digits and space
    "今天天气很好",
    "今天天气很好，我们一起去公园散步。",
    "中文和English混合 text 123",
    "naïve café – résumé…",
]


@pytest.mark.parametrize("text", TEXTS)
def test_simstore_v1_equals_the_independent_reference(text: str) -> None:
    assert fingerprint(text) == reference(text)
    assert fingerprint(text, preset="simstore-v1") == reference(text)


def test_the_batch_path_equals_the_reference_too() -> None:
    """Many texts at once go through simstore's batch code (one joined numpy pass)."""
    assert fingerprint_many(TEXTS * 2) == [reference(text) for text in TEXTS * 2]


def test_the_reference_is_not_trivial() -> None:
    """The vectors are distinct and far from 0, so agreement means something."""
    values = [reference(text) for text in TEXTS]
    assert len(set(values)) == len(values)
    assert all(16 <= value.bit_count() <= 48 for value in values)
