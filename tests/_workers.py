"""What the reliability tests (soak, crash, faults, frozen upgrades) share.

- ``audit`` reads simstore's tables with plain SQL, as an analyst would, and lists every way they
  disagree with each other: a kept decision without its row, a row without its decision, a distance
  or band or partition that does not follow from the stored fingerprints, a key stored twice.
- Workloads generated from a seed, so that a child process and the test that checks it build the
  same items.
- The child processes: soak workers and the purger (multiprocessing targets, started with
  ``spawn``), and ``python -m tests._workers add-many|purge|readonly|readonly-twice|upgrade-killed|
  cli-after-go`` for processes a test kills with SIGKILL, runs as another user or starts at one
  moment.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from simstore.storage.retention import partition_of
from simstore.storage.schema import band_keys_in_row, fingerprints, minhash_keys, namespaces
from simstore.store import SimStore
from simstore.text.encoding import bands, from_signed
from tests.conftest import HANG

ROOT = Path(__file__).resolve().parent.parent
MASK64 = (1 << 64) - 1
START = datetime(2024, 1, 1)  # the `at` times of generated workloads start here (an hour boundary)
PASSWORD = "hunter2-Secret"  # noqa: S105 - a made-up password that must never be shown


# --- audit ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecisionRow:
    fingerprint: int
    inserted: bool
    duplicate_of: str | None
    distance: int | None
    part: int


@dataclass
class Audit:
    """simstore's rows of one namespace, and what is wrong with them."""

    decisions: dict[str, DecisionRow] = field(default_factory=dict)
    kept: dict[str, int] = field(default_factory=dict)  # key -> fingerprint
    kept_part: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def outcomes(self) -> dict[str, tuple[bool, str | None, int | None, int]]:
        """key -> (inserted, duplicate_of, distance, fingerprint): what two runs must agree on."""
        return {
            key: (row.inserted, row.duplicate_of, row.distance, row.fingerprint)
            for key, row in self.decisions.items()
        }


def stored_band_keys(
    conn: sa.Connection, *, namespace: str | None = None, row_id: int | None = None
) -> list[int]:
    """The MinHash band keys simstore stored, sorted (every one, one namespace's or one row's):
    rows of ``simstore_minhash``, or on PostgreSQL the fingerprint rows' own arrays."""
    if band_keys_in_row(conn.dialect):
        key = sa.func.unnest(fingerprints.c.band_keys).label("band_key")
        query = sa.select(key).select_from(fingerprints)
        owner, ns_of = fingerprints.c.id, fingerprints.c.ns_id
    else:
        query = sa.select(minhash_keys.c.band_key)
        owner, ns_of = minhash_keys.c.fp_id, minhash_keys.c.ns_id
    if row_id is not None:
        query = query.where(owner == row_id)
    if namespace is not None:
        query = query.join(namespaces, namespaces.c.id == ns_of).where(
            namespaces.c.name == namespace
        )
    return sorted(int(value) for value in conn.execute(query).scalars())


def _engine(bind: str | Engine) -> tuple[Engine, bool]:
    return (sa.create_engine(bind), True) if isinstance(bind, str) else (bind, False)


