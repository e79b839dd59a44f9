"""The fingerprint algorithms behind the presets. Pure code: no I/O, jieba imported lazily.

Each algorithm maps a batch of texts to ``(fingerprints, feature_counts)``. Features of many texts
are hashed into one uint64 array and summed per bit with numpy (see ``_bitsum``); huge texts are fed
in chunks so memory stays bounded.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from simstore._bitsum import I64, U64, BitSums
from simstore.presets import Preset

if TYPE_CHECKING:
    from jieba.analyse.tfidf import TFIDF

Result = tuple[list[int], list[int]]
CHUNK = 1 << 16  # features hashed and summed per numpy step
_MD5_CACHE_LIMIT = 1 << 18  # distinct windows remembered within one batch call

# --- character windows hashed with MD5 (the PyPI simhash package and seed 000) -----------------

_PYPI_WORD_RUNS = re.compile(r"[\w\u4e00-\u9fcc]+")


def pypi_normalise(text: str) -> str:
    """Lowercase and keep only the runs of ``[\\w\\u4e00-\\u9fcc]``, joined with no separator."""
    return "".join(_PYPI_WORD_RUNS.findall(text.lower()))


def windows(content: str, width: int) -> list[str]:
    """Sliding windows of ``width`` characters; the whole string when it is shorter (even empty)."""
    return [content[i : i + width] for i in range(max(len(content) - width + 1, 1))]


def _md5_low64(feature: str) -> int:
    # surrogatepass: a lone surrogate cannot survive the word filter, but never crash if one does
    digest = hashlib.md5(feature.encode("utf-8", "surrogatepass"), usedforsecurity=False).digest()[
        8:
    ]
    return int.from_bytes(digest, "big")


def _window_weights(count: int, scheme: str) -> list[int]:
    heavy = count // 2 + 1
    if scheme == "pre":
        return [3] * heavy + [1] * (count - heavy)
    return [1] * (count - heavy) + [3] * heavy


def char_window_md5(texts: Sequence[str], preset: Preset) -> Result:
    width = int(preset.params["width"])
    scheme = str(preset.params["weighting"])
    sums = BitSums(len(texts))
    cache: dict[str, int] = {}
    features: list[int] = []
    doc_ids: list[int] = []
    hashes: list[int] = []
    weights: list[int] = []

    def flush() -> None:
        sums.add(
            np.asarray(doc_ids, dtype=np.int64),
            np.asarray(hashes, dtype=np.uint64),
            None if scheme == "count" else np.asarray(weights, dtype=np.int64),
        )
        doc_ids.clear()
        hashes.clear()
        weights.clear()

    for doc, text in enumerate(texts):
        content = pypi_normalise(text)
        features.append(max(len(content) - width + 1, 1) if content else 0)
        for start in range(0, max(len(content) - width + 1, 1), CHUNK):
            piece = content[start : start + CHUNK + width - 1]
            chunk_windows = windows(piece, width)
            if scheme == "count":
                counted: dict[str, int] = Counter(chunk_windows)
                chunk_windows, chunk_weights = list(counted), list(counted.values())
            else:
                total = max(len(content) - width + 1, 1)
                chunk_weights = _window_weights(total, scheme)[start : start + len(chunk_windows)]
            if len(cache) > _MD5_CACHE_LIMIT:
                cache.clear()
            for window, weight in zip(chunk_windows, chunk_weights, strict=True):
                digest = cache.get(window)
                if digest is None:
                    digest = cache[window] = _md5_low64(window)
                if scheme == "count":
                    # a window counted w times is w identical votes: repeat instead of weighting
                    doc_ids.extend([doc] * weight)
                    hashes.extend([digest] * weight)
                else:
                    doc_ids.append(doc)
                    hashes.append(digest)
                    weights.append(weight)
            if len(hashes) >= CHUNK:
                flush()
    flush()
    return sums.fingerprints(), features


# --- the seeds' string hash (a variable-length variant of Python 2's str hash) -----------------


def string_hash(token: str, bits: int = 64) -> int:
    """Seed 001/003's token hash, masked to ``bits`` bits (0 for the empty string)."""
    if not token:
        return 0
    mask = (1 << bits) - 1
    value = ord(token[0]) << 7
    for char in token:
        value = ((value * 1000003) ^ ord(char)) & mask
    return value ^ len(token)


