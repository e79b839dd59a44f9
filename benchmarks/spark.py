"""simstore.spark against SimStore.add_many on the same corpus: wall time, CPU, agreement, and the
time and shuffle bytes of each stage (to project a cluster's cost).

Peers: ``SimStore.add_many`` on a SQLite file (one process, the reference decisions). The corpus is
the sample corpus's texts with synthetic edits (word swaps, drops, appended lines, exact copies)
until ``--docs`` documents, shuffled with a fixed seed. Spark runs ``local[N]`` in this process
(JVM start included in its wall time); CPU is the whole process tree's (driver, JVM, Python
workers), read from /proc. Shuffle bytes come from Spark's event log, per simstore stage; the
skew counts (the largest band-key bucket, the buckets split, the most pairs one task of the
candidate join made) from ``dedup(..., counts=...)``.

    python -m benchmarks spark --docs 100000 --cores 2
    python -m benchmarks spark --docs 1000000 --cores 2 --corpus composed

``--corpus edits`` (the default) edits the sample corpus's 3,686 records until ``--docs``: its
clusters grow with the corpus (~270 texts each at 1M), so the pairs to confirm grow with its
square. ``--corpus composed`` takes the window benchmark's texts (``common.corpus``) (strung from the quality
dataset's clauses) with a fixed share of near-duplicates (15%: one word or character replaced,
deleted and inserted in an earlier text) and exact copies (5%), as a feed's would be.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .common import cli
from .common.corpus import ROOT, compose, load_pool, near_duplicate
from .common.results import add_output, output, save

CORPUS = ROOT / "examples" / "corpus.jsonl"
AT = datetime(2026, 1, 5, tzinfo=timezone.utc)
TICKS = os.sysconf("SC_CLK_TCK")


def corpus(count: int, seed: int) -> list[tuple[str, str]]:
    base = [json.loads(line)["text"] for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    rng = random.Random(seed)
    words = sorted({word for text in base for word in text.split()})
    texts = list(base)
    while len(texts) < count:
        text = rng.choice(texts).split()
        kind = rng.random()
        if kind < 0.15:
            edited = text  # an exact copy
        elif kind < 0.55:
            edited = list(text)
            for _ in range(max(1, len(edited) // rng.choice([6, 10, 20]))):
                edited[rng.randrange(len(edited))] = rng.choice(words)
        elif kind < 0.7:
            edited = [word for word in text if rng.random() > 0.1] or text
        else:  # a new text from pieces of others
            edited = rng.choice(base).split()[: rng.randint(8, 40)] + rng.choices(words, k=30)
        texts.append(" ".join(edited))
    rng.shuffle(texts)
    return [(f"d{i:08d}", text) for i, text in enumerate(texts[:count])]


def composed_corpus(count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` composed texts (``common.corpus``): 80% new, 15% near-duplicates and 5% exact
    copies of earlier ones, in input order."""
    load_pool()
    rng = random.Random(seed)
    numbers: list[int] = []  # the composed text each record was made from
    texts: list[str] = []
    for i in range(count):
        kind = rng.random()
        if i and kind < 0.05:
            texts.append(texts[rng.randrange(i)])
        elif i and kind < 0.20:
            texts.append(near_duplicate(compose(rng.choice(numbers)), rng))
        else:
            numbers.append(i)
            texts.append(compose(i))
    return [(f"d{i:08d}", text) for i, text in enumerate(texts)]


