"""MinHash signatures and LSH band keys over character 5-grams: the default policy's candidates.

SimHash at a small radius misses most near-duplicates among short texts (a one-word edit moves many
of their bits), and wide radii cost hundreds of index seeks. A MinHash signature estimates the
Jaccard similarity of two texts' n-gram sets directly: value i is the smallest image of the text's
n-grams under permutation i, and two texts agree on it with probability equal to their Jaccard
similarity. Grouping the values into bands (locality-sensitive hashing) gives keys that two
similar texts share with high probability and two unrelated ones almost never, so a handful of
index seeks on a side table finds the candidates.

The scheme is fixed (it is stored): 96 values over character 5-grams of the normalised text; the
first 64 make 16 bands of 4 values, and all 96 make the estimate. A policy may record another
band layout of the same values (``LAYOUTS``; the default policy's is 24 bands of 3 values, so
that short texts at the 3-gram threshold are candidates). It and the policy's thresholds
were chosen on the labelled pairs of ``benchmarks/quality/`` (``candidates.py``); changing
anything here means a new scheme version. Until scheme v3 all 96 values made 24 bands: 16 keep
the same precision for a third fewer keys (each ~15-17 bytes a text on SQLite, ~40 in
PostgreSQL's GIN index), and cost 0.4 points of recall on the held-out pairs (0.925 -> 0.921),
most of it in short texts (README, Detection quality).

Each value is kept as one byte (b-bit MinHash, Li and König 2010): the 32-bit minimum is mixed and
its top 8 bits stored. Two texts' bytes agree when their minima agree (probability J) and by
chance otherwise (1/256), so the estimate subtracts the chance agreements; at 96 values that costs
a fraction of the estimate's own standard error, and the signature is 96 bytes instead of 384. A
band's four bytes are one 32-bit word, hashed with the band's number into a 32-bit key (SQLite
keeps it in 4 bytes): two unrelated texts share a band key with probability ~2**-31.

A stored signature ends with the number of distinct n-grams of its text (four bytes, little
endian): with two texts' sizes, their Jaccard estimate J gives how much of the smaller one the
bigger holds, J (|A| + |B|) / ((1 + J) min(|A|, |B|)) (Broder 1997), which finds a copy cut short
or one with a header added, whose Jaccard similarity is low. Signatures stored before sizes
existed are the 96 values alone; the values and band keys are the same either way.

After the size, a signature may carry the opening of its text (the first characters of the
normalised text, zlib-compressed UTF-8): the default policy keeps it for texts too long to keep
whole, to tell two documents of one template (other names in the same licence, man page or
package description) from an edited copy (``simstore.policy.policies``). After the opening and a
NUL may follow a sketch of the whole text's numbers (``simstore.text.lookalike.sketch``), so
that a version bumped far past the opening is seen too. Values, size and band keys are the same
with or without them.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from simstore.text._mix import GOLDEN, mix64

SCHEME = "minhash-c5-96-16x4-b8-v3"
NGRAM = 5
VALUES = 96
BANDS = 16  # of the first BANDS * ROWS values
ROWS = 4  # values per band: one 32-bit word (band_keys relies on it)
SIGNATURE_BYTES = VALUES  # one byte a value (signatures stored before sizes: nothing more)
SIZE_BYTES = 4  # then the text's distinct n-grams, little endian
SIZED_BYTES = SIGNATURE_BYTES + SIZE_BYTES
SKETCH_MARK = "\x00"  # in the compressed payload: the opening before it, the sketch after
CHANCE = 1 / 256  # two bytes of different minima agree with this probability
# a pass holds GRAMS_PER_PASS x VALUES 32-bit images (1.5 MB): small enough to stay in a core's
# L2 cache, which made a batch's minima 1.6x faster than passes of 65,536 grams (25 MB)
GRAMS_PER_PASS = 1 << 12

Signatures = npt.NDArray[np.uint8]
_U64 = npt.NDArray[np.uint64]

_SEED = np.uint64(0x5EED5EED5EED5EED)
_POLY = np.uint64(0x100000001B3)  # FNV-64 prime: odd, spreads 21-bit code points
_HIGH = np.uint64(32)
# x -> (x ^ s) * M (mod 2**32) permutes the 32-bit values (M is odd). The 128 constants are the
# draw the quality benchmark measured (seed 6); the signature keeps the first 96.
_PERMUTATIONS = np.random.default_rng(6).integers(0, 2**32, size=128, dtype=np.uint32)[:VALUES]
_M32 = np.uint32(0x9E3779B1)
# a minimum's byte: its top 8 bits after one more odd multiply (the minimum's own top bits are
# mostly zero, being a minimum; the product's top byte depends on all 32 bits)
_TO_BYTE = np.uint32(0x2C1B3C6D)
_BYTE_SHIFT = np.uint32(24)


_BAND_SEEDS = mix64(np.arange(BANDS, dtype=np.uint64) * GOLDEN + _SEED)  # one per band number

LAYOUT = "16x4"  # BANDS x ROWS: every text's keys in a namespace of policy recipe 1
# the band layouts a policy may record (``MinHashVerification.minhash_bands``): bands x values a
# band, over the first bands x values of the signature. 24 x 3 (the default policy's since recipe
# 2) makes a short text whose 3-gram Jaccard with a kept one is ~.55 (its 5-gram estimate
# ~.35-.45) a candidate with p ~.97 where 16 x 4 gave ~.75 (the quality benchmark's tune half:
# ``python -m benchmarks layouts --short``), for 8 keys more a text
LAYOUTS: dict[str, tuple[int, int]] = {
    "16x4": (16, 4),
    "20x3": (20, 3),
    "24x3": (24, 3),
    "32x3": (32, 3),
}


def _layout_seeds(layout: str) -> npt.NDArray[np.uint64]:
    """One seed per band number: 16 x 4's are the scheme's own; another layout's differ, so its
    keys never equal a 16 x 4 key of the same bytes."""
    bands, rows = LAYOUTS[layout]
    if layout == LAYOUT:
        return _BAND_SEEDS
    tag = np.uint64((bands << 8 | rows) << 8)
    return mix64((np.arange(bands, dtype=np.uint64) + tag) * GOLDEN + _SEED)


_SEEDS = {layout: _layout_seeds(layout) for layout in LAYOUTS}


def _pieces(texts: Sequence[str]) -> tuple[list[str], list[int]]:
    """Texts cut into pieces of at most GRAMS_PER_PASS grams (overlapping by NGRAM - 1 characters,
    so the pieces' grams are exactly the text's), with the text each piece belongs to."""
    pieces: list[str] = []
    owners: list[int] = []
    for owner, text in enumerate(texts):
        if len(text) <= GRAMS_PER_PASS:
            pieces.append(text)
            owners.append(owner)
            continue
        for start in range(0, len(text) - NGRAM + 1, GRAMS_PER_PASS):
            pieces.append(text[start : start + GRAMS_PER_PASS + NGRAM - 1])
            owners.append(owner)
    return pieces, owners


def _distinct(hashes: _U64) -> int:
    if len(hashes) < 2:
        return len(hashes)
    ordered = np.sort(hashes)
    return 1 + int(np.count_nonzero(ordered[1:] != ordered[:-1]))


def _several(owners: Sequence[int]) -> dict[int, list[_U64]]:
    """An empty list for each owner of more than one piece (``owners`` is sorted)."""
    return {a: [] for a, b in itertools.pairwise(owners) if a == b}


def _gram_hashes(pieces: Sequence[str]) -> tuple[_U64, npt.NDArray[np.int64]]:
    """64-bit hashes of every piece's character n-grams (a piece shorter than n is one gram), laid
    end to end, and the number of grams per piece: a polynomial over the code points, then mixed."""
    lengths = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    points = np.frombuffer(
        "".join(pieces).encode("utf-32-le", "surrogatepass"), dtype="<u4"
    ).astype(np.uint64)
    if len(pieces) == 1 and len(points) >= NGRAM:  # one text: plain slices (most adds, queries)
        count = len(points) - NGRAM + 1
        hashes = points[:count]
        for offset in range(1, NGRAM):
            hashes = hashes * _POLY + points[offset : offset + count]
        return mix64(hashes), np.array([count], dtype=np.int64)
    points = np.concatenate([points, np.zeros(NGRAM, dtype=np.uint64)])
    width = np.minimum(lengths, NGRAM)
    counts = np.where(lengths > 0, lengths - width + 1, 0)
    owner = np.repeat(np.arange(len(pieces)), counts)
    starts = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    starts += np.repeat(np.cumsum(lengths) - lengths, counts)
    hashes = points[starts]
    for offset in range(1, NGRAM):
        live = offset < width[owner]
        hashes = np.where(live, hashes * _POLY + points[starts + offset], hashes)
    return mix64(hashes), counts


def signatures(texts: Sequence[str]) -> Signatures:
    """(len(texts), VALUES) one-byte MinHash signatures of normalised texts."""
    return to_stored_values(minima(texts))


def sketches(texts: Sequence[str]) -> tuple[Signatures, npt.NDArray[np.int64]]:
    """``signatures`` of normalised texts and the number of distinct n-grams of each."""
    sizes = np.zeros(len(texts), dtype=np.int64)
    return to_stored_values(minima(texts, sizes)), sizes


def to_stored_values(full: npt.NDArray[np.uint32]) -> Signatures:
    """The stored byte of each 32-bit minimum."""
    stored: Signatures = ((full * _TO_BYTE) >> _BYTE_SHIFT).astype(np.uint8)
    return stored


def minima(
    texts: Sequence[str], sizes: npt.NDArray[np.int64] | None = None
) -> npt.NDArray[np.uint32]:
    """(len(texts), VALUES) 32-bit minima of each permutation (an empty text: all ones); the
    number of distinct n-grams of each text goes to ``sizes`` when given."""
    result = np.full((len(texts), VALUES), 0xFFFFFFFF, dtype=np.uint32)
    pieces, owners = _pieces(texts)
    # the grams of each text cut into several pieces, counted once all are hashed
    split: dict[int, list[_U64]] = {} if sizes is None else _several(owners)
    first = 0
    while first < len(pieces):
        last, grams = first, 0
        while last < len(pieces) and (last == first or grams + len(pieces[last]) <= GRAMS_PER_PASS):
            grams += len(pieces[last])
            last += 1
        hashes, counts = _gram_hashes(pieces[first:last])
        if sizes is not None:
            _count_distinct(hashes, counts, owners[first:last], sizes, split)
        present = np.flatnonzero(counts)
        if len(present):
            # (VALUES, grams): each value's images lie contiguous, so the per-text minima reduce
            # contiguous runs (an order of magnitude faster than reducing along axis 0)
            images = np.bitwise_xor.outer(_PERMUTATIONS, (hashes >> _HIGH).astype(np.uint32))
            images *= _M32
            if last - first == 1:
                np.minimum(result[owners[first]], images.min(axis=1), out=result[owners[first]])
            else:
                bounds = (np.cumsum(counts) - counts)[present]
                mins = np.minimum.reduceat(images, bounds, axis=1).T
                np.minimum.at(result, np.asarray(owners[first:last])[present], mins)
        first = last
    if sizes is not None:
        for owner, parts in split.items():
            sizes[owner] = _distinct(np.concatenate(parts))
    return result


_PIECE_BITS = np.uint64(GRAMS_PER_PASS.bit_length())  # a pass holds fewer pieces than this


def _count_distinct(
    hashes: _U64,
    counts: npt.NDArray[np.int64],
    owners: Sequence[int],
    sizes: npt.NDArray[np.int64],
    split: dict[int, list[_U64]],
) -> None:
    """The distinct grams of each piece of a pass into ``sizes``, by owner; the pieces of a text
    cut into several (the owners in ``split``) are kept there, to be counted whole at the end.
    One sort for many pieces: each gram's low bits replaced by its piece's number (two grams of
    one piece then collide only when 50-odd bits of their hashes do)."""
    if split:
        ends = np.cumsum(counts)
        for n, owner in enumerate(owners):
            if owner in split:
                split[owner].append(hashes[ends[n] - counts[n] : ends[n]])
    if len(owners) == 1:
        if owners[0] not in split:
            sizes[owners[0]] = _distinct(hashes)
        return
    mask = (np.uint64(1) << _PIECE_BITS) - np.uint64(1)
    piece = np.repeat(np.arange(len(owners), dtype=np.uint64), counts)
    tagged = np.sort((hashes & ~mask) | piece)
    first = np.ones(len(tagged), dtype=bool)
    first[1:] = tagged[1:] != tagged[:-1]
    distinct = np.bincount((tagged[first] & mask).astype(np.int64), minlength=len(owners))
    whole = [n for n, owner in enumerate(owners) if owner not in split]
    sizes[np.asarray(owners)[whole]] = distinct[whole]


def band_keys(signed: Signatures, layout: str = LAYOUT) -> npt.NDArray[np.int64]:
    """(n, bands) signed 32-bit keys (as int64) under ``layout`` (``LAYOUTS``): each band's
    values hashed with its number.

    A band's bytes are read as one little-endian word (four: as stored); any good hash of it
    serves, since two bands share a key only when their bytes are equal or by a 2**-32 chance.
    """
    bands, rows = check_layout(layout)
    if rows == ROWS:
        whole = np.ascontiguousarray(signed, dtype=np.uint8).view("<u4")
        words = whole.reshape(len(signed), VALUES // ROWS)[:, :bands].astype(np.uint64)
    else:
        values = np.asarray(signed, dtype=np.uint64)[:, : bands * rows]
        values = values.reshape(len(signed), bands, rows)
        words = np.zeros((len(signed), bands), dtype=np.uint64)
        for row in range(rows):
            words |= values[:, :, row] << np.uint64(8 * row)
    keys: npt.NDArray[np.int64] = mix64(words ^ _SEEDS[layout]).view(np.int64)
    high: npt.NDArray[np.int64] = keys >> np.int64(32)
    return high


def check_layout(layout: object) -> tuple[int, int]:
    """(bands, values a band) of a layout's name; ValueError for a name not in ``LAYOUTS``."""
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise ValueError(f"a MinHash band layout is one of {', '.join(LAYOUTS)}, not {layout!r}")
    return LAYOUTS[layout]