def _as_datetime(value: Any) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def audit(bind: str | Engine, namespace: str) -> Audit:
    """Read and cross-check the namespace's rows.

    ``decisions`` holds every key's decision: the rows of ``simstore_decisions`` and each kept
    row as the decision that kept it (a purge stopped half-way leaves duplicates' decisions
    whose kept row has gone: not a problem, as after a removal).
    """
    engine, owned = _engine(bind)
    try:
        with engine.connect() as conn:
            found = conn.execute(
                sa.text("SELECT id, partition_seconds FROM simstore_namespaces WHERE name = :ns"),
                {"ns": namespace},
            ).first()
            if found is None:
                return Audit(problems=[f"no namespace {namespace!r}"])
            ns_id, seconds = int(found[0]), int(found[1])
            decision_rows = conn.execute(
                sa.text(
                    "SELECT d.key, d.fp, d.inserted, d.duplicate_of, d.distance, d.part, "
                    "d.decided_at FROM simstore_decisions d WHERE d.ns_id = :ns"
                ),
                {"ns": ns_id},
            ).all()
            kept_rows = conn.execute(
                sa.text(
                    "SELECT f.key, f.fp, f.b0, f.b1, f.b2, f.b3, f.part, f.added_at "
                    "FROM simstore_fingerprints f WHERE f.ns_id = :ns"
                ),
                {"ns": ns_id},
            ).all()
    finally:
        if owned:
            engine.dispose()
    result = Audit()
    problems = result.problems
    for key, fp, inserted, duplicate_of, distance, part, decided_at in decision_rows:
        if key in result.decisions:
            problems.append(f"decision {key!r} stored twice")
        result.decisions[key] = DecisionRow(
            from_signed(int(fp)),
            bool(inserted),
            duplicate_of,
            None if distance is None else int(distance),
            int(part),
        )
        if int(part) != partition_of(_as_datetime(decided_at), seconds):
            problems.append(f"decision {key!r}: part {part} does not match {decided_at}")
    for key, fp, b0, b1, b2, b3, part, added_at in kept_rows:
        value = from_signed(int(fp))
        if key in result.kept:
            problems.append(f"kept row {key!r} stored twice")
        result.kept[key] = value
        result.kept_part[key] = int(part)
        if (b0, b1, b2, b3) != bands(value):
            problems.append(f"kept row {key!r}: bands {(b0, b1, b2, b3)} do not match its fp")
        if int(part) != partition_of(_as_datetime(added_at), seconds):
            problems.append(f"kept row {key!r}: part {part} does not match {added_at}")
    logged = dict(result.decisions)
    for key, value in result.kept.items():  # a kept row is its decision's record (0008 on)
        part = result.kept_part[key]
        result.decisions.setdefault(key, DecisionRow(value, True, None, None, part))
    for key, row in logged.items():
        if row.inserted:
            problems.append(f"kept decision {key!r} logged in simstore_decisions: {row}")
            continue
        if key in result.kept:
            problems.append(f"key {key!r} is both kept and a duplicate: {row}")
        if row.duplicate_of is None or row.distance is None:
            problems.append(f"duplicate decision {key!r} names no match: {row}")
            continue
        other = result.kept.get(row.duplicate_of)
        if other is not None and (other ^ row.fingerprint).bit_count() != row.distance:
            problems.append(f"duplicate decision {key!r}: distance {row.distance} is wrong")
    return result


def row_counts(engine: Engine, namespace: str) -> tuple[int, int]:
    """(kept rows, decisions) of a namespace, counted with plain SQL."""
    with engine.connect() as conn:
        counts = [
            conn.execute(
                sa.text(
                    f"SELECT COUNT(*) FROM {table} t JOIN simstore_namespaces n "
                    "ON n.id = t.ns_id WHERE n.name = :ns"
                ),
                {"ns": namespace},
            ).scalar_one()
            for table in ("simstore_fingerprints", "simstore_decisions")
        ]
    return int(counts[0]), int(counts[1])


