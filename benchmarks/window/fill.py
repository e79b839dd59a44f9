"""Filling the window benchmark's database with the composed texts (``common.corpus``), through
``SimStore.load``, and checking that what it wrote is what ``add`` would have written.

The deduplicating fill, for texts 0..N-1 added in order (key ``t{i}``, at ``moment(i, N)``):
1. Sign. Chunks of texts are signed by ``simstore.policy.batch.sign`` (the store's own path:
   fingerprint, comparison text of short texts, MinHash signature, band keys) in a pool of
   worker processes.
2. Decide, as ``simstore.policy.batch`` does without a database. Every text's band-key rows,
   packed into one uint64 each and sorted, give the candidate pairs (two texts sharing at least
   ``Policy.min_shared`` keys; every text is signed, so the SimHash radius makes none); pairs
   whose signatures agree on too few values for any of the policy's bars are set aside by a
   numpy pass, the rest confirmed by ``batch.confirm`` (the policy's own rule) in the pool, and
   ``batch.replay`` turns the confirmed pairs into verdicts in order, with each text's moment.
3. Load: the verdicts go into the store through ``SimStore.load`` (the hand-over bulk load),
   ``STEP`` texts a call at their moment: a row for each kept text, a decision for each dropped
   one (``duplicate_of`` its best earlier kept text).
``--keep-all`` (``fill_keep_all``) loads every text as kept as its chunk is signed: an upper
bound on the rows, for sizes whose candidate pairs are out of reach (``overstated`` counts, in a
sample, the texts ``add`` would have dropped).

The checks stop the run when anything differs: ``check_sample`` adds a sample of the texts (half
of them dropped ones, with what they duplicate) through ``SimStore.add`` into a fresh store and
compares the rows column by column; ``check_decisions`` queries a sample through the API at
their own moments against the decisions the fill recorded.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import random
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from simstore.io.handover import LoadRow
from simstore.policy import batch
from simstore.policy.batch import Edge, Verdict
from simstore.policy.policies import DEFAULT_POLICY
from simstore.store import SimStore
from simstore.text.minhash import LAYOUTS, SIZED_BYTES, VALUES

from ..common import corpus
from ..common.corpus import STEP, compose, moment, step
from ..common.databases import checkpoint, marker_of, remove_database

CHUNK = STEP  # texts signed per task
PIECE = 1 << 24  # band-key rows a numpy pass reads at once (at 50M texts they are 6.4 GB)
BUCKETS = 16  # ranges of new texts whose candidate pairs are counted apart
SIGNATURE_PAIRS = 1 << 20  # raw pairs whose signatures are compared at once (2 x 96 MB)
_KEY_OFFSET = 2**31  # band keys are signed 32-bit values (simstore.text.minhash.band_keys)

BANDS = LAYOUTS[DEFAULT_POLICY.minhash_bands][0]  # the default policy's keys a text


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


def _confirm_task(task: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]) -> list[Edge]:
    """``batch.confirm`` of these (new, old) pairs: the store's own rule, on the texts' items;
    the edges in text numbers. The texts are signed again here (``batch.sign``), so that each
    item holds all that the store's planning gives it."""
    new, old = task
    numbers = np.unique(np.concatenate([new, old]))
    texts = [compose(number) for number in numbers.tolist()]
    items = batch.sign(texts, keys=[f"t{number}" for number in numbers.tolist()])
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
    started = time.perf_counter()
    new_near, old_near, raw = candidate_pairs(signed, DEFAULT_POLICY.least_equal_values() or 0)
    paired = time.perf_counter()
    step = 20_000
    tasks = [
        (new_near[k : k + step], old_near[k : k + step]) for k in range(0, len(new_near), step)
    ]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        edges = [edge for part in pool.imap(_confirm_task, tasks) for edge in part]
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


def _sign_task(task: tuple[int, int]) -> dict[str, Any]:
    return sign_chunk(*task)


def day1_kept(kept: npt.NDArray[np.bool_]) -> int:
    """How many of the texts ``kept`` marks were added on day 1 (``moment`` before day 2)."""
    n, size = len(kept), step(len(kept))
    day2 = corpus.DAY1 + corpus.SPAN / 2
    return sum(int(kept[f : f + size].sum()) for f in range(0, n, size) if moment(f, n) < day2)


def _stored_signature(signature: npt.NDArray[np.uint8], opening: bytes) -> bytes:
    return bytes(signature.tobytes()) + opening


