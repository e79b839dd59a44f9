"""simstore against its peers: single-query latency at k = 3 against N kept fingerprints.

    python -m benchmarks peers --sizes 100000,1000000,10000000 --queries 2000 --seed 1 \\
        --out benchmarks/results/peers-multi-sqlite-2026-11-30.json --plot benchmarks/results/peers-multi-sqlite-2026-11-30.png

For each N: N random 64-bit fingerprints (numpy, seeded) are loaded into a SQLite file through
``SimStore.add_many`` (cached under ``benchmarks/data/peers/`` with a marker once complete, resumed
if interrupted, since 10M rows take a long time), into two raw ``sqlite3`` files (4 covering band
indexes; 2 covering band-pair indexes; read with simstore's own page cache and mmap settings unless
``--raw-pragmas default``) and into the in-memory peers: faiss
``IndexBinaryMultiHash``, the PyPI ``simhash`` package's ``SimhashIndex`` (skipped above
``--simhashindex-max``) and a numpy popcount scan. Every system answers the same k = 3 queries (half
random, half planted near-duplicates 1-3 bits from a kept fingerprint), one query per call, in
interleaved rounds whose order rotates; every answer is checked against the numpy scan. Prints
one table per N with p50/p99/mean, candidates per query, build cost, memory, disk bytes per row
and simstore's p50 over each system's p50. The peers are benchmark-only dependencies:
``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import gc
import json
import os
import random
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from simstore import __version__ as simstore_version
from simstore.policy.policies import SimHashOnly
from simstore.storage.db import create_engine_for
from simstore.store import SimStore

from .common import cli
from .common.corpus import DATA, Values, fingerprints, near
from .common.databases import (
    cache_file,
    checkpoint,
    files_of,
    marker_of,
    remove_database,
)
from .common.fills import load_fingerprints
from .common.measure import machine, percentile, rss_bytes

Ids = npt.NDArray[np.int64]

RADIUS = 3
MASK64 = (1 << 64) - 1
BAND_MASK = 0xFFFF
# (N, system key) -> the target for simstore p50 / that system's p50
TARGETS = {
    (10_000_000, "faiss"): 0.5,
    (10_000_000, "simhashindex"): 0.1,
    (10_000_000, "numpy"): 1 / 40,
    (1_000_000, "raw4"): 1.3,
}


# --- data -----------------------------------------------------------------------------------------


def make_queries(values: Values, count: int, stream: str) -> list[tuple[int, bool]]:
    """``count`` (fingerprint, planted) queries: half random, half 1-3 bits from a kept value."""
    rng = random.Random(stream)
    planted = count // 2
    queries = [(rng.getrandbits(64), False) for _ in range(count - planted)]
    queries += [
        (near(int(values[rng.randrange(len(values))]), rng, rng.randint(1, RADIUS)), True)
        for _ in range(planted)
    ]
    rng.shuffle(queries)
    return queries


def disk_usage(path: Path, tables: Sequence[str]) -> tuple[int, int]:
    """(bytes of the database file and its WAL, bytes of ``tables`` and their indexes)."""
    total = sum(file.stat().st_size for file in files_of(path)[:2] if file.exists())
    connection = sqlite3.connect(path)
    try:
        marks = ",".join("?" * len(tables))
        (part,) = connection.execute(
            f"SELECT SUM(pgsize) FROM dbstat WHERE name IN "
            f"(SELECT name FROM sqlite_schema WHERE tbl_name IN ({marks}))",
            list(tables),
        ).fetchone()
    except sqlite3.OperationalError:  # SQLite built without dbstat
        part = None
    finally:
        connection.close()
    return total, int(part or 0)


def simstore_pragmas(path: Path) -> dict[str, int]:
    """The page cache and memory map of simstore's own SQLite connections, for the raw floors."""
    engine = create_engine_for(f"sqlite:///{path}")
    try:
        with engine.connect() as connection:
            return {
                name: int(connection.exec_driver_sql(f"PRAGMA {name}").scalar() or 0)
                for name in ("cache_size", "mmap_size")
            }
    finally:
        engine.dispose()