def distinct_band_keys(signed: Signatures, layout: str = LAYOUT) -> list[tuple[int, ...]]:
    """Each signature's band keys under ``layout``, distinct and sorted, as a row's
    ``simstore_minhash`` rows hold them (two bands with one key are one row)."""
    return [tuple(sorted(set(keys))) for keys in band_keys(signed, layout).tolist()]


def stored_band_keys(stored: Sequence[bytes], layout: str) -> list[tuple[int, ...]]:
    """``distinct_band_keys`` of stored signatures (``to_bytes``'s form) under ``layout``, the
    one the namespace's policy signs with (``MinHashVerification.minhash_bands``)."""
    if not stored:
        return []
    return distinct_band_keys(np.stack([from_bytes(signature) for signature in stored]), layout)


def to_bytes(
    signature: Signatures,
    size: int | None = None,
    opening: str | None = None,
    sketch: Sequence[str] | None = None,
) -> bytes:
    """One signature as stored in the row: one byte a value, then the text's distinct n-grams
    when ``size`` is given (capped at 2**32 - 1), then ``opening`` and ``sketch`` (tokens of the
    whole text, ``simstore.text.lookalike.sketch``) compressed, when given (they need ``size``):
    the opening, then NUL and the sketch's tokens separated by spaces (a comparison text holds
    neither NUL nor a space inside a token)."""
    values = signature.astype(np.uint8, copy=False).tobytes()
    if size is None:
        if opening is not None or sketch is not None:
            raise ValueError("a signature carries an opening only after its size")
        return values
    sized = values + min(size, 0xFFFFFFFF).to_bytes(SIZE_BYTES, "little")
    if opening is None and sketch is None:
        return sized
    payload = (opening or "") + ("" if sketch is None else SKETCH_MARK + " ".join(sketch))
    return sized + zlib.compress(payload.encode("utf-8"))


