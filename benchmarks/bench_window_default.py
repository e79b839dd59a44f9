"""The seeds' workload with the DEFAULT pipeline on SQLite: N real-looking texts kept over a
two-day window (text in, MinHash verification), then add / query / size / memory / purge.

    python -m benchmarks window-default --rows 10000000

The texts. A pool of the clauses (lines cut at sentence ends, commas, semicolons and colons) of
the quality dataset's texts (``benchmarks/data/quality/pairs.jsonl``, Chinese and English). Text
``i`` is composed from ``random.Random(f"{seed}:{i}")``: it takes the language and the length of a
dataset text drawn at random and strings clauses of that language drawn at random (at least two)
until it reaches that length. So every text can be made again from its number, texts are distinct
(exact repeats, ~0.01-0.02%, are counted and printed), their n-grams are real text's and their
lengths the dataset's. Clauses recur across texts more than sentences of a real feed do, so a
few percent of the texts are near-duplicates of earlier ones; the fill drops them as ``add`` would.

The fill (into the git-ignored ``benchmarks/data/window/``, reused while its marker is there):
the rows ``add`` would have written for texts 0..N-1 added in order (key ``t{i}``, at ``DAY1 + 2
days * i / N``), made without N transactions. A fresh ``SimStore`` (default policy) makes the
schema and the namespace. Then:
1. Sign. Chunks of texts are signed by ``simstore.policy.batch.sign`` (the store's own path,
   ``plan_items`` with the default preset and policy: fingerprint, comparison text of short
   texts, MinHash signature, band keys) in a pool of two worker processes.
2. Decide, as ``simstore.policy.batch`` does without a database. Every text's band-key rows, packed
   into one uint64 each and sorted, give the candidate pairs (two texts sharing at least
   ``Policy.min_shared`` keys; every text is signed, so the SimHash radius makes none); pairs
   whose signatures agree on too few values for any of the policy's bars are set aside by a
   numpy pass, the rest confirmed by ``batch.confirm`` (the policy's own rule) in the pool, and
   ``batch.replay`` turns the confirmed pairs into verdicts in order, with each text's moment
   (a text is compared with earlier kept texts only; all are inside the window).
3. Write, in the store's own row format: a fingerprint row for each kept text (ids 1..K in
   order, as the store numbers them; a kept row is its decision's record), a decision row for
   each dropped one (``duplicate_of`` its best earlier kept text), and the kept texts' distinct
   band keys in ``simstore_minhash`` in primary-key order. The secondary indexes are dropped and
   re-created from their own DDL around the load, as ``bench_peers.fill_direct`` does.
The checks, which stop the run when anything differs: ``--check`` (200) texts, half of them
dropped ones, and what these duplicate are added through ``SimStore.add`` in order into a fresh
small store, whose fingerprint, decision and namespace rows must equal the filled ones column for
column (ids aside), each band key they made must be in the filled file under the filled row's id,
and the file must hold as many band keys as the fill wrote; and ``--check`` texts (half dropped)
are queried through the API on the filled file at their own moments: a kept one must match no
earlier kept text, a dropped one's best earlier match must be the one its decision row names.

The timing, through ``SimStore(url, keep="2d")`` with the default policy at the end of day 2
(in this process, after the load average is printed): ``query`` with text and ``add`` with text,
half new texts (numbers past N) and half near-duplicates of filled texts (a filled text made again
from its number, with one word replaced, one deleted and one inserted; characters for Chinese):
cold (the file dropped from the OS page cache with ``posix_fadvise(DONTNEED)``) and warm (the file
read into it, as a long-running service's would be). Then bytes per kept text (``dbstat``, by
table and index), the process's memory, and ``purge`` at the end of day 3 (day 1 goes) in a child
process stopped after ``--purge-minutes`` (``bench_window.timed_purge``), with its rate and what
the whole day would take. 50M texts need ~27 GiB for the file, ~20 GB of memory for what the fill
holds (band-key rows, signatures, short texts) and 2 hours or more of signing on two cores; the
load runs without a journal. The fill runs in a child process, so the memory printed is the store's. The adds and the
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
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from bench_footprint import PAIRS, report, sqlite_sizes
from bench_peers import _files, _marker, cache_file, checkpoint, machine, remove_database
from bench_store import percentile
from bench_window import DAY1, END_OF_DAY2, _lowest_ids, memory, timed_purge

from simstore.policy import batch
from simstore.policy.batch import Edge, Verdict
from simstore.policy.policies import DEFAULT_POLICY, Item
from simstore.storage.retention import partition_of
from simstore.storage.schema import pack_text
from simstore.store import SimStore
from simstore.text.encoding import bands, to_signed
from simstore.text.minhash import BANDS, SIZED_BYTES, VALUES

HERE = Path(__file__).resolve().parent
SPAN = timedelta(days=2)
CHUNK = 1000  # texts signed per task
PIECE = 1 << 24  # band-key rows a numpy pass reads at once (at 50M texts they are 6.4 GB)
BUCKETS = 16  # ranges of new texts whose candidate pairs are counted apart
SIGNATURE_PAIRS = 1 << 20  # raw pairs whose signatures are compared at once (2 x 96 MB)
_KEY_OFFSET = 2**31  # band keys are signed 32-bit values (simstore.text.minhash.band_keys)
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
            # a table's frame line has nothing to compare: a text of frames only is refused
            if len(piece) >= 4 and any(character.isalnum() for character in piece):
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
        "fp": np.array([item.fingerprint for item in items], dtype=np.uint64),
        "text": [item.text for item in items],
        "signature": np.frombuffer(
            b"".join((item.signature or b"")[:SIZED_BYTES] for item in items), np.uint8
        ),
        "opening": [(item.signature or b"")[SIZED_BYTES:] for item in items],
        "mostly_cjk": np.array([item.mostly_cjk for item in items], dtype=bool),
        "min_shared": np.array([DEFAULT_POLICY.min_shared(item) for item in items], np.uint8),
        "band_keys": np.fromiter(
            (key for item in items for key in item.band_keys), np.int64, sum(counts)
        ),
        "counts": np.array(counts, dtype=np.int64),
        "digests": [hash(item.signature) for item in items],  # repeated texts, counted
    }


@dataclass
class Signed:
    """What signing every text made, held for the decisions and the writing (numbers 0..N-1)."""

    fp: npt.NDArray[np.uint64]
    text: list[str | None]  # the comparison text (short texts)
    signature: npt.NDArray[np.uint8]  # (N, SIZED_BYTES): the values, then the text's size
    openings: list[bytes]  # what follows the size: a long text's compressed opening, or b""
    mostly_cjk: npt.NDArray[np.bool_]
    min_shared: npt.NDArray[np.uint8]  # band keys a kept text must share to be a candidate
    band_rows: npt.NDArray[np.uint64]  # (key + 2**31) << 32 | number + 1, sorted
    counts: npt.NDArray[np.uint8]  # distinct band keys of each text
    digests: npt.NDArray[np.int64]


# the signed texts, set in the fill's process before the confirming workers fork
SIGNED: Signed | None = None


def sign_all(n: int, workers: int) -> Signed:
    """Compose and sign texts 0..n-1 in a pool (``sign_chunk``); the band-key rows sorted."""
    # every band-key row as one uint64, (key + 2**31) << 32 | fp_id: sorting these in place is
    # sorting by the primary key (band_key, ns_id, fp_id) of one namespace, in 8 bytes a row
    packed = np.empty(n * BANDS, dtype=np.uint64)
    fp = np.empty(n, dtype=np.uint64)
    signature = np.empty((n, SIZED_BYTES), dtype=np.uint8)
    mostly_cjk = np.empty(n, dtype=bool)
    min_shared = np.empty(n, dtype=np.uint8)
    counts = np.empty(n, dtype=np.uint8)
    digests = np.empty(n, dtype=np.int64)
    text: list[str | None] = []
    openings: list[bytes] = []
    band_rows = 0
    started = time.perf_counter()
    context = multiprocessing.get_context("fork")  # the workers inherit the sentence pool
    with context.Pool(workers) as pool:
        tasks = [(first, min(CHUNK, n - first)) for first in range(0, n, CHUNK)]
        for done, chunk in enumerate(pool.imap(_sign_task, tasks), 1):
            first = chunk["first"]
            end = first + len(chunk["text"])
            fp[first:end] = chunk["fp"]
            signature[first:end] = chunk["signature"].reshape(-1, SIZED_BYTES)
            mostly_cjk[first:end] = chunk["mostly_cjk"]
            min_shared[first:end] = chunk["min_shared"]
            counts[first:end] = chunk["counts"]
            digests[first:end] = chunk["digests"]
            text.extend(chunk["text"])
            openings.extend(chunk["opening"])
            keys = chunk["band_keys"]
            ids = np.arange(first + 1, end + 1, dtype=np.uint64)
            packed[band_rows : band_rows + len(keys)] = (
                (keys + _KEY_OFFSET).astype(np.uint64) << np.uint64(32)
            ) | np.repeat(ids, chunk["counts"])
            band_rows += len(keys)
            if done % 500 == 0 or end == n:
                seconds = time.perf_counter() - started
                print(f"  {end:,} texts signed in {seconds:,.0f} s ({end / seconds:,.0f}/s)",
                      flush=True)  # fmt: skip
    rows = packed[:band_rows]
    rows.sort()
    return Signed(fp, text, signature, openings, mostly_cjk, min_shared, rows, counts, digests)


def candidate_pairs(
    signed: Signed, least_equal: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]:
    """Every (new, old) pair of text numbers, old < new, that shares at least ``min_shared(new)``
    band keys (``Policy.is_candidate`` for signed texts: every filled text is signed, so the
    SimHash radius never makes a candidate) and whose signatures agree on at least
    ``least_equal`` values (``Policy.least_equal_values``: the others no rule confirms), sorted
    by new then old; and how many raw pairs (one per shared key) were looked at.

    From the sorted band-key rows: the rows of one key lie together in number order, and rows d
    apart within a run of one key are a pair; a text's keys are distinct, so a pair's rows count
    its shared keys. A key that H texts hold makes H**2 / 2 raw pairs (a boilerplate key: 7,348
    holders at 5M), so the signatures are compared as the pairs are made and only the pairs that
    agree enough are kept to be counted: at 10M, counting every raw pair ran out of 24 GB."""
    rows = signed.band_rows
    low = np.uint64(0xFFFFFFFF)

    def number(at: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return (rows[at] & low).astype(np.int64) - 1

    def agreeing(new: npt.NDArray[np.int64], old: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        out = np.empty(0, dtype=np.int64)
        parts = [out]
        for first in range(0, len(new), SIGNATURE_PAIRS):
            a, b = new[first : first + SIGNATURE_PAIRS], old[first : first + SIGNATURE_PAIRS]
            values_a, values_b = signed.signature[a, :VALUES], signed.signature[b, :VALUES]
            equal = (values_a == values_b).sum(axis=1) >= least_equal
            parts.append((a[equal] << 32) | b[equal])
        return np.concatenate(parts)

    last = len(rows) - 1
    at = np.concatenate(
        [
            np.flatnonzero(rows[f + 1 : t + 1] >> 32 == rows[f:t] >> 32) + f
            for f, t in ((f, min(f + PIECE, last)) for f in range(0, last, PIECE))
        ]
    )  # rows followed by a row of their key
    # the kept codes (new << 32 | old) sorted in pieces by new, so that each range of new texts
    # is counted apart
    bounds = np.linspace(0, len(signed.fp), BUCKETS + 1).astype(np.int64) << 32
    pieces: list[list[npt.NDArray[np.int64]]] = [[] for _ in range(BUCKETS)]
    gap, raw = 1, 0
    while at.size:
        raw += len(at)
        codes = np.sort(agreeing(number(at + gap), number(at)))
        cuts = np.searchsorted(codes, bounds)
        for bucket in range(BUCKETS):
            pieces[bucket].append(codes[cuts[bucket] : cuts[bucket + 1]])
        gap += 1
        at = at[at + gap < len(rows)]
        at = at[rows[at + gap] >> 32 == rows[at] >> 32]  # a run of one key holds every row between
    new_parts, old_parts = [], []
    for bucket in range(BUCKETS):
        pairs, shared = np.unique(np.concatenate(pieces[bucket]), return_counts=True)
        pieces[bucket] = []
        new, old = pairs >> 32, pairs & 0xFFFFFFFF
        wanted = shared >= signed.min_shared[new]
        new_parts.append(new[wanted])
        old_parts.append(old[wanted])
    return np.concatenate(new_parts), np.concatenate(old_parts), raw


def _item(number: int) -> Item:
    """Text ``number`` as the store's planned item, from what signing it made."""
    assert SIGNED is not None
    return Item(
        f"t{number}", int(SIGNED.fp[number]), None, 3, text=SIGNED.text[number],
        signature=SIGNED.signature[number].tobytes() + SIGNED.openings[number], planned=True,
        mostly_cjk=bool(SIGNED.mostly_cjk[number]),
    )  # fmt: skip