@contextlib.contextmanager
def build_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` while one run builds the files of one N.

    A second run on the same data folder waits instead of resuming (or deleting and rebuilding)
    files that the first is still writing.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"  waiting for another run that is building {path.stem} ...", flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _items(values: Values, start: int) -> Iterator[dict[str, Any]]:
    step = 1 << 16
    for first in range(start, len(values), step):
        for offset, value in enumerate(values[first : first + step].tolist()):
            yield {"key": f"k{first + offset}", "fingerprint": value}


def load_simstore(
    path: Path, values: Values, seed: int, batch_size: int, fill: str = "add_many"
) -> tuple[SimStore, dict[str, Any], bool]:
    """The store holding ``values`` (keys ``k{i}``): cached, resumed or loaded from scratch.

    Returns the open store, the marker (load figures, keys not kept) and whether rows were loaded
    in this run. A file without its marker is resumed: add_many commits whole batches in order, so
    the number of decisions logged is the number of items already done. ``fill="direct"`` loads
    the rows through ``SimStore.load`` instead of deciding each (``load_fingerprints``: random
    fingerprints, every one kept), from scratch.
    """
    marker_path = marker_of(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    store = SimStore(f"sqlite:///{path}", policy=SimHashOnly())
    opened = time.perf_counter() - start
    if opened > 1:
        print(f"  opened {path.name} in {opened:.1f} s (schema upgrade?)", flush=True)
    if marker_path.exists():
        marker: dict[str, Any] = json.loads(marker_path.read_text())
        return store, marker, False
    if fill == "direct":
        store.close()
        remove_database(path)
        store = SimStore(f"sqlite:///{path}", policy=SimHashOnly())
        start = time.perf_counter()
        load_fingerprints(store, values)
        checkpoint(path)
        seconds = time.perf_counter() - start
        marker = {
            "n": len(values),
            "seed": seed,
            "kept": len(values),
            "dropped": [],
            "resumed_at": 0,
            "loaded_rows": len(values),
            "load_seconds": round(seconds, 2),
            "rows_per_second": round(len(values) / seconds) if seconds else None,
            "batch_size": None,
            "fill": "direct",
            "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "simstore": simstore_version,
            "git": machine()["git"],
        }
        marker_path.write_text(json.dumps(marker, indent=1) + "\n")
        return store, marker, True
    connection = sqlite3.connect(path)
    (done,) = connection.execute(  # decided: the kept rows and the duplicates' decisions
        "SELECT (SELECT COUNT(*) FROM simstore_decisions) + "
        "(SELECT COUNT(*) FROM simstore_fingerprints)"
    ).fetchone()
    connection.close()
    if done:
        print(f"  resuming the simstore load of {path.name} at item {done:,}", flush=True)
    n = len(values)
    code = machine()["git"]  # the code that loads (HEAD may move on during a long load)
    start = time.perf_counter()
    last_report = start
    loaded = 0
    for _decision in store.add_many(_items(values, done), batch_size=batch_size):
        loaded += 1
        if loaded % batch_size == 0 and time.perf_counter() - last_report > 30:
            last_report = time.perf_counter()
            rate = loaded / (last_report - start)
            left = (n - done - loaded) / rate
            print(
                f"  simstore load: {done + loaded:,}/{n:,} rows, {rate:,.0f} rows/s, "
                f"~{left / 60:.0f} min left",
                flush=True,
            )
    seconds = time.perf_counter() - start
    connection = sqlite3.connect(path)
    dropped = sorted(
        int(key[1:])
        for (key,) in connection.execute("SELECT key FROM simstore_decisions WHERE inserted = 0")
    )
    (kept,) = connection.execute("SELECT COUNT(*) FROM simstore_fingerprints").fetchone()
    connection.close()
    marker = {
        "n": n,
        "seed": seed,
        "kept": kept,
        "dropped": dropped,
        "resumed_at": done,
        "loaded_rows": loaded,
        "load_seconds": round(seconds, 2),
        "rows_per_second": round(loaded / seconds) if seconds else None,
        "batch_size": batch_size,
        "fill": "add_many",
        "built_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "simstore": simstore_version,
        "git": code,
    }
    marker_path.write_text(json.dumps(marker, indent=1) + "\n")
    return store, marker, True


# --- the systems --------------------------------------------------------------------------------


class System:
    """One way of answering "which kept fingerprints lie within 3 bits of this one?"."""

    key: ClassVar[str] = ""
    label: ClassVar[str] = ""

    def __init__(self) -> None:
        self.build_seconds: float | None = None
        self.rss_growth: int | None = None
        self.disk: tuple[int, int] | None = None  # (file bytes, bytes of the fingerprint table)
        self.candidates: list[int] = []

    def query(self, value: int) -> Any:
        """Answer one query, as a caller of this system would (this is what is timed)."""
        raise NotImplementedError

    def matches(self, result: Any) -> frozenset[int]:
        """The indexes ``i`` of the matched fingerprints, from what ``query`` returned."""
        raise NotImplementedError

    def reset_counters(self) -> None:
        self.candidates.clear()

    def candidates_per_query(self) -> float | None:
        return statistics.mean(self.candidates) if self.candidates else None

    def close(self) -> None:
        return None


class SimStoreSystem(System):
    key = "simstore"
    label = "simstore SimStore.query"

    def __init__(self, store: SimStore) -> None:
        super().__init__()
        self.store = store

    def query(self, value: int) -> Any:
        return self.store.query(fingerprint=value)

    def matches(self, result: Any) -> frozenset[int]:
        return frozenset(int(match.key[1:]) for match in result)

    def close(self) -> None:
        self.store.close()


class RawBands(System):
    """The floor: one table (id, fp, b0..b3), 4 covering (band, fp) indexes, 4-band UNION ALL."""

    key = "raw4"
    label = "raw sqlite3, 4 bands"
    indexes: ClassVar[tuple[str, ...]] = tuple(
        f"CREATE INDEX ix_b{band} ON fps (b{band}, fp)" for band in range(4)
    )
    sql: ClassVar[str] = " UNION ALL ".join(
        f"SELECT id, fp FROM fps WHERE b{band} = ?" for band in range(4)
    )
    seek_columns: ClassVar[int] = 1  # band columns each index seek must use

    def __init__(self, path: Path, pragmas: Mapping[str, int]) -> None:
        super().__init__()
        self.connection = sqlite3.connect(path, check_same_thread=False)
        for name, value in pragmas.items():
            self.connection.execute(f"PRAGMA {name}={int(value)}")
        self._check_plan()

    def _check_plan(self) -> None:
        """Every part of the UNION ALL must seek a covering index on all its band columns."""
        plan = [
            step
            for *_ids, step in self.connection.execute(
                f"EXPLAIN QUERY PLAN {self.sql}", self.params(0)
            )
            if step.startswith(("SEARCH", "SCAN"))
        ]
        wanted = "=? AND ".join(["b"] * self.seek_columns)
        good = [
            step
            for step in plan
            if "COVERING INDEX" in step and step.count("=?") == self.seek_columns
        ]
        if len(good) != len(plan) or len(plan) != self.sql.count("UNION ALL") + 1:
            raise RuntimeError(f"{self.label}: expected seeks on ({wanted}=?) only, got {plan}")

    @staticmethod
    def params(value: int) -> list[int]:
        return [(value >> shift) & BAND_MASK for shift in (48, 32, 16, 0)]

    def query(self, value: int) -> Any:
        rows = self.connection.execute(self.sql, self.params(value)).fetchall()
        self.candidates.append(len(rows))
        signed = value - (1 << 64) if value >> 63 else value
        return [row_id for row_id, fp in rows if ((signed ^ fp) & MASK64).bit_count() <= RADIUS]

    def matches(self, result: Any) -> frozenset[int]:
        return frozenset(result)

    def close(self) -> None:
        self.connection.close()

    @classmethod
    def build(cls, path: Path, ids: Ids, values: Values) -> dict[str, Any]:
        """Create (or reuse) this system's file holding ``values`` with ``ids`` as row ids."""
        marker_path = marker_of(path)
        if marker_path.exists():
            marker: dict[str, Any] = json.loads(marker_path.read_text())
            if marker["rows"] == len(values):
                return marker
        remove_database(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        connection = sqlite3.connect(path)
        connection.execute("PRAGMA journal_mode=WAL")  # as simstore's files
        connection.execute("PRAGMA synchronous=OFF")
        connection.execute(
            "CREATE TABLE fps (id INTEGER PRIMARY KEY, fp INTEGER NOT NULL, b0 INTEGER NOT NULL, "
            "b1 INTEGER NOT NULL, b2 INTEGER NOT NULL, b3 INTEGER NOT NULL)"
        )
        step = 1 << 16
        for first in range(0, len(values), step):
            chunk = values[first : first + step]
            columns = [ids[first : first + step], chunk.view(np.int64)]
            columns += [
                (chunk >> np.uint64(shift)) & np.uint64(BAND_MASK) for shift in (48, 32, 16, 0)
            ]
            connection.executemany(
                "INSERT INTO fps VALUES (?, ?, ?, ?, ?, ?)",
                zip(*(column.tolist() for column in columns), strict=True),
            )
        for statement in cls.indexes:
            connection.execute(statement)
        connection.commit()
        connection.close()
        checkpoint(path)
        marker = {"rows": len(values), "build_seconds": round(time.perf_counter() - start, 2)}
        marker_path.write_text(json.dumps(marker) + "\n")
        return marker


_FLIPS = tuple(1 << bit for bit in range(16))


class RawPairs(RawBands):
    """Two covering (band, band, fp) indexes; each 32-bit half probed at radius 1.

    Within 3 bits, one 32-bit half differs in at most 1 bit (pigeonhole): either its high band is
    equal and its low band is one of 17 values, or its low band is equal and its high band one of
    the 16 one-bit flips. Written as IN lists on one column, so SQLite seeks the index once per
    value (a row-value ``(b0, b1) IN (VALUES ...)`` scans the table instead).
    """

    key = "pairs"
    label = "raw sqlite3, band pairs"
    indexes = ("CREATE INDEX ix_b01 ON fps (b0, b1, fp)", "CREATE INDEX ix_b23 ON fps (b2, b3, fp)")
    sql = " UNION ALL ".join(
        f"SELECT id, fp FROM fps WHERE {high} = ? AND {low} IN ({','.join('?' * 17)}) UNION ALL "
        f"SELECT id, fp FROM fps WHERE {high} IN ({','.join('?' * 16)}) AND {low} = ?"
        for high, low in (("b0", "b1"), ("b2", "b3"))
    )
    seek_columns = 2

    @staticmethod
    def params(value: int) -> list[int]:
        out: list[int] = []
        for shift in (32, 0):
            high, low = (value >> (shift + 16)) & BAND_MASK, (value >> shift) & BAND_MASK
            out += [high, low, *(low ^ flip for flip in _FLIPS)]
            out += [*(high ^ flip for flip in _FLIPS), low]
        return out


class FaissMultiHash(System):
    key = "faiss"
    label = "faiss IndexBinaryMultiHash"

    def __init__(self, ids: Ids, values: Values, threads: int) -> None:
        super().__init__()
        import faiss

        faiss.omp_set_num_threads(threads)
        self.stats = faiss.cvar.indexBinaryHash_stats  # type: ignore[attr-defined]
        # 4 hash tables on 16-bit substrings; without flips a query probes its own bucket in each,
        # exact for r <= 3 by the pigeonhole rule. range_search keeps distances < radius.
        self.index = faiss.IndexBinaryMultiHash(64, 4, 16)
        self.index.nflip = 0
        self.index.add(np.ascontiguousarray(values).view(np.uint8).reshape(-1, 8))
        self.ids = ids

    def query(self, value: int) -> Any:
        code = np.array([value], dtype=np.uint64).view(np.uint8).reshape(1, 8)
        return self.index.range_search(code, RADIUS + 1)

    def matches(self, result: Any) -> frozenset[int]:
        _limits, _distances, labels = result
        return frozenset(self.ids[labels].tolist())

    def reset_counters(self) -> None:
        self.stats.reset()

    def candidates_per_query(self) -> float | None:
        return self.stats.ndis / self.stats.nq if self.stats.nq else None


class SimhashIndexSystem(System):
    key = "simhashindex"
    label = "simhash SimhashIndex"

    def __init__(self, ids: Ids, values: Values) -> None:
        super().__init__()
        from simhash import Simhash, SimhashIndex

        self.simhash = Simhash
        objects = [
            (str(i), Simhash(value)) for i, value in zip(ids.tolist(), values.tolist(), strict=True)
        ]
        self.index = SimhashIndex(objects, k=RADIUS)

    def query(self, value: int) -> Any:
        return self.index.get_near_dups(self.simhash(value))

    def matches(self, result: Any) -> frozenset[int]:
        return frozenset(int(key) for key in result)


class NumpyScan(System):
    key = "numpy"
    label = "numpy popcount scan"

    def __init__(self, ids: Ids, values: Values) -> None:
        super().__init__()
        self.values = values.copy()
        self.ids = ids
        # np.bitwise_count(values ^ q) <= 3 into buffers made once: without them every query
        # allocates and zero-fills ~10 bytes per row, and at 10M rows that page churn slows the
        # systems measured after the scan as well (measured: simstore p50 650 -> 373 us at 10M)
        self._xor = np.empty_like(self.values)
        self._counts = np.empty(len(self.values), dtype=np.uint8)
        self._near = np.empty(len(self.values), dtype=np.bool_)
        for buffer in (self._xor, self._counts, self._near):
            buffer.fill(0)  # resident now, so that the RSS column counts them

    def query(self, value: int) -> Any:
        np.bitwise_xor(self.values, np.uint64(value), out=self._xor)
        np.bitwise_count(self._xor, out=self._counts)
        np.less_equal(self._counts, RADIUS, out=self._near)
        return np.flatnonzero(self._near)

    def matches(self, result: Any) -> frozenset[int]:
        return frozenset(self.ids[result].tolist())

    def candidates_per_query(self) -> float | None:
        return float(len(self.values))


def _settled_rss() -> int:
    """RSS once garbage is collected and malloc has handed its free memory back to the OS.

    Without the trim, a peer built into memory that an earlier array freed shows no growth.
    """
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return rss_bytes()


def in_memory(factory: Callable[[], System]) -> System:
    """Build a peer, timing it and measuring how much resident memory it keeps."""
    before = _settled_rss()
    start = time.perf_counter()
    system = factory()
    system.build_seconds = time.perf_counter() - start
    system.rss_growth = _settled_rss() - before
    return system


# --- measuring ------------------------------------------------------------------------------------


def warm_up(systems: Sequence[System], queries: Sequence[tuple[int, bool]]) -> None:
    for system in systems:
        for value, _planted in queries:
            system.query(value)


def interleaved(
    systems: Sequence[System], queries: Sequence[tuple[int, bool]], rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[Any]]]:
    """Microseconds and raw answers per system and query: each round one slice of the queries,
    answered by every system in turn, the order rotated by one system each round."""
    samples = {system.key: [0.0] * len(queries) for system in systems}
    answers: dict[str, list[Any]] = {system.key: [None] * len(queries) for system in systems}
    bounds = np.linspace(0, len(queries), rounds + 1).astype(int).tolist()
    clock = time.perf_counter_ns
    for round_number in range(rounds):
        shift = round_number % len(systems)
        for system in [*systems[shift:], *systems[:shift]]:
            times, results, query = samples[system.key], answers[system.key], system.query
            for i in range(bounds[round_number], bounds[round_number + 1]):
                start = clock()
                result = query(queries[i][0])
                times[i] = (clock() - start) / 1000
                results[i] = result
    return samples, answers


def alone(
    system: System, queries: Sequence[tuple[int, bool]], warmup: Sequence[tuple[int, bool]]
) -> float:
    """p50 of one system answering the queries by itself (after its warm-up)."""
    warm_up([system], warmup)
    samples, _answers = interleaved([system], queries, 1)
    return statistics.median(samples[system.key])


def summary(system: System, samples: list[float], planted: list[bool]) -> dict[str, Any]:
    return {
        "label": system.label,
        "p50_us": statistics.median(samples),
        "p99_us": percentile(samples, 0.99),
        "mean_us": statistics.mean(samples),
        "p50_random_us": statistics.median(
            s for s, p in zip(samples, planted, strict=True) if not p
        ),
        "p50_planted_us": statistics.median(s for s, p in zip(samples, planted, strict=True) if p),
        "candidates_per_query": system.candidates_per_query(),
        "build_seconds": system.build_seconds,
        "rss_growth_bytes": system.rss_growth,
        "disk_bytes": None if system.disk is None else system.disk[0],
        "table_bytes": None if system.disk is None else system.disk[1],
    }


def check_exactness(
    systems: Sequence[System],
    answers: dict[str, list[Any]],
    queries: Sequence[tuple[int, bool]],
    ids: Ids,
    values: Values,
) -> tuple[dict[str, int], list[str]]:
    """Mismatching queries per system against a brute-force scan, and a few examples."""
    scan = next((system for system in systems if system.key == "numpy"), None)
    if scan is not None:
        reference = [scan.matches(answer) for answer in answers[scan.key]]
    else:
        reference = [
            frozenset(ids[np.bitwise_count(values ^ np.uint64(value)) <= RADIUS].tolist())
            for value, _planted in queries
        ]
    mismatches: dict[str, int] = {}
    examples: list[str] = []
    for system in systems:
        found = [system.matches(answer) for answer in answers[system.key]]
        wrong = [i for i, matches in enumerate(found) if matches != reference[i]]
        mismatches[system.key] = len(wrong)
        examples += [
            f"{system.key}, query {queries[i][0]:016x}: {sorted(found[i])} != {sorted(reference[i])}"
            for i in wrong[:3]
        ]
    return mismatches, examples


# --- one N ------------------------------------------------------------------------------------------


def run_size(n: int, args: argparse.Namespace) -> dict[str, Any]:
    data_dir: Path = args.data_dir
    stem = f"n{n}-s{args.seed}"
    print(f"\n== N = {n:,} (seed {args.seed}) ==", flush=True)
    values = fingerprints(n, args.seed)
    store_path = data_dir / f"simstore-{stem}.db"
    raw_classes = [cls for cls in (RawBands, RawPairs) if cls.key not in args.skip]
    with build_lock(data_dir / f"{stem}.lock"):
        store, load, loaded_now = load_simstore(
            store_path, values, args.seed, args.batch_size, args.fill
        )
        dropped = np.array(load["dropped"], dtype=np.int64)
        kept_ids = np.setdiff1d(np.arange(n, dtype=np.int64), dropped)
        kept_values = values[kept_ids]
        del values
        raw_builds = {
            cls: cls.build(data_dir / f"{cls.key}-{stem}.db", kept_ids, kept_values)
            for cls in raw_classes
        }
    origin = (
        "loaded now" if loaded_now else f"cached file, loaded {load['built_at']} at {load['git']}"
    )
    how = (
        "rows loaded through SimStore.load, every one kept"
        if load.get("fill") == "direct"
        else f"add_many(batch_size={load['batch_size']:,})"
    )
    print(
        f"  simstore {how}: {load['loaded_rows']:,} rows in "
        f"{load['load_seconds']:,.0f} s = {load['rows_per_second'] or 0:,} rows/s ({origin}); "
        f"kept {load['kept']:,}",
        flush=True,
    )
    if load["kept"] != len(kept_ids):
        raise RuntimeError(f"{store_path} keeps {load['kept']} rows, expected {len(kept_ids)}")

    warmup = make_queries(kept_values, args.warmup, f"peers-warmup-{args.seed}-{n}")
    queries = make_queries(kept_values, args.queries, f"peers-{args.seed}-{n}")
    planted = [flag for _value, flag in queries]
    simstore = SimStoreSystem(store)
    simstore.build_seconds = load["load_seconds"] if load["resumed_at"] == 0 else None
    wal: dict[str, Any] = {}
    wal_file = store_path.with_name(store_path.name + "-wal")
    if loaded_now:
        # right after a bulk load the WAL still holds the last batches' pages: measure it once
        wal["fresh_wal_bytes"] = wal_file.stat().st_size if wal_file.exists() else 0
        wal["fresh_p50_us"] = alone(simstore, queries, warmup)
    checkpoint(store_path)
    if loaded_now:
        wal["checkpointed_p50_us"] = alone(simstore, queries, warmup)
        print(
            f"  WAL: simstore alone on the fresh load (WAL {wal['fresh_wal_bytes'] / 2**20:,.0f} MiB)"
            f" p50 {wal['fresh_p50_us']:.0f} us; after PRAGMA wal_checkpoint(TRUNCATE) "
            f"{wal['checkpointed_p50_us']:.0f} us (the table below is measured checkpointed)",
            flush=True,
        )
    simstore.disk = disk_usage(store_path, ["simstore_fingerprints"])

    systems: list[System] = [simstore]
    system: System
    pragmas = simstore_pragmas(store_path) if args.raw_pragmas == "simstore" else {}
    if raw_builds:
        settings = ", ".join(f"{name}={value}" for name, value in pragmas.items())
        print(
            f"  raw sqlite3 connections: {settings or 'SQLite defaults'}"
            + (" (as simstore's own connections)" if pragmas else ""),
            flush=True,
        )
    skipped: dict[str, str] = {}
    for cls in (RawBands, RawPairs):
        if cls not in raw_builds:
            skipped[cls.key] = "--skip"
            continue
        path = data_dir / f"{cls.key}-{stem}.db"
        system = cls(path, pragmas)
        system.build_seconds = raw_builds[cls]["build_seconds"]
        system.disk = disk_usage(path, ["fps"])
        systems.append(system)
    factories: list[tuple[str, Callable[[], System]]] = [
        ("numpy", lambda: NumpyScan(kept_ids, kept_values)),
        ("faiss", lambda: FaissMultiHash(kept_ids, kept_values, args.faiss_threads)),
        ("simhashindex", lambda: SimhashIndexSystem(kept_ids, kept_values)),
    ]
    for key, factory in factories:
        if key in args.skip:
            skipped[key] = "--skip"
        elif key == "simhashindex" and n > args.simhashindex_max:
            skipped[key] = (
                f"N above --simhashindex-max {args.simhashindex_max:,} (its build takes minutes "
                f"and GBs of RAM: about 5 GB at 10M)"
            )
        else:
            print(f"  building {key} ...", flush=True)
            systems.append(in_memory(factory))
    for key, reason in skipped.items():
        print(f"  skipped {key}: {reason}", flush=True)

    # The in-memory peers hold everything in RAM; the SQLite systems get their files into the
    # OS page cache the same way (one sequential read), not by the luck of what the builds left.
    for path in [store_path, *(data_dir / f"{cls.key}-{stem}.db" for cls in raw_builds)]:
        cached = cache_file(path)
        print(f"  read {path.name} into the page cache ({cached / 2**20:,.0f} MiB)", flush=True)
    gc.collect()
    gc.freeze()  # the peers' millions of objects stay out of the collections during timing
    print(
        f"  warm-up ({args.warmup} queries each), then {args.queries:,} queries in {args.rounds} "
        "interleaved rounds ...",
        flush=True,
    )
    warm_up(systems, warmup)
    for system in systems:
        system.reset_counters()
    samples, answers = interleaved(systems, queries, args.rounds)

    mismatches, examples = check_exactness(systems, answers, queries, kept_ids, kept_values)
    result = {
        "n": n,
        "kept": len(kept_ids),
        "queries": len(queries),
        "planted_queries": sum(planted),
        "rounds": args.rounds,
        "warmup": args.warmup,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "load": {key: value for key, value in load.items() if key != "dropped"}
        | {"dropped": len(load["dropped"]), "loaded_in_this_run": loaded_now},
        "wal": wal,
        "raw_pragmas": pragmas,
        "skipped": skipped,
        "mismatches": mismatches,
        "systems": {
            system.key: summary(system, samples[system.key], planted) for system in systems
        },
    }
    print_table(result)
    if examples:
        print("  first mismatches:\n    " + "\n    ".join(examples))

    gc.unfreeze()
    for system in systems:
        system.close()
    return result


# --- output ---------------------------------------------------------------------------------------


def _number(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def print_table(result: dict[str, Any]) -> None:
    systems = result["systems"]
    kept = result["kept"]
    base = systems["simstore"]["p50_us"]
    print(
        f"\nN = {kept:,} kept fingerprints: {result['queries']:,} queries at k = {RADIUS} "
        f"({result['planted_queries']:,} planted 1-{RADIUS} bits from a kept one, the rest random), "
        f"one per call, {result['rounds']} interleaved rounds after {result['warmup']} warm-up "
        f"queries; times in us; load average {result['load_average_after'][0]:.1f} on "
        f"{os.cpu_count()} cores"
    )
    header = (
        f"{'system':29} {'p50':>7} {'p99':>7} {'mean':>7} {'p50 rnd':>7} {'p50 dup':>7} "
        f"{'cand/q':>9} {'build s':>8} {'RSS MB':>7} {'B/row':>6} {'fp B/row':>8} "
        f"{'simstore p50 / this':>20}"
    )
    print(header)
    print("-" * len(header))
    for key, row in systems.items():
        rss = None if row["rss_growth_bytes"] is None else row["rss_growth_bytes"] / 2**20
        disk = None if row["disk_bytes"] is None else row["disk_bytes"] / kept
        table = None if not row["table_bytes"] else row["table_bytes"] / kept
        candidates = row["candidates_per_query"]
        ratio = "1 (itself)" if key == "simstore" else f"{base / row['p50_us']:.3g}x"
        print(
            f"{row['label']:29} {row['p50_us']:7,.0f} {row['p99_us']:7,.0f} {row['mean_us']:7,.0f} "
            f"{row['p50_random_us']:7,.0f} {row['p50_planted_us']:7,.0f} "
            f"{_number(candidates, 1 if candidates is not None and candidates < 1000 else 0):>9} "
            f"{_number(row['build_seconds'], 1):>8} {_number(rss):>7} {_number(disk):>6} "
            f"{_number(table):>8} {ratio:>20}"
        )
    for key, reason in result["skipped"].items():
        print(f"{key:29} skipped: {reason}")
    print(
        "(p50 rnd / p50 dup: over the random / planted queries; cand/q: fingerprints fetched and "
        "compared per query; build s: load, index build or construction; RSS MB: resident memory "
        "kept by an in-memory peer; B/row: SQLite file incl. simstore's decision log, after a "
        "WAL checkpoint, per row; fp B/row: the fingerprint table and its indexes only)"
    )
    total = sum(result["mismatches"].values())
    verdict = "OK" if total == 0 else "FAILED"
    print(
        f"exactness vs the brute-force scan: {verdict}, mismatching queries per system: "
        + ", ".join(f"{key} {count}" for key, count in result["mismatches"].items())
    )
    for (n, key), target in TARGETS.items():
        if n == kept and key in systems:
            ratio = base / systems[key]["p50_us"]
            met = "met" if ratio <= target else "NOT met"
            print(f"target at {n:,}: simstore p50 / {key} p50 <= {target:.3g}: {ratio:.3g} ({met})")


def _short(value: float, unit: str = "") -> str:
    """1000 -> 1k, 2000000 -> 2M (tick labels)."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:g}{suffix}{unit}"
    return f"{value:g}{unit}"


def _latency(value: float, _position: float) -> str:
    return f"{value / 1000:g} ms" if value >= 1000 else f"{value:g} us"


def plot(runs: list[dict[str, Any]], path: Path, title: str) -> None:
    """p50 against N on log-log axes, one colour per system, its p99 lighter and dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    figure, axes = plt.subplots(figsize=(8, 5.5))
    keys = list(dict.fromkeys(key for run in runs for key in run["systems"]))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for colour, key in zip(colours, keys, strict=False):
        points = [(run["kept"], run["systems"][key]) for run in runs if key in run["systems"]]
        sizes = [size for size, _row in points]
        p50 = [row["p50_us"] for _size, row in points]
        p99 = [row["p99_us"] for _size, row in points]
        axes.plot(sizes, p50, "o-", color=colour, label=points[0][1]["label"])
        axes.plot(sizes, p99, "--", color=colour, alpha=0.35)
    sizes = sorted({run["kept"] for run in runs})
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xticks(sizes, [_short(size) for size in sizes])
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes.yaxis.set_major_formatter(FuncFormatter(_latency))
    axes.yaxis.set_minor_formatter(NullFormatter())
    axes.set_xlabel("N kept fingerprints")
    axes.set_ylabel("latency of one k = 3 query: p50 (solid), p99 (dashed)")
    axes.set_title(title, fontsize=9)
    axes.grid(True, which="both", alpha=0.25)
    axes.legend(fontsize=8)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("peers", __doc__)
    parser.add_argument(
        "--sizes", default="100000,1000000", help="comma-separated N (default 100000,1000000)"
    )
    parser.add_argument(
        "--queries", type=int, default=1000, help="measured queries per N (default 1000)"
    )
    parser.add_argument(
        "--warmup", type=int, default=300, help="warm-up queries per system (default 300)"
    )
    parser.add_argument("--rounds", type=int, default=12, help="interleaved rounds (default 12)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--skip",
        default="",
        help="comma-separated systems to leave out: raw4, pairs, faiss, simhashindex, numpy",
    )
    parser.add_argument(
        "--simhashindex-max", type=int, default=1_000_000, help="skip SimhashIndex above this N"
    )
    parser.add_argument(
        "--faiss-threads", type=int, default=1, help="OpenMP threads for faiss (default 1)"
    )
    parser.add_argument(
        "--batch-size", type=int, default=20_000, help="add_many batch size for the load"
    )
    parser.add_argument(
        "--fill",
        choices=("add_many", "direct"),
        default="add_many",
        help="how the simstore file is filled: through add_many (default, timed as its build) or "
        "direct: SimStore.load of every row as kept (no decision each; faster, for big N)",
    )
    parser.add_argument(
        "--raw-pragmas",
        choices=("simstore", "default"),
        default="simstore",
        help="page cache and mmap of the raw sqlite3 floors: simstore's own (default) or SQLite's",
    )
    parser.add_argument("--data-dir", type=Path, default=DATA / "peers")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--plot", type=Path, help="draw p50/p99 against N into this PNG")
    args = parser.parse_args(argv)
    args.skip = {name.strip() for name in args.skip.split(",") if name.strip()}
    known = {"raw4", "pairs", "faiss", "simhashindex", "numpy"}
    if args.skip - known:
        parser.error(
            f"unknown systems to skip: {sorted(args.skip - known)}; known: {sorted(known)}"
        )
    sizes = [int(size.replace("_", "")) for size in args.sizes.split(",")]

    about = machine()
    print(f"simstore peers benchmark: sizes {', '.join(f'{n:,}' for n in sizes)}, k = {RADIUS}")
    print("machine: " + "; ".join(f"{key} {value}" for key, value in about.items()))
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}", flush=True)
    runs = [run_size(n, args) for n in sizes]

    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "command": " ".join(["python", *sys.argv]),
            "machine": about,
            "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "runs": runs,
        }
        args.out.write_text(json.dumps(document, indent=1) + "\n")
        print(f"\nwrote {args.out}")
    if args.plot:
        title = f"k = {RADIUS} single-query latency; {about['cpu']}, {about['cores']} cores; SQLite {about['sqlite']}"
        plot(runs, args.plot, title)
        print(f"wrote {args.plot}")
    failed = {run["n"]: run["mismatches"] for run in runs if any(run["mismatches"].values())}
    if failed:
        sys.exit(f"EXACTNESS CHECK FAILED: mismatching queries {failed}")


if __name__ == "__main__":
    main()
