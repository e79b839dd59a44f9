"""splitmix64's finaliser over numpy arrays: the one 64-bit mixer of simstore's own hashes."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]
GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # splitmix64's increment
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_SHIFTS = (np.uint64(30), np.uint64(27), np.uint64(31))


def mix64(z: U64) -> U64:
    """Steele, Lea and Flood's splitmix64 finaliser, element-wise (wrapping, as in C).

    Array arithmetic wraps without a warning (numpy warns about overflow only for its scalar
    types, made arrays here), so no ``np.errstate``: entering one cost more than mixing a text.
    """
    z = np.asarray(z)
    z = (z ^ (z >> _SHIFTS[0])) * _M1
    z = (z ^ (z >> _SHIFTS[1])) * _M2
    return z ^ (z >> _SHIFTS[2])  # type: ignore[no-any-return]