def tree_cpu(root: int) -> float:
    """CPU seconds of ``root`` and every live descendant (with their reaped children)."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        stats[pid] = fields
        children.setdefault(int(fields[1]), []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        found = stats.get(pid)
        if found:
            total += sum(int(value) for value in found[11:15]) / TICKS
        todo.extend(children.get(pid, []))
    return total


def shuffle_bytes(log_dir: Path, group: str) -> dict[str, tuple[int, int]]:
    """Per simstore stage of the jobs of ``group``: (shuffle bytes written, shuffle records
    written), from the event log; under ``"(jobs)"``, ``"(stages)"`` and ``"(tasks)"`` the Spark jobs, stages run and tasks."""
    stage_job: dict[int, str] = {}
    out: dict[str, list[int]] = {}
    jobs = stages = tasks = 0
    for path in sorted(p for p in log_dir.rglob("*") if p.is_file()):
        for line in path.read_text(errors="replace").splitlines():
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            kind = event.get("Event")
            if kind == "SparkListenerJobStart":
                properties = event.get("Properties") or {}
                if properties.get("spark.jobGroup.id") != group:
                    continue
                jobs += 1
                name = properties.get("spark.job.description") or "other"
                for stage in event.get("Stage IDs", []):
                    stage_job.setdefault(stage, name.removeprefix("simstore: "))
            elif kind == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                if info["Stage ID"] not in stage_job:
                    continue
                stages += 1
                tasks += int(info.get("Number of Tasks", 0))
                written = records = 0
                for accumulable in info.get("Accumulables", []):
                    if accumulable.get("Name") == "internal.metrics.shuffle.write.bytesWritten":
                        written = int(accumulable.get("Value", 0))
                    if accumulable.get("Name") == "internal.metrics.shuffle.write.recordsWritten":
                        records = int(accumulable.get("Value", 0))
                name = stage_job.get(info["Stage ID"], "other")
                totals = out.setdefault(name, [0, 0])
                totals[0] += written
                totals[1] += records
    found = {name: (values[0], values[1]) for name, values in out.items()}
    return {**found, "(jobs)": (jobs, 0), "(stages)": (stages, 0), "(tasks)": (tasks, 0)}


def run_store(
    records: list[tuple[str, str]], folder: Path, workers: int
) -> tuple[float, float, dict[str, Any]]:
    """``add_many`` on a SQLite file, ``workers`` processes planning ahead: wall, CPU of the
    process tree (its planning workers included), decisions."""
    from simstore.store import SimStore

    cpu = tree_cpu(os.getpid())  # with the children it has waited for (cutime, cstime)
    started = time.perf_counter()
    with SimStore(f"sqlite:///{folder / 'bench.db'}") as store:
        decided = {
            d.key: (d.inserted, d.duplicate_of.key if d.duplicate_of else None)
            for d in store.add_many(records, batch_size=1000, at=AT, workers=workers)
        }
    wall = time.perf_counter() - started
    return wall, tree_cpu(os.getpid()) - cpu, decided


@dataclass
class SparkRun:
    """One Spark side of the benchmark: the session's start, the dedup once it is up."""

    up_wall: float  # session start and the corpus read and cached (Spark's fixed cost)
    dedup_wall: float  # simstore.spark.dedup and the collect of its result
    cpu: float
    decided: dict[str, Any]
    log_dir: Path
    timings: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