def is_stored_signature(stored: bytes) -> bool:
    """Whether ``stored`` has the length of a stored signature: the values alone, with the size,
    or with the size and an opening."""
    return len(stored) == SIGNATURE_BYTES or len(stored) >= SIZED_BYTES


def from_bytes(stored: bytes) -> Signatures:
    """The values of a stored signature (without its size)."""
    values: Signatures = np.frombuffer(stored[:SIGNATURE_BYTES], dtype=np.uint8).copy()
    return values


def size_of(stored: bytes) -> int | None:
    """The distinct n-grams of the text a stored signature was made of (None: not stored)."""
    if len(stored) < SIZED_BYTES:
        return None
    return int.from_bytes(stored[SIGNATURE_BYTES:SIZED_BYTES], "little")


def _payload(stored: bytes) -> str | None:
    if len(stored) <= SIZED_BYTES:
        return None
    try:
        return zlib.decompress(stored[SIZED_BYTES:]).decode("utf-8")
    except (zlib.error, UnicodeDecodeError) as error:
        raise ValueError(f"a signature's opening is unreadable: {error}") from None


def opening_of(stored: bytes) -> str | None:
    """The opening of the text a stored signature carries (None: it carries none). Raises
    ValueError when the bytes after the size are no compressed UTF-8 text."""
    payload = _payload(stored)
    if payload is None:
        return None
    opening = payload.partition(SKETCH_MARK)[0]
    return opening if opening or SKETCH_MARK not in payload else None


