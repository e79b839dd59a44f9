"""Soak: processes add clusters of near-duplicates (fingerprints and texts, one member of each
cluster per process, about 30% duplicates), mixed with queries and add_many batches, while another
process purges the partitions older than the window. Afterwards exactly one member of every cluster
inside the window is kept, nothing inside it is lost, nothing older survives the final purge, no
key is stored twice, and the tables reconcile with the decisions the workers were told.

A reduced soak (4 processes x 500 adds) runs on SQLite, PostgreSQL and MariaDB in every plain
``pytest`` run, CI's included; it is marked slow, so ``pytest -m "not slow"`` leaves it out. The
full one (4 x 20,000 adds; ``SIMSTORE_SOAK_ADDS`` changes the number) is too long for CI and runs
only when asked for; it prints adds/s, latencies and the insert races retried:

    pytest -m slow tests/storage/test_soak.py
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import random
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from simstore import fingerprint
from simstore.errors import DatabaseUnavailable
from simstore.storage.db import create_engine_for
from simstore.storage.retention import partition_of
from simstore.store import SimStore
from tests._workers import (
    START,
    Audit,
    PurgeReport,
    SoakPlan,
    SoakReport,
    audit,
    random_text,
    soak_plan,
    soak_purger,
    soak_worker,
    text_variant,
)

PROCESSES = 4
REDUCED_ADDS = 500
FULL_ADDS = int(os.environ.get("SIMSTORE_SOAK_ADDS", "20000"))
RACING = pytest.mark.parametrize("dialect", ["sqlite-file", "postgresql", "mysql"], indirect=True)
# simstore bug (see test_a_sqlite_query_racing_purge_and_add_names_the_right_key): on SQLite a query
# racing a purge and an add can name the wrong key, so the soak checks its queries on servers only.
# Set this to False when that test passes.
SQLITE_QUERY_RACE = False


@dataclass(frozen=True)
class Figures:
    adds: int
    seconds: float
    p50_ms: float
    p99_ms: float
    queries: int
    retries: int
    purge_passes: int
    purged: int

    def line(self, dialect: str) -> str:
        return (
            f"soak {dialect}: {self.adds:,} adds in {self.seconds:.1f} s = "
            f"{self.adds / self.seconds:,.0f} adds/s; single add p50 {self.p50_ms:.2f} ms, "
            f"p99 {self.p99_ms:.2f} ms; {self.queries:,} queries; {self.retries} insert races "
            f"retried; {self.purge_passes} concurrent purge passes deleted {self.purged:,} rows"
        )


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _collect(source: Any, count: int, children: list[Any]) -> list[Any]:
    """``count`` reports from a multiprocessing queue, waiting as long as the children live: a
    child that dies without reporting fails the run instead of hanging it, and a slow machine
    only makes it slower (the 1 s is how often the children are looked at, not a limit)."""
    got: list[Any] = []
    while len(got) < count:
        try:
            got.append(source.get(timeout=1))
        except queue.Empty:
            dead = [child.exitcode for child in children if child.exitcode not in (None, 0)]
            assert not dead, f"a soak process died without reporting: exit codes {dead}"
            if all(child.exitcode is not None for child in children):  # every one has ended
                with contextlib.suppress(queue.Empty):
                    while len(got) < count:
                        got.append(source.get(timeout=5))  # what they put before they ended
                assert len(got) == count, f"the soak processes ended with {len(got)} reports"
    return got


def run_soak(url: str, processes: int, adds: int, *, seed: int = 7) -> Figures:
    check_queries = not (SQLITE_QUERY_RACE and url.startswith("sqlite"))
    namespace = f"soak-{uuid.uuid4().hex[:8]}"
    plan = soak_plan(processes, adds, seed)
    SimStore(url, namespace=namespace, keep=plan.keep, auto_upgrade=True).close()
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes + 1)
    reports = context.Queue()
    purges = context.Queue()
    stop = context.Event()
    children = [
        context.Process(
            target=soak_worker, args=(url, namespace, plan.keep, items, barrier, reports)
        )
        for items in plan.per_process
    ]
    children.append(
        context.Process(
            target=soak_purger,
            args=(url, namespace, plan.keep, plan.end, barrier, stop, purges),
        )
    )
    for child in children:
        child.start()
    try:
        results: list[SoakReport] = _collect(reports, len(plan.per_process), children)
    finally:
        stop.set()
    purged: PurgeReport = _collect(purges, 1, children)[0]
    for child in children:
        child.join()  # each has reported: it only returns
    errors = [report.error for report in results if report.error]
    errors += [purged.error] if purged.error else []
    assert not errors, "\n".join(errors)
    assert all(child.exitcode == 0 for child in children)

    with SimStore(url, namespace=namespace, keep=plan.keep) as store:
        final = store.purge(now=plan.end)
        stats = store.stats()
    table = reconcile(url, namespace, plan, results, check_queries=check_queries)
    duplicates = sum(not row.inserted for row in table.decisions.values())
    assert (stats.kept, stats.decisions, stats.duplicates) == (
        len(table.kept),
        len(table.decisions),
        duplicates,
    )
    assert purged.passes > 1 and purged.deleted > 0, purged  # the purge ran during the adds
    latencies = [seconds for report in results for seconds in report.latencies]
    return Figures(
        adds=sum(len(report.decisions) for report in results),
        seconds=max(r.finished for r in results) - min(r.started for r in results),
        p50_ms=1000 * _quantile(latencies, 0.5),
        p99_ms=1000 * _quantile(latencies, 0.99),
        queries=sum(len(report.queries) for report in results),
        retries=sum(report.retries for report in results),
        purge_passes=purged.passes,
        purged=purged.deleted + final,
    )


def reconcile(
    url: str, namespace: str, plan: SoakPlan, reports: list[SoakReport], *, check_queries: bool
) -> Audit:
    """The tables after the final purge against the plan and against what the workers were told."""
    table = audit(url, namespace)
    assert table.problems == []
    cluster_of = {item.key: item.cluster for item in plan.items()}
    inside = {item.key for item in plan.items() if item.at >= plan.window_start}
    assert set(table.decisions) == inside  # nothing inside the window lost, nothing older left
    cutoff = partition_of(plan.window_start, 3600)
    assert all(part >= cutoff for part in table.kept_part.values())

    members: dict[int, set[str]] = {}
    for key in inside:
        members.setdefault(cluster_of[key], set()).add(key)
    kept_of: dict[int, str] = {}
    for cluster, keys in members.items():
        kept = sorted(keys & set(table.kept))
        assert len(kept) == 1, (cluster, kept)
        kept_of[cluster] = kept[0]
    assert len(table.kept) == len(members)
    for key in inside:
        row = table.decisions[key]
        assert row.inserted == (key == kept_of[cluster_of[key]])
        assert row.inserted or row.duplicate_of == kept_of[cluster_of[key]]

    told: dict[str, set[tuple[bool, str | None]]] = {}
    for report in reports:
        for key, inserted, duplicate_of in report.decisions:
            told.setdefault(key, set()).add((inserted, duplicate_of))
    assert set(told) == set(cluster_of)  # every add was answered
    for key, answers in told.items():
        # a member is only ever judged a duplicate of its own cluster
        assert all(
            inserted or duplicate_of is None or cluster_of[duplicate_of] == cluster_of[key]
            for inserted, duplicate_of in answers
        ), (key, answers)
        if key in inside:
            row = table.decisions[key]
            assert answers == {(row.inserted, row.duplicate_of)}, (key, answers, row)
    for report in reports if check_queries else []:
        for key, found in report.queries:
            assert all(cluster_of[other] == cluster_of[key] for other in found), (key, found)
            if key in inside:
                assert kept_of[cluster_of[key]] in found, (key, found)
    return table


def test_text_variants_of_the_soak_share_a_fingerprint() -> None:
    rng = random.Random(3)
    for _ in range(20):
        text = random_text(rng)
        assert len({fingerprint(text_variant(text, which)) for which in range(4)}) == 1


def test_soak_plan_has_about_30_percent_duplicates() -> None:
    plan = soak_plan(PROCESSES, REDUCED_ADDS, seed=7)
    items = list(plan.items())
    clusters = {item.cluster for item in items}
    assert len(items) == PROCESSES * REDUCED_ADDS
    assert 0.25 < 1 - len(clusters) / len(items) < 0.35
    assert any(item.text for item in items) and any(item.at < plan.window_start for item in items)


@pytest.mark.slow
@RACING
def test_soak_reduced(database_url: str) -> None:
    figures = run_soak(database_url, PROCESSES, REDUCED_ADDS)
    assert figures.adds == PROCESSES * REDUCED_ADDS
    print(figures.line(database_url))


@pytest.mark.slow
@pytest.mark.soak  # deselected unless asked for: pytest -m slow (see conftest)
@RACING
def test_soak_full(database_url: str, dialect: str, capsys: pytest.CaptureFixture[str]) -> None:
    figures = run_soak(database_url, PROCESSES, FULL_ADDS)
    assert figures.adds == PROCESSES * FULL_ADDS
    with capsys.disabled():
        print("\n" + figures.line(dialect))


def test_a_sqlite_query_racing_purge_and_add_names_the_right_key(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'race.db'}"
    later = START + timedelta(hours=5)
    writer_engine = sa.create_engine(url, connect_args={"timeout": 1})
    writer = SimStore(writer_engine, keep="1h")
    writer.add(key="recent", fingerprint=0xAAAA_0000_5555_0000, at=later)
    writer.add(key="old", fingerprint=0x1234_5678_9ABC_DEF0, at=START)  # the highest rowid

    reads: list[str] = []

    def between_reads(statement: str) -> None:
        """The writer runs between the query's first and second read of simstore_fingerprints."""
        if "simstore_fingerprints" not in statement or not statement.lstrip().startswith("SELECT"):
            return
        reads.append(statement)
        if len(reads) == 2:
            with contextlib.suppress(DatabaseUnavailable):  # a fixed query may lock writers out
                writer.purge(now=later)  # deletes "old", the highest rowid
                writer.add(key="intruder", fingerprint=0xFFFF_FFFF_FFFF_FFFF, at=later)

    reader_engine = create_engine_for(url)
    event.listen(
        reader_engine,
        "connect",
        lambda dbapi_connection, _record: dbapi_connection.set_trace_callback(between_reads),
    )
    reader = SimStore(reader_engine)
    reads.clear()
    found = reader.query(fingerprint=0x1234_5678_9ABC_DEF0, now=START + timedelta(minutes=1))
    stored = audit(url, "default").kept
    for match in found:
        assert stored.get(match.key) == match.fingerprint, (match, stored)
    reader_engine.dispose()
    writer_engine.dispose()
