"""Vectorised matching of many fingerprints against many candidates (numpy, no database).

For radii up to 3 two fingerprints within the radius share one of bands 0..r exactly (pigeonhole),
so a sort-and-search join on each band finds every near pair without comparing all pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from simstore.text.encoding import BAND_COUNT

EXACT_BAND_RADIUS = BAND_COUNT - 1
SMALL_JOIN = 4096  # query x candidate pairs below which comparing all pairs is cheaper


def near_pairs(
    queries: Sequence[int], radii: Sequence[int], candidates: Sequence[int]
) -> list[list[int]]:
    """For each query (radius <= 3), the positions of the candidates within its radius."""
    result: list[list[int]] = [[] for _ in queries]
    if not len(queries) or not len(candidates):
        return result
    if len(queries) * len(candidates) <= SMALL_JOIN:  # numpy's set-up costs more than the loop
        return [
            [j for j, value in enumerate(candidates) if (value ^ query).bit_count() <= radius]
            for query, radius in zip(queries, radii, strict=True)
        ]
    query_fps = np.fromiter(queries, dtype=np.uint64, count=len(queries))
    limits = np.fromiter(radii, dtype=np.int64, count=len(radii))
    if int(limits.max()) > EXACT_BAND_RADIUS:
        raise ValueError("near_pairs handles radii up to 3")
    candidate_fps = np.fromiter(candidates, dtype=np.uint64, count=len(candidates))
    found_queries, found_candidates = [], []
    for band in range(BAND_COUNT):
        probing = np.flatnonzero(limits >= band)  # radius r probes bands 0..r
        if not len(probing):
            continue
        shift = np.uint64(16 * (BAND_COUNT - 1 - band))
        candidate_bands = (candidate_fps >> shift) & np.uint64(0xFFFF)
        order = np.argsort(candidate_bands, kind="stable")
        sorted_bands = candidate_bands[order]
        wanted = (query_fps[probing] >> shift) & np.uint64(0xFFFF)
        low = np.searchsorted(sorted_bands, wanted, side="left")
        high = np.searchsorted(sorted_bands, wanted, side="right")
        counts = high - low
        total = int(counts.sum())
        if not total:
            continue
        # positions low..high-1 of every query, laid end to end
        starts = np.repeat(low - (np.cumsum(counts) - counts), counts)
        found_queries.append(np.repeat(probing, counts))
        found_candidates.append(order[starts + np.arange(total)])
    if not found_queries:
        return result
    pair_queries = np.concatenate(found_queries)
    pair_candidates = np.concatenate(found_candidates)
    distances = np.bitwise_count(query_fps[pair_queries] ^ candidate_fps[pair_candidates])
    close = distances <= limits[pair_queries]
    unique = np.unique(
        pair_queries[close].astype(np.int64) * len(candidates) + pair_candidates[close]
    )
    for code in unique.tolist():
        query, candidate = divmod(code, len(candidates))
        result[query].append(candidate)
    return result
