"""Filling a store for a benchmark, always through the library's own calls.

``add_all`` is ``SimStore.add_many`` (every text decided as ``add`` would). ``load_fingerprints``
is ``SimStore.load``, the hand-over bulk load, for random fingerprints: at k = 3 none is near
another (the peers benchmark's exactness check proves it for its queries), so ``add_many`` would
keep every one and the load writes exactly what it would, without deciding each. A load writes
one moment a call: a fill spread over time loads ``STEP`` rows a moment.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from simstore.io.handover import LoadRow
from simstore.store import SimStore

from .corpus import STEP, Values


def add_all(
    store: SimStore,
    items: Iterable[tuple[str, str] | Mapping[str, Any]],
    *,
    batch_size: int = 1000,
    workers: int = 0,
    total: int | None = None,
    every: int = 0,
) -> tuple[int, int, dict[int, float]]:
    """``add_many`` of every item; (items added, kept, seconds since the start at every
    ``every`` items, printed as it goes when ``every``)."""
    started = time.perf_counter()
    added = kept = 0
    seconds_at: dict[int, float] = {}
    for added, decision in enumerate(
        store.add_many(items, batch_size=batch_size, workers=workers), 1
    ):
        kept += decision.inserted
        if every and added % every == 0:
            seconds = seconds_at[added] = round(time.perf_counter() - started, 1)
            of = f"/{total:,}" if total else ""
            print(f"  {added:,}{of} added in {seconds:,.0f} s ({added / seconds:,.0f}/s)",
                  flush=True)  # fmt: skip
    return added, kept, seconds_at


def load_fingerprints(
    store: SimStore,
    values: Values,
    *,
    prefix: str = "k",
    offset: int = 0,
    start: datetime | None = None,
    span: timedelta = timedelta(0),
    step: int = STEP,
) -> int:
    """Load ``values`` as kept rows (keys ``{prefix}{offset + i}``) through ``SimStore.load``;
    row i at ``start + span * i / len(values)`` rounded down to ``step`` rows (default: now, all
    rows). The rows written."""
    n = len(values)
    span_us = int(span.total_seconds() * 1_000_000)
    written = 0
    step = max(step, 1) if span_us else 50_000  # one moment: chunks only bound the memory
    for first in range(0, n, step):
        chunk = np.asarray(values[first : first + step], dtype=np.uint64).tolist()
        at = None if start is None else start + timedelta(microseconds=first * span_us // n)
        rows = [
            LoadRow(key=f"{prefix}{offset + first + j}", kept=True, fingerprint=value)
            for j, value in enumerate(chunk)
        ]
        report = store.load(rows, at=at, batch_size=max(len(rows), 1))
        written += report.kept
    return written
