"""Weighted per-bit sums, the arithmetic core shared by the 64-bit presets.

Features arrive in chunks: for each feature its document number (non-decreasing within a chunk), its
64-bit hash and optionally a small integer weight. A document's bit j ends up set when the weighted
sum of +w (hash bit j is 1) and -w (bit j is 0) over its features is positive (or non-negative, per
preset). Sums are additive, so a huge document can be fed in many chunks and memory stays bounded.

Counting trick: ``(h >> k) & 0x0101..01`` keeps bits k, k+8, ..., k+56 of a hash, one per byte.
Adding up to 255 such words never carries from one byte into the next, so eight plain uint64
additions per feature count all 64 bits at once; bytes are unpacked once per run of 255 features.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

_LANES = np.uint64(0x0101010101010101)
_SHIFTS = [np.uint64(k) for k in range(8)]


class BitSums:
    """Accumulates weighted bit counts for ``n_docs`` documents."""

    def __init__(self, n_docs: int) -> None:
        self._ones = np.zeros((n_docs, 64), dtype=np.int64)
        self._total = np.zeros(n_docs, dtype=np.int64)

    def add(self, doc_ids: I64, hashes: U64, weights: I64 | None = None) -> None:
        """Add one chunk of features; ``doc_ids`` must be sorted, weights in 1..255."""
        count = len(hashes)
        if count == 0:
            return
        heaviest = 1 if weights is None else int(weights.max())
        if weights is not None and (heaviest > 255 or int(weights.min()) < 1):
            raise ValueError("BitSums weights must lie in 1..255")
        doc_starts = _starts(doc_ids)
        step = 255 // heaviest
        run_starts = doc_starts  # a run may hold at most ``step`` features
        if count > step:
            run_starts = np.union1d(doc_starts, np.arange(0, count, step))
        lane_weights = None if weights is None else weights.astype(np.uint64)
        lanes = np.empty((len(run_starts), 8), dtype=np.uint64)
        for k, shift in enumerate(_SHIFTS):
            picked = (hashes >> shift) & _LANES
            if lane_weights is not None:
                picked *= lane_weights
            lanes[:, k] = np.add.reduceat(picked, run_starts)
        # byte b of lane k counts bit 8*b + k
        per_run = lanes.astype("<u8").view(np.uint8).reshape(-1, 8, 8).transpose(0, 2, 1)
        per_run = per_run.reshape(-1, 64)
        run_docs = doc_ids[run_starts]
        first_run_of_doc = _starts(run_docs)
        docs = run_docs[first_run_of_doc]
        self._ones[docs] += np.add.reduceat(per_run, first_run_of_doc, axis=0, dtype=np.int64)
        if weights is None:
            self._total[docs] += np.diff(np.append(doc_starts, count))
        else:
            self._total[docs] += np.add.reduceat(weights, doc_starts)

    def fingerprints(self, *, inclusive: bool = False) -> list[int]:
        """Pack each document's sign bits into an unsigned int (bit j <- column j)."""
        # the sum over features of (+w if bit else -w) is 2 * ones - total
        signed = 2 * self._ones - self._total[:, None]
        return pack_bits(signed >= 0 if inclusive else signed > 0)


def _starts(values: I64) -> I64:
    """Positions where a run of equal values begins (``np.r_`` costs more than this at 1 text)."""
    begins = np.empty(len(values), dtype=bool)
    begins[0] = True
    np.not_equal(values[1:], values[:-1], out=begins[1:])
    return np.flatnonzero(begins)


def unpack_bits(hashes: U64) -> npt.NDArray[np.bool_]:
    """An (n, 64) boolean matrix whose column j is bit j of each hash."""
    lanes = hashes.astype("<u8").view(np.uint8).reshape(-1, 8)
    return np.unpackbits(lanes, axis=1, bitorder="little").astype(bool)


def pack_bits(on: npt.NDArray[np.bool_]) -> list[int]:
    """Unsigned ints from an (n, 64) boolean matrix: bit j of row i <- ``on[i, j]``."""
    packed = np.packbits(on, axis=1, bitorder="little").view("<u8").reshape(-1)
    return [int(v) for v in packed]
