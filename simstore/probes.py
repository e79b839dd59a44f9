"""Which band values to look up for a radius-r query (multi-index hashing over 4 x 16-bit bands).

With r = 4p + q (q < 4), probe q + 1 bands at Hamming radius p and the other 3 - q at radius p - 1
(Norouzi et al. 2012). Exactness: if every band probed at radius p differed by more than p and every
other band by more than p - 1, the whole distance would be at least (q + 1)(p + 1) + (3 - q)p =
4p + q + 1 > r. So every fingerprint within r of the query matches one probe. For r <= 3 this is
the pigeonhole rule: r + 1 bands looked up for equality.
"""

from __future__ import annotations

from functools import cache
from itertools import combinations

from simstore.encoding import BAND_BITS, BAND_COUNT, bands

MAX_RADIUS = 32


def plan(radius: int) -> list[tuple[int, int]]:
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


def band_values(fingerprint: int, radius: int) -> dict[int, set[int]]:
    """For each probed band, the set of band values whose rows are candidates."""
    own = bands(fingerprint)
    wanted: dict[int, set[int]] = {}
    for band, band_radius in plan(radius):
        wanted[band] = {own[band] ^ mask for mask in flip_masks(band_radius)}
    return wanted
