"""Fewer MinHash band keys a text: how many duplicates each band layout would still find.

    python -m benchmarks layouts [--split test] [--corpus N] [--json FILE]

Every band key is a row (MySQL/MariaDB, SQLite) or a GIN entry (PostgreSQL), so the number of
bands sets most of a kept text's bytes on the servers. Each pair of the chosen half is signed
as the default policy signs it (``batch.sign``); a duplicate counts as found under a layout of
``B`` bands of ``R`` signature values when the default policy's own confirm accepts the pair
(which does not depend on how it was found) and the two signatures agree on every value of at
least ``m`` bands: 1, 2, or the policy's own (1 for a short text, 2 for a long one). Equal band
values are what an equal band key stands for. The layout the store uses (``minhash.BANDS`` x
``minhash.ROWS``, 16 x 4) with the policy's ``m`` gives the store's own candidates on this half.
"non-duplicates as candidates" is the share of the negative pairs that a layout would hand to
confirm (work, not errors), and
"chance at 1M" the expected number of unrelated kept texts that share a band with a query at 1M
kept texts (``B x 256^-R x 10^6``: one-byte values agree by chance with p = 1/256).

The other side is work: ``--corpus N`` also signs the window benchmark's first N composed texts
(``benchmarks.common.corpus.compose``: texts built from the dataset's clauses, which share clauses as
a feed shares phrases) and prints, per layout, the pairs of them that share a band key and the
band-key rows a text's lookup reads (p50, p99, and the most texts holding one key): what a query
reads and confirms grows with these, and the slowest queries with their p99.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.quality import build_dataset
from benchmarks.quality.evaluate_policy import load_pairs
from simstore.policy import batch
from simstore.policy.policies import DEFAULT_POLICY
from simstore.text import minhash
from simstore.text._mix import GOLDEN, mix64

LAYOUTS = ((16, 4), (14, 4), (12, 4), (8, 4), (12, 3), (10, 3), (8, 3))
BARS: tuple[int | str, ...] = (1, 2, "policy")


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("tune", "test"), default="test")
    parser.add_argument("--data", type=Path, default=build_dataset.DEFAULT_OUT)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--corpus", type=int, default=0, help="composed texts to count work on")
    args = parser.parse_args(None if argv is None else list(argv))

    found: Counter[tuple[int, int, int | str]] = Counter()
    passed: Counter[tuple[int, int, int | str]] = Counter()
    duplicates = negatives = confirmed_duplicates = 0
    for pair in load_pairs(args.data, args.split):
        items = batch.sign([pair.a, pair.b], keys=["a", "b"])
        if items[0].signature is None or items[1].signature is None:
            continue
        equal = minhash.from_bytes(items[0].signature) == minhash.from_bytes(items[1].signature)
        confirmed = len(batch.confirm(items, [(1, 0)])) == 1
        policy_bar = DEFAULT_POLICY.min_shared(items[1])
        duplicates += pair.label
        negatives += 1 - pair.label
        confirmed_duplicates += pair.label and confirmed
        for bands, rows in LAYOUTS:
            shared = int(equal[: bands * rows].reshape(bands, rows).all(axis=1).sum())
            for bar in BARS:
                candidate = shared >= (policy_bar if isinstance(bar, str) else bar)
                if pair.label:
                    found[bands, rows, bar] += candidate and confirmed
                else:
                    passed[bands, rows, bar] += candidate

    print(f"{args.split} half: {duplicates:,} duplicate pairs (the policy's confirm accepts "
          f"{confirmed_duplicates:,}), {negatives:,} non-duplicate pairs")  # fmt: skip
    print(f"{'layout':<16}{'m':>8}{'duplicates found':>18}{'non-duplicates as candidates':>30}"
          f"{'chance at 1M':>14}")  # fmt: skip
    rows_out = []
    for bands, rows in LAYOUTS:
        chance = bands * float(np.float64(256.0) ** -rows) * 1e6
        for bar in BARS:
            recall = found[bands, rows, bar] / max(duplicates, 1)
            work = passed[bands, rows, bar] / max(negatives, 1)
            shown = f"{chance:.3f}" if bar == 1 else ""
            print(f"{bands:>2} bands x {rows}{bar!s:>14}{recall:>18.3f}{work:>30.3f}"
                  f"{shown:>14}")  # fmt: skip
            rows_out.append(
                {"bands": bands, "rows": rows, "m": bar, "duplicates_found": round(recall, 4),
                 "negatives_as_candidates": round(work, 4), "chance_at_1M": round(chance, 4)}
            )  # fmt: skip
    figures: dict[str, Any] = {"split": args.split, "layouts": rows_out}
    if args.corpus:
        figures["corpus"] = corpus_work(args.data, args.corpus)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


def layout_keys(signatures: np.ndarray[Any, Any], bands: int, rows: int) -> list[list[int]]:
    """Every signature's band keys under a layout, made as ``minhash.band_keys`` makes its own."""
    values = signatures[:, : bands * rows].astype(np.uint64).reshape(len(signatures), bands, rows)
    words = np.zeros((len(signatures), bands), dtype=np.uint64)
    for row in range(rows):
        words |= values[:, :, row] << np.uint64(8 * row)
    seeds = mix64(np.arange(bands, dtype=np.uint64) * GOLDEN + np.uint64(0x5EED5EED5EED5EED))
    keys: list[list[int]] = mix64(words ^ seeds).tolist()
    return keys


def corpus_work(data: Path, count: int) -> list[dict[str, Any]]:
    """Key-sharing pairs and band-key rows read a text, per layout, over ``count`` composed texts."""
    from benchmarks.common.corpus import compose, load_pool

    load_pool(data / "pairs.jsonl")
    items: Sequence[Any] = batch.sign([compose(i) for i in range(count)])
    signed = np.stack([minhash.from_bytes(it.signature) for it in items if it.signature])
    print(f"\n{len(signed):,} composed texts signed (the window benchmark's first {count:,})")
    print(f"{'layout':<16}{'key-sharing pairs':>20}{'rows read p50':>15}{'p99':>8}"
          f"{'largest key':>13}")  # fmt: skip
    out = []
    for bands, rows in LAYOUTS:
        keys = layout_keys(signed, bands, rows)
        holders = Counter(key for text in keys for key in set(text))
        pairs = sum(n * (n - 1) // 2 for n in holders.values())
        read = np.array([sum(holders[key] - 1 for key in set(text)) for text in keys])
        p50, p99 = np.percentile(read, 50), np.percentile(read, 99)
        print(f"{bands:>2} bands x {rows}{pairs:>22,}{p50:>15.0f}{p99:>8.0f}"
              f"{max(holders.values()):>13,}")  # fmt: skip
        out.append(
            {"bands": bands, "rows": rows, "key_sharing_pairs": pairs, "rows_read_p50": p50,
             "rows_read_p99": p99, "largest_key": max(holders.values())}
        )  # fmt: skip
    return out


if __name__ == "__main__":
    raise SystemExit(main())
