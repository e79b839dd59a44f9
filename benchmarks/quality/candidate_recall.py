"""Candidate recall at the confirm rule: of the duplicates the policy would accept, how many does
its candidate stage ever show it?

Run from the repository root (the dataset first: ``python -m benchmarks dataset``)::

    python -m benchmarks quality --candidates [--split tune|test] [--policy ...] [--save]

For every duplicate pair of the half (its label, or texts identical after the benchmark's
normalisation), both texts are planned and signed as a store would (``simstore.batch.sign``) and
the policy's own ``confirm`` is called with the second text against the first as the kept one,
bypassing the candidate stage. Of the pairs it accepts, the share that the candidate stage makes
candidates: ``Policy.is_candidate`` with the number of band keys the two share (at least
``min_shared``; a row without a signature by SimHash radius). One table: per group (language x
length) and edit class (the kind table's names), the accepted pairs and that share, overall and
by the 3-gram Jaccard of the two normalised texts (``simstore.text.similarity.jaccard``, the
short texts' measure) in buckets of 0.1; then the same per group for every class together, and
per class for every group together. A pair the rule accepts by containment is counted in its
Jaccard bucket like any other (those are most of the buckets under 0.5).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from benchmarks.quality.build_dataset import Pair
from benchmarks.quality.evaluate_policy import GROUPS, kind_of, label_of
from simstore.policy import batch
from simstore.policy.policies import DEFAULT_POLICY, Kept
from simstore.text.similarity import jaccard

BUCKETS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)  # lower bounds; under 0.3 is its own bucket
MAX_DISTANCE = 3  # the store's default radius
_AT = datetime(2026, 1, 5, tzinfo=timezone.utc)


def bucket(value: float) -> str:
    """The Jaccard bucket's label: ``<.3``, ``.3-.4``, ..., ``.9-1``."""
    if value < BUCKETS[0]:
        return "<.3"
    low = max(b for b in BUCKETS if value >= b - 1e-12)
    return f".{round(low * 10)}-1" if low >= 0.9 else f".{round(low * 10)}-.{round(low * 10) + 1}"


LABELS = ("<.3", *(bucket(b + 0.05) for b in BUCKETS))


def measure(pairs: Sequence[Pair], policy: Any = None) -> dict[str, Any]:
    """Per (group, class): duplicate pairs, those the confirm rule accepts, and of those the
    candidates, overall and by Jaccard bucket; and per pair what decided."""
    policy = DEFAULT_POLICY if policy is None else policy
    dups = [p for p in pairs if label_of(p)]
    texts = [t for p in dups for t in (p.a, p.b)]
    items = batch.sign(texts, policy=policy, max_distance=MAX_DISTANCE) if texts else []
    cells: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"pairs": 0, "accepted": 0, "candidates": 0, "buckets": defaultdict(lambda: [0, 0])}
    )
    measures: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for n, pair in enumerate(dups):
        old, new = items[2 * n], items[2 * n + 1]
        cell = cells[(pair.group, kind_of(pair))]
        cell["pairs"] += 1
        kept = Kept(old.key, old.fingerprint, _AT, old.text, old.signature)
        match = policy.confirm(new, kept, MAX_DISTANCE)
        if match is None:
            continue
        shared = len(set(new.band_keys) & set(old.band_keys))
        candidate = bool(policy.is_candidate(new, old, shared))
        similarity = jaccard(new.normalised or "", old.normalised or "", n=3, normalise=False)
        cell["accepted"] += 1
        cell["candidates"] += candidate
        counts = cell["buckets"][bucket(similarity)]
        counts[0] += 1
        counts[1] += candidate
        decided = measures[f"{pair.size} {match.measure or 'distance'}"]
        decided[0] += 1
        decided[1] += candidate
    return {
        "policy": type(policy).__name__,
        "duplicates": len(dups),
        "cells": {f"{g}|{k}": _plain(c) for (g, k), c in sorted(cells.items())},
        "by_measure": {k: v for k, v in sorted(measures.items())},
    }


def _plain(cell: dict[str, Any]) -> dict[str, Any]:
    return {**cell, "buckets": {k: list(v) for k, v in cell["buckets"].items()}}


def _merge(cells: list[dict[str, Any]]) -> dict[str, Any]:
    total: dict[str, Any] = {"pairs": 0, "accepted": 0, "candidates": 0, "buckets": {}}
    for cell in cells:
        for name in ("pairs", "accepted", "candidates"):
            total[name] += cell[name]
        for label, (n, yes) in cell["buckets"].items():
            counts = total["buckets"].setdefault(label, [0, 0])
            counts[0] += n
            counts[1] += yes
    return total


def _row(name: str, cell: dict[str, Any]) -> str:
    accepted, found = cell["accepted"], cell["candidates"]
    share = f"{found / accepted:.3f}" if accepted else "  -  "
    curve = ""
    for label in LABELS:
        n, yes = cell["buckets"].get(label, (0, 0))
        curve += f" {yes / n:>5.2f}/{n:<4}" if n else f" {'':>5} {'':<4}"
    return f"{name:<33} {cell['pairs']:>5} {accepted:>5} {share:>6} |{curve}"


def print_report(report: dict[str, Any]) -> None:
    """One table: per group and class, then per group, then per class (see the docstring)."""
    cells = {tuple(key.split("|")): cell for key, cell in report["cells"].items()}
    print(
        f"\n## Candidate recall at the confirm rule ({report['policy']}; "
        f"{report['duplicates']} duplicate pairs)"
    )
    print(
        "dups: duplicate pairs; accepted: pairs the confirm rule accepts on their texts; "
        "cand: the share of those that are candidates.\nBy 3-gram Jaccard of the normalised "
        "texts: share that are candidates / accepted pairs."
    )
    head = "".join(f" {label:^10}" for label in LABELS)
    print(f"{'group / class':<33} {'dups':>5} {'acc.':>5} {'cand':>6} |{head}")
    for group in GROUPS:
        mine = {kind: cell for (g, kind), cell in cells.items() if g == group}
        if not mine:
            continue
        print(_row(f"{group} (every class)", _merge(list(mine.values()))))
        for kind, cell in sorted(mine.items()):
            print(_row(f"  {kind}", cell))
    print(_row("all groups, every class", _merge(list(cells.values()))))
    print("\nper class, every group together:")
    kinds = sorted({kind for _g, kind in cells})
    for kind in kinds:
        print(_row(f"  {kind}", _merge([c for (g, k), c in cells.items() if k == kind])))
    print("\nper length and the measure that accepted (accepted, share candidates):")
    for name, (n, yes) in report["by_measure"].items():
        print(f"  {name:<24} {n:>6}  {yes / n:.3f}")