@lru_cache(maxsize=1 << 16)
def _string_hash64(token: str) -> int:
    return string_hash(token, 64)


def token_strhash(texts: Sequence[str], preset: Preset, bits: int = 64) -> Result:
    if bits != 64:
        return _token_strhash_wide(texts, bits)
    sums = BitSums(len(texts))
    features: list[int] = []
    for first in range(0, len(texts), 256):
        doc_ids: list[int] = []
        hashes: list[int] = []
        for doc in range(first, min(first + 256, len(texts))):
            tokens = texts[doc].split()
            features.append(len(tokens))
            for start in range(0, len(tokens), CHUNK):
                piece = tokens[start : start + CHUNK]
                doc_ids.extend([doc] * len(piece))
                hashes.extend(_string_hash64(token) for token in piece)
                if len(hashes) >= CHUNK:
                    sums.add(np.asarray(doc_ids, np.int64), np.asarray(hashes, np.uint64))
                    doc_ids, hashes = [], []
        sums.add(np.asarray(doc_ids, np.int64), np.asarray(hashes, np.uint64))
    return sums.fingerprints(inclusive=True), features


def _token_strhash_wide(texts: Sequence[str], bits: int) -> Result:
    """Any width in plain Python ints, exactly as the seed's Python program computes it."""
    fingerprints, features = [], []
    for text in texts:
        tokens = text.split()
        votes = [0] * bits
        for token in tokens:
            value = string_hash(token, bits)
            for bit in range(bits):
                votes[bit] += 1 if (value >> bit) & 1 else -1
        fingerprints.append(sum(1 << bit for bit in range(bits) if votes[bit] >= 0))
        features.append(len(tokens))
    return fingerprints, features


# --- jieba TF-IDF keywords (seed 001) ----------------------------------------------------------


@lru_cache(maxsize=1)
def _tfidf() -> TFIDF:
    try:
        import jieba
        import jieba.analyse
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError("the jieba-tfidf preset needs jieba: pip install 'simstore[zh]'") from exc
    jieba.setLogLevel(60)  # jieba logs its dictionary loading at INFO through the root handler
    jieba.initialize()
    return jieba.analyse.default_tfidf


@lru_cache(maxsize=1 << 16)
def _recut(segment: str) -> tuple[str, ...]:
    """jieba's words for one segment, as jieba.cut finds them inside the '|'-joined string."""
    return tuple(_tfidf().tokenizer.cut(segment))


def jieba_keywords(text: str, top_k: int) -> list[tuple[str, float]]:
    """``jieba.analyse.extract_tags("|".join(jieba.cut(text)), topK=top_k, withWeight=True)``.

    The seed cuts twice: once for the segments, then again inside extract_tags on the joined
    string. '|' is outside jieba's word-character class, so the second cut of the joined string is
    exactly the concatenation of the cuts of each segment (plus the '|' separators, which
    extract_tags drops as shorter than 2). Cutting each distinct segment once, through a bounded
    cache, gives the same words for the price of a single segmentation.
    """
    extractor = _tfidf()
    frequencies: dict[str, float] = {}
    for segment in extractor.tokenizer.cut(text):
        for word in _recut(segment):
            if len(word.strip()) < 2 or word.lower() in extractor.stop_words:
                continue
            frequencies[word] = frequencies.get(word, 0.0) + 1.0
    total = sum(frequencies.values())
    for word in frequencies:
        frequencies[word] *= extractor.idf_freq.get(word, extractor.median_idf) / total
    ranked = sorted(frequencies, key=frequencies.__getitem__, reverse=True)
    return [(word, frequencies[word]) for word in ranked[:top_k]]