def sqlite_integrity(url: str) -> list[str]:
    """``PRAGMA integrity_check`` of a SQLite file database (``['ok']`` when sound)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [str(row[0]) for row in conn.exec_driver_sql("PRAGMA integrity_check")]
    finally:
        engine.dispose()


# --- workloads -----------------------------------------------------------------------------------


def fingerprint_items(count: int, seed: int, prefix: str = "k") -> list[tuple[str, int]]:
    """``count`` (key, fingerprint) items: about 30% of them a few bits from an earlier one."""
    rng = random.Random(seed)
    items: list[tuple[str, int]] = []
    for index in range(count):
        if items and rng.random() < 0.3:
            value = items[rng.randrange(len(items))][1]
            for _ in range(rng.randrange(4)):
                value ^= 1 << rng.randrange(64)
        else:
            value = rng.getrandbits(64)
        items.append((f"{prefix}{index:07d}", value))
    return items


_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "zu", "pe", "qua", "dri", "on", "el"]


def run_together(processes: Sequence[Any], results: Any) -> list[Any]:
    """Start ``processes`` (``multiprocessing`` ones), take one result each from the queue
    ``results``, join them, and check that each exited cleanly; the results, as they came."""
    for process in processes:
        process.start()
    outcomes = [results.get(timeout=HANG) for _ in processes]
    for process in processes:
        process.join(timeout=HANG)
        assert process.exitcode == 0
    return outcomes


def random_text(rng: random.Random, words: int = 30) -> str:
    """A text unlike any other the generator makes (mixed Latin words and Chinese characters)."""
    parts = []
    for _ in range(words):
        if rng.random() < 0.2:
            parts.append("".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(3)))
        else:
            parts.append("".join(rng.choice(_SYLLABLES) for _ in range(rng.randrange(1, 4))))
    return " ".join(parts)


def text_variant(text: str, which: int) -> str:
    """The same text as simstore's default preset sees it (case, spacing and punctuation differ)."""
    variants = [
        text,
        text.upper(),
        "  " + text.replace(" ", " , ") + " !!!",
        "« " + text.title() + " »",
    ]
    return variants[which % len(variants)]


@dataclass(frozen=True)
class SoakItem:
    """One add of a soak worker: a fingerprint or a text, at a time of the workload's span."""

    key: str
    cluster: int
    at: datetime
    fingerprint: int | None = None
    text: str | None = None


@dataclass
class SoakPlan:
    """Clusters of near-duplicates spread over processes and over ``span``; singletons between.

    Every cluster has one member per process, all within 2 bits of each other and added at one
    time, so exactly one of them must be kept while its rows are inside the window. A few clusters
    use one key in every process (the same key raced in from everywhere).
    """

    per_process: list[list[SoakItem]]
    span: timedelta
    keep: timedelta

    @property
    def end(self) -> datetime:
        return START + self.span

    @property
    def window_start(self) -> datetime:
        return self.end - self.keep

    def items(self) -> Iterator[SoakItem]:
        for items in self.per_process:
            yield from items


def soak_plan(processes: int, adds: int, seed: int) -> SoakPlan:
    rng = random.Random(seed)
    span, keep = timedelta(hours=6), timedelta(hours=4)
    clusters = round(0.4 * adds)  # 40% of the adds in clusters of `processes`: ~30% duplicates
    per_process: list[list[SoakItem]] = [[] for _ in range(processes)]

    def moment() -> datetime:
        return START + timedelta(microseconds=rng.randrange(int(span / timedelta(microseconds=1))))

    for cluster in range(clusters):
        at = moment()
        kind = rng.random()
        if kind < 0.1:
            text = random_text(rng)
            for process in range(processes):
                key = f"t{cluster}-p{process}"
                item = SoakItem(key, cluster, at, text=text_variant(text, process))
                per_process[process].append(item)
            continue
        base = rng.getrandbits(64)
        for process in range(processes):
            value = base ^ (1 << rng.randrange(64)) if rng.random() < 0.7 else base
            key = f"c{cluster}-p{process}"
            if kind > 0.98:  # one key from every process, one fingerprint
                key, value = f"shared{cluster}", base
            per_process[process].append(SoakItem(key, cluster, at, fingerprint=value))
    singleton = clusters
    for process in range(processes):
        mine = per_process[process]
        for index in range(adds - clusters):
            key = f"s{index}-p{process}"
            if rng.random() < 0.05:
                item = SoakItem(key, singleton, moment(), text=random_text(rng))
            else:
                item = SoakItem(key, singleton, moment(), fingerprint=rng.getrandbits(64))
            # singletons go anywhere; cluster members keep their (shared) order, so the processes
            # reach a cluster at about the same moment and race for it
            mine.insert(rng.randrange(len(mine) + 1), item)
            singleton += 1
    return SoakPlan(per_process, span, keep)