def run_spark(
    records: list[tuple[str, str]],
    cores: int,
    folder: Path,
    split_buckets: int,
    stages: bool,
    driver_rows: int | None,
) -> SparkRun:
    before = tree_cpu(os.getpid())
    started = time.perf_counter()
    from simstore import spark as simspark

    log_dir = folder / "events"
    log_dir.mkdir()
    events = {
        "spark.driver.memory": "8g",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": str(log_dir),
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
    }
    session = simspark.start(f"local[{cores}]", conf=events, records=len(records))
    # the corpus reaches Spark as a Parquet file, as a real one would (not through the driver)
    source = folder / "corpus.parquet"
    keys, texts = zip(*records, strict=True) if records else ((), ())
    table = pa.table({"id": keys, "body": texts, "position": range(len(records))})
    pq.write_table(table, source, row_group_size=20_000)
    partitions = int(session.conf.get("spark.sql.shuffle.partitions") or 2)
    df = session.read.parquet(str(source)).repartition(partitions).persist()
    df.count()
    up = time.perf_counter()
    session.sparkContext.setJobGroup("dedup", "simstore.spark.dedup")
    result = simspark.dedup(
        df, key="id", text="body", order="position", split_buckets=split_buckets,
        driver_rows=driver_rows,
    )  # fmt: skip
    decided = {row.key: (row.kept, row.duplicate_of) for row in result.collect()}
    done = time.perf_counter()
    run = SparkRun(up - started, done - up, tree_cpu(os.getpid()) - before, decided, log_dir)
    result.unpersist()
    if stages:  # again, each stage on its own (timed) and the skew counted
        session.catalog.clearCache()  # nothing of the first run is reused (only the input)
        df.persist().count()
        session.sparkContext.setJobGroup("stages", "simstore.spark.dedup, timed by stage")
        simspark.dedup(
            df, key="id", text="body", order="position", split_buckets=split_buckets,
            timings=run.timings, counts=run.counts,
        ).collect()  # fmt: skip
    session.stop()
    return run


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("spark", __doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--split-buckets", type=int, default=1_000, help="dedup's split_buckets (0: never split)"
    )
    parser.add_argument("--corpus", choices=("edits", "composed"), default="edits")
    parser.add_argument(
        "--stages", action="store_true", help="run dedup again, timing each stage on its own"
    )
    parser.add_argument(
        "--driver-rows", type=int, help="dedup's driver_rows (0: Spark's own path at any size)"
    )
    parser.add_argument(
        "--store-workers",
        type=int,
        default=1,
        help="add_many's planning workers (1: the store also uses a second core)",
    )
    add_output(parser)
    args = parser.parse_args(argv)
    make = composed_corpus if args.corpus == "composed" else corpus
    records = make(args.docs, args.seed)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        store_wall, store_cpu, expected = run_store(records, folder, args.store_workers)
        run = run_spark(
            records, args.cores, folder, args.split_buckets, args.stages, args.driver_rows
        )
        try:
            shuffles = shuffle_bytes(run.log_dir, "dedup")
            staged = shuffle_bytes(run.log_dir, "stages") if args.stages else {}
        except (OSError, ValueError) as error:  # the event log's layout varies by Spark version
            print(f"(no shuffle sizes: {error})")
            shuffles, staged = {}, {}
    same = sum(1 for key, verdict in expected.items() if run.decided.get(key) == verdict)
    duplicates = sum(1 for kept, _of in expected.values() if not kept)
    jobs, spark_stages, tasks = (
        shuffles.get(n, (0, 0))[0] for n in ("(jobs)", "(stages)", "(tasks)")
    )
    print(
        f"{args.docs:,} documents ({duplicates:,} duplicates, corpus {args.corpus}), "
        f"local[{args.cores}]"
    )
    print("| job | wall s | CPU s | agreement |")
    print("|---|---:|---:|---:|")
    print(f"| SimStore.add_many (SQLite file, workers={args.store_workers}) | {store_wall:.1f} | "
          f"{store_cpu:.1f} | reference |")  # fmt: skip
    print(f"| Spark session start, corpus read | {run.up_wall:.1f} | | |")
    print(
        f"| simstore.spark.dedup (session up) | {run.dedup_wall:.1f} | {run.cpu:.1f} | "
        f"{100 * same / len(expected):.3f}% |"
    )
    print(f"| ratio dedup / add_many | {run.dedup_wall / store_wall:.2f}x | | |")
    print(f"| ratio with the session's start | "
          f"{(run.up_wall + run.dedup_wall) / store_wall:.2f}x | "
          f"{run.cpu / max(store_cpu, 1e-9):.2f}x | |")  # fmt: skip
    print()
    print(f"dedup: {jobs} Spark jobs, {spark_stages} stages run, {tasks} tasks")
    figures: dict[str, Any] = {
        "docs": args.docs, "corpus": args.corpus, "cores": args.cores,
        "driver_rows": args.driver_rows,
        "duplicates": duplicates, "agreement": same / len(expected),
        "add_many_wall": store_wall, "add_many_cpu": store_cpu,
        "add_many_workers": args.store_workers,
        "session_up_wall": run.up_wall, "dedup_wall": run.dedup_wall, "spark_cpu": run.cpu,
        "ratio_dedup": run.dedup_wall / store_wall,
        "ratio_with_start": (run.up_wall + run.dedup_wall) / store_wall,
        "jobs": jobs, "stages": spark_stages, "tasks": tasks,
    }  # fmt: skip
    if args.stages:
        print()
        print("| stage | wall s | shuffle written MB | shuffle records |")
        print("|---|---:|---:|---:|")
        for stage in ("sign", "collapse", "candidates", "confirm", "components", "replay"):
            written, count = staged.get(stage, (0, 0))
            print(
                f"| {stage} | {run.timings.get(stage, 0.0):.1f} | {written / 1e6:.1f} | {count:,} |"
            )
        other = staged.get("other", (0, 0))
        print(f"| (untagged) | | {other[0] / 1e6:.1f} | {other[1]:,} |")
        print()
        counts = run.counts
        print(
            f"largest band-key bucket {counts['largest_bucket']:,} texts; "
            f"{counts['split_buckets']:,} buckets split (split_buckets={args.split_buckets}); "
            f"band-key pairs made {counts['band_key_pairs']:,}, "
            f"the most by one task {counts['largest_task_pairs']:,} "
            "(counted in one more pass over the join, inside the candidates time)"
        )
        figures.update(stage_wall=run.timings, counts=counts)
    label = "sparkpath" if args.driver_rows == 0 else ""
    save(output(args, "spark", label, args.docs, "local"), figures)


if __name__ == "__main__":
    main()
