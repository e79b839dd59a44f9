"""The seeds' workload with the DEFAULT pipeline on SQLite: N real-looking texts kept over a
two-day window (text in, MinHash verification), then add / query / size / memory / purge.

    python benchmarks/bench_window_default.py --rows 10000000

The texts. A pool of the clauses (lines cut at sentence ends, commas, semicolons and colons) of
the quality dataset's texts (``benchmarks/data/quality/pairs.jsonl``, Chinese and English). Text
``i`` is composed from ``random.Random(f"{seed}:{i}")``: it takes the language and the length of a
dataset text drawn at random and strings clauses of that language drawn at random (at least two)
until it reaches that length. So every text can be made again from its number, texts are distinct
(exact repeats, ~0.01-0.02%, are counted and printed), their n-grams are real text's and their
lengths the dataset's. Clauses recur across texts more than sentences of a real feed do, so some
new texts match kept ones (counted and printed).

The fill (into the git-ignored ``benchmarks/data/window/``, reused while its marker is there).
A fresh ``SimStore`` (default policy) makes the schema and the namespace; then chunks of texts are
signed by ``simstore.batch.sign`` (the store's own plan/sign path: ``plan_items`` with the default
preset and policy: fingerprint, normalised text of short texts, MinHash signature, band keys) in a
pool of two worker processes, and written straight into simstore's tables in the store's own row
format, as ``add`` would have kept them (key ``t{i}``, added at ``DAY1 + 2 days * i / N``): one
fingerprint row each (id ``i + 1``, bands from ``Item.own_bands``; a kept row is its decision's
record, so there are no decision rows), and its distinct band keys in ``simstore_minhash``,
written in primary-key order after a sort. The secondary indexes are dropped and re-created from
their own DDL around the load, as ``bench_peers.fill_direct`` does. The check: ``--check`` (200)
of the texts are added through ``SimStore.add`` into a fresh small store; their fingerprint rows,
their decision rows (none: they are kept) and the namespace row must equal the filled ones column
for column (ids aside), each band key they made must be in the filled file under the filled row's
id, and the file must hold as many band keys as the fill wrote, or the run stops.

The timing, through ``SimStore(url, keep="2d")`` with the default policy at the end of day 2
(in this process, after the load average is printed): ``query`` with text and ``add`` with text,
half new texts (numbers past N) and half near-duplicates of filled texts (a filled text made again
from its number, with one word replaced, one deleted and one inserted; characters for Chinese):
cold (the file dropped from the OS page cache with ``posix_fadvise(DONTNEED)``) and warm (the file
read into it, as a long-running service's would be). Then bytes per kept text (``dbstat``, by
table and index), the process's memory, and ``purge`` at the end of day 3 (day 1 goes) in a child
process stopped after ``--purge-minutes`` (``bench_window.timed_purge``), with its rate and what
the whole day would take. 50M texts need ~38 GiB for the file (revision 0008), ~10 GB of memory
for the fill's band-key rows and 2 hours or more of signing on two cores; the load runs without a
journal. The fill runs in a child process, so the memory printed is the store's. The adds and the
purge change the file: the next run rebuilds it (``--no-purge`` keeps the purge out).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from bench_footprint import PAIRS, report, sqlite_sizes
from bench_peers import _files, _marker, cache_file, checkpoint, machine, remove_database
from bench_store import percentile
from bench_window import DAY1, END_OF_DAY2, _lowest_ids, memory, timed_purge

from simstore import batch
from simstore.encoding import to_signed
from simstore.minhash import BANDS
from simstore.retention import partition_of
from simstore.store import SimStore
from simstore.verify import DEFAULT_POLICY

HERE = Path(__file__).resolve().parent
SPAN = timedelta(days=2)
CHUNK = 1000  # texts signed per task
_KEY_OFFSET = 2**31  # band keys are signed 32-bit values (simstore.minhash.band_keys)
SQLITE_TIME = "%Y-%m-%d %H:%M:%S.%f"  # how simstore's SQLAlchemy DateTime stores a time on SQLite
# the pool's pieces: clauses (a sentence cut at its commas, semicolons and colons too), so that two
# texts sharing one piece share a small part of their grams, not half of a short text
_SENTENCE = {
    "zh": re.compile(r"[^。！？；，：、\n]+[。！？；，：、]?"),
    "en": re.compile(r"[^\n.!?,;:]+(?:[.!?,;:]+|$)"),
}
_CJK = re.compile(r"[\u4e00-\u9fff]")

# the pool, set in the parent before the worker processes fork
SENTENCES: dict[str, list[str]] = {}
TEMPLATES: list[tuple[str, int]] = []  # (language, length) of every dataset text
SEED = 1


def load_pool(pairs: Path) -> None:
    """Fill SENTENCES and TEMPLATES from the quality dataset (its texts, distinct)."""
    seen: dict[str, str] = {}
    with pairs.open(encoding="utf-8") as lines:
        for line in lines:
            pair = json.loads(line)
            for text in (pair["a"], pair["b"]):
                if text.strip():
                    seen.setdefault(text, pair["lang"])
    sentences: dict[str, dict[str, None]] = {"zh": {}, "en": {}}
    for text, lang in seen.items():
        TEMPLATES.append((lang, len(text)))
        for piece in _SENTENCE[lang].findall(text):
            piece = piece.strip()
            if len(piece) >= 4:
                sentences[lang].setdefault(piece)
    SENTENCES.update({lang: list(found) for lang, found in sentences.items()})


def compose(i: int) -> str:
    """Text number ``i``: sentences of one language drawn until a dataset text's length."""
    rng = random.Random(f"{SEED}:{i}")
    lang, length = TEMPLATES[rng.randrange(len(TEMPLATES))]
    pool = SENTENCES[lang]
    joiner = "" if lang == "zh" else " "
    parts = [pool[rng.randrange(len(pool))], pool[rng.randrange(len(pool))]]
    total = len(parts[0]) + len(parts[1])
    while total < length:
        parts.append(pool[rng.randrange(len(pool))])
        total += len(parts[-1]) + len(joiner)
    return joiner.join(parts)