def sketch_of(stored: bytes) -> tuple[str, ...] | None:
    """The sketch a stored signature carries (``to_bytes``; None: it carries none)."""
    payload = _payload(stored)
    if payload is None or SKETCH_MARK not in payload:
        return None
    tokens = payload.partition(SKETCH_MARK)[2]
    return tuple(tokens.split(" ")) if tokens else ()


def contained(estimate: float, size_a: int, size_b: int) -> float:
    """The share of the smaller n-gram set that the bigger holds, from their Jaccard estimate
    and sizes: |A & B| = J (|A| + |B|) / (1 + J), over min(|A|, |B|) (at most 1)."""
    smaller = min(size_a, size_b)
    if smaller <= 0:
        return 0.0
    return min(1.0, estimate * (size_a + size_b) / ((1 + estimate) * smaller))


def jaccard(matches: int) -> float:
    """The Jaccard similarity that ``matches`` equal values of VALUES estimate, chance removed."""
    return max(0.0, (matches / VALUES - CHANCE) / (1 - CHANCE))


def matches(a: bytes, b: bytes) -> int:
    """How many values two stored signatures share (their sizes, if stored, are not values)."""
    if not is_stored_signature(a) or not is_stored_signature(b):
        raise ValueError(
            f"a signature has {SIGNATURE_BYTES} bytes, or at least {SIZED_BYTES} with its size"
        )
    left = np.frombuffer(a, np.uint8, count=VALUES)
    return int(np.count_nonzero(left == np.frombuffer(b, np.uint8, count=VALUES)))


def estimate(a: bytes, b: bytes) -> float:
    """The Jaccard similarity of the texts two stored signatures were made of."""
    return jaccard(matches(a, b))
