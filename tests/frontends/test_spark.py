"""simstore.spark decides exactly as ``SimStore.add_many`` (the independent reference): on a
real-text slice, on generated chains A ~ B ~ C with exact copies, on a skewed band-key bucket;
a batch result handed over to a store replays its decisions and finds new near-duplicates;
incremental mode decides a new batch against a store's kept rows; the CLI writes few files, in
input order, and says nothing of the JVM's. One ``local[2]`` session serves every in-process
test; two CLI runs start their own (subprocesses, as a user would). Without PySpark or Java the
module skips, and under SIMSTORE_REQUIRE_SERVERS=1 (CI) fails."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import re
import shutil
import string
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import new_server_database, unavailable

try:
    import pyspark  # noqa: F401
except ImportError:
    unavailable("simstore[spark] is not installed", needed="PySpark", module=True)
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    unavailable("no Java runtime for Spark (java on PATH or JAVA_HOME)", needed="Java", module=True)

from pyspark.sql import DataFrame, Row, SparkSession

from simstore import spark as simspark
from simstore.errors import InvalidInput
from simstore.io import handover
from simstore.policy import batch
from simstore.policy.boilerplate import line_keys, stored_text
from simstore.policy.policies import MinHashVerification, Policy, SimHashOnly, SimHashVerification
from simstore.store import SimStore
from simstore.text.presets import get_preset
from tests.policy.test_batch import CORPUS, corpus_slice
from tests.policy.test_boilerplate import FOOTER, MESSAGES
from tests.storage.test_memory import counted_lines, independent_counts

pytestmark = pytest.mark.slow  # a Spark session (a JVM) and CLI runs that start their own

AT = datetime(2026, 1, 5, tzinfo=timezone.utc)
Verdict = tuple[bool, str | None, int | None, str | None, float | None]


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    """The one session of the module's in-process tests (quiet, two shuffle partitions)."""
    settings = {
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        # (every run of the default policy now also sorts each line key's texts: the memory of
        # boilerplate's window, beside the results the module's tests keep cached)
        "spark.driver.memory": "2g",
        # the tests' small inputs take Spark's own path; test_small_input_on_the_driver and
        # test_medium_input_signed_by_spark_decided_on_the_driver the others
        simspark.DRIVER_ROWS_CONF: "0",
        simspark.DRIVER_ITEMS_CONF: "0",
    }
    session = simspark.start("local[2]", conf=settings, app_name="simstore-tests")
    yield session
    session.stop()


def frame(spark: SparkSession, records: Sequence[tuple[str, str]]) -> DataFrame:
    rows = [(key, text, position) for position, (key, text) in enumerate(records)]
    return spark.createDataFrame(rows, "id string, body string, position long")


def store_verdicts(store: SimStore, records: Sequence[tuple[str, str]]) -> dict[str, Verdict]:
    out: dict[str, Verdict] = {}
    for decision in store.add_many(records, batch_size=256, at=AT):
        match = decision.duplicate_of
        out[decision.key] = (
            decision.inserted,
            match.key if match else None,
            match.distance if match else None,
            match.measure if match else None,
            match.score if match else None,
        )
    return out


def spark_verdicts(result: DataFrame | list[Row]) -> dict[str, Verdict]:
    rows = result if isinstance(result, list) else result.collect()
    return {
        row.key: (row.kept, row.duplicate_of, row.distance, row.measure, row.score) for row in rows
    }


def assert_same(expected: dict[str, Verdict], got: dict[str, Verdict]) -> None:
    assert set(got) == set(expected)
    wrong = [(key, expected[key], got[key]) for key in expected if expected[key] != got[key]]
    assert not wrong, wrong[:5]


