"""The seeds' workload with the DEFAULT pipeline on SQLite: N real-looking texts kept over a
two-day window (text in, MinHash verification), then add / query / size / memory / purge.

    python -m benchmarks window --policy default --rows 10000000   (alias: window-default)

The texts are ``common.corpus``'s composed texts, text ``i`` added at ``moment(i, N)``. The file
(in the git-ignored ``benchmarks/data/window/``, reused while its marker is there) is filled by
``window.fill``: the texts signed and decided as ``add`` would, in order, then written through
``SimStore.load``; ``--keep-all`` loads every text as kept. The checks (``--check`` texts) stop
the run when the filled rows differ from what ``SimStore.add`` writes for the same texts, or when
the API's queries disagree with the fill's decisions.

The timing, through ``SimStore(url, keep="2d")`` with the default policy at the end of day 2
(in this process, after the load average is printed): ``query`` with text and ``add`` with text,
half new texts (numbers past N) and half near-duplicates of filled texts (a filled text made again
from its number, with one word replaced, one deleted and one inserted; characters for Chinese):
cold (the file dropped from the OS page cache with ``posix_fadvise(DONTNEED)``) and warm (the file
read into it, as a long-running service's would be). Then bytes per kept text (``dbstat``, by
table and index), the process's memory, and ``purge`` at the end of day 3 (day 1 goes) in a child
process stopped after ``--purge-minutes`` (``bare.timed_purge``), with its rate and what the whole
day would take. The fill runs in a child process, so the memory printed is the store's. The adds
and the purge change the file: the next run rebuilds it (``--no-purge`` keeps the purge out).
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from simstore.policy import batch
from simstore.policy.policies import DEFAULT_POLICY
from simstore.storage.retention import partition_of
from simstore.store import SimStore

from ..common import cli, corpus
from ..common.corpus import DATA, END_OF_DAY2, PAIRS, SPAN, compose, load_pool, workload
from ..common.databases import (
    cache_file,
    evict,
    file_bytes,
    marker_of,
    report,
    sqlite_sizes,
)
from ..common.measure import latency, machine, memory, timed, uptime, wait_for_quiet
from ..common.results import add_output, output, save
from . import fill
from .bare import lowest_ids, timed_purge


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
                matched.append(len(matches))
        else:
            decision = timed(
                lambda t=text, j=j: store.add(t, key=f"{tag}{j}", at=END_OF_DAY2), samples
            )
            hit = not decision.inserted
        found += hit and planted
        wrong += hit and not planted
    return {
        **latency(samples),
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


def purge_day1(path: Path, minutes: float, day1_kept: int) -> dict[str, Any]:
    """``purge`` of day 1 at the end of day 3 in a child process stopped after ``minutes``
    (``bare.timed_purge``: purge does not depend on the policy, and deletes the band keys
    of every row with a signature); kept texts purged (each with its band keys), decision rows."""
    rows, seconds, finished = timed_purge(path, minutes)
    fingerprint_id, decision_id = lowest_ids(path)  # ids 1..N in time order in both tables
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


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("window --policy default", __doc__)
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
    parser.add_argument("--data-dir", type=Path, default=DATA / "window")
    add_output(parser)
    parser.add_argument(
        "--keep-all",
        action="store_true",
        help="keep every text (an upper bound; for sizes whose candidate pairs are out of reach)",
    )
    args = parser.parse_args(argv)
    corpus.SEED = args.seed  # the workers read it after the fork
    n = args.rows
    load_pool(args.pairs)
    result: dict[str, Any] = {"rows": n, "machine": machine(), "command": " ".join(sys.argv)}
    print(
        f"pool: {len(corpus.SENTENCES['zh']):,} Chinese and {len(corpus.SENTENCES['en']):,} "
        f"English sentences from {len(corpus.TEMPLATES):,} dataset texts"
    )
    sample = [compose(i) for i in range(0, n, max(n // 5000, 1))]
    lengths = sorted(map(len, sample))
    dataset = sorted(length for _lang, length in corpus.TEMPLATES)
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
    if marker_of(path).exists():
        result["fill"] = json.loads(marker_of(path).read_text())
        print(f"reusing {path}")
    else:
        print(f"building {path} ({n:,} texts over two days, {args.workers} signing workers)")
        # in a child process, so that the memory measured after the timing is the store's alone
        # (the fill's arrays, 10 GB at 50M texts, would stay in this process's resident set)
        builder = multiprocessing.get_context("fork").Process(
            target=fill.fill_and_mark, args=(path, n, args.workers, args.keep_all)
        )
        builder.start()
        builder.join()
        if builder.exitcode != 0:
            raise SystemExit(f"the fill failed (exit code {builder.exitcode})")
        result["fill"] = json.loads(marker_of(path).read_text())
    print(f"  fill: {result['fill']}", flush=True)
    fill.check_sample(path, n, args.check, args.seed, result["fill"]["band_key_rows"])
    if args.keep_all:
        result["overstated"] = fill.overstated(f"sqlite:///{path}", n, args.check, args.seed)
    else:
        result["decisions_check"] = fill.check_decisions(path, n, args.check, args.seed)

    disk = file_bytes(path)
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
    marker_of(path).unlink()  # the adds change the file
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
    result["load_after"] = uptime()
    store.close()
    sizes = sqlite_sizes(path)  # per filled text (the adds' few thousand rows are in the sizes)
    report("SQLite (dbstat), default policy", sizes, kept, n)
    result["sizes"] = {name: size for _table, name, size in sizes}
    target = output(args, "window", "keepall" if args.keep_all else "", n, "sqlite")
    save(target, result)
    if not args.no_purge:
        result["purge"] = purge_day1(path, args.purge_minutes, result["fill"]["kept_day1"])
        print(f"  purge of day 1: {result['purge']}")
        save(target, result)
