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

    python -m benchmarks layouts --short [--split tune] [--store N]

``--short`` compares the layouts a policy may record (``minhash.LAYOUTS``, one layout for every
text: a short and a long text that match must share keys) at the confirm rule, as
``quality --candidates`` does: of the duplicate pairs the default's ``confirm`` accepts, the share
that share at least ``min_shared`` keys (1 for a short text, ``min_bands`` for a long one), per
group, per edit class of the short groups, and for the short pairs at 3-gram Jaccard .5-.6 (the
threshold). Its cost: keys a text; the chance that an unrelated text shares a key with a query
(``B x 256^-R``) and, measured, the share of pairs of short texts of distinct pairs (related by
source family at most) that share a key, both as candidates per query at 1M kept texts.
``--store N`` also fills an SQLite file with the dataset's first N distinct texts
(``common.corpus.dataset_texts``) under each layout and prints bytes per kept text (``dbstat``) and
the p50 / p99 of ``query`` over 500 of the dataset's other texts (timed in one process: a
ratio between layouts, not an absolute).
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
    parser.add_argument("--short", action="store_true", help="the layouts a policy may record")
    parser.add_argument("--store", type=int, default=0, help="with --short: texts to fill a store")
    args = parser.parse_args(None if argv is None else list(argv))
    if args.short:
        short_layouts(args.data, args.split, args.store)
        return 0

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


def short_layouts(data: Path, split: str, store_texts: int) -> None:
    """``--short`` (see the module docstring)."""
    from datetime import datetime, timezone

    from benchmarks.quality.evaluate_policy import GROUPS, kind_of, label_of
    from simstore.policy.policies import Kept
    from simstore.text.similarity import jaccard

    pairs = load_pairs(data, split)
    dups = [p for p in pairs if label_of(p)]
    items = batch.sign([t for p in dups for t in (p.a, p.b)], max_distance=3)
    at = datetime(2026, 1, 5, tzinfo=timezone.utc)
    cells: dict[str, Counter[str]] = {}
    for n, pair in enumerate(dups):
        old, new = items[2 * n], items[2 * n + 1]
        kept = Kept(old.key, old.fingerprint, at, old.text, old.signature)
        if old.signature is None or new.signature is None:
            continue
        if DEFAULT_POLICY.confirm(new, kept, 3) is None:
            continue
        short = new.text is not None and old.text is not None
        names = ["all groups", pair.group]
        if short and pair.group.endswith("short"):
            names.append(f"{pair.group} {kind_of(pair)}")
        if short and 0.5 <= jaccard(new.normalised or "", old.normalised or "", n=3) < 0.6:
            names.append("short pairs at 3-gram J .5-.6")
        least = 1 if new.text is not None else DEFAULT_POLICY.min_bands
        for layout in minhash.LAYOUTS:
            keys = minhash.stored_band_keys([old.signature, new.signature], layout)
            found = len(set(keys[0]) & set(keys[1])) >= least
            for name in names:
                cells.setdefault(name, Counter())[layout] += found
                cells[name]["accepted"] += layout == minhash.LAYOUT
    layouts = list(minhash.LAYOUTS)
    print(f"{split} half: candidate recall at the confirm rule (accepted duplicate pairs)")
    print(f"{'':<36}{'acc.':>6}" + "".join(f"{name:>8}" for name in layouts))
    order = ["all groups", *GROUPS, "short pairs at 3-gram J .5-.6"]
    order += sorted(name for name in cells if name not in order)
    for name in order:
        if name in cells:
            cell = cells[name]
            shares = "".join(f"{cell[layout] / cell['accepted']:>8.3f}" for layout in layouts)
            print(f"{name:<36}{cell['accepted']:>6}{shares}")
    _short_costs(pairs, layouts)
    if store_texts:
        _store_costs(data, store_texts, layouts)


def _short_costs(pairs: Sequence[Any], layouts: Sequence[str]) -> None:
    """Keys a text and candidates per query at 1M: by chance and measured on short texts."""
    firsts = list(dict.fromkeys(pair.a for pair in pairs))
    signed = [it for it in batch.sign(firsts) if it.text is not None and it.signature]
    values = np.stack([minhash.from_bytes(it.signature or b"") for it in signed])
    total = len(values) * (len(values) - 1) // 2
    print(f"\ncost ({len(values):,} short texts, the first of distinct pairs: {total:,} pairs)")
    print(f"{'layout':<8}{'keys':>6}{'chance at 1M':>14}{'key-sharing pairs':>19}"
          f"{'share':>10}{'per query at 1M':>17}")  # fmt: skip
    for layout in layouts:
        bands, rows = minhash.LAYOUTS[layout]
        holders: dict[int, list[int]] = {}
        for n, keys in enumerate(minhash.distinct_band_keys(values, layout)):
            for key in keys:
                holders.setdefault(key, []).append(n)
        sharing = {(a, b) for held in holders.values() for a in held for b in held if a < b}
        share = len(sharing) / max(total, 1)
        chance = bands * 256.0**-rows * 1e6
        print(f"{layout:<8}{bands:>6}{chance:>14.3f}{len(sharing):>19,}{share:>10.2e}"
              f"{share * 1e6:>17.1f}")  # fmt: skip


def _store_costs(data: Path, count: int, layouts: Sequence[str]) -> None:
    """Bytes per kept text and query times of an SQLite store filled under each layout."""
    import tempfile
    import time

    from benchmarks.common.corpus import dataset_texts
    from benchmarks.common.databases import sqlite_sizes
    from simstore.policy.policies import MinHashVerification
    from simstore.store import SimStore

    texts = dataset_texts(count + 500, data / "pairs.jsonl")
    corpus, queries = texts[:count], texts[count:]
    print(f"\nSQLite store of {len(corpus):,} texts; {len(queries)} queries of other texts")
    print(f"{'layout':<8}{'kept':>8}{'B/kept':>8}{'keys B/kept':>12}{'query p50 ms':>14}"
          f"{'p99':>8}")  # fmt: skip
    for layout in layouts:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "layout.db"
            policy = MinHashVerification(minhash_bands=layout)
            with SimStore(f"sqlite:///{path}", policy=policy) as store:
                for first in range(0, len(corpus), 500):
                    chunk = corpus[first : first + 500]
                    items = [{"key": f"t{first + i}", "text": t} for i, t in enumerate(chunk)]
                    for _decision in store.add_many(items):
                        pass
                kept = store.stats().kept
                times = []
                for text in queries:
                    started = time.perf_counter()
                    store.query(text)
                    times.append((time.perf_counter() - started) * 1000)
            sizes = sqlite_sizes(path)
            whole = sum(size for _table, _name, size in sizes)
            keys = sum(size for table, _name, size in sizes if table == "simstore_minhash")
            p50, p99 = np.percentile(times, 50), np.percentile(times, 99)
            print(f"{layout:<8}{kept:>8,}{whole / kept:>8.0f}{keys / kept:>12.0f}{p50:>14.2f}"
                  f"{p99:>8.2f}")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