def _confirm_task(task: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]) -> list[Edge]:
    """``batch.confirm`` of these (new, old) pairs: the store's own rule, on the texts' items;
    the edges in text numbers."""
    new, old = task
    numbers = np.unique(np.concatenate([new, old]))
    items = [_item(number) for number in numbers.tolist()]
    local = zip(np.searchsorted(numbers, new).tolist(), np.searchsorted(numbers, old).tolist(),
                strict=True)  # fmt: skip
    return [
        Edge(int(numbers[e.new]), int(numbers[e.old]), e.distance, e.measure, e.score)
        for e in batch.confirm(items, local)
    ]


def deduplicate(signed: Signed, n: int, workers: int) -> tuple[list[Verdict], dict[str, Any]]:
    """What ``add`` would have decided for each of texts 0..n-1 added in order (each against the
    texts kept before it, all inside the window): candidate pairs by shared band keys, confirmed
    by the policy, replayed in order by ``batch.replay`` (the store's rule and tie-breaks, with
    each text's moment). The verdicts of texts in an edge (every other text is kept), in order."""
    global SIGNED
    started = time.perf_counter()
    new_near, old_near, raw = candidate_pairs(signed, DEFAULT_POLICY.least_equal_values() or 0)
    paired = time.perf_counter()
    SIGNED = signed
    step = 20_000
    tasks = [
        (new_near[k : k + step], old_near[k : k + step]) for k in range(0, len(new_near), step)
    ]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        edges = [edge for part in pool.imap(_confirm_task, tasks) for edge in part]
    SIGNED = None
    confirmed = time.perf_counter()
    numbers = np.unique(np.array([(e.new, e.old) for e in edges], dtype=np.int64).reshape(-1, 2))
    position = {number: k for k, number in enumerate(numbers.tolist())}
    verdicts = batch.replay(
        [f"t{number}" for number in numbers.tolist()],
        [Edge(position[e.new], position[e.old], e.distance, e.measure, e.score) for e in edges],
        moments=[moment(number, n) for number in numbers.tolist()],
    )
    dropped = sum(not verdict.kept for verdict in verdicts)
    figures = {
        "raw_pairs": raw,  # one per key a pair shares
        "candidate_pairs_past_prefilter": len(new_near),
        "confirmed_pairs": len(edges),
        "texts_dropped": dropped,
        "texts_kept": n - dropped,
        "candidate_pairs_s": round(paired - started),
        "confirm_s": round(confirmed - paired),
        "replay_s": round(time.perf_counter() - confirmed),
    }
    print(f"  decided as add would: {figures}", flush=True)
    return [v for v in verdicts if not v.kept], figures