def jieba_tfidf(texts: Sequence[str], preset: Preset) -> Result:
    top_k = int(preset.params["top_k"])
    fingerprints, features = [], []
    for text in texts:
        keywords = jieba_keywords(text, top_k)
        votes = [0.0] * 64
        for word, weight in keywords:
            value = _string_hash64(word)
            for bit in range(64):
                votes[bit] += weight if (value >> bit) & 1 else -weight
        fingerprints.append(sum(1 << bit for bit in range(64) if votes[bit] > 0))
        features.append(len(keywords))
    return fingerprints, features


# --- simstore's own default: character n-grams with a splitmix64 hash, all in numpy -------------

_WORD_RUNS = re.compile(r"\w+")
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_SEED = 0x5EED5EED5EED5EED


def default_normalise(text: str) -> str:
    """NFKC, casefold, then the runs of word characters joined by single spaces."""
    return " ".join(_WORD_RUNS.findall(unicodedata.normalize("NFKC", text).casefold()))


def _splitmix(values: U64) -> U64:
    with np.errstate(over="ignore"):
        z = values + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        return z ^ (z >> np.uint64(31))  # type: ignore[no-any-return]


def _ngram_hashes(codepoints: U64, n: int, count: int) -> U64:
    """Hashes of the ``count`` n-grams starting at positions 0..count-1 of ``codepoints``."""
    hashes = np.full(count, _SEED, dtype=np.uint64)
    for offset in range(n):
        hashes = _splitmix(hashes ^ codepoints[offset : offset + count])
    return hashes


def _ngram_chunks(normalised: Sequence[str], n: int) -> Iterator[tuple[I64, U64]]:
    """(doc ids, hashes) of every n-gram of every text; a text shorter than n is one feature."""
    lengths = np.fromiter((len(text) for text in normalised), dtype=np.int64, count=len(normalised))
    joined = "".join(normalised)
    codepoints = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype="<u4").astype(
        np.uint64
    )
    ends = np.cumsum(lengths)
    for start in range(0, max(len(joined) - n + 1, 0), CHUNK):
        count = min(CHUNK, len(joined) - n + 1 - start)
        positions = np.arange(start, start + count, dtype=np.int64)
        docs = np.searchsorted(ends, positions, side="right")
        keep = positions + n <= ends[docs]
        hashes = _ngram_hashes(codepoints[start : start + count + n - 1], n, count)
        yield docs[keep], hashes[keep]
    short = np.flatnonzero((lengths > 0) & (lengths < n))
    if len(short):
        short_hashes = np.array(
            [_short_hash(normalised[int(doc)]) for doc in short], dtype=np.uint64
        )
        yield short.astype(np.int64), short_hashes


def _short_hash(text: str) -> int:
    codepoints = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    value = np.full(1, _SEED, dtype=np.uint64)
    for point in codepoints:
        value = _splitmix(value ^ np.uint64(point))
    return int(value[0])


def char_ngram_splitmix(texts: Sequence[str], preset: Preset) -> Result:
    n = int(preset.params["ngram"])
    normalised = [default_normalise(text) for text in texts]
    sums = BitSums(len(texts))
    for doc_ids, hashes in _ngram_chunks(normalised, n):
        order = np.argsort(doc_ids, kind="stable")  # short texts come last; sums need sorted ids
        sums.add(doc_ids[order], hashes[order])
    features = [max(len(text) - n + 1, 1) if text else 0 for text in normalised]
    # an empty text has no votes at all: every sum is 0, so every bit is clear (fingerprint 0)
    return sums.fingerprints(), features


ALGORITHMS: dict[str, Callable[[Sequence[str], Preset], Result]] = {
    "char-window-md5": char_window_md5,
    "token-strhash": token_strhash,
    "jieba-tfidf": jieba_tfidf,
    "char-ngram-splitmix": char_ngram_splitmix,
}
