"""What the default verification costs per query and per add at N kept texts (SQLite), issue 6.

    python -m benchmarks verification [--rows 1000000] [--queries 1000] [--adds 500]

Kept texts are composed from the real sentences of the quality benchmark's dataset (built first
when missing, see ``benchmarks/quality/build_dataset.py``): half Chinese, half English, 60% short
(under 140 characters) and 40% long (500-1,500), so that shared phrases and boilerplate collide as
they do in real feeds. They are written straight into a SQLite file as the default policy stores
them (row with fingerprint, signature and, for short texts, the normalised text; 16 MinHash band
keys each), then three stores on the same file answer the same texts in interleaved rounds:

- ``MinHashVerification()`` (the default): SimHash k <= 3 plus the band-key lookup, decided by
  similarity;
- ``SimHashVerification()``: the SimHash-only policy (short texts: k <= 7 and Jaccard >= 0.8);
- ``SimHashOnly()``: plain SimHash k <= 3, the reference the issue's "under 2x" refers to.

Queries are texts (fingerprinting and signing included, as an application calls it): half new
compositions, half near-duplicates of kept texts (a repost prefix or one sentence replaced).
Adds are new texts of both kinds under each policy, one transaction each, the default's first. Prints p50 / p99 in
microseconds and the ratios to the plain k = 3 query.
"""

from __future__ import annotations

import argparse
import random
import re
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "quality"))
import build_dataset
from bench_store import SQLITE_TIME, percentile, timed

from simstore import fingerprint_many
from simstore.policy.policies import MinHashVerification, SimHashOnly, SimHashVerification
from simstore.store import SimStore
from simstore.text import minhash
from simstore.text._algorithms import default_normalise_many
from simstore.text.encoding import bands, to_signed

CHUNK = 50_000
PART = 493104  # the partition of SQLITE_TIME at simstore's default one-hour partitions
SHORT_LENGTH = MinHashVerification().short_length
POLICIES = {
    "default (MinHash)": MinHashVerification(),
    "SimHashVerification()": SimHashVerification(),
    "SimHashOnly (plain k=3)": SimHashOnly(),
}
POLICIES_REF = "SimHashOnly (plain k=3)"
_SENTENCE_END = re.compile(r"(?<=[。！？!?.;；\n])")


def sentence_pool() -> dict[str, list[str]]:
    """Real sentences of the quality dataset, by language."""
    out = build_dataset.DEFAULT_OUT
    pairs = build_dataset.load(out) if (out / "pairs.jsonl").exists() else build_dataset.build(out)
    pool: dict[str, set[str]] = {"zh": set(), "en": set()}
    for pair in pairs:
        for text in (pair.a, pair.b):
            for sentence in _SENTENCE_END.split(text):
                if len(sentence.strip()) >= 8:
                    pool[pair.lang].add(sentence.strip())
    return {lang: sorted(sentences) for lang, sentences in pool.items()}


def compose(rng: random.Random, pool: dict[str, list[str]]) -> str:
    lang = rng.choice(("zh", "en"))
    low, high = (30, 139) if rng.random() < 0.6 else (500, 1500)
    target = rng.randint(low, high)
    joiner = "" if lang == "zh" else " "
    text = ""
    while len(text) < target:
        text += (joiner if text else "") + rng.choice(pool[lang])
    return text[:high] if high < 500 else text


def near_duplicate(rng: random.Random, text: str, pool: dict[str, list[str]]) -> str:
    if rng.random() < 0.5:
        return rng.choice(("转发：", "RT @desk: ", "via @feed ")) + text
    parts = _SENTENCE_END.split(text)
    lang = "zh" if re.search(r"[\u4e00-\u9fff]", text) else "en"
    parts[rng.randrange(len(parts))] = rng.choice(pool[lang])
    return "".join(parts)