def _indexes(connection: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    return connection.execute(
        "SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL "
        "AND tbl_name = ? ORDER BY name",
        (table,),
    ).fetchall()


def fill(path: Path, n: int, workers: int) -> dict[str, Any]:
    """Build the file: schema and namespace by SimStore, then the rows ``add`` would have
    written for texts 0..n-1 added in order, straight into its tables."""
    remove_database(path)
    with SimStore(f"sqlite:///{path}") as store:
        ns_id, partition_seconds = store.ns_id, store.partition_seconds
    started = time.perf_counter()
    signed = sign_all(n, workers)
    signing = time.perf_counter()
    dropped, decided = deduplicate(signed, n, workers)
    deciding = time.perf_counter()
    kept = np.ones(n, dtype=bool)
    kept[[int(verdict.key[1:]) for verdict in dropped]] = False
    ids = np.cumsum(kept)  # a kept text's row id: its place among the kept, as add numbers them

    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA synchronous=OFF")
    # no journal for the one-transaction load: a WAL would grow to the file's size (at 50M texts
    # the two would not fit this disk); a failed fill leaves no marker and is rebuilt
    connection.execute("PRAGMA journal_mode=OFF")
    connection.execute("PRAGMA cache_size=-1048576")
    connection.execute("BEGIN")
    indexes = _indexes(connection, "simstore_fingerprints")
    indexes += _indexes(connection, "simstore_decisions")
    for name, _sql in indexes:
        connection.execute(f"DROP INDEX {name}")
    step = 100_000
    for first in range(0, n, step):
        numbers = (np.flatnonzero(kept[first : first + step]) + first).tolist()
        connection.executemany(
            "INSERT INTO simstore_fingerprints (id, ns_id, key, fp, b0, b1, b2, b3, "
            f"added_at, part, packed_text, signature, simhash_indexed) VALUES (?, {ns_id}, ?, ?, "
            "?, ?, ?, ?, ?, ?, ?, ?, 0)",  # signed: not in the SimHash band indexes
            (_fingerprint_row(signed, i, int(ids[i]), n, partition_seconds) for i in numbers),
        )
    connection.executemany(
        "INSERT INTO simstore_decisions (id, ns_id, key, fp, decided_at, part, inserted, "
        f"duplicate_of, distance, measure, score) VALUES (?, {ns_id}, ?, ?, ?, ?, 0, ?, ?, ?, ?)",
        (
            (k, v.key, to_signed(int(signed.fp[int(v.key[1:])])), *_when(int(v.key[1:]), n,
             partition_seconds), v.duplicate_of, v.distance, v.measure, v.score)
            for k, v in enumerate(dropped, 1)
        ),
    )  # fmt: skip
    rows_written = time.perf_counter()
    for _name, sql in indexes:
        connection.execute(sql)
    indexed = time.perf_counter()
    print(f"  rows written in {rows_written - deciding:,.0f} s, indexes made in "
          f"{indexed - rows_written:,.0f} s", flush=True)  # fmt: skip
    # the kept texts' band-key rows, their owners renumbered: the order (key, then owner) holds
    low = np.uint64(0xFFFFFFFF)
    band_rows = 0
    for first in range(0, len(signed.band_rows), 1 << 20):
        piece = signed.band_rows[first : first + (1 << 20)]
        owners = (piece & low).astype(np.int64) - 1
        mine = kept[owners]
        keys = (piece[mine] >> np.uint64(32)).astype(np.int64) - _KEY_OFFSET
        connection.executemany(
            f"INSERT INTO simstore_minhash (band_key, ns_id, fp_id) VALUES (?, {ns_id}, ?)",
            zip(keys.tolist(), ids[owners[mine]].tolist(), strict=True),
        )
        band_rows += len(keys)
    minhashed = time.perf_counter()
    print(f"  {band_rows:,} band-key rows written in {minhashed - indexed:,.0f} s", flush=True)
    connection.execute("COMMIT")
    connection.execute("PRAGMA journal_mode=WAL")  # as simstore keeps its files
    connection.close()
    checkpoint(path)
    ended = time.perf_counter()
    return {
        "rows": n,
        "kept": int(kept.sum()),
        "kept_day1": int(kept[: n // 2].sum()),
        "band_key_rows": band_rows,
        "band_keys_per_text": round(float(signed.counts.mean()), 3),
        "texts_with_all_keys": round(float((signed.counts == BANDS).mean()), 4),
        "repeated_fingerprints": int(n - len(np.unique(signed.fp))),
        "repeated_signatures": int(n - len(np.unique(signed.digests))),
        **decided,
        "sign_s": round(signing - started),
        "decide_s": round(deciding - signing),
        "write_rows_s": round(rows_written - deciding),
        "indexes_s": round(indexed - rows_written),
        "minhash_table_s": round(minhashed - indexed),
        "total_s": round(ended - started),
        "signed_per_s": round(n / (signing - started)),
        "workers": workers,
    }


def fill_keep_all(path: Path, n: int, workers: int) -> dict[str, Any]:
    """``--keep-all``: every text kept, its rows written as its chunk is signed (nothing but the
    packed band-key rows held: 6.4 GB at 50M texts, where the deduplicating fill's signatures and
    texts would not fit 24 GB beside them). An upper bound: ``add`` would drop the texts that
    match an earlier one (``overstated`` counts them in a sample)."""
    remove_database(path)
    with SimStore(f"sqlite:///{path}") as store:
        ns_id, partition_seconds = store.ns_id, store.partition_seconds
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA synchronous=OFF")
    connection.execute("PRAGMA journal_mode=OFF")  # as in ``fill``
    connection.execute("PRAGMA cache_size=-1048576")
    connection.execute("BEGIN")
    indexes = _indexes(connection, "simstore_fingerprints")
    for name, _sql in indexes:
        connection.execute(f"DROP INDEX {name}")
    packed = np.empty(n * BANDS, dtype=np.uint64)  # as in ``sign_all``
    counts = np.empty(n, dtype=np.uint8)
    fps = np.empty(n, dtype=np.uint64)
    digests = np.empty(n, dtype=np.int64)
    band_rows = 0
    started = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        tasks = [(first, min(CHUNK, n - first)) for first in range(0, n, CHUNK)]
        for done, chunk in enumerate(pool.imap(_sign_task, tasks), 1):
            first = chunk["first"]
            end = first + len(chunk["text"])
            signatures = chunk["signature"].reshape(-1, SIZED_BYTES)
            connection.executemany(
                "INSERT INTO simstore_fingerprints (id, ns_id, key, fp, b0, b1, b2, b3, "
                f"added_at, part, packed_text, signature, simhash_indexed) VALUES (?, {ns_id}, "
                "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
                (
                    (i + 1, f"t{i}", to_signed(value), *bands(value),
                     *_when(i, n, partition_seconds), pack_text(text),
                     signature.tobytes() + opening)
                    for i, value, text, signature, opening in zip(
                        range(first, end), chunk["fp"].tolist(), chunk["text"], signatures,
                        chunk["opening"], strict=True,
                    )
                ),
            )  # fmt: skip
            keys = chunk["band_keys"]
            ids = np.arange(first + 1, end + 1, dtype=np.uint64)
            packed[band_rows : band_rows + len(keys)] = (
                (keys + _KEY_OFFSET).astype(np.uint64) << np.uint64(32)
            ) | np.repeat(ids, chunk["counts"])
            band_rows += len(keys)
            counts[first:end] = chunk["counts"]
            fps[first:end] = chunk["fp"]
            digests[first:end] = chunk["digests"]
            if done % 500 == 0 or end == n:
                seconds = time.perf_counter() - started
                print(f"  {end:,} texts signed and written in {seconds:,.0f} s "
                      f"({end / seconds:,.0f}/s)", flush=True)  # fmt: skip
    signing = time.perf_counter()
    for _name, sql in indexes:
        connection.execute(sql)
    indexed = time.perf_counter()
    rows = packed[:band_rows]
    rows.sort()
    low = np.uint64(0xFFFFFFFF)
    for first in range(0, band_rows, 1 << 20):
        piece = rows[first : first + (1 << 20)]
        connection.executemany(
            f"INSERT INTO simstore_minhash (band_key, ns_id, fp_id) VALUES (?, {ns_id}, ?)",
            zip(((piece >> np.uint64(32)).astype(np.int64) - _KEY_OFFSET).tolist(),
                (piece & low).astype(np.int64).tolist(), strict=True),
        )  # fmt: skip
    del packed, rows
    minhashed = time.perf_counter()
    print(f"  fingerprint indexes made in {indexed - signing:,.0f} s, {band_rows:,} band-key "
          f"rows sorted and written in {minhashed - indexed:,.0f} s", flush=True)  # fmt: skip
    connection.execute("COMMIT")
    connection.execute("PRAGMA journal_mode=WAL")  # as simstore keeps its files
    connection.close()
    checkpoint(path)
    ended = time.perf_counter()
    return {
        "rows": n,
        "kept": n,
        "kept_day1": n // 2,  # moment(i) falls on day 1 exactly for i < n / 2
        "keep_all": True,
        "band_key_rows": band_rows,
        "band_keys_per_text": round(float(counts.mean()), 3),
        "texts_with_all_keys": round(float((counts == BANDS).mean()), 4),
        "repeated_fingerprints": int(n - len(np.unique(fps))),
        "repeated_signatures": int(n - len(np.unique(digests))),
        "sign_and_write_rows_s": round(signing - started),
        "indexes_s": round(indexed - signing),
        "minhash_table_s": round(minhashed - indexed),
        "total_s": round(ended - started),
        "signed_per_s": round(n / (signing - started)),
        "workers": workers,
    }


def overstated(url: str, n: int, count: int, seed: int) -> dict[str, Any]:
    """``--keep-all``: of ``count`` texts drawn, how many match an earlier filled text when
    queried at their own moment (texts ``add`` would have dropped, kept by this fill)."""
    rng = random.Random(f"{seed}:overstated")
    numbers = sorted(rng.sample(range(n), min(count, n)))
    matching = []
    with SimStore(url, keep="2d") as store:
        for i in numbers:
            earlier = [m for m in store.query(compose(i), now=moment(i, n))
                       if m.key[0] == "t" and int(m.key[1:]) < i]  # fmt: skip
            matching.append(len(earlier))
    share = sum(found > 0 for found in matching) / len(matching)
    print(f"  keep-all: {share:.1%} of {len(matching)} filled texts drawn match an earlier "
          f"filled text (add would have dropped them)", flush=True)  # fmt: skip
    return {"queried": len(matching), "matching_earlier": sum(f > 0 for f in matching),
            "share": round(share, 4), "most_matches": max(matching)}  # fmt: skip


def _when(i: int, n: int, partition_seconds: int) -> tuple[str, int]:
    """Text ``i``'s moment as SQLite holds it, and its partition."""
    at = moment(i, n)
    return at.strftime(SQLITE_TIME), partition_of(at, partition_seconds)


def _fingerprint_row(
    signed: Signed, i: int, row_id: int, n: int, partition_seconds: int
) -> tuple[Any, ...]:
    """Kept text ``i``'s fingerprint row, in the columns ``fill`` inserts."""
    value = int(signed.fp[i])
    return (row_id, f"t{i}", to_signed(value), *bands(value), *_when(i, n, partition_seconds),
            pack_text(signed.text[i]),
            signed.signature[i].tobytes() + signed.openings[i])  # fmt: skip


def fill_and_mark(path: Path, n: int, workers: int, keep_all: bool = False) -> None:
    """``fill`` (or ``fill_keep_all``), then its figures into the file's marker (the file is
    complete)."""
    figures = (fill_keep_all if keep_all else fill)(path, n, workers)
    _marker(path).write_text(json.dumps(figures) + "\n")


def _sign_task(task: tuple[int, int]) -> dict[str, Any]:
    return sign_chunk(*task)


def _rows(path: Path, keys: Sequence[str]) -> dict[str, list[tuple[Any, ...]]]:
    """The fingerprint and decision rows of the keys and the namespace row, comparable (no ids)."""
    connection = sqlite3.connect(path)
    marks = ",".join("?" * len(keys))
    try:
        return {
            "fingerprints": connection.execute(
                "SELECT key, fp, b0, b1, b2, b3, added_at, part, text, signature, packed_text "
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


def drawn(path: Path, n: int, count: int, rng: random.Random) -> list[int]:
    """``count`` distinct text numbers: half drawn from all, half from the dropped ones (a few
    percent of all), so that both kinds of decision are checked."""
    connection = sqlite3.connect(path)
    dropped = [int(key[1:]) for (key,) in connection.execute("SELECT key FROM simstore_decisions")]
    connection.close()
    numbers = set(rng.sample(dropped, min(count // 2, len(dropped))))
    while len(numbers) < min(count, n):
        numbers.add(rng.randrange(n))
    return sorted(numbers)


def check_sample(path: Path, n: int, count: int, seed: int, band_key_rows: int) -> None:
    """Add ``count`` of the texts, and the kept texts the dropped ones among them duplicate,
    through ``SimStore.add`` in order into a fresh store; their rows must equal the filled ones:
    fingerprint and decision rows column by column (ids aside), every band key the API made there
    under the filled row's id, and as many band keys in all as the fill wrote (its kept texts'
    distinct keys). Stops the run when anything differs."""
    picks = drawn(path, n, count, random.Random(seed))
    connection = sqlite3.connect(path)
    marks = ",".join("?" * len(picks))
    references = connection.execute(
        f"SELECT duplicate_of FROM simstore_decisions WHERE key IN ({marks})",
        [f"t{i}" for i in picks],
    ).fetchall()
    (total,) = connection.execute("SELECT COUNT(*) FROM simstore_minhash").fetchone()
    connection.close()
    numbers = sorted(set(picks) | {int(key[1:]) for (key,) in references})
    keys = [f"t{i}" for i in numbers]
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "sample.db"
        with SimStore(f"sqlite:///{small}") as store:
            for i in numbers:
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
    if missing or total != band_key_rows:
        raise SystemExit(
            f"CHECK FAILED: {missing} of the API's {len(band_keys)} band keys are not in the "
            f"filled file; it holds {total:,} band-key rows, the fill wrote {band_key_rows:,}"
        )
    print(
        f"  check: {len(keys)} texts added through SimStore.add ({len(picks)} drawn, "
        f"{len(references)} of them duplicates, with what they duplicate) made the same rows as "
        f"the fill ({len(expected['fingerprints'])} fingerprint, {len(band_keys)} band-key, "
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


def check_decisions(path: Path, n: int, count: int, seed: int) -> dict[str, Any]:
    """The fill's decisions against the API's on the whole file: ``count`` texts drawn queried
    at their own moment. A kept one must match no earlier kept text; a dropped one's best
    earlier match must be the text its decision row names, with its score. Stops the run when
    either fails."""
    numbers = drawn(path, n, count, random.Random(f"{seed}:decisions"))
    connection = sqlite3.connect(path)
    recorded = dict(
        connection.execute(
            "SELECT key, duplicate_of || ' ' || measure || ' ' || score FROM simstore_decisions"
            f" WHERE key IN ({','.join('?' * len(numbers))})",
            [f"t{i}" for i in numbers],
        ).fetchall()
    )
    connection.close()
    wrong = []
    with SimStore(f"sqlite:///{path}", keep="2d") as store:
        for i in numbers:
            earlier = [m for m in store.query(compose(i), now=moment(i, n))
                       if m.key[0] == "t" and int(m.key[1:]) < i]  # fmt: skip
            found = f"{earlier[0].key} {earlier[0].measure} {earlier[0].score}" if earlier else None
            if found != recorded.get(f"t{i}"):
                wrong.append((i, found, recorded.get(f"t{i}")))
    if wrong:
        raise SystemExit(f"CHECK FAILED: {len(wrong)} of {count} texts queried through the API "
                         f"disagree with the fill's decisions, e.g. {wrong[:3]}")  # fmt: skip
    print(f"  check: {count} texts queried at their own moments agree with the fill's "
          f"decisions ({len(recorded)} of them dropped)", flush=True)  # fmt: skip
    return {"queried": count, "dropped": len(recorded), "disagree": 0}


def load() -> float:
    return os.getloadavg()[0]


def wait_for_quiet(minutes: float) -> str:
    deadline = time.monotonic() + minutes * 60
    while load() > 3 and time.monotonic() < deadline:
        print(f"  load average {load():.2f} > 3: waiting", flush=True)
        time.sleep(30)
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def purge_day1(path: Path, minutes: float, day1_kept: int) -> dict[str, Any]:
    """``purge`` of day 1 at the end of day 3 in a child process stopped after ``minutes``
    (``bench_window.timed_purge``: purge does not depend on the policy, and deletes the band keys
    of every row with a signature); kept texts purged (each with its band keys), decision rows."""
    rows, seconds, finished = timed_purge(path, minutes)
    fingerprint_id, decision_id = _lowest_ids(path)  # ids 1..N in time order in both tables
    texts = fingerprint_id - 1
    rate = texts / seconds if seconds else 0.0
    return {
        "day1_kept_texts": day1_kept,
        "texts_purged": texts,
        "decisions_purged": decision_id - 1,
        "rows_purged": rows,
        "seconds": round(seconds, 1),
        "finished": finished,
        "texts_per_s": round(rate),
        "whole_day_minutes": round(day1_kept / rate / 60, 1) if rate else None,
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
    parser.add_argument(
        "--keep-all",
        action="store_true",
        help="keep every text (an upper bound; for sizes whose candidate pairs are out of reach)",
    )
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

    suffix = "-all" if args.keep_all else ""
    path = args.data_dir / f"window-default-n{n}-s{args.seed}{suffix}.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    if _marker(path).exists():
        result["fill"] = json.loads(_marker(path).read_text())
        print(f"reusing {path}")
    else:
        print(f"building {path} ({n:,} texts over two days, {args.workers} signing workers)")
        # in a child process, so that the memory measured after the timing is the store's alone
        # (the fill's arrays, 10 GB at 50M texts, would stay in this process's resident set)
        builder = multiprocessing.get_context("fork").Process(
            target=fill_and_mark, args=(path, n, args.workers, args.keep_all)
        )
        builder.start()
        builder.join()
        if builder.exitcode != 0:
            raise SystemExit(f"the fill failed (exit code {builder.exitcode})")
        result["fill"] = json.loads(_marker(path).read_text())
    print(f"  fill: {result['fill']}", flush=True)
    check_sample(path, n, args.check, args.seed, result["fill"]["band_key_rows"])
    if args.keep_all:
        result["overstated"] = overstated(f"sqlite:///{path}", n, args.check, args.seed)
    else:
        result["decisions_check"] = check_decisions(path, n, args.check, args.seed)

    disk = sum(file.stat().st_size for file in _files(path)[:2] if file.exists())
    free = shutil.disk_usage(path.parent).free
    kept = result["fill"]["kept"]
    result["disk"] = {
        "bytes": disk,
        "bytes_per_kept_text": round(disk / kept),
        "projected_50m_gib": round(disk / n * 50e6 / 2**30, 1),
        "free_gib": round(free / 2**30, 1),
    }
    print(
        f"  file: {disk / 2**30:.2f} GiB = {disk / kept:,.0f} bytes per kept text ({kept:,} kept "
        f"of {n:,}); 50M texts added would take ~{disk / n * 50e6 / 2**30:,.0f} GiB (free here: "
        f"{free / 2**30:,.0f} GiB)"
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
    result["timings"] = timings
    result["memory_mib"] = memory()
    print(f"  memory after the queries and adds (MiB): {result['memory_mib']}")
    result["load_after"] = subprocess.run(
        ["uptime"], capture_output=True, text=True, check=False
    ).stdout.strip()
    store.close()
    sizes = sqlite_sizes(path)  # per filled text (the adds' few thousand rows are in the sizes)
    report("SQLite (dbstat), default policy", sizes, kept, n)
    result["sizes"] = {name: size for _table, name, size in sizes}
    save(args.json, result)
    if not args.no_purge:
        result["purge"] = purge_day1(path, args.purge_minutes, result["fill"]["kept_day1"])
        print(f"  purge of day 1: {result['purge']}")
        save(args.json, result)


def save(path: Path | None, result: dict[str, Any]) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
