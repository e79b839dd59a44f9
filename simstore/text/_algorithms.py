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
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from simstore.errors import missing_extra
from simstore.text._bitsum import I64, U64, BitSums, pack_bits, unpack_bits
from simstore.text._mix import GOLDEN, mix64
from simstore.text.presets import Preset

if TYPE_CHECKING:
    from jieba.analyse.tfidf import TFIDF

Result = tuple[list[int], list[int]]
CHUNK = 1 << 16  # features hashed and summed per numpy step

# --- character windows hashed with MD5 (the PyPI simhash package and seed 000) -----------------

_PYPI_WORD_RUNS = re.compile(r"[\w\u4e00-\u9fcc]+")


def pypi_normalise(text: str) -> str:
    """Lowercase and keep only the runs of ``[\\w\\u4e00-\\u9fcc]``, joined with no separator."""
    return "".join(_PYPI_WORD_RUNS.findall(text.lower()))


def md5_low64(feature: str) -> int:
    """The low 64 bits of the MD5 of ``feature``'s UTF-8 bytes (digest bytes 8..15, big-endian)."""
    # surrogatepass: a lone surrogate cannot survive the word filter, but never crash if one did
    digest = hashlib.md5(feature.encode("utf-8", "surrogatepass"), usedforsecurity=False).digest()
    return int.from_bytes(digest[8:], "big")