def fill(path: Path, texts: list[str]) -> None:
    """The rows the default policy would keep for ``texts`` (keys k0..), written directly."""
    SimStore(f"sqlite:///{path}").close()  # schema and namespace
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA cache_size=-1048576")
    ns_id = connection.execute("SELECT id FROM simstore_namespaces").fetchone()[0]
    started = time.perf_counter()
    for first in range(0, len(texts), CHUNK):
        chunk = texts[first : first + CHUNK]
        values = fingerprint_many(chunk)
        normalised = default_normalise_many(chunk)
        signed = minhash.signatures(normalised)
        keys = minhash.band_keys(signed).tolist()
        rows = [
            (
                first + i + 1,
                ns_id,
                f"k{first + i}",
                to_signed(value),
                *bands(value),
                SQLITE_TIME,
                PART,
                text if len(text) < SHORT_LENGTH else None,
                minhash.to_bytes(signed[i]),
            )
            for i, (value, text) in enumerate(zip(values, normalised, strict=True))
        ]
        side = sorted(
            (key, ns_id, first + i + 1)
            for i, band_keys in enumerate(keys)
            for key in set(band_keys)
        )
        connection.execute("BEGIN")
        connection.executemany(
            "INSERT INTO simstore_fingerprints (id, ns_id, key, fp, b0, b1, b2, b3, added_at, "
            "part, text, signature, simhash_indexed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "0)",  # signed: found by band keys, not in the SimHash band indexes
            rows,
        )
        connection.executemany(
            "INSERT INTO simstore_minhash (band_key, ns_id, fp_id) VALUES (?, ?, ?)", side
        )
        connection.execute("COMMIT")
        done = first + len(chunk)
        rate = done / (time.perf_counter() - started)
        print(f"  filled {done:,} of {len(texts):,} ({rate:,.0f} texts/s)", end="\r", flush=True)
    connection.execute("ANALYZE")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    print()


def restore(store: SimStore, path: Path, run: int | str, adds: int) -> None:
    """Leave a reused file as ``fill`` wrote it: the added keys go, and the namespace is marked
    signed-only again (the other policies' adds kept rows without signatures)."""
    for j in range(len(POLICIES)):
        for i in range(adds):
            store.remove(f"add-{run}-{j}-{i}")
    connection = sqlite3.connect(path)
    with connection:
        connection.execute("UPDATE simstore_namespaces SET unsigned_rows = 0")
    connection.close()


def report(label: str, samples: dict[str, list[float]], reference: str) -> None:
    base = percentile(samples[reference], 0.5)
    print(f"\n{label}: p50 / p99 us, p50 ratio to {reference}")
    for name, values in samples.items():
        p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
        print(f"  {name:<20} {p50:>8,.0f} / {p99:>8,.0f}   {p50 / base:>5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--adds", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--db", type=Path, help="reuse or build this SQLite file")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    pool = sentence_pool()
    print(f"sentence pool: {len(pool['zh']):,} zh, {len(pool['en']):,} en")
    kept = [compose(rng, pool) for _ in range(args.rows)]
    with tempfile.TemporaryDirectory() as folder:
        path = args.db or Path(folder) / "verification.db"
        if not path.exists():
            print(f"writing {args.rows:,} kept texts to {path}")
            fill(path, kept)
        size = path.stat().st_size
        print(f"{args.rows:,} kept texts, {size / args.rows:,.0f} bytes per row on disk")
        url = f"sqlite:///{path}"
        stores = {name: SimStore(url, policy=policy) for name, policy in POLICIES.items()}
        texts = [
            near_duplicate(rng, rng.choice(kept), pool) if i % 2 else compose(rng, pool)
            for i in range(args.queries)
        ]
        for store in stores.values():  # warm the page cache and the statement caches
            for text in texts[:50]:
                store.query(text)
        query_us: dict[str, list[float]] = {name: [] for name in stores}
        found = dict.fromkeys(stores, 0)
        for i, text in enumerate(texts):
            order = list(stores)[i % 3 :] + list(stores)[: i % 3]
            for name in order:
                result: list[object] = []
                query_us[name] += timed(
                    [lambda s=stores[name], t=text, r=result: r.extend(s.query(t))]
                )
                found[name] += bool(result) and i % 2 == 1
        report(f"query(text), {args.queries} texts (half near-duplicates)", query_us, POLICIES_REF)
        for name, count in found.items():
            print(f"  {name:<20} found {count} of {args.queries // 2} near-duplicates")

        add_us: dict[str, list[float]] = {name: [] for name in stores}
        new = [
            near_duplicate(rng, rng.choice(kept), pool) if i % 2 else compose(rng, pool)
            for i in range(args.adds)
        ]
        # the default's adds first: the others keep unsigned rows, and one unsigned row makes
        # the namespace's MinHash queries look up SimHash bands as well (see simstore.policy.policies)
        run = uuid.uuid4().hex[:8]
        for j, name in enumerate(stores):
            for i, text in enumerate(new):
                key = f"add-{run}-{j}-{i}"
                add_us[name] += timed([lambda s=stores[name], t=text, k=key: s.add(t, key=k)])
        report(f"add(text), {args.adds} texts, one transaction each", add_us, POLICIES_REF)
        sizes = [len(t) for t in texts]
        print(f"\nquery texts: median {int(np.median(sizes))} characters")
        restore(stores["default (MinHash)"], path, run, len(new))
        for store in stores.values():
            store.close()


if __name__ == "__main__":
    main()
