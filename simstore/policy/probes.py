"""Which band values to look up for a radius-r query (multi-index hashing over 4 x 16-bit bands).

With r = 4p + q (q < 4), probe q + 1 bands at Hamming radius p and the other 3 - q at radius p - 1
(Norouzi et al. 2012). Exactness: if every band probed at radius p differed by more than p and every
other band by more than p - 1, the whole distance would be at least (q + 1)(p + 1) + (3 - q)p =
4p + q + 1 > r. So every fingerprint within r of the query matches one probe. For r <= 3 this is
the pigeonhole rule: r + 1 bands looked up for equality.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from itertools import combinations

from simstore.text.encoding import BAND_BITS, BAND_COUNT, bands


def band_radii(radius: int) -> list[tuple[int, int]]:
    """(band index, band radius) pairs to probe for a query of Hamming radius ``radius``."""
    p, q = divmod(radius, BAND_COUNT)
    probes = [(band, p) for band in range(q + 1)]
    if p > 0:
        probes += [(band, p - 1) for band in range(q + 1, BAND_COUNT)]
    return probes


@cache
def flip_masks(radius: int) -> tuple[int, ...]:
    """Every 16-bit XOR mask with at most ``radius`` bits set (the probe ball)."""
    masks = [0]
    for weight in range(1, radius + 1):
        for positions in combinations(range(BAND_BITS), weight):
            masks.append(sum(1 << bit for bit in positions))
    return tuple(masks)


def band_values(
    fingerprint: int, radius: int, own: Sequence[int] | None = None
) -> dict[int, set[int]]:
    """For each probed band, the set of band values whose rows are candidates (``own``: the
    fingerprint's bands, when the caller has split them already)."""
    own = bands(fingerprint) if own is None else own
    if radius < BAND_COUNT:  # the pigeonhole case, the common one: equality on bands 0..r
        return {band: {own[band]} for band in range(radius + 1)}
    wanted: dict[int, set[int]] = {}
    for band, band_radius in band_radii(radius):
        wanted[band] = {own[band] ^ mask for mask in flip_masks(band_radius)}
    return wanted


# --- the pair plan: two 32-bit halves (b0, b1) and (b2, b3) --------------------------------------
#
# The same argument over two substrings: with r = 2p + q (q < 2), probe q + 1 halves at radius p and
# the other 1 - q at radius p - 1. For r <= 3 no half is probed beyond radius 1, i.e. at most
# 1 + 32 values per half, written as ``hi = ? AND lo IN (lo and its 16 one-bit flips)`` plus
# ``hi IN (the 16 one-bit flips of hi) AND lo = ?``: every probe is an index seek on a 32-bit key.

PAIRS = ((0, 1), (2, 3))
PAIR_MAX_RADIUS = 3


def pair_radii(radius: int) -> list[tuple[int, int]]:
    """(pair index, pair radius) pairs to probe for a query of radius ``radius`` (<= 3)."""
    if not 0 <= radius <= PAIR_MAX_RADIUS:
        raise ValueError(f"the pair plan covers radii 0..{PAIR_MAX_RADIUS}")
    p, q = divmod(radius, len(PAIRS))
    probes = [(pair, p) for pair in range(q + 1)]
    if p > 0:
        probes += [(pair, p - 1) for pair in range(q + 1, len(PAIRS))]
    return probes


@cache
def pair_seeks(radius: int) -> int:
    """Index seeks of the pair plan: 1 per half at radius 0, 1 + 2 * 16 at radius 1."""
    return sum(1 + 2 * BAND_BITS * pair_radius for _pair, pair_radius in pair_radii(radius))


@cache
def band_seeks(radius: int) -> int:
    """Index seeks of the band plan."""
    return sum(len(flip_masks(band_radius)) for _band, band_radius in band_radii(radius))


# Relative costs of one index seek and one candidate row (fetched into Python and checked), fitted
# to benchmarks/costs.py on SQLite (about 2.5 and 3 us on this project's machine): the
# pair plan wins from about 1M rows at k = 3 (measured: 1.11x the band plan's p50 at 1M, 0.80x at
# 3M). PostgreSQL and MariaDB pay a round trip per statement either way.
SEEK_COST = 1.0
CANDIDATE_COST = 1.0


def prefers_pairs(radius: int, rows: int) -> bool:
    """Whether the pair plan is expected to be cheaper than the band plan at ``rows`` rows.

    Expected candidates: rows / 2**16 per band seek, rows / 2**32 per pair seek. Exact either way.
    """
    if radius > PAIR_MAX_RADIUS:
        return False
    bands_cost = band_seeks(radius) * (SEEK_COST + CANDIDATE_COST * rows / (1 << BAND_BITS))
    pairs_cost = pair_seeks(radius) * (SEEK_COST + CANDIDATE_COST * rows / (1 << 2 * BAND_BITS))
    return pairs_cost < bands_cost