def chained_corpus(seed: int) -> list[tuple[str, str]]:
    """Chains of edits (each text an edit of the one before), exact copies and case-only copies,
    shuffled: many A ~ B ~ C where A and C are not near. Words are letters only (numbers that
    differ are evidence against a duplicate)."""
    rng = random.Random(seed)
    letters = random.Random(0)
    vocabulary = sorted(
        {
            "".join(letters.choices(string.ascii_lowercase, k=letters.randint(3, 8)))
            for _ in range(3000)
        }
    )
    texts: list[str] = []
    for _chain in range(40):
        words = rng.choices(vocabulary, k=rng.choice([12, 30, 80]))
        for _step in range(rng.randint(3, 6)):
            texts.append(" ".join(words))
            for _edit in range(max(1, len(words) // rng.choice([8, 10, 12]))):
                words[rng.randrange(len(words))] = rng.choice(vocabulary)
    copies = [rng.choice(texts) for _ in range(60)]
    cased = [text.upper() for text in rng.sample(texts, 20)]
    texts += copies + cased
    rng.shuffle(texts)
    return [(f"k{rng.randrange(10**6):06d}-{i}", text) for i, text in enumerate(texts)]


def kept_next_to_a_duplicate(records: Sequence[tuple[str, str]], policy: Policy) -> int:
    """Kept texts confirmed near an earlier text (a duplicate): "one per component" drops them."""
    items = batch.sign([t for _k, t in records], keys=[k for k, _t in records], policy=policy)
    edges = batch.confirm(items, batch.candidates(items, policy=policy), policy=policy)
    verdicts = batch.replay([item.key for item in items], edges)
    return len({edge.new for edge in edges if verdicts[edge.new].kept})


POLICIES = {
    "minhash": MinHashVerification(),
    "simhash": SimHashOnly(),
    "simhash-verified": SimHashVerification(),
}


@pytest.mark.parametrize("name", list(POLICIES))
def test_real_text_equals_add_many(spark: SparkSession, name: str) -> None:
    policy = POLICIES[name]
    records = corpus_slice(600, seed=3)
    expected = store_verdicts(SimStore("sqlite://", policy=policy), records)
    result = simspark.dedup(
        frame(spark, records), key="id", text="body", order="position", policy=policy
    )
    assert_same(expected, spark_verdicts(result))
    assert sum(not verdict[0] for verdict in expected.values()) > 20


def assert_items_as_signed(rows: Sequence[Row], records: Sequence[tuple[str, str]]) -> None:
    """``with_items`` rows hold what ``batch.sign`` and ``remember_boilerplate`` make of each
    record (the text as a store keeps it), and every order once."""
    texts, keys = [t for _k, t in records], [k for k, _t in records]
    items = batch.sign(texts, keys=keys)
    batch.remember_boilerplate(items)
    signed = {item.key: item for item in items}
    for row in rows:
        item = signed[row.key]
        assert (row.fingerprint & (2**64 - 1), row.text) == (item.fingerprint, stored_text(item))
        assert (row.signature, tuple(row.band_keys)) == (item.signature, item.band_keys)
    assert sorted(row.order for row in rows) == list(range(len(records)))


def test_small_input_on_the_driver_equals_add_many(spark: SparkSession) -> None:
    """Up to driver_rows rows are decided on the driver: add_many's decisions, and the items a
    store keeps as batch.sign makes them (test_real_text_equals_add_many: Spark's on the same
    slice)."""
    records = corpus_slice(600, seed=3)
    expected = store_verdicts(SimStore("sqlite://"), records)
    df = frame(spark, records).repartition(2)  # in no order: the driver sorts by position
    small = simspark.dedup(
        df, key="id", text="body", order="position", driver_rows=600, with_items=True
    ).collect()
    assert_same(expected, spark_verdicts(small))
    assert_items_as_signed(small, records)
    with pytest.raises(InvalidInput, match="more than once"):  # checked on the driver too
        twice = spark.createDataFrame([("a", "x", 0), ("a", "y", 1)], "id string, b string, p long")
        simspark.dedup(twice, key="id", text="b", order="p", driver_rows=10)


def test_medium_input_signed_by_spark_decided_on_the_driver(
    spark: SparkSession, caplog: pytest.LogCaptureFixture
) -> None:
    """Past driver_rows and up to driver_items rows, the executors sign and the driver decides:
    add_many's decisions and batch.sign's items (test_real_text_equals_add_many: Spark's own
    path on such input)."""
    caplog.set_level(logging.INFO, logger="simstore")
    records = corpus_slice(600, seed=5)
    expected = store_verdicts(SimStore("sqlite://"), records)
    df = frame(spark, records).repartition(2)  # in no order: the driver sorts by position
    medium = simspark.dedup(
        df, key="id", text="body", order="position", driver_rows=100, driver_items=600,
        with_items=True,
    ).collect()  # fmt: skip
    assert "600 rows signed by Spark, decided on the driver" in caplog.text
    assert_same(expected, spark_verdicts(medium))
    assert_items_as_signed(medium, records)
    caplog.clear()
    with pytest.raises(InvalidInput, match="more than once"):  # checked before signing
        twice = spark.createDataFrame([("a", "x", 0), ("a", "y", 1)], "id string, b string, p long")
        simspark.dedup(twice, key="id", text="b", order="p", driver_rows=1, driver_items=10)
    assert "signed by Spark" not in caplog.text


def chinese_edits(seed: int) -> list[tuple[str, str]]:
    """Long texts mostly in Chinese (the sample corpus's Chinese records joined) and copies with
    one character in 22 to 34 changed (each change breaks five 5-grams): many land between the
    long threshold for Chinese (0.60) and the general one (0.70), which only the new text's
    script decides."""
    rng = random.Random(seed)
    records = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    chinese = [r["text"] for r in records if re.search(r"[\u4e00-\u9fff]{8}", r["text"])]
    pool = sorted({ch for text in chinese for ch in text if "\u4e00" <= ch <= "\u9fff"})
    out: list[tuple[str, str]] = []
    for n in range(60):
        base = list("".join(rng.sample(chinese, 6)))
        out.append((f"zh{n}", "".join(base)))
        for copy in range(2):
            edited = list(base)
            for _ in range(len(edited) // rng.choice([22, 26, 30, 34])):
                edited[rng.randrange(len(edited))] = rng.choice(pool)
            out.append((f"zh{n}-{copy}", "".join(edited)))
    rng.shuffle(out)
    return out


def test_long_chinese_texts_are_decided_by_their_own_threshold_as_add_many(
    spark: SparkSession,
) -> None:
    # an item rebuilt on an executor must keep Item.mostly_cjk: without it every long Chinese
    # pair scoring between the two long thresholds was kept on Spark and a duplicate in the
    # store (8.9% at 100k)
    records = chinese_edits(seed=4)
    expected = store_verdicts(SimStore("sqlite://"), records)
    between = [
        v for v in expected.values() if v[3] == "minhash" and v[4] is not None and v[4] < 0.70
    ]
    assert len(between) >= 5  # the case is really there
    result = simspark.dedup(frame(spark, records), key="id", text="body", order="position")
    assert_same(expected, spark_verdicts(result))


def test_chains_and_copies_equal_add_many_and_the_output_is_deterministic(
    spark: SparkSession,
) -> None:
    policy = MinHashVerification()
    records = chained_corpus(seed=7)
    assert kept_next_to_a_duplicate(records, policy) >= 3  # chains that component-dedup breaks
    expected = store_verdicts(SimStore("sqlite://", policy=policy), records)
    df = frame(spark, records)
    on_driver = simspark.dedup(
        df, key="id", text="body", order="position", with_items=True
    ).collect()
    assert_same(expected, spark_verdicts(on_driver))
    # deterministic: another input partitioning, shuffle partition count and components step
    # give the same output, row for row (fingerprints, signatures and band keys included)
    with spark_conf(spark, {"spark.sql.shuffle.partitions": "5"}):
        in_spark = simspark.dedup(
            df.repartition(3), key="id", text="body", order="position", driver_edges=0,
            with_items=True,
        )  # fmt: skip
        in_spark_rows = all_rows(in_spark)
    assert in_spark_rows == all_rows(on_driver)


@contextlib.contextmanager
def spark_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """The session's SQL settings changed for a while."""
    before = {name: spark.conf.get(name, None) for name in settings}
    for name, value in settings.items():
        spark.conf.set(name, value)
    try:
        yield
    finally:
        for name, old in before.items():
            if old is None:
                spark.conf.unset(name)
            else:
                spark.conf.set(name, old)


def all_rows(result: DataFrame | list[Row]) -> list[tuple[Any, ...]]:
    return sorted(tuple(row) for row in (result if isinstance(result, list) else result.collect()))


# Four words whose character 5-grams have the smallest images under MinHash values 0-3 among 4M
# random 5-letter words (minhash._gram_hashes and _PERMUTATIONS, searched once): every text that
# holds them has band 0's minima from them, so it holds band 0's key.
BAND_ZERO = "egvmb ikfyl fzdch uzijy"


def boilerplate_corpus(distinct: int, seed: int) -> list[tuple[str, str]]:
    """``distinct`` texts of ~110 words of their own and one long notice (holding BAND_ZERO, so
    all share a band key while pairs share few others), 10% near copies (3 words changed), and
    200 exact copies of the bare notice; shuffled."""
    rng = random.Random(seed)
    letters = random.Random(1)
    vocabulary = sorted(
        {
            "".join(letters.choices(string.ascii_lowercase, k=letters.randint(3, 9)))
            for _ in range(5000)
        }
    )
    notice = (
        "This message and any attachments are confidential and intended solely for the "
        "addressee; if you received it in error please notify the sender at once and delete "
        f"it. Reference {BAND_ZERO}. Opinions expressed are the author's own."
    )
    texts = [" ".join(rng.choices(vocabulary, k=110)) + " " + notice for _ in range(distinct)]
    for _ in range(distinct // 10):
        words = rng.choice(texts).split()
        for _edit in range(3):
            words[rng.randrange(len(words) - 40)] = rng.choice(vocabulary)
        texts.append(" ".join(words))
    texts += [notice] * 200
    rng.shuffle(texts)
    return [(f"b{i:05d}", text) for i, text in enumerate(texts)]


def test_a_skewed_bucket_is_split_with_the_same_decisions(spark: SparkSession) -> None:
    # ~440 distinct texts share band 0's key: one bucket of ~97k pairs, nearly all sharing
    # just that key (so not candidates). Broadcast joins off and 8 shuffle partitions, as on a
    # corpus too big to broadcast: unsplit, one task makes every pair of the bucket.
    records = boilerplate_corpus(400, seed=9)
    expected = store_verdicts(SimStore("sqlite://"), records)
    assert 150 < sum(not verdict[0] for verdict in expected.values()) < 450
    df = frame(spark, records)
    unsplit: dict[str, int] = {}
    split: dict[str, int] = {}
    big_data = {
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.autoBroadcastJoinThreshold": "-1",
        "spark.sql.adaptive.coalescePartitions.enabled": "false",
    }
    with spark_conf(spark, big_data):
        whole = simspark.dedup(
            df, key="id", text="body", order="position", split_buckets=0, counts=unsplit
        )
        whole_rows = whole.collect()
        parted = simspark.dedup(
            df, key="id", text="body", order="position", split_buckets=125, counts=split
        )
        parted_rows = parted.collect()
    assert_same(expected, spark_verdicts(whole_rows))
    assert all_rows(parted_rows) == all_rows(whole_rows)  # the same output, row for row
    bucket = unsplit["largest_bucket"]
    assert bucket > 420 and split["largest_bucket"] == bucket
    assert (unsplit["split_buckets"], split["split_buckets"]) == (0, 1)
    # every pair of distinct texts made once per band key they share, split or not
    items = batch.sign(sorted({text for _key, text in records}))
    sizes = Counter(band_key for item in items for band_key in item.band_keys)
    made = sum(size * (size - 1) // 2 for size in sizes.values())
    assert unsplit["band_key_pairs"] == split["band_key_pairs"] == made
    assert unsplit["largest_task_pairs"] >= bucket * (bucket - 1) // 2  # the bucket in one task
    assert split["largest_task_pairs"] < unsplit["largest_task_pairs"] / 3
    print(f"largest pairs per task: {unsplit['largest_task_pairs']:,} unsplit, "
          f"{split['largest_task_pairs']:,} split, of {made:,} band-key pairs; "
          f"largest bucket {bucket:,} texts")  # fmt: skip


def handed_over(
    spark: SparkSession, store: SimStore, records: Sequence[tuple[str, str]]
) -> dict[str, Verdict]:
    df = frame(spark, records)
    result = simspark.dedup(
        df,
        key="id",
        text="body",
        order="position",
        preset=store.preset,
        policy=store.policy,
        with_items=True,
    )
    report = simspark.load(store, result, at=AT, batch_size=300)
    got = spark_verdicts(result)
    assert report.kept + report.duplicates == len(records)
    assert report.kept == sum(verdict[0] for verdict in got.values())
    assert simspark.load(store, result, at=AT).skipped == len(records)  # a re-run is a no-op
    return got


def database(where: str, tmp_path: Path) -> str:
    """A new SQLite file in ``tmp_path``, or a new database on the PostgreSQL server."""
    return f"sqlite:///{tmp_path / 's.db'}" if where == "sqlite" else new_server_database(where)


@pytest.mark.parametrize("where", ["sqlite", "postgresql"])
def test_hand_over_round_trip(spark: SparkSession, tmp_path: Path, where: str) -> None:
    url = database(where, tmp_path)
    records = corpus_slice(300, seed=11)
    with SimStore(url, namespace="handover", auto_upgrade=True) as store:
        loaded = handed_over(spark, store, records)
        # the corpus added again replays its decisions, key for key
        again = store_verdicts(store, records)
        assert {k: v[:2] for k, v in again.items()} == {k: v[:2] for k, v in loaded.items()}
        assert store.stats().kept == sum(verdict[0] for verdict in loaded.values())
        # a new near-duplicate of a loaded kept text is found
        key, text = next((k, t) for k, t in records if loaded[k][0] and len(t) > 80)
        decision = store.add(text + " (updated)", key="new-one", at=AT)
        assert not decision.inserted
        assert decision.duplicate_of is not None and decision.duplicate_of.key == key
    with SimStore(url, namespace="reference", auto_upgrade=True) as reference:
        assert_same(store_verdicts(reference, records), loaded)


@pytest.mark.parametrize("where", ["sqlite", "postgresql"])
def test_incremental_equals_add_many_on_the_store(
    spark: SparkSession, tmp_path: Path, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    records = corpus_slice(500, seed=17)
    first, second = records[:250], records[250:]
    moment = datetime(2026, 1, 6, tzinfo=timezone.utc)
    url = database(where, tmp_path)
    caplog.set_level(logging.INFO, logger="simstore")
    with SimStore(url, namespace="batch", auto_upgrade=True) as store:
        store_verdicts(store, first)
        result = simspark.dedup(
            frame(spark, second), key="id", text="body", order="position", store=store, at=moment
        )
        got = spark_verdicts(result)
    with SimStore(url, namespace="online") as online:
        store_verdicts(online, first)
        expected = {}
        for decision in online.add_many(second, at=moment):
            match = decision.duplicate_of
            expected[decision.key] = (
                decision.inserted,
                match.key if match else None,
                match.distance if match else None,
                match.measure if match else None,
                match.score if match else None,
            )
    assert_same(expected, got)
    assert any(verdict[1] in dict(first) for verdict in got.values())  # matched the store's rows
    # PostgreSQL's kept rows come through Spark's JDBC source (the driver jar .ci/run installs)
    by_jdbc = "reading 250 kept rows by JDBC" in caplog.text or "by JDBC" in caplog.text
    assert by_jdbc == (where == "postgresql"), caplog.text
    with SimStore(url, namespace="batch") as store, pytest.raises(InvalidInput, match="already"):
        simspark.dedup(frame(spark, first[:5]), key="id", text="body", order="position",
                       store=store).collect()  # fmt: skip


def test_bad_input_is_a_simstore_error(spark: SparkSession) -> None:
    good = frame(spark, [("a", "some text"), ("b", "other text")])
    with pytest.raises(InvalidInput, match="no column"):
        simspark.dedup(good, key="id", text="missing", order="position")
    twice = spark.createDataFrame(
        [("a", "x y z", 0), ("a", "x y w", 1)], "id string, body string, position long"
    )
    with pytest.raises(InvalidInput, match="more than once"):
        simspark.dedup(twice, key="id", text="body", order="position")
    null = spark.createDataFrame([("a", None, 0)], "id string, body string, position long")
    with pytest.raises(InvalidInput, match="null"):
        simspark.dedup(null, key="id", text="body", order="position")
    with pytest.raises(InvalidInput, match="cannot read the hand-over"):
        simspark.dedup(good, key="id", text="body", order="position", against="/no/such/folder")
    nul = spark.createDataFrame([("a\x00b", "text", 0)], "id string, body string, position long")
    with pytest.raises(InvalidInput, match="NUL"):  # found on an executor, raised on the driver
        simspark.dedup(nul, key="id", text="body", order="position").collect()


def test_driver_components_are_minimum_labels() -> None:
    import numpy as np

    nodes, labels = simspark.driver_components(np.array([5, 9, 3, 7]), np.array([1, 5, 2, 3]))
    assert dict(zip(nodes.tolist(), labels.tolist(), strict=True)) == {
        1: 1, 5: 1, 9: 1, 2: 2, 3: 2, 7: 2,
    }  # fmt: skip


def test_load_refuses_bad_rows(tmp_path: Any) -> None:
    with SimStore(f"sqlite:///{tmp_path / 'l.db'}") as store:
        with pytest.raises(InvalidInput, match="duplicate_of"):
            handover.load(store, [handover.LoadRow("a", False, 1)])
        with pytest.raises(InvalidInput, match="bytes"):
            handover.load(store, [handover.LoadRow("a", True, 1, signature=b"x")])
        assert handover.load(store, [{"key": "a", "kept": True, "fingerprint": 7}]).kept == 1
        assert store.get("a") is not None


@dataclass(frozen=True)
class CliRun:
    """One ``simstore spark dedup`` run (in this process, on the shared session)."""

    records: list[tuple[str, str]]
    source: Path
    out: Path
    handover: Path
    summary: dict[str, Any]
    expected: dict[str, Verdict]  # add_many's decisions on the same records


@pytest.fixture(scope="module")
def cli_run(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> CliRun:
    from click.testing import CliRunner

    from simstore.cli import main

    folder = tmp_path_factory.mktemp("cli")
    records = corpus_slice(200, seed=23)
    source = folder / "in.jsonl"
    lines = [json.dumps({"id": k, "text": t, "n": i}) for i, (k, t) in enumerate(records)]
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out, dups, handing = folder / "out", folder / "dups", folder / "handover"
    arguments = ["--json", "spark", "dedup", str(source), "--out", str(out), "--dups", str(dups)]
    arguments += ["--handover", str(handing), "--order", "n", "--master", "local[2]"]
    ran = CliRunner().invoke(main, arguments)
    assert ran.exit_code == 0, ran.output
    expected = store_verdicts(SimStore("sqlite://"), records)
    return CliRun(records, source, out, handing, json.loads(ran.output), expected)


def parts(folder: Path, suffix: str) -> list[Path]:
    """The part files Spark wrote in ``folder``, in name order (the order they are read in)."""
    return sorted(folder.glob(f"part-*{suffix}"))


def json_rows(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in parts(folder, ".json") for line in path.open()]


def test_cli_spark_dedup(spark: SparkSession, cli_run: CliRun) -> None:
    # 200 records: one file in each output folder (Spark's default made one per shuffle
    # partition, 200 and more), every record in input order (--order n)
    expected = cli_run.expected
    assert cli_run.summary["kept"] == sum(verdict[0] for verdict in expected.values())
    written = json_rows(cli_run.out)
    kept = [key for key, _text in cli_run.records if expected[key][0]]
    assert [row["id"] for row in written] == kept
    assert [row["n"] for row in written] == sorted(row["n"] for row in written)
    duplicates = json_rows(cli_run.source.parent / "dups")
    assert [row["id"] for row in duplicates] == [k for k, _t in cli_run.records if k not in kept]
    assert set(duplicates[0]) == {"id", "duplicate_of", "distance", "measure", "score"}
    handing = spark.read.parquet(str(cli_run.handover)).collect()
    assert [row.key for row in handing] == [key for key, _text in cli_run.records]
    counts = [len(parts(folder, ext)) for folder, ext in (
        (cli_run.out, ".json"), (cli_run.source.parent / "dups", ".json"),
        (cli_run.handover, ".parquet"),
    )]  # fmt: skip
    assert counts == [1, 1, 1]
    assert spark.range(1).count() == 1  # the test session is still running


def test_cli_spark_dedup_files_in_read_order(spark: SparkSession, cli_run: CliRun) -> None:
    """--files 3 and no --order: three files, which read one after the other give the kept
    records in the order the input holds them."""
    from click.testing import CliRunner

    from simstore.cli import main

    out = cli_run.source.parent / "three"
    arguments = ["--json", "spark", "dedup", str(cli_run.source), "--out", str(out)]
    with spark_conf(spark, {simspark.DRIVER_ROWS_CONF: "1000"}):  # decided as test_cli_spark_dedup
        ran = CliRunner().invoke(main, [*arguments, "--files", "3"])
    assert ran.exit_code == 0, ran.output
    assert len(parts(out, ".json")) == 3
    written = json_rows(out)
    assert [row["id"] for row in written] == [
        k for k, _t in cli_run.records if cli_run.expected[k][0]
    ]
    assert set(written[0]) == {"id", "text", "n"}  # the read order's own column is not written


def test_cli_spark_dedup_is_quiet_and_runs_its_workers_in_its_own_interpreter(
    cli_run: CliRun,
) -> None:
    """The real command in a shell whose first python3 lacks simstore (PySpark's default for its
    workers) and no PYSPARK_PYTHON: the local workers still import simstore (the CLI names its
    own interpreter), and nothing reaches stderr: no log4j profile line, no WARN of Spark's or
    Hadoop's, no JVM warning (they went to a log file, removed after a good run)."""
    environment = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    environment["PATH"] = "/usr/bin:/bin"  # the system python3, without simstore's dependencies
    environment["TMPDIR"] = str(cli_run.source.parent / "tmp")
    Path(environment["TMPDIR"]).mkdir()
    out = cli_run.source.parent / "own-interpreter"
    command = [sys.executable, "-m", "simstore.cli", "--json", "spark", "dedup"]
    command += [str(cli_run.source), "--out", str(out), "--order", "n", "--master", "local[1]"]
    ran = subprocess.run(command, capture_output=True, text=True, check=False, env=environment)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert json.loads(ran.stdout)["kept"] == cli_run.summary["kept"]
    assert ran.stderr == ""
    assert not list(Path(environment["TMPDIR"]).glob("simstore-spark-*"))  # the log removed


def simstore_cli(*arguments: str) -> dict[str, Any]:
    """``simstore --json ARGUMENTS`` as a subprocess: its JSON document (exit 0 asserted)."""
    command = [sys.executable, "-m", "simstore.cli", "--json", *arguments]
    ran = subprocess.run(command, capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr
    document: dict[str, Any] = json.loads(ran.stdout)
    return document


@pytest.mark.parametrize("where", ["sqlite", "postgresql"])
def test_cli_db_load_then_ingest_replays(cli_run: CliRun, tmp_path: Path, where: str) -> None:
    url = database(where, tmp_path)
    if where == "postgresql":
        simstore_cli("--db", url, "db", "upgrade")
    place = ["--db", url, "--namespace", "corpus"]
    expected, total = cli_run.expected, len(cli_run.records)
    kept = sum(verdict[0] for verdict in expected.values())
    loaded = simstore_cli(*place, "db", "load", str(cli_run.handover), "--batch-size", "64")
    assert (loaded["loaded"], loaded["kept"], loaded["skipped"]) == (total, kept, 0)
    again = simstore_cli(*place, "db", "load", str(cli_run.handover))
    assert (again["loaded"], again["skipped"]) == (0, total)  # a re-run is a no-op
    ingested = simstore_cli(*place, "ingest", str(cli_run.source))
    assert ingested["replayed"] == total
    assert (ingested["kept"], ingested["duplicates"]) == (kept, total - kept)
    with SimStore(url, namespace="corpus") as store:
        for key, verdict in expected.items():
            decision = store.get(key)
            assert decision is not None
            match = decision.duplicate_of
            assert (decision.inserted, match.key if match else None) == verdict[:2], key


def test_cli_db_load_refuses_another_policy(cli_run: CliRun, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'other.db'}"
    command = [sys.executable, "-m", "simstore.cli", "--db", url, "--policy", "simhash"]
    ran = subprocess.run(
        [*command, "db", "load", str(cli_run.handover)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert ran.returncode != 0
    assert "was made with" in ran.stderr and "simhash (distance <= 3)" in ran.stderr


def jsonl(path: Path, records: Sequence[tuple[str, str]]) -> Path:
    lines = [json.dumps({"id": key, "text": text}, ensure_ascii=False) for key, text in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def in_process(*arguments: str) -> dict[str, Any]:
    """``simstore --json ARGUMENTS`` in this process: a Spark command uses the test session."""
    from click.testing import CliRunner

    from simstore.cli import main

    ran = CliRunner().invoke(main, ["--json", *arguments])
    assert ran.exit_code == 0, ran.output
    document: dict[str, Any] = json.loads(ran.output)
    return document


def decisions_in(url: str, namespace: str, keys: Sequence[str]) -> dict[str, tuple[bool, Any]]:
    with SimStore(url, namespace=namespace) as store:
        out = {}
        for key in keys:
            decision = store.get(key)
            assert decision is not None, key
            match = decision.duplicate_of
            out[key] = (decision.inserted, match.key if match else None)
        return out


@pytest.mark.parametrize("where", ["sqlite", "postgresql"])
def test_cli_against_a_live_store_then_db_load_equals_ingesting_both_halves(
    spark: SparkSession, tmp_path: Path, where: str
) -> None:
    records = corpus_slice(400, seed=29)
    first = jsonl(tmp_path / "first.jsonl", records[:200])
    second = jsonl(tmp_path / "second.jsonl", records[200:])
    url = database(where, tmp_path)
    if where == "postgresql":
        simstore_cli("--db", url, "db", "upgrade")
    keys = [key for key, _text in records]
    for namespace in ("ingested", "incremental"):
        simstore_cli("--db", url, "--namespace", namespace, "ingest", str(first))
    simstore_cli("--db", url, "--namespace", "ingested", "ingest", str(second))
    expected = decisions_in(url, "ingested", keys)
    assert any(not kept and dup in dict(records[:200]) for kept, dup in expected.values())
    handing = tmp_path / "handover"
    place = ["--db", url, "--namespace", "incremental"]
    decided = in_process(*place, "spark", "dedup", str(second), "--against", url,
                         "--out", str(tmp_path / "out"), "--handover", str(handing))  # fmt: skip
    kept = sum(expected[key][0] for key, _text in records[200:])
    assert (decided["kept"], decided["duplicates"]) == (kept, 200 - kept)
    loaded = simstore_cli(*place, "db", "load", str(handing))
    assert (loaded["loaded"], loaded["skipped"]) == (200, 0)
    assert decisions_in(url, "incremental", keys) == expected


def test_cli_against_a_store_writes_the_duplicates_simstore_check_finds(
    spark: SparkSession, tmp_path: Path
) -> None:
    """``spark dedup --against URL --dups`` and ``simstore check`` of the same new records give
    the same duplicates with the same fields (key, duplicate_of, distance, measure, score)."""
    records = corpus_slice(300, seed=37)
    first = jsonl(tmp_path / "first.jsonl", records[:150])
    second = jsonl(tmp_path / "second.jsonl", records[150:])
    url = f"sqlite:///{tmp_path / 'c.db'}"
    simstore_cli("--db", url, "ingest", str(first))
    dups = tmp_path / "dups"
    in_process("--db", url, "spark", "dedup", str(second), "--against", url,
               "--out", str(tmp_path / "out"), "--dups", str(dups))  # fmt: skip
    by_spark = [json.loads(line) for part in sorted(dups.glob("part-*"))
                for line in part.read_text(encoding="utf-8").splitlines()]  # fmt: skip
    checked = subprocess.run(
        [sys.executable, "-m", "simstore.cli", "--db", url, "--quiet", "check", str(second)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    lines = [json.loads(line) for line in checked.splitlines()]
    by_check = [{k: v for k, v in line.items() if k != "decision"} for line in lines
                if line["decision"] == "duplicate"]  # fmt: skip
    assert by_spark and by_check == by_spark
    assert any(line["duplicate_of"] in dict(records[150:]) for line in by_check)  # in the batch


def test_cli_against_a_hand_over_equals_ingesting_both_halves(
    spark: SparkSession, tmp_path: Path
) -> None:
    records = corpus_slice(400, seed=31)
    first = jsonl(tmp_path / "first.jsonl", records[:200])
    second = jsonl(tmp_path / "second.jsonl", records[200:])
    url = f"sqlite:///{tmp_path / 'h.db'}"
    for path in (first, second):
        simstore_cli("--db", url, "--namespace", "ingested", "ingest", str(path))
    keys = [key for key, _text in records]
    expected = decisions_in(url, "ingested", keys)
    one, two = tmp_path / "one", tmp_path / "two"
    in_process("spark", "dedup", str(first), "--out", str(tmp_path / "o1"), "--handover", str(one))
    in_process("spark", "dedup", str(second), "--against", str(one),
               "--out", str(tmp_path / "o2"), "--handover", str(two))  # fmt: skip
    for handing in (one, two):
        simstore_cli("--db", url, "--namespace", "loaded", "db", "load", str(handing))
    assert decisions_in(url, "loaded", keys) == expected
    with pytest.raises(InvalidInput, match="was made with"):  # another recipe than the run's
        simspark.dedup(frame(spark, records[:3]), key="id", text="body", order="position",
                       policy=SimHashOnly(), against=str(one))  # fmt: skip


def test_cli_spark_dedup_shows_its_progress_on_a_terminal(cli_run: CliRun) -> None:
    """On a terminal the command shows its phase and Spark's stage with tasks done; piped, it
    shows nothing (test_cli_spark_dedup_is_quiet_and_runs_its_workers_in_its_own_interpreter)."""
    import pty

    controller, terminal = pty.openpty()
    out = cli_run.source.parent / "on-a-terminal"
    command = [sys.executable, "-m", "simstore.cli", "spark", "dedup", str(cli_run.source)]
    command += ["--out", str(out), "--master", "local[1]"]
    environment = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "200"}
    run = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=terminal, stdin=subprocess.DEVNULL,
        env=environment,
    )  # fmt: skip
    os.close(terminal)
    shown = bytearray()
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the command ended and closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(controller)
    assert run.wait() == 0, shown.decode("utf-8", "replace")
    text = shown.decode("utf-8", "replace")
    assert "deciding" in text and "writing" in text, text
    assert re.search(r"Spark stage \d+: [\d,]+/[\d,]+ tasks", text), text


REMEMBERS = MinHashVerification(boilerplate_texts=3)
FORGETS = MinHashVerification(boilerplate_texts=None)


def footer_records() -> list[tuple[str, str]]:
    """Messages (with names: a short text's signature carries them) under one footer, then
    copies: bare, exact, edited under the footer; lone messages, and one of them under the
    footer (found only when the footer is set aside); last an exact copy of the first text (set
    aside: its message alone, found by the first) and its bare message (the same comparison
    text and signature, but no boilerplate: it is not found by the first, kept whole)."""
    named = [message + ", says Maria from Berlin" for message in MESSAGES]
    under = [message + "\n\n" + FOOTER for message in named[:6]]
    texts = [*under, named[4], under[5], named[0] + " today\n\n" + FOOTER, *named[6:]]
    texts += [named[7] + "\n\n" + FOOTER, under[0], named[0]]
    return [(f"m{i:02d}", text) for i, text in enumerate(texts)]


def test_the_memory_of_boilerplate_decides_as_the_batch_api(spark: SparkSession) -> None:
    """Spark's own path, and the driver's two, set the lines that three earlier texts carried
    aside as ``batch.dedup`` does (the reference): the same verdicts, and the items a store keeps
    (text, signature, band keys, line keys) as ``batch.sign`` then ``remember_boilerplate``."""
    records = footer_records()
    texts, keys = [t for _k, t in records], [k for k, _t in records]
    verdicts = batch.dedup(texts, keys=keys, policy=REMEMBERS)
    expected = {v.key: (v.kept, v.duplicate_of, v.distance, v.measure, v.score) for v in verdicts}
    without = {
        v.key: (v.kept, v.duplicate_of) for v in batch.dedup(texts, keys=keys, policy=FORGETS)
    }
    # the memory at work: the bare copy and the lone message under the footer are found
    assert expected["m06"][1] == "m04" and expected["m13"][1] == "m10"
    assert without["m06"] == without["m13"] == (True, None)
    assert expected["m14"][1] == "m00" and expected["m15"][0]
    items = batch.sign(texts, keys=keys, policy=REMEMBERS)
    batch.remember_boilerplate(items, policy=REMEMBERS)
    assert any(item.boilerplate for item in items)
    signed = {
        item.key: (stored_text(item), item.signature, item.band_keys, line_keys(item))
        for item in items
    }
    df = frame(spark, records).repartition(2)
    # Spark's own path (the module's session sets no driver rows), then the driver's two
    for rows_limit, items_limit in ((None, None), (100, None), (1, 100)):
        rows = simspark.dedup(
            df, key="id", text="body", order="position", policy=REMEMBERS, with_items=True,
            driver_rows=rows_limit, driver_items=items_limit,
        ).collect()  # fmt: skip
        assert_same(expected, spark_verdicts(rows))
        got = {
            row.key: (row.text, row.signature, tuple(row.band_keys), tuple(row.segments))
            for row in rows
        }
        assert got == signed, (rows_limit, items_limit)
    plain = simspark.dedup(df, key="id", text="body", order="position", policy=FORGETS).collect()
    assert {k: v[:2] for k, v in spark_verdicts(plain).items()} == without


def test_a_hand_over_carries_the_counts_of_its_lines(spark: SparkSession, tmp_path: Path) -> None:
    """A result loaded into a store counts every text's lines (kept or not) as adding the texts
    would have, so the next adds decide as on a store that added them all."""
    records = footer_records()
    result = simspark.dedup(
        frame(spark, records), key="id", text="body", order="position", policy=REMEMBERS,
        with_items=True,
    )  # fmt: skip
    probes = [
        (MESSAGES[5] + ", says Maria from Berlin", "bare"),
        (MESSAGES[8] + ", says Maria from Berlin\n\n" + FOOTER, "under"),  # found with the counts
        (MESSAGES[9] + ", says Maria from Berlin\n\nThanks, see you soon", "other"),
    ]
    with SimStore(f"sqlite:///{tmp_path / 'loaded.db'}", policy=REMEMBERS) as loaded:
        report = simspark.load(loaded, result, at=AT)
        assert report.kept + report.duplicates == len(records)
        expected = independent_counts([text for _key, text in records])
        assert counted_lines(loaded.engine, loaded.scope.ns_id) == expected
        assert simspark.load(loaded, result, at=AT).skipped == len(records)  # counted once
        assert counted_lines(loaded.engine, loaded.scope.ns_id) == expected
        got = [loaded.add(text, key=key, at=AT) for text, key in probes]
    with SimStore("sqlite://", policy=REMEMBERS) as reference:
        list(reference.add_many(records, at=AT))
        wanted = [reference.add(text, key=key, at=AT) for text, key in probes]
    assert [(d.inserted, d.recorded_as) for d in got] == [
        (d.inserted, d.recorded_as) for d in wanted
    ]
    assert got[1].recorded_as == "m11"  # the footer set aside: the lone message found
    result.unpersist()


def write_handover(result: DataFrame, folder: Path, policy: Policy) -> None:
    """A ``dedup(..., with_items=True)`` result as ``simstore spark dedup --handover`` writes it."""
    from pyspark.sql import functions as F

    stamp = handover.made_with(get_preset("default"), policy, simspark.MAX_DISTANCE)
    stamped = result.withColumn("made_with", F.lit(stamp))
    columns = [name for name in handover.HANDOVER_COLUMNS if name in stamped.columns]
    stamped.select(*columns).write.parquet(str(folder))


def test_against_a_hand_over_the_memory_counts_its_lines(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A batch decided against a hand-over counts the hand-over's lines before its own, as a
    store that loaded the hand-over then added the batch (the reference) does: the footer, three
    times in the hand-over, is boilerplate from the batch's first text on. A hand-over without
    line keys (one from before they were handed over) counts nothing, as db load of it."""
    records = footer_records()
    first, second = records[:3], records[3:]
    result = simspark.dedup(frame(spark, first), key="id", text="body", order="position",
                            policy=REMEMBERS, with_items=True)  # fmt: skip
    write_handover(result, tmp_path / "one", REMEMBERS)
    write_handover(result.drop("segments"), tmp_path / "older", REMEMBERS)
    decided = {}
    for name in ("one", "older"):
        got = simspark.dedup(frame(spark, second), key="id", text="body", order="position",
                             policy=REMEMBERS, against=tmp_path / name, at=AT)  # fmt: skip
        decided[name] = {k: v[:2] for k, v in spark_verdicts(got).items()}
        with SimStore(f"sqlite:///{tmp_path / name}.db", policy=REMEMBERS) as store:
            store.load(handover.read_parquet(tmp_path / name), at=AT)
            expected = store_verdicts(store, second)
        assert decided[name] == {k: v[:2] for k, v in expected.items()}, name
    assert decided["one"]["m06"] == (False, "m04")  # m04 set aside by the hand-over's counts
    assert decided["older"]["m06"] == (True, None)
    # against a store: its counts (the first texts') are read before the batch's, as its adds do
    with SimStore(f"sqlite:///{tmp_path / 'm.db'}", policy=REMEMBERS) as store:
        list(store.add_many(first, at=AT))
        got = simspark.dedup(frame(spark, second), key="id", text="body", order="position",
                             store=store, at=AT)  # fmt: skip
        against_store = {k: v[:2] for k, v in spark_verdicts(got).items()}
        expected = store_verdicts(store, second)
    assert against_store == {k: v[:2] for k, v in expected.items()}
    assert against_store["m06"] == (False, "m04")
