"""The numpy band join finds exactly the pairs a brute-force comparison finds."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from simstore.policy._match import near_pairs


def _near(center: int, rng: random.Random) -> int:
    for bit in rng.sample(range(64), rng.randrange(0, 6)):
        center ^= 1 << bit
    return center


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), queries=st.integers(1, 40), candidates=st.integers(0, 200))
def test_near_pairs_equals_brute_force(seed: int, queries: int, candidates: int) -> None:
    rng = random.Random(seed)
    centers = [rng.getrandbits(64) for _ in range(5)]
    query_fps = [_near(rng.choice(centers), rng) for _ in range(queries)]
    radii = [rng.randrange(0, 4) for _ in range(queries)]
    candidate_fps = [_near(rng.choice(centers), rng) for _ in range(candidates)]
    expected = [
        [i for i, value in enumerate(candidate_fps) if (value ^ fp).bit_count() <= radius]
        for fp, radius in zip(query_fps, radii, strict=True)
    ]
    assert near_pairs(query_fps, radii, candidate_fps) == expected
