"""Exact similarity measures used to verify SimHash candidates (short texts above all).

All scores lie in [0, 1], 1 meaning identical. Texts are compared after the default normalisation
(NFKC, casefold, punctuation dropped) unless ``normalise=False``.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Literal, NamedTuple

from rapidfuzz.distance import OSA, Indel, Levenshtein

from simstore.errors import InvalidInput, InvalidType
from simstore.text._algorithms import default_normalise


def _text(value: object, normalise: bool) -> str:
    if not isinstance(value, str):
        raise InvalidType(f"expected a str, not {type(value).__name__}")
    return default_normalise(value) if normalise else value


_SLICED_GRAMS = 1024  # texts of up to this many n-grams take them through prepared slices


@functools.lru_cache(maxsize=8)
def _gram_slices(n: int) -> list[slice]:
    return [slice(i, i + n) for i in range(_SLICED_GRAMS)]


def char_ngrams(text: str, n: int = 3) -> set[str]:
    """The set of character n-grams of ``text`` (the whole text when it is shorter than n)."""
    if n < 1:
        raise InvalidInput(f"n must be at least 1, got {n}")
    if len(text) <= n:
        return {text} if text else set()
    count = len(text) - n + 1
    if count <= _SLICED_GRAMS:
        # ~3x faster than the comprehension below: a short text's exact check runs once for
        # each of its candidates, and a short text can have thousands
        return set(map(text.__getitem__, _gram_slices(n)[:count]))
    return {text[i : i + n] for i in range(count)}


def jaccard(a: str, b: str, *, n: int = 3, normalise: bool = True) -> float:
    """Jaccard similarity of the character n-gram sets of two texts (two empty texts score 1)."""
    return jaccard_of_sets(char_ngrams(_text(a, normalise), n), char_ngrams(_text(b, normalise), n))


def jaccard_of_sets(left: set[str], right: set[str]) -> float:
    """Jaccard similarity of two sets (two empty sets score 1); the union is counted, not built."""
    if not left and not right:
        return 1.0
    shared = len(left & right)
    return shared / (len(left) + len(right) - shared)


def containment_of_sets(left: set[str], right: set[str]) -> float:
    """How much of the smaller set the other holds: |A & B| / min(|A|, |B|) (Broder 1997's
    containment of the smaller in the bigger); two empty sets score 1, one empty set 0."""
    if not left or not right:
        return float(not left and not right)
    smaller, bigger = (left, right) if len(left) <= len(right) else (right, left)
    return len(smaller & bigger) / len(smaller)


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


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
_TOKENS = re.compile(r"\d+|[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]|[^\W\d_]+")
_TOKEN_KINDS = re.compile(r"(\d+)|([\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff])|([^\W\d_]+)")


def tokens(text: str) -> list[str]:
    """Words of a normalised text: digit runs, single CJK characters, runs of other letters."""
    return _TOKENS.findall(text)


_CJK_NUMERALS = frozenset("〇零一二两三四五六七八九十百千万亿")


TYPO = 0.75  # a typo: within one edit (optimal string alignment) in four of the other word
TYPO_LENGTH = 4  # ... where the words hold at least this many characters


def _is_typo(a: Sequence[str], b: Sequence[str], lenient: bool = True) -> bool:
    """Whether two token runs (the two sides of a gap) differ only by typos, small edits inside
    words, not by a word put in place of another:

    - one Chinese or Japanese character for another (not a numeral: 三 for 五 is a new number);
    - words of at least four letters each within one edit in four of each other (as before);
    - other letters (no digit, no CJK): the runs, joined by spaces, two neighbouring letters
      swapped (``teh``), a letter dropped or doubled where the longer holds four (``thee``), or
      within one edit (optimal string alignment) in four when the longer holds four characters
      (a swap across a space: ``th ecat`` for ``the cat``). ``Tom`` for ``Tim``, ``she`` for
      ``he`` are words put in place of others.

    ``lenient`` False keeps only the second rule (simstore 0.3's).
    """
    if lenient and len(a) == len(b) == 1 and _is_cjk(a[0]) and _is_cjk(b[0]):
        return a[0] not in _CJK_NUMERALS and b[0] not in _CJK_NUMERALS
    if len(a) == len(b) and all(
        len(x) >= TYPO_LENGTH and len(y) >= TYPO_LENGTH and OSA.normalized_similarity(x, y) >= TYPO
        for x, y in zip(a, b, strict=True)
    ):
        return True
    if not lenient or any(_is_cjk(t) or t.isdigit() for t in (*a, *b)):
        return False
    left, right = " ".join(a), " ".join(b)
    edits = OSA.distance(left, right, score_cutoff=2)
    if edits == 1 and (
        Levenshtein.distance(left, right) == 2  # two neighbours swapped
        or (len(left) != len(right) and max(len(left), len(right)) >= 4)  # a letter dropped
    ):
        return True
    return (
        max(len(left), len(right)) >= TYPO_LENGTH and OSA.normalized_similarity(left, right) >= TYPO
    )


def _is_cjk(token: str) -> bool:
    return len(token) == 1 and bool(_CJK.match(token))


def replacements(a: str, b: str, *, typos: bool = True) -> tuple[int, bool]:
    """How two normalised texts differ by substitution: how many words of one stand in place of
    other words of the other (a run of CJK characters counts as one word; typos, insertions and
    deletions are not substitutions; ``typos`` False: only 0.3's narrower typo rule, see
    ``_is_typo``), and whether one text has a number the other lacks while
    the other has a number the first lacks (a number replaced).

    The places are the gaps between the blocks of a longest common subsequence of the two token
    lists where both sides hold tokens (rapidfuzz, bit-parallel): a short text in a cluster of
    near-duplicates is checked against each of its matches, and difflib's alignment was ~80% of
    such a query's time at 10M kept texts.
    """
    left, right = _tokenised(a), _tokenised(b)
    only_left = _excess(left.counts, right.counts)
    only_right = _excess(right.counts, left.counts)
    numbers = any(t.isdigit() for t in only_left) and any(t.isdigit() for t in only_right)
    unmatched = min(sum(only_left.values()), sum(only_right.values()))
    if unmatched == 0:  # only insertions, deletions or a new order: nothing stands in
        return 0, numbers
    if unmatched == 1 and len(only_left) == len(only_right) == 1:  # one word for another
        return (0 if _is_typo(list(only_left), list(only_right), typos) else 1), numbers
    replaced = 0
    end_left = end_right = 0
    for block in Indel.editops(left.tokens, right.tokens).as_matching_blocks():
        # a gap holding tokens on both sides: a substitution, unless it is typos
        if block.a > end_left and block.b > end_right:
            gap_left = left.tokens[end_left : block.a]
            if not _is_typo(gap_left, right.tokens[end_right : block.b], typos):
                words_old = left.words_before[block.a] - left.words_before[end_left]
                words_new = right.words_before[block.b] - right.words_before[end_right]
                replaced += min(words_old, words_new) or 1
        end_left, end_right = block.a + block.size, block.b + block.size
    return replaced, numbers


class _Tokenised(NamedTuple):
    """A normalised text's ``tokens``, how often each occurs, and for each place how many
    tokens before it are words (not single CJK characters): a gap's words are a subtraction."""

    tokens: tuple[str, ...]
    counts: dict[str, int]
    words_before: tuple[int, ...]


@functools.lru_cache(maxsize=256)
def _tokenised(text: str) -> _Tokenised:
    """A text's ``_Tokenised`` (a query's, once for all its matches); tuples, since the cache
    hands the same value to every caller."""
    # _TOKENS with its three kinds as groups: a token is a word unless it is a CJK character
    # (told by the match, not a call per token: a thousand-character Chinese text is a thousand)
    grouped = _TOKEN_KINDS.findall(text)
    found = tuple(digits or cjk or letters for digits, cjk, letters in grouped)
    words_before = (0, *itertools.accumulate(not cjk for _digits, cjk, _letters in grouped))
    return _Tokenised(found, Counter(found), words_before)


def _excess(counts: dict[str, int], other: dict[str, int]) -> dict[str, int]:
    """``Counter(counts) - Counter(other)``: the tokens ``counts`` holds more often."""
    held = other.get
    return {
        token: count - held(token, 0) for token, count in counts.items() if count > held(token, 0)
    }
