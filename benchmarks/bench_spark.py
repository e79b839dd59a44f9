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
square. ``--corpus composed`` takes ``bench_window_default``'s texts (strung from the quality
dataset's clauses) with a fixed share of near-duplicates (15%: one word or character replaced,
deleted and inserted in an earlier text) and exact copies (5%), as a feed's would be.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "corpus.jsonl"
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
    """``count`` texts of ``bench_window_default``: 80% new, 15% near-duplicates and 5% exact
    copies of earlier ones, in input order."""
    import bench_window_default as composer

    composer.load_pool(composer.PAIRS)
    rng = random.Random(seed)
    numbers: list[int] = []  # the composed text each record was made from
    texts: list[str] = []
    for i in range(count):
        kind = rng.random()
        if i and kind < 0.05:
            texts.append(texts[rng.randrange(i)])
        elif i and kind < 0.20:
            texts.append(composer.near_duplicate(composer.compose(rng.choice(numbers)), rng))
        else:
            numbers.append(i)
            texts.append(composer.compose(i))
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


def shuffle_bytes(log_dir: Path) -> dict[str, tuple[int, int]]:
    """Per simstore stage: (shuffle bytes written, shuffle records written), from the event log."""
    stage_job: dict[int, str] = {}
    out: dict[str, list[int]] = {}
    for path in sorted(p for p in log_dir.rglob("*") if p.is_file()):
        for line in path.read_text(errors="replace").splitlines():
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            kind = event.get("Event")
            if kind == "SparkListenerJobStart":
                name = (event.get("Properties") or {}).get("spark.job.description") or "other"
                for stage in event.get("Stage IDs", []):
                    stage_job.setdefault(stage, name.removeprefix("simstore: "))
            elif kind == "SparkListenerStageCompleted":
                info = event["Stage Info"]
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
    return {name: (values[0], values[1]) for name, values in out.items()}


def run_store(records: list[tuple[str, str]], folder: Path) -> tuple[float, float, dict[str, Any]]:
    from simstore.store import SimStore

    cpu = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    with SimStore(f"sqlite:///{folder / 'bench.db'}") as store:
        decided = {
            d.key: (d.inserted, d.duplicate_of.key if d.duplicate_of else None)
            for d in store.add_many(records, batch_size=1000, at=AT)
        }
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    return wall, (after.ru_utime - cpu.ru_utime) + (after.ru_stime - cpu.ru_stime), decided


def run_spark(
    records: list[tuple[str, str]], cores: int, folder: Path, split_buckets: int
) -> tuple[float, float, dict[str, Any], dict[str, float], dict[str, int], Path]:
    before = tree_cpu(os.getpid())
    started = time.perf_counter()
    from pyspark.sql import SparkSession

    from simstore import spark as simspark

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers need simstore's venv
    log_dir = folder / "events"
    log_dir.mkdir()
    # ~25k texts a partition: at 1M, four partitions ran the JVM out of heap in the first stage
    partitions = max(2, cores * 2, len(records) // 25_000)
    session = (
        SparkSession.builder.master(f"local[{cores}]")
        .config("spark.sql.shuffle.partitions", str(partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "8g")
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", str(log_dir))
        .config("spark.eventLog.compress", "false")
        .config("spark.eventLog.rolling.enabled", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    # the corpus reaches Spark as a Parquet file, as a real one would (not through the driver)
    source = folder / "corpus.parquet"
    keys, texts = zip(*records, strict=True) if records else ((), ())
    table = pa.table({"id": keys, "body": texts, "position": range(len(records))})
    pq.write_table(table, source, row_group_size=20_000)
    df = session.read.parquet(str(source)).repartition(partitions).persist()
    df.count()
    timings: dict[str, float] = {}
    counts: dict[str, int] = {}
    result = simspark.dedup(
        df, key="id", text="body", order="position", split_buckets=split_buckets,
        timings=timings, counts=counts,
    )  # fmt: skip
    decided = {row.key: (row.kept, row.duplicate_of) for row in result.collect()}
    wall = time.perf_counter() - started
    cpu = tree_cpu(os.getpid()) - before
    session.stop()
    return wall, cpu, decided, timings, counts, log_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--split-buckets", type=int, default=1_000, help="dedup's split_buckets (0: never split)"
    )
    parser.add_argument("--corpus", choices=("edits", "composed"), default="edits")
    args = parser.parse_args()
    make = composed_corpus if args.corpus == "composed" else corpus
    records = make(args.docs, args.seed)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        store_wall, store_cpu, expected = run_store(records, folder)
        spark_wall, spark_cpu, got, timings, counts, log_dir = run_spark(
            records, args.cores, folder, args.split_buckets
        )
        try:
            shuffles = shuffle_bytes(log_dir)
        except (OSError, ValueError) as error:  # the event log's layout varies by Spark version
            print(f"(no shuffle sizes: {error})")
            shuffles = {}
    same = sum(1 for key, verdict in expected.items() if got.get(key) == verdict)
    duplicates = sum(1 for kept, _of in expected.values() if not kept)
    print(
        f"{args.docs:,} documents ({duplicates:,} duplicates, corpus {args.corpus}), "
        f"local[{args.cores}]"
    )
    print("| job | wall s | CPU s | agreement |")
    print("|---|---:|---:|---:|")
    print(f"| SimStore.add_many (SQLite file) | {store_wall:.1f} | {store_cpu:.1f} | reference |")
    print(
        f"| simstore.spark.dedup | {spark_wall:.1f} | {spark_cpu:.1f} | "
        f"{100 * same / len(expected):.3f}% |"
    )
    print(f"| ratio spark / add_many | {spark_wall / store_wall:.2f}x | "
          f"{spark_cpu / max(store_cpu, 1e-9):.2f}x | |")  # fmt: skip
    print()
    print("| stage | wall s | shuffle written MB | shuffle records |")
    print("|---|---:|---:|---:|")
    for stage in ("sign", "collapse", "candidates", "confirm", "components", "replay"):
        written, count = shuffles.get(stage, (0, 0))
        print(f"| {stage} | {timings.get(stage, 0.0):.1f} | {written / 1e6:.1f} | {count:,} |")
    other = shuffles.get("other", (0, 0))
    print(f"| (untagged) | | {other[0] / 1e6:.1f} | {other[1]:,} |")
    print()
    print(
        f"largest band-key bucket {counts['largest_bucket']:,} texts; "
        f"{counts['split_buckets']:,} buckets split (split_buckets={args.split_buckets}); "
        f"band-key pairs made {counts['band_key_pairs']:,}, "
        f"the most by one task {counts['largest_task_pairs']:,} "
        "(counted in one more pass over the join, inside the candidates time)"
    )


if __name__ == "__main__":
    main()