# --- soak child processes ------------------------------------------------------------------------


class _Retries(logging.Handler):
    """Counts the insert races that ``SimStore.add`` retried (it logs each at DEBUG)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("integrity error"):
            self.count += 1


@dataclass
class SoakReport:
    decisions: list[tuple[str, bool, str | None]] = field(default_factory=list)
    queries: list[tuple[str, list[str]]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)  # seconds per single add
    started: float = 0.0
    finished: float = 0.0
    retries: int = 0
    error: str | None = None


def _payload(item: SoakItem) -> dict[str, Any]:
    data: dict[str, Any] = {"key": item.key, "at": item.at}
    if item.text is not None:
        data["text"] = item.text
    else:
        data["fingerprint"] = item.fingerprint
    return data


def soak_worker(
    url: str, namespace: str, keep: timedelta, items: Sequence[SoakItem], barrier: Any, out: Any
) -> None:
    """Adds ``items`` one by one, with an ``add_many`` of 20 now and then and a query every tenth.

    Puts one SoakReport on ``out``; an unexpected exception is reported, never left to hang the
    test.
    """
    report = SoakReport()
    retries = _Retries()
    log = logging.getLogger("simstore")
    log.setLevel(logging.DEBUG)
    log.addHandler(retries)
    try:
        store = SimStore(url, namespace=namespace, keep=keep)
        barrier.wait()
        report.started = time.time()
        position = 0
        while position < len(items):
            if position % 97 == 50:
                chunk = items[position : position + 20]
                for decision in store.add_many([_payload(item) for item in chunk]):
                    match = decision.duplicate_of
                    report.decisions.append(
                        (decision.key, decision.inserted, match.key if match else None)
                    )
                position += len(chunk)
                continue
            item = items[position]
            began = time.perf_counter()
            decision = store.add(item.text, key=item.key, fingerprint=item.fingerprint, at=item.at)
            report.latencies.append(time.perf_counter() - began)
            match = decision.duplicate_of
            report.decisions.append((item.key, decision.inserted, match.key if match else None))
            if position % 10 == 0:
                found = store.query(item.text, fingerprint=item.fingerprint, now=item.at)
                report.queries.append((item.key, [m.key for m in found]))
            position += 1
        report.finished = time.time()
        store.close()
    except BaseException:
        report.error = traceback.format_exc()
        barrier.abort()
    finally:
        report.retries = retries.count
        out.put(report)


@dataclass
class PurgeReport:
    passes: int = 0
    deleted: int = 0
    error: str | None = None


def soak_purger(
    url: str, namespace: str, keep: timedelta, now: datetime, barrier: Any, stop: Any, out: Any
) -> None:
    """Purges the namespace (as of ``now``) again and again until ``stop`` is set."""
    report = PurgeReport()
    try:
        store = SimStore(url, namespace=namespace, keep=keep)
        barrier.wait()
        while not stop.is_set():
            report.deleted += store.purge(now=now)
            report.passes += 1
            stop.wait(0.05)
        store.close()
    except BaseException:
        report.error = traceback.format_exc()
    finally:
        out.put(report)


# --- child processes run as commands -------------------------------------------------------------


def _add_many(url: str, namespace: str, count: str, batch: str, seed: str) -> None:
    """Print ``committed N`` after every batch that add_many committed."""
    store = SimStore(url, namespace=namespace)
    size = int(batch)
    pairs = fingerprint_items(int(count), int(seed))
    items = [{"key": key, "fingerprint": value} for key, value in pairs]
    for done, _decision in enumerate(store.add_many(items, batch_size=size, at=START), start=1):
        if done % size == 0:
            print(f"committed {done}", flush=True)
    print("finished", flush=True)


def _purge(url: str, namespace: str, now: str, keep: str, rows: str) -> None:
    """Purge with small batches (many transactions), so that a kill lands in the middle."""
    from simstore.storage import maintenance

    maintenance.PURGE_BATCH_ROWS = int(rows)
    store = SimStore(url, namespace=namespace)
    print("purging", flush=True)
    deleted = store.purge(now=datetime.fromisoformat(now), keep=keep)
    print(f"deleted {deleted}", flush=True)


def _readonly(url: str) -> None:
    """Open, query and add on ``url``; print what each step did as JSON (for a read-only file)."""
    outcome: dict[str, Any] = {"uid": os.geteuid()}

    def attempt(name: str, step: Any) -> Any:
        try:
            result = step()
        except Exception as error:
            names = [cls.__name__ for cls in type(error).__mro__]
            outcome[name] = {"ok": False, "types": names, "message": str(error)}
            return None
        outcome[name] = {"ok": True}
        return result

    store = attempt("open", lambda: SimStore(url))
    if store is not None:
        attempt("query", lambda: store.query(fingerprint=1))
        attempt("add", lambda: store.add(key="new", fingerprint=12345))
    print(json.dumps(outcome))


def _readonly_twice(url: str, key: str) -> None:
    """Open ``url``, print whether ``key`` is there (JSON), wait for a line on stdin, print it
    again: what a store opened earlier sees of another process's writes."""
    with SimStore(url) as store:
        for moment in ("before", "after"):
            if moment == "after":
                sys.stdin.readline()
            print(json.dumps({moment: store.get(key) is not None}), flush=True)