def fill(url: str, n: int, workers: int) -> dict[str, Any]:
    """The deduplicating fill (see the module docstring) into the store at ``url`` (its schema
    and namespace made by ``SimStore``); the fill's figures."""
    started = time.perf_counter()
    signed = sign_all(n, workers)
    signing = time.perf_counter()
    dropped, decided = deduplicate(signed, n, workers)
    deciding = time.perf_counter()
    verdicts = {int(verdict.key[1:]): verdict for verdict in dropped}
    kept = np.ones(n, dtype=bool)
    kept[list(verdicts)] = False
    with SimStore(url, keep="2d") as store:
        for first in range(0, n, step(n)):
            rows = []
            for i in range(first, min(first + step(n), n)):
                value = int(signed.fp[i])
                verdict = verdicts.get(i)
                if verdict is None:
                    signature = _stored_signature(signed.signature[i], signed.openings[i])
                    rows.append(
                        LoadRow(
                            key=f"t{i}",
                            kept=True,
                            fingerprint=value,
                            text=signed.text[i],
                            signature=signature,
                        )
                    )
                else:
                    rows.append(LoadRow(
                        key=f"t{i}", kept=False, fingerprint=value, duplicate_of=verdict.duplicate_of,
                        distance=verdict.distance, measure=verdict.measure, score=verdict.score,
                    ))  # fmt: skip
            store.load(rows, at=moment(first, n), batch_size=len(rows))
            if (first // step(n) + 1) % 500 == 0:
                seconds = time.perf_counter() - deciding
                print(f"  {first + len(rows):,} texts loaded in {seconds:,.0f} s", flush=True)
    loaded = time.perf_counter()
    print(f"  loaded in {loaded - deciding:,.0f} s", flush=True)
    return {
        "rows": n,
        "kept": int(kept.sum()),
        "kept_day1": day1_kept(kept),
        "band_key_rows": int(signed.counts[kept].sum()),
        "band_keys_per_text": round(float(signed.counts.mean()), 3),
        "texts_with_all_keys": round(float((signed.counts == BANDS).mean()), 4),
        "repeated_fingerprints": int(n - len(np.unique(signed.fp))),
        "repeated_signatures": int(n - len(np.unique(signed.digests))),
        **decided,
        "sign_s": round(signing - started),
        "decide_s": round(deciding - signing),
        "load_s": round(loaded - deciding),
        "total_s": round(loaded - started),
        "signed_per_s": round(n / (signing - started)),
        "workers": workers,
    }


def fill_keep_all(url: str, n: int, workers: int) -> dict[str, Any]:
    """``--keep-all``: every text kept, its chunk loaded through ``SimStore.load`` as it is signed
    (nothing else held). An upper bound: ``add`` would drop the texts that match an earlier one
    (``overstated`` counts them in a sample)."""
    counts = np.empty(n, dtype=np.uint8)
    fps = np.empty(n, dtype=np.uint64)
    digests = np.empty(n, dtype=np.int64)
    started = time.perf_counter()
    with (
        SimStore(url, keep="2d") as store,
        multiprocessing.get_context("fork").Pool(workers) as pool,
    ):
        tasks = [(first, min(CHUNK, n - first)) for first in range(0, n, CHUNK)]
        for done, chunk in enumerate(pool.imap(_sign_task, tasks), 1):
            first = chunk["first"]
            end = first + len(chunk["text"])
            signatures = chunk["signature"].reshape(-1, SIZED_BYTES)
            rows = [
                LoadRow(
                    key=f"t{i}", kept=True, fingerprint=value, text=text,
                    signature=_stored_signature(signature, opening),
                )
                for i, value, text, signature, opening in zip(
                    range(first, end), chunk["fp"].tolist(), chunk["text"], signatures,
                    chunk["opening"], strict=True,
                )
            ]  # fmt: skip
            for at, group in itertools.groupby(rows, key=lambda row: moment(int(row.key[1:]), n)):
                store.load(list(group), at=at)
            counts[first:end] = chunk["counts"]
            fps[first:end] = chunk["fp"]
            digests[first:end] = chunk["digests"]
            if done % 500 == 0 or end == n:
                seconds = time.perf_counter() - started
                print(f"  {end:,} texts signed and loaded in {seconds:,.0f} s "
                      f"({end / seconds:,.0f}/s)", flush=True)  # fmt: skip
    seconds = time.perf_counter() - started
    return {
        "rows": n,
        "kept": n,
        "kept_day1": day1_kept(np.ones(n, dtype=bool)),
        "keep_all": True,
        "band_key_rows": int(counts.sum()),
        "band_keys_per_text": round(float(counts.mean()), 3),
        "texts_with_all_keys": round(float((counts == BANDS).mean()), 4),
        "repeated_fingerprints": int(n - len(np.unique(fps))),
        "repeated_signatures": int(n - len(np.unique(digests))),
        "sign_and_load_s": round(seconds),
        "texts_per_s": round(n / seconds),
        "workers": workers,
    }


def fill_and_mark(path: Path, n: int, workers: int, keep_all: bool = False) -> None:
    """``fill`` (or ``fill_keep_all``) of a new SQLite file, then its figures into the file's
    marker (the file is complete)."""
    remove_database(path)
    figures = (fill_keep_all if keep_all else fill)(f"sqlite:///{path}", n, workers)
    checkpoint(path)
    marker_of(path).write_text(json.dumps(figures) + "\n")


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