def near_duplicate(text: str, rng: random.Random) -> str:
    """The text with one word replaced, one deleted and one inserted (characters for Chinese;
    numbers left alone: the default policy treats a changed number as a new message)."""
    cjk = len(_CJK.findall(text)) * 2 > len(text)
    tokens = list(text) if cjk else text.split(" ")
    words = [t for t in tokens if t and not any(c.isdigit() for c in t)] or ["x"]
    candidates = [n for n, t in enumerate(tokens) if t in words]
    if len(tokens) < 4 or not candidates:
        return text + (words[0] if cjk else f" {words[0]}")
    tokens[rng.choice(candidates)] = rng.choice(SENTENCES["zh" if cjk else "en"])[
        : 1 if cjk else 12
    ]
    del tokens[rng.randrange(len(tokens))]
    tokens.insert(rng.randrange(len(tokens) + 1), rng.choice(words))
    return ("" if cjk else " ").join(tokens)


def moment(i: int, n: int) -> datetime:
    """When text ``i`` of ``n`` was added: evenly over the two days, to the microsecond."""
    span_us = int(SPAN.total_seconds() * 1_000_000)
    return DAY1 + timedelta(microseconds=i * span_us // n)


def sign_chunk(first: int, count: int) -> dict[str, Any]:
    """Compose and sign texts first..first+count-1 with simstore's own path (``batch.sign``)."""
    keys = [f"t{i}" for i in range(first, first + count)]
    items = batch.sign([compose(i) for i in range(first, first + count)], keys=keys)
    counts = [len(item.band_keys) for item in items]
    return {
        "first": first,
        "fp": [to_signed(item.fingerprint) for item in items],
        "bands": [item.own_bands for item in items],
        "text": [item.text for item in items],
        "signature": [item.signature for item in items],
        "band_keys": np.fromiter(
            (key for item in items for key in item.band_keys), np.int64, sum(counts)
        ),
        "counts": np.array(counts, dtype=np.int64),
        "digests": [hash(item.signature) for item in items],  # repeated texts, counted
    }


def _indexes(connection: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    return connection.execute(
        "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL "
        "AND tbl_name = ? ORDER BY name",
        (table,),
    ).fetchall()


def fill(path: Path, n: int, workers: int) -> dict[str, Any]:
    """Build the file: schema and namespace by SimStore, rows straight into its tables."""
    remove_database(path)
    with SimStore(f"sqlite:///{path}") as store:
        ns_id, partition_seconds = store.ns_id, store.partition_seconds
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA synchronous=OFF")
    # no journal for the one-transaction load: a WAL would grow to the file's size (at 50M texts
    # the two would not fit this disk); a failed fill leaves no marker and is rebuilt
    connection.execute("PRAGMA journal_mode=OFF")
    connection.execute("PRAGMA cache_size=-1048576")
    connection.execute("BEGIN")
    indexes = _indexes(connection, "simstore_fingerprints")
    for name, _sql in indexes:
        connection.execute(f"DROP INDEX {name}")
    # every band-key row as one uint64, (key + 2**31) << 32 | fp_id: sorting these in place is
    # sorting by the primary key (band_key, ns_id, fp_id) of one namespace, in 8 bytes a row
    # (at 50M texts, 1.2 billion rows: 9.6 GB, where keys, ids and an argsort took 24)
    packed = np.empty(n * BANDS, dtype=np.uint64)
    band_rows = 0
    lengths, fps, digests = [], [], []
    started = time.perf_counter()
    signing = 0.0
    context = multiprocessing.get_context("fork")  # the workers inherit the sentence pool
    with context.Pool(workers) as pool:
        tasks = [(first, min(CHUNK, n - first)) for first in range(0, n, CHUNK)]
        for done, chunk in enumerate(pool.imap(_sign_task, tasks), 1):
            first = chunk["first"]
            count = len(chunk["fp"])
            moments = [moment(i, n) for i in range(first, first + count)]
            chunk_parts = [partition_of(m, partition_seconds) for m in moments]
            connection.executemany(
                "INSERT INTO simstore_fingerprints (id, ns_id, key, fp, b0, b1, b2, b3, "
                f"added_at, part, text, signature, simhash_indexed) VALUES (?, {ns_id}, ?, ?, "
                "?, ?, ?, ?, ?, ?, ?, ?, 0)",  # signed: not in the SimHash band indexes
                (
                    (i + 1, f"t{i}", fp, *bands, m.strftime(SQLITE_TIME), part, text, signature)
                    for i, fp, bands, m, part, text, signature in zip(
                        range(first, first + count), chunk["fp"], chunk["bands"], moments,
                        chunk_parts, chunk["text"], chunk["signature"], strict=True,
                    )
                ),
            )  # fmt: skip
            keys = chunk["band_keys"]
            ids = np.arange(first + 1, first + count + 1, dtype=np.uint64)
            owners = np.repeat(ids, chunk["counts"])
            packed[band_rows : band_rows + len(keys)] = (
                (keys + _KEY_OFFSET).astype(np.uint64) << np.uint64(32)
            ) | owners
            band_rows += len(keys)
            lengths.append(chunk["counts"].astype(np.uint8))
            fps.append(np.array(chunk["fp"], dtype=np.int64))
            digests.append(np.array(chunk["digests"], dtype=np.int64))
            if done % 500 == 0 or first + count == n:
                seconds = time.perf_counter() - started
                print(
                    f"  {first + count:,} texts signed and written in {seconds:,.0f} s "
                    f"({(first + count) / seconds:,.0f}/s)",
                    flush=True,
                )
        signing = time.perf_counter() - started
    for _name, sql in indexes:
        connection.execute(sql)
    indexed = time.perf_counter()
    print(f"  fingerprint indexes made in {indexed - started - signing:,.0f} s", flush=True)
    rows = packed[:band_rows]
    rows.sort()
    step = 1 << 20
    for first in range(0, band_rows, step):
        piece = rows[first : first + step]
        keys = (piece >> np.uint64(32)).astype(np.int64) - _KEY_OFFSET
        fp_ids = (piece & np.uint64(0xFFFFFFFF)).astype(np.int64)
        connection.executemany(
            f"INSERT INTO simstore_minhash (band_key, ns_id, fp_id) VALUES (?, {ns_id}, ?)",
            zip(keys.tolist(), fp_ids.tolist(), strict=True),
        )
    del packed, rows
    minhashed = time.perf_counter()
    print(f"  {band_rows:,} band-key rows sorted and written in {minhashed - indexed:,.0f} s")
    all_fps = np.concatenate(fps)  # every text is kept: its row is its decision's record
    connection.execute("COMMIT")
    connection.execute("PRAGMA journal_mode=WAL")  # as simstore keeps its files
    connection.close()
    checkpoint(path)
    ended = time.perf_counter()
    counts = np.concatenate(lengths)
    return {
        "rows": n,
        "band_key_rows": band_rows,
        "band_keys_per_text": round(band_rows / n, 3),
        "texts_with_all_keys": round(float((counts == BANDS).mean()), 4),
        "repeated_fingerprints": int(n - len(np.unique(all_fps))),
        "repeated_signatures": int(n - len(np.unique(np.concatenate(digests)))),
        "sign_and_write_rows_s": round(signing),
        "fingerprint_indexes_s": round(indexed - started - signing),
        "minhash_table_s": round(minhashed - indexed),
        "total_s": round(ended - started),
        "signed_per_s": round(n / signing),
        "workers": workers,
    }


def fill_and_mark(path: Path, n: int, workers: int) -> None:
    """``fill``, then its figures into the file's marker (the file is complete)."""
    _marker(path).write_text(json.dumps(fill(path, n, workers)) + "\n")


def _sign_task(task: tuple[int, int]) -> dict[str, Any]:
    return sign_chunk(*task)


def _rows(path: Path, keys: Sequence[str]) -> dict[str, list[tuple[Any, ...]]]:
    """The fingerprint and decision rows of the keys and the namespace row, comparable (no ids)."""
    connection = sqlite3.connect(path)
    marks = ",".join("?" * len(keys))
    try:
        return {
            "fingerprints": connection.execute(
                "SELECT key, fp, b0, b1, b2, b3, added_at, part, text, signature "
                f"FROM simstore_fingerprints WHERE key IN ({marks}) ORDER BY key",
                keys,
            ).fetchall(),
            "decisions": connection.execute(
                "SELECT key, fp, decided_at, part, inserted, duplicate_of, distance, measure, "
                f"score FROM simstore_decisions WHERE key IN ({marks}) ORDER BY key",
                keys,
            ).fetchall(),
            "namespace": connection.execute(
                "SELECT name, preset_name, preset_version, preset_params, band_layout, "
                "partition_seconds, unsigned_rows, minhash_scheme FROM simstore_namespaces"
            ).fetchall(),
        }
    finally:
        connection.close()


def _band_keys(path: Path) -> list[tuple[str, int, int]]:
    """(key, band_key, ns_id) of every band-key row of a small file."""
    connection = sqlite3.connect(path)
    try:
        return connection.execute(
            "SELECT f.key, m.band_key, m.ns_id FROM simstore_minhash m "
            "JOIN simstore_fingerprints f ON f.id = m.fp_id AND f.ns_id = m.ns_id "
            "ORDER BY f.key, m.band_key"
        ).fetchall()
    finally:
        connection.close()


def _missing_band_keys(path: Path, expected: list[tuple[str, int, int]]) -> int:
    """How many of these (key, band_key, ns_id) rows the big file lacks, under the id of its
    row of that key (primary-key seeks: the side table has no index on fp_id)."""
    connection = sqlite3.connect(path)
    try:
        keys = sorted({key for key, _band_key, _ns_id in expected})
        ids = dict(
            connection.execute(
                "SELECT key, id FROM simstore_fingerprints WHERE key IN "
                f"({','.join('?' * len(keys))})",
                keys,
            ).fetchall()
        )
        return sum(
            connection.execute(
                "SELECT COUNT(*) FROM simstore_minhash WHERE band_key = ? AND ns_id = ? "
                "AND fp_id = ?",
                (band_key, ns_id, ids[key]),
            ).fetchone()[0]
            != 1
            for key, band_key, ns_id in expected
        )
    finally:
        connection.close()


def check_sample(path: Path, n: int, count: int, seed: int, band_key_rows: int) -> None:
    """Add ``count`` of the texts through ``SimStore.add`` into a fresh store; their rows must
    equal the filled ones: fingerprint and decision rows column by column (ids aside), every band
    key the API made there under the filled row's id, and as many band keys in all as the fill
    wrote (its texts' distinct keys). Stops the run when anything differs."""
    picks = sorted(random.Random(seed).sample(range(n), min(count, n)))
    keys = [f"t{i}" for i in picks]
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "sample.db"
        with SimStore(f"sqlite:///{small}") as store:
            for i in picks:
                store.add(compose(i), key=f"t{i}", at=moment(i, n))
        expected = _rows(small, keys)
        band_keys = _band_keys(small)
    filled = _rows(path, keys)
    for table, rows in expected.items():
        if rows != filled[table]:
            wrong = [(a, b) for a, b in zip(rows, filled[table], strict=False) if a != b][:2]
            raise SystemExit(
                f"CHECK FAILED: {table} rows differ between the API and the direct fill "
                f"({len(rows)} vs {len(filled[table])} rows; first differences: {wrong})"
            )
    missing = _missing_band_keys(path, band_keys)
    connection = sqlite3.connect(path)
    (total,) = connection.execute("SELECT COUNT(*) FROM simstore_minhash").fetchone()
    connection.close()
    if missing or total != band_key_rows:
        raise SystemExit(
            f"CHECK FAILED: {missing} of the API's {len(band_keys)} band keys are not in the "
            f"filled file; it holds {total:,} band-key rows, the fill wrote {band_key_rows:,}"
        )
    print(
        f"  check: {len(keys)} texts added through SimStore.add made the same rows as the fill "
        f"({len(expected['fingerprints'])} fingerprint, {len(band_keys)} band-key, "
        f"{len(expected['decisions'])} decision rows and the namespace row)",
        flush=True,
    )


def evict(path: Path) -> None:
    """Drop the database's files from the OS page cache (clean pages; the file is synced)."""
    drop_from_page_cache(_files(path))


def drop_from_page_cache(files: Iterable[Path]) -> None:
    """Sync each file and drop its pages from the OS page cache (``posix_fadvise(DONTNEED)``)."""
    for file in files:
        if file.exists():
            fd = os.open(file, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def timed(call: Callable[[], object], samples: list[float]) -> object:
    start = time.perf_counter()
    result = call()
    samples.append((time.perf_counter() - start) * 1e6)
    return result


def workload(n: int, count: int, salt: int) -> list[tuple[str, bool]]:
    """``count`` texts: half new (numbers past N), half near-duplicates of filled texts."""
    rng = random.Random(f"{SEED}:work:{salt}")
    new = [(compose(n + salt * count + j), False) for j in range(count // 2)]
    near = [(near_duplicate(compose(rng.randrange(n)), rng), True) for _ in range(count - len(new))]
    texts = new + near
    rng.shuffle(texts)
    return texts


def measure(
    store: SimStore,
    texts: list[tuple[str, bool]],
    mode: str,
    tag: str,
    samples: list[float] | None = None,
    matched: list[int] | None = None,
) -> dict[str, Any]:
    """p50 / p99 (us) of query or add with text; how many near-duplicates were found (the
    times go into ``samples`` too when it is given, and each query's number of matches into
    ``matched``)."""
    samples = [] if samples is None else samples
    found = wrong = 0
    for j, (text, planted) in enumerate(texts):
        if mode == "query":
            matches = timed(lambda t=text: store.query(t, now=END_OF_DAY2), samples)
            hit = bool(matches)
            if matched is not None:
                matched.append(len(matches))  # type: ignore[arg-type]
        else:
            decision = timed(
                lambda t=text, j=j: store.add(t, key=f"{tag}{j}", at=END_OF_DAY2), samples
            )
            hit = not decision.inserted  # type: ignore[attr-defined]
        found += hit and planted
        wrong += hit and not planted
    return {
        "p50_us": round(percentile(samples, 0.5)),
        "p99_us": round(percentile(samples, 0.99)),
        "mean_us": round(sum(samples) / len(samples)),
        "count": len(samples),
        "near_duplicates_found": f"{found}/{sum(p for _t, p in texts)}",
        "new_texts_matched": wrong,
    }


def tail(
    path: Path, texts: list[tuple[str, bool]], samples: Sequence[float], matched: Sequence[int]
) -> dict[str, Any]:
    """What the slowest 1% of timed queries have that the rest do not: for each text its
    length, the time to plan and sign it alone (``batch.sign``, the CPU part of a query), the
    band-key rows its keys lead to in the window, the rows sharing enough of them (those a query
    fetches and confirms) and the matches it returned; the medians over the slowest 1% against
    all."""
    db = sqlite3.connect(path)
    (seconds,) = db.execute("SELECT partition_seconds FROM simstore_namespaces").fetchone()
    cutoff = partition_of(END_OF_DAY2 - SPAN, seconds)
    rows = []
    for (text, _planted), total, matches in zip(texts, samples, matched, strict=True):
        start = time.perf_counter()
        item = batch.sign([text])[0]
        sign_us = (time.perf_counter() - start) * 1e6
        marks = ",".join("?" * len(item.band_keys))
        holders = db.execute(
            "SELECT m.fp_id FROM simstore_minhash m JOIN simstore_fingerprints f ON f.id = m.fp_id"
            f" WHERE m.band_key IN ({marks}) AND f.part >= ?",
            [*item.band_keys, cutoff],
        ).fetchall()
        shared = Counter(fp_id for (fp_id,) in holders)
        least = DEFAULT_POLICY.min_shared(item)
        candidates = sum(count >= least for count in shared.values())
        rows.append((total, len(text), sign_us, len(holders), candidates, matches))
    db.close()
    rows.sort()
    slowest = rows[-max(len(rows) // 100, 1) :]

    def medians(group: Sequence[tuple[float, ...]]) -> dict[str, float]:
        names = ("us", "chars", "sign_us", "band_key_rows", "candidates", "matches")
        return {
            name: round(float(np.median([row[k] for row in group]))) for k, name in enumerate(names)
        }

    return {"all": medians(rows), "slowest_1pct": medians(slowest),
            "slowest": [tuple(round(v) for v in row) for row in slowest]}  # fmt: skip


def filled_duplicates(store: SimStore, n: int, count: int) -> dict[str, Any]:
    """How many filled texts ``add`` would not have kept: a sample of texts queried at their own
    moment, each counted when it matches an earlier filled text (``t{j}``, j < i). The fill keeps
    every composed text, and the pool's clauses recur (a long clause fills most of a short text),
    so clusters of mutual near-duplicates are kept that a store filled through ``add`` would hold
    once; their members' queries confirm every match, which is much of the slowest 1%."""
    rng = random.Random(f"{SEED}:filled")
    numbers = [rng.randrange(n // 10, n) for _ in range(count)]  # day 1's first hours may be gone
    earlier: list[int] = []
    for i in numbers:
        matches = store.query(compose(i), now=moment(i, n))
        earlier.append(sum(m.key[0] == "t" and int(m.key[1:]) < i for m in matches))
    earlier.sort()
    return {
        "sampled": count,
        "match_an_earlier_text": round(sum(map(bool, earlier)) / count, 4),
        "earlier_matches_p50_p99_max": [
            earlier[count // 2],
            earlier[int(count * 0.99)],
            earlier[-1],
        ],
    }


def load() -> float:
    return os.getloadavg()[0]


def wait_for_quiet(minutes: float) -> str:
    deadline = time.monotonic() + minutes * 60
    while load() > 3 and time.monotonic() < deadline:
        print(f"  load average {load():.2f} > 3: waiting", flush=True)
        time.sleep(30)
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def purge_day1(path: Path, minutes: float, n: int) -> dict[str, Any]:
    """``purge`` of day 1 at the end of day 3 in a child process stopped after ``minutes``
    (``bench_window.timed_purge``: purge does not depend on the policy, and deletes the band keys
    of every row with a signature); kept texts purged (each with its band keys), decision rows."""
    rows, seconds, finished = timed_purge(path, minutes)
    fingerprint_id, decision_id = _lowest_ids(path)  # ids 1..N in time order in both tables
    texts = fingerprint_id - 1
    rate = texts / seconds if seconds else 0.0
    return {
        "day1_texts": n // 2,
        "texts_purged": texts,
        "decisions_purged": decision_id - 1,
        "rows_purged": rows,
        "seconds": round(seconds, 1),
        "finished": finished,
        "texts_per_s": round(rate),
        "whole_day_minutes": round(n // 2 / rate / 60, 1) if rate else None,
    }


def main() -> None:
    global SEED  # the workers read it after the fork
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--queries", type=int, default=1000, help="per phase (cold, warm)")
    parser.add_argument("--adds", type=int, default=1000, help="per phase (cold, warm)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2, help="signing processes")
    parser.add_argument("--check", type=int, default=200, help="texts checked against the API")
    parser.add_argument("--no-purge", action="store_true")
    parser.add_argument("--purge-minutes", type=float, default=10)
    parser.add_argument("--wait-load", type=float, default=10, help="minutes to wait for load < 3")
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--data-dir", type=Path, default=HERE / "data" / "window")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    SEED = args.seed
    n = args.rows
    load_pool(args.pairs)
    result: dict[str, Any] = {"rows": n, "machine": machine(), "command": " ".join(sys.argv)}
    print(
        f"pool: {len(SENTENCES['zh']):,} Chinese and {len(SENTENCES['en']):,} English sentences "
        f"from {len(TEMPLATES):,} dataset texts"
    )
    sample = [compose(i) for i in range(0, n, max(n // 5000, 1))]
    lengths = sorted(map(len, sample))
    dataset = sorted(length for _lang, length in TEMPLATES)
    result["text_chars"] = {
        "composed_mean": round(sum(lengths) / len(lengths)),
        "composed_median": lengths[len(lengths) // 2],
        "dataset_mean": round(sum(dataset) / len(dataset)),
        "dataset_median": dataset[len(dataset) // 2],
    }
    print(f"  text lengths (characters): {result['text_chars']}")

    path = args.data_dir / f"window-default-n{n}-s{args.seed}.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    if _marker(path).exists():
        result["fill"] = json.loads(_marker(path).read_text())
        print(f"reusing {path}")
    else:
        print(f"building {path} ({n:,} texts over two days, {args.workers} signing workers)")
        # in a child process, so that the memory measured after the timing is the store's alone
        # (the fill's arrays, 10 GB at 50M texts, would stay in this process's resident set)
        builder = multiprocessing.get_context("fork").Process(
            target=fill_and_mark, args=(path, n, args.workers)
        )
        builder.start()
        builder.join()
        if builder.exitcode != 0:
            raise SystemExit(f"the fill failed (exit code {builder.exitcode})")
        result["fill"] = json.loads(_marker(path).read_text())
    print(f"  fill: {result['fill']}", flush=True)
    check_sample(path, n, args.check, args.seed, result["fill"]["band_key_rows"])

    disk = sum(file.stat().st_size for file in _files(path)[:2] if file.exists())
    free = shutil.disk_usage(path.parent).free
    result["disk"] = {
        "bytes": disk,
        "bytes_per_text": round(disk / n),
        "projected_50m_gib": round(disk / n * 50e6 / 2**30, 1),
        "free_gib": round(free / 2**30, 1),
    }
    print(
        f"  file: {disk / 2**30:.2f} GiB = {disk / n:,.0f} bytes per kept text; 50M texts would "
        f"take ~{disk / n * 50e6 / 2**30:,.0f} GiB (free here: {free / 2**30:,.0f} GiB)"
    )
    work = {
        name: workload(n, count, salt)
        for salt, (name, count) in enumerate(
            [("query_cold", args.queries), ("add_cold", args.adds), ("query_warm", args.queries),
             ("add_warm", args.adds), ("warm_up", 20)]
        )
    }  # fmt: skip
    result["load_before"] = wait_for_quiet(args.wait_load)
    print(f"timing ({result['load_before']})", flush=True)
    _marker(path).unlink()  # the adds change the file
    store = SimStore(f"sqlite:///{path}", keep="2d")
    opened = time.perf_counter()
    measure(store, work["warm_up"], "query", "w")  # statements prepared, not the cache
    result["warm_up_s"] = round(time.perf_counter() - opened, 2)
    timings: dict[str, Any] = {}
    for name in ("query_cold", "add_cold"):
        evict(path)
        timings[name] = measure(store, work[name], name.split("_")[0], name)
        print(f"  {name} (file dropped from the page cache): {timings[name]}", flush=True)
    cache_file(path)
    warm_samples: dict[str, list[float]] = {"query_warm": [], "add_warm": []}
    warm_matched: list[int] = []
    for name in ("query_warm", "add_warm"):
        timings[name] = measure(
            store, work[name], name.split("_")[0], name, warm_samples[name], warm_matched
        )
        print(f"  {name} (file read into the page cache): {timings[name]}", flush=True)
    timings["query_warm_tail"] = tail(
        path, work["query_warm"], warm_samples["query_warm"], warm_matched
    )
    print(f"  the slowest 1% of warm queries: {timings['query_warm_tail']}", flush=True)
    result["filled_duplicates"] = filled_duplicates(store, n, args.check)
    print(f"  filled texts that add would not have kept: {result['filled_duplicates']}")
    result["timings"] = timings
    result["memory_mib"] = memory()
    print(f"  memory after the queries and adds (MiB): {result['memory_mib']}")
    result["load_after"] = subprocess.run(
        ["uptime"], capture_output=True, text=True, check=False
    ).stdout.strip()
    store.close()
    sizes = sqlite_sizes(path)  # per filled text (the adds' few thousand rows are in the sizes)
    report("SQLite (dbstat), default policy", sizes, n, n)
    result["sizes"] = {name: size for _table, name, size in sizes}
    save(args.json, result)
    if not args.no_purge:
        result["purge"] = purge_day1(path, args.purge_minutes, n)
        print(f"  purge of day 1: {result['purge']}")
        save(args.json, result)


def save(path: Path | None, result: dict[str, Any]) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