# MD5 (RFC 1321) over many one-block messages at once: a window of up to 13 characters is at most
# 52 UTF-8 bytes, so with its 0x80 pad byte and 8-byte length it fits one 64-byte block.
_MD5_SHIFTS = [7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4 + [6, 10, 15, 21] * 4
_MD5_CONSTANTS = [  # RFC 1321's table T: floor(abs(sin(i + 1)) * 2**32)
    0xD76AA478, 0xE8C7B756, 0x242070DB, 0xC1BDCEEE, 0xF57C0FAF, 0x4787C62A, 0xA8304613, 0xFD469501,
    0x698098D8, 0x8B44F7AF, 0xFFFF5BB1, 0x895CD7BE, 0x6B901122, 0xFD987193, 0xA679438E, 0x49B40821,
    0xF61E2562, 0xC040B340, 0x265E5A51, 0xE9B6C7AA, 0xD62F105D, 0x02441453, 0xD8A1E681, 0xE7D3FBC8,
    0x21E1CDE6, 0xC33707D6, 0xF4D50D87, 0x455A14ED, 0xA9E3E905, 0xFCEFA3F8, 0x676F02D9, 0x8D2A4C8A,
    0xFFFA3942, 0x8771F681, 0x6D9D6122, 0xFDE5380C, 0xA4BEEA44, 0x4BDECFA9, 0xF6BB4B60, 0xBEBFBC70,
    0x289B7EC6, 0xEAA127FA, 0xD4EF3085, 0x04881D05, 0xD9D4D039, 0xE6DB99E5, 0x1FA27CF8, 0xC4AC5665,
    0xF4292244, 0x432AFF97, 0xAB9423A7, 0xFC93A039, 0x655B59C3, 0x8F0CCC92, 0xFFEFF47D, 0x85845DD1,
    0x6FA87E4F, 0xFE2CE6E0, 0xA3014314, 0x4E0811A1, 0xF7537E82, 0xBD3AF235, 0x2AD7D2BB, 0xEB86D391,
]  # fmt: skip
_MD5_WORDS = [(i, (5 * i + 1) % 16, (3 * i + 5) % 16, (7 * i) % 16)[i // 16] for i in range(64)]
_MD5_INIT = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476)
_MD5_BLOCK_WIDTH = 13  # the widest window (in characters) that always fits one block
# indexed by 1 + (message bytes in this word: -1 when it ended before, 4 when it goes on)
_WORD_KEEP = np.array([0, 0, 0xFF, 0xFFFF, 0xFFFFFF, 0xFFFFFFFF], dtype=np.uint32)
_WORD_PAD = np.array([0, 0x80, 0x8000, 0x800000, 0x80000000, 0], dtype=np.uint32)


def _md5_blocks_low64(words: list[npt.NDArray[np.uint32] | None], n: int) -> U64:
    """Low 64 bits of the MD5 of ``n`` padded one-block messages.

    ``words[w]`` holds message word w (little-endian uint32) of every message, or None when it is
    zero for all of them (short windows leave most of the block empty).
    """
    a, b, c, d = (np.full(n, value, dtype=np.uint32) for value in _MD5_INIT)
    f = np.empty(n, dtype=np.uint32)
    rotated = np.empty(n, dtype=np.uint32)
    for i in range(64):
        if i < 16:  # F = (b & c) | (~b & d)
            np.bitwise_xor(c, d, out=f)
            f &= b
            f ^= d
        elif i < 32:  # G = (b & d) | (c & ~d)
            np.bitwise_xor(b, c, out=f)
            f &= d
            f ^= c
        elif i < 48:  # H = b ^ c ^ d
            np.bitwise_xor(b, c, out=f)
            f ^= d
        else:  # I = c ^ (b | ~d)
            np.invert(d, out=f)
            f |= b
            f ^= c
        f += a
        word = words[_MD5_WORDS[i]]
        if word is not None:
            f += word
        f += np.uint32(_MD5_CONSTANTS[i])
        np.left_shift(f, np.uint32(_MD5_SHIFTS[i]), out=rotated)
        f >>= np.uint32(32 - _MD5_SHIFTS[i])
        f |= rotated
        f += b
        a, b, c, d, f = d, f, b, c, a  # the old a's buffer is free: it becomes the next f
    c += np.uint32(_MD5_INIT[2])
    d += np.uint32(_MD5_INIT[3])
    # digest bytes 8..15 are c then d, each little-endian; read them as one big-endian integer
    low = np.stack([c, d], axis=1).astype("<u4").view(">u8").reshape(-1)
    return low.astype(np.uint64)


def _md5_low64_windows(joined: str, starts: I64, counts: I64, width: int) -> U64:
    """MD5 low 64 bits of ``joined[s : s + c]`` for every (start, count) pair."""
    if width > _MD5_BLOCK_WIDTH:  # a window may need two blocks: hash one at a time
        pairs = zip(starts.tolist(), counts.tolist(), strict=True)
        return np.array([md5_low64(joined[s : s + c]) for s, c in pairs], dtype=np.uint64)
    points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    byte_offsets = np.zeros(len(points) + 1, dtype=np.int64)
    np.cumsum(
        (points >= 0x80).astype(np.int64) + (points >= 0x800) + (points >= 0x10000) + 1,
        out=byte_offsets[1:],
    )
    first_byte = byte_offsets[starts]
    lengths = byte_offsets[starts + counts] - first_byte
    # the message bytes plus the 0x80 pad byte, rounded up to whole words
    span = (4 * width + 1 + 3) // 4 * 4
    utf8 = np.frombuffer(joined.encode("utf-8", "surrogatepass") + bytes(span), dtype=np.uint8)
    head = np.lib.stride_tricks.sliding_window_view(utf8, span)[first_byte]
    words: list[npt.NDArray[np.uint32] | None] = [None] * 16
    for index, word in enumerate(np.ascontiguousarray(head.view("<u4").T)):
        # where the message ends inside this word: keep its bytes, add the 0x80 pad, clear the rest
        end = np.clip(lengths - 4 * index, -1, 4) + 1
        word &= _WORD_KEEP[end]
        word |= _WORD_PAD[end]
        words[index] = word
    words[14] = (lengths * 8).astype(np.uint32)  # message length in bits (< 2**32)
    return _md5_blocks_low64(words, len(starts))


def char_window_md5(texts: Sequence[str], preset: Preset) -> Result:
    """Seed 000 / the PyPI package: MD5 of sliding character windows, weighted flat or by position.

    Windows are cut into pieces of at most CHUNK windows; pieces of many texts are hashed together
    in one vectorised MD5 and summed per bit.
    """
    width = int(preset.params["width"])
    scheme = str(preset.params["weighting"])
    sums = BitSums(len(texts))
    features: list[int] = []
    pieces: list[str] = []  # a piece holds the characters of windows first..first+n-1 of a doc
    piece_docs: list[int] = []
    piece_first: list[int] = []
    piece_windows: list[int] = []
    doc_windows: list[int] = []  # per piece: how many windows its whole document has

    def flush() -> None:
        lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
        per_piece = np.asarray(piece_windows, dtype=np.int64)
        owner = np.repeat(np.arange(len(pieces)), per_piece)  # the piece of each window
        within = np.arange(len(owner)) - np.repeat(np.cumsum(per_piece) - per_piece, per_piece)
        starts = (np.cumsum(lengths) - lengths)[owner] + within
        counts = np.minimum(lengths, width)[owner]  # a text shorter than width is one window
        hashes = _md5_low64_windows("".join(pieces), starts, counts, width)
        doc_ids = np.asarray(piece_docs, dtype=np.int64)[owner]
        weights = None  # "count": a window seen w times is w votes of weight 1
        if scheme != "count":
            index = np.asarray(piece_first, dtype=np.int64)[owner] + within
            total = np.asarray(doc_windows, dtype=np.int64)[owner]
            heavy = index < total // 2 + 1 if scheme == "pre" else index >= total - total // 2 - 1
            weights = np.where(heavy, 3, 1).astype(np.int64)
        sums.add(doc_ids, hashes, weights)
        for pending in (pieces, piece_docs, piece_first, piece_windows, doc_windows):
            pending.clear()

    pending_windows = 0
    for doc, text in enumerate(texts):
        content = pypi_normalise(text)
        total = max(len(content) - width + 1, 1)  # one feature, the whole string, when short
        features.append(total if content else 0)
        for first in range(0, total, CHUNK):
            count = min(CHUNK, total - first)
            pieces.append(content[first : first + count + width - 1])
            piece_docs.append(doc)
            piece_first.append(first)
            piece_windows.append(count)
            doc_windows.append(total)
            pending_windows += count
            if pending_windows >= CHUNK:
                flush()
                pending_windows = 0
    if pieces:
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
        raise missing_extra("the jieba-tfidf preset needs jieba", "zh") from exc
    jieba.setLogLevel(60)  # jieba logs its dictionary loading at INFO through the root handler
    jieba.initialize()
    return jieba.analyse.default_tfidf


def require_jieba() -> None:
    """Load jieba now (``MissingExtra`` without the zh extra)."""
    _tfidf()


class _KeptWords(dict[str, tuple[str, ...]]):
    """segment -> the words extract_tags keeps when it cuts that segment again (a bounded memo).

    It remembers jieba's state (dictionary size and total, stop words, IDF table) and forgets
    everything when that changes, e.g. after ``jieba.add_word`` or ``set_stop_words``.
    """

    LIMIT = 1 << 16

    def __init__(self, extractor: TFIDF) -> None:
        super().__init__()
        self.extractor = extractor
        self.state: tuple[int, ...] = ()

    def refresh(self) -> None:
        extractor = self.extractor
        tokenizer = extractor.tokenizer
        state = (
            id(tokenizer.FREQ),
            len(tokenizer.FREQ),
            tokenizer.total,
            id(extractor.stop_words),
            len(extractor.stop_words),
            id(extractor.idf_freq),
        )
        if state != self.state:
            self.clear()
            self.state = state

    def __missing__(self, segment: str) -> tuple[str, ...]:
        if len(self) >= self.LIMIT:
            self.clear()
        stop_words = self.extractor.stop_words
        kept = self[segment] = tuple(
            word
            for word in self.extractor.tokenizer.cut(segment)
            if len(word.strip()) >= 2 and word.lower() not in stop_words
        )
        return kept


@lru_cache(maxsize=1)
def _kept_words() -> _KeptWords:
    return _KeptWords(_tfidf())


def jieba_keywords_many(texts: Iterable[str], top_k: int) -> list[list[tuple[str, float]]]:
    """``jieba.analyse.extract_tags("|".join(jieba.cut(t)), topK=top_k, withWeight=True)`` each.

    The seed cuts twice: once for the segments, then again inside extract_tags on the joined
    string. '|' is outside jieba's word-character class, so the second cut of the joined string is
    exactly the concatenation of the cuts of each segment (plus the '|' separators, which
    extract_tags drops as shorter than 2). Cutting each distinct segment once, through a bounded
    memo that also applies extract_tags's filter (length >= 2, not a stop word), gives the same
    words for the price of a single segmentation. Counting them in first-seen order gives the same
    words, order and exact integral counts as extract_tags's per-occurrence loop.
    """
    extractor = _tfidf()
    kept = _kept_words()
    kept.refresh()
    segments_of = extractor.tokenizer.cut
    idf, median_idf = extractor.idf_freq, extractor.median_idf
    results = []
    for text in texts:
        counts = Counter(chain.from_iterable(map(kept.__getitem__, segments_of(text))))
        total = float(sum(counts.values()))
        weights = {word: n * (idf.get(word, median_idf) / total) for word, n in counts.items()}
        ranked = sorted(weights, key=weights.__getitem__, reverse=True)  # stable, as extract_tags
        results.append([(word, weights[word]) for word in ranked[:top_k]])
    return results


def jieba_keywords(text: str, top_k: int) -> list[tuple[str, float]]:
    """The keywords and float weights of one text, exactly as seed 001 gets them from jieba."""
    return jieba_keywords_many([text], top_k)[0]


def jieba_tfidf(texts: Sequence[str], preset: Preset) -> Result:
    keywords = jieba_keywords_many(texts, int(preset.params["top_k"]))
    votes = np.zeros((len(texts), 64))
    for rank in range(max(map(len, keywords), default=0)):
        # every text's rank-th keyword at once: the float sums grow in keyword order, as the
        # seed's sum does, so they are bit for bit those of a per-text loop
        docs = [doc for doc, words in enumerate(keywords) if len(words) > rank]
        hashes = np.array([_string_hash64(keywords[doc][rank][0]) for doc in docs], np.uint64)
        weights = np.array([keywords[doc][rank][1] for doc in docs])[:, None]
        votes[docs] += np.where(unpack_bits(hashes), weights, -weights)
    # no keywords: every sum is 0, so every bit is clear (fingerprint 0)
    return pack_bits(votes > 0), [len(words) for words in keywords]


# --- simstore's own default: character n-grams with a splitmix64 hash, all in numpy -------------

_WORD_RUNS = re.compile(r"\w+")
_SEED = 0x5EED5EED5EED5EED


_NUMPY_FROM = 400  # characters from which the numpy word filter beats the regex (2x at 1,000)


def default_normalise(text: str) -> str:
    """NFKC, casefold, then the runs of word characters joined by single spaces."""
    folded = nfkc(text).casefold()
    if len(folded) >= _NUMPY_FROM and "\x00" not in folded:
        return _words_joined(folded).strip(" ")  # the same words, each run of others one space
    return " ".join(_WORD_RUNS.findall(folded))


def nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``, fast on most text NFKC must change.

    NFKC is slow on any text that fails its quick check, and Chinese text nearly always does:
    fullwidth punctuation ('，' U+FF0C), ideographic and no-break spaces, the ellipsis. NFKC maps
    each of these on its own to ASCII, and replacing a character by its own NFKC never changes
    the NFKC of the whole (both have one compatibility decomposition, from which NFKC is made),
    so they are folded first with numpy (``fold_to_ascii``), after which most texts pass the
    quick check that ``normalize`` makes first.
    """
    if text.isascii():  # ASCII is NFKC
        return text
    return unicodedata.normalize("NFKC", fold_to_ascii(text))


_ELLIPSIS = "\u2026"  # NFKC: "..."


def fold_to_ascii(text: str) -> str:
    """The characters that NFKC alone maps to ASCII and text often holds, replaced by that
    ASCII: fullwidth forms U+FF01..U+FF5E, U+3000 and U+00A0 (spaces), U+2026 ("...")."""
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4").copy()
    fullwidth = (points >= 0xFF01) & (points <= 0xFF5E)
    space = (points == 0x3000) | (points == 0xA0)
    if fullwidth.any() or space.any():
        points[fullwidth] -= 0xFEE0
        points[space] = 0x20
        text = points.tobytes().decode("utf-32-le", "surrogatepass")
    return text.replace(_ELLIPSIS, "...") if _ELLIPSIS in text else text


_normalise_recent = lru_cache(maxsize=8)(default_normalise)
_SPACE = np.uint32(0x20)
_NOT_WORD = re.compile(r"\W")
_NOT_WORD_OR_NUL = re.compile(r"[^\w\x00]+")
# the word table covers the code points below this (up to CJK Extension H); past it nearly
# nothing is assigned, and a text that reaches there is filtered by ``re`` itself
_TABLE_END = 0x32400


@lru_cache(maxsize=1)
def _word_or_space() -> npt.NDArray[np.uint32]:
    """Each code point below _TABLE_END mapped to itself when ``re``'s ``\\w`` matches it (or it
    is NUL), to a space otherwise. Made by ``re`` itself, once a process (~50 ms, at its first
    batch or long text)."""
    every = "".join(map(chr, range(_TABLE_END)))
    marked = _NOT_WORD.sub("\x00", every)  # NUL stands for "not a word character" here
    points = np.arange(_TABLE_END, dtype=np.uint32)
    word = np.frombuffer(marked.encode("utf-32-le", "surrogatepass"), dtype="<u4") != 0
    word[0] = True
    table: npt.NDArray[np.uint32] = np.where(word, points, _SPACE)
    return table


def _words_joined(text: str) -> str:
    """``re.sub(r"[^\\w\\x00]+", " ", text)``: each run of characters that are neither word
    characters nor NUL made one space, by a table lookup in numpy (2.5x faster on a batch)."""
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    if len(points) == 0 or int(points.max()) >= _TABLE_END:
        return _NOT_WORD_OR_NUL.sub(" ", text)
    mapped = _word_or_space()[points]
    space = mapped == _SPACE
    kept = np.empty(len(space), dtype=bool)
    kept[0] = True
    np.logical_not(space[1:] & space[:-1], out=kept[1:])  # a space right after one goes
    joined: str = mapped[kept].tobytes().decode("utf-32-le", "surrogatepass")
    return joined


def default_normalise_many(texts: Sequence[str]) -> list[str]:
    """``[default_normalise(t) for t in texts]``, computed on the whole batch at once.

    The texts are joined with NUL, a hard boundary for NFKC (a starter that composes with
    nothing), for casefold (context-free) and for the word filter, so the result splits back into
    the per-text results. The batch is folded as ``nfkc`` folds a text, and only the texts that
    fail NFKC's quick check then are normalised in full.
    """
    if len(texts) == 1:  # one add or query: its fingerprint and its policy normalise it alike
        return [_normalise_recent(texts[0])]
    joined = nfkc_joined(texts)
    if joined is None:
        return [default_normalise(text) for text in texts]
    words = _words_joined(joined.casefold())
    return [piece.strip(" ") for piece in words.split("\x00")]


def nfkc_joined(texts: Sequence[str]) -> str | None:
    """``"\\x00".join(nfkc(t) for t in texts)``, folded as one string; None when some text
    holds NUL itself or there is no text (the pieces could not be told apart).

    NUL is a hard boundary for NFKC (a starter that composes with nothing and that no other
    character's decomposition holds), so folding the batch at once is folding each text, and the
    quick check is made once for the batch and again only on the texts that fail it.
    """
    joined = "\x00".join(texts)
    if joined.count("\x00") != len(texts) - 1:
        return None
    joined = fold_to_ascii(joined)
    if unicodedata.is_normalized("NFKC", joined):
        return joined
    return "\x00".join(
        piece if unicodedata.is_normalized("NFKC", piece) else unicodedata.normalize("NFKC", piece)
        for piece in joined.split("\x00")
    )


def _splitmix(values: U64) -> U64:
    """splitmix64: one step of its state, then its finaliser (arrays wrap without warnings)."""
    return mix64(values + GOLDEN)


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


_ONE_TEXT_GRAMS = 4096  # up to this many n-grams, one text's bits are counted directly


def _one_text_fingerprint(text: str, n: int) -> int:
    """What ``BitSums`` makes of one text of at least n characters, without its batch
    bookkeeping (half of a short text's fingerprint time went to run starts and reductions)."""
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    count = len(points) - n + 1
    ones = unpack_bits(_ngram_hashes(points.astype(np.uint64), n, count)).sum(axis=0)
    return pack_bits((2 * ones > count)[None, :])[0]


def _short_hash(text: str) -> int:
    codepoints = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    value = np.full(1, _SEED, dtype=np.uint64)
    for point in codepoints:
        value = _splitmix(value ^ np.uint64(point))
    return int(value[0])


def char_ngram_splitmix(texts: Sequence[str], preset: Preset) -> Result:
    n = int(preset.params["ngram"])
    normalised = default_normalise_many(texts)
    if len(texts) == 1 and n <= len(normalised[0]) < _ONE_TEXT_GRAMS + n:  # one add or query
        return [_one_text_fingerprint(normalised[0], n)], [len(normalised[0]) - n + 1]
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