def _upgrade_killed(url: str, kill_at: str) -> None:
    """``migrate.upgrade(url)`` that sends itself SIGKILL just before its ``kill_at``-th SQL
    statement (counted from 1 by SQLAlchemy's ``before_cursor_execute``); ``0`` never kills and
    prints one JSON line per statement: its number, the alembic step running it, its SQL. The
    same code on the same rows sends the same statements, so a number names one point."""
    import signal

    from simstore.storage import migrate
    from simstore.storage.db import create_engine_for

    step = {"name": "start"}

    class _Steps(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            found = re.match(r"Running upgrade \S* ?-> (\w+)", record.getMessage())
            if found:
                step["name"] = found.group(1)

    alembic_log = logging.getLogger("alembic.runtime.migration")
    alembic_log.addHandler(_Steps())
    alembic_log.setLevel(logging.INFO)
    engine = create_engine_for(url)
    count = {"n": 0}
    stop = int(kill_at)

    @sa.event.listens_for(engine, "before_cursor_execute")
    def _count(*args: Any) -> None:
        count["n"] += 1
        if count["n"] == stop:
            os.kill(os.getpid(), signal.SIGKILL)
        if stop == 0:
            sql = " ".join(str(args[2]).split())[:120]
            print(json.dumps({"n": count["n"], "step": step["name"], "sql": sql}), flush=True)

    migrate.upgrade(engine)
    engine.dispose()


def _cli_after_go(*argv: str) -> None:
    """Print ``ready``, wait for a line on stdin, then run ``simstore *argv`` (its exit code)."""
    from simstore.cli import main

    print("ready", flush=True)
    sys.stdin.readline()
    main(list(argv))


COMMANDS: dict[str, Callable[..., None]] = {
    "add-many": _add_many,
    "purge": _purge,
    "readonly": _readonly,
    "readonly-twice": _readonly_twice,
    "upgrade-killed": _upgrade_killed,
    "cli-after-go": _cli_after_go,
}


def command(name: str, *args: str) -> list[str]:
    """The argv that runs one of COMMANDS in a child Python."""
    return [sys.executable, "-m", "tests._workers", name, *args]


if __name__ == "__main__":
    COMMANDS[sys.argv[1]](*sys.argv[2:])
