"""A fingerprint query on PostgreSQL: simstore against a plain SQL table, same run, same queries.

    python -m benchmarks pg-query --url postgresql+psycopg://USER@HOST/DB --rows 1000000

N random 64-bit fingerprints (seeded) are loaded into a new database of the server given by
``--url``: into a store (``SimStore.load``, SimHash-only namespace) and into the peer, a plain
table ``peer(id, fp, b0, b1, b2, b3)`` with four B-tree indexes ``(band, fp)`` whose query is
four band equalities ORed with ``bit_count`` of the XOR at radius 3, sent with psycopg directly
(prepared by the server after a few runs). Then ``--queries`` queries at radius 3 (half random,
half 1-3 bits from a kept fingerprint), one a call, in rotating order: simstore
``query(fingerprint=..., max_distance=3)``, the peer, and simstore's own candidate SQL sent raw
through psycopg (``near_rows``: what the store's query costs the server and the driver, without
simstore's Python around it). Every answer is checked against a numpy scan of the N values. Prints p50 /
p99 / mean of each, the ratios to the peer, and simstore's statements (round trips) a query and
an add (``--adds`` adds of new random fingerprints, against a plain INSERT into the peer).
"""

from __future__ import annotations

import random
import statistics
import time
import uuid
from collections.abc import Callable, Sequence

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from simstore.policy.policies import SimHashOnly
from simstore.storage import _prepared as prepared
from simstore.store import SimStore

from .common import cli
from .common.corpus import near
from .common.fills import load_fingerprints
from .common.measure import percentile

MASK = (1 << 64) - 1
PEER_SQL = (
    "SELECT id, fp FROM peer WHERE (b0 = %(b0)s OR b1 = %(b1)s OR b2 = %(b2)s OR b3 = %(b3)s) "
    "AND bit_count(CAST(fp # %(q)s AS bit(64))) <= 3"
)


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _bands(value: int) -> dict[str, int]:
    return {f"b{j}": (value >> (48 - 16 * j)) & 0xFFFF for j in range(4)}


def _fill_peer(engine: sa.Engine, values: np.ndarray) -> None:
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "CREATE TABLE peer (id bigserial PRIMARY KEY, fp bigint NOT NULL, b0 int NOT NULL, "
            "b1 int NOT NULL, b2 int NOT NULL, b3 int NOT NULL)"
        )
        raw = conn.connection.driver_connection
        assert raw is not None
        with (
            raw.cursor() as cursor,
            cursor.copy("COPY peer (fp, b0, b1, b2, b3) FROM STDIN") as copy,
        ):
            for value in values.tolist():
                bands = _bands(value)
                copy.write_row((_signed(value), bands["b0"], bands["b1"], bands["b2"], bands["b3"]))
        for band in range(4):
            conn.exec_driver_sql(f"CREATE INDEX peer_b{band} ON peer (b{band}, fp)")
    with engine.connect() as conn:
        conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql("VACUUM ANALYZE")


def _timed(call: Callable[[], object], samples: list[float]) -> object:
    started = time.perf_counter_ns()
    found = call()
    samples.append((time.perf_counter_ns() - started) / 1000)
    return found


def _row(name: str, samples: list[float], peer: float) -> str:
    p50, p99 = percentile(samples, 0.5), percentile(samples, 0.99)
    mean = statistics.fmean(samples)
    return f"{name:<28} {p50:>9,.0f} {p99:>9,.0f} {mean:>9,.0f}   {p50 / peer:>5.2f}x"


def main(argv: Sequence[str] | None = None) -> None:
    parser = cli.parser("pg-query", __doc__)
    parser.add_argument("--url", required=True, help="a PostgreSQL URL; a new database is made")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--adds", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="leave the database behind")
    args = parser.parse_args(argv)

    base = make_url(args.url)
    name = f"simstore_pgquery_{uuid.uuid4().hex[:8]}"
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f"CREATE DATABASE {name}")
    url = base.set(database=name).render_as_string(hide_password=False)
    engine = sa.create_engine(url)
    try:
        _run(url, engine, args)
    finally:
        engine.dispose()
        if not args.keep:
            with admin.connect() as conn:
                conn.exec_driver_sql(f"DROP DATABASE {name} WITH (FORCE)")
        admin.dispose()


def _run(url: str, engine: sa.Engine, args: object) -> None:
    rows, queries, adds, seed = (getattr(args, n) for n in ("rows", "queries", "adds", "seed"))
    rng = random.Random(seed)
    values = np.random.default_rng(seed).integers(0, 2**64, size=rows, dtype=np.uint64)
    store = SimStore(url, namespace="bench", auto_upgrade=True, policy=SimHashOnly())
    try:
        started = time.perf_counter()
        load_fingerprints(store, values)
        loaded = time.perf_counter() - started
        started = time.perf_counter()
        _fill_peer(engine, values)
        print(
            f"{rows:,} fingerprints: simstore load {loaded:,.0f} s, peer COPY + indexes "
            f"{time.perf_counter() - started:,.0f} s",
            flush=True,
        )
        asked = []
        for i in range(queries):
            if i % 2:
                asked.append(near(int(values[rng.randrange(rows)]), rng, rng.randint(1, 3)))
            else:
                asked.append(rng.getrandbits(64))
        _measure(store, engine, values, asked)
        _adds(store, engine, adds, rng)
    finally:
        store.close()


def _truth(values: np.ndarray, query: int) -> set[int]:
    """The values within radius 3 of ``query`` (a numpy popcount scan)."""
    xor = values ^ np.uint64(query)
    distance = np.zeros(len(values), dtype=np.uint8)
    for shift in range(0, 64, 8):
        distance += _POPCOUNT[((xor >> np.uint64(shift)) & np.uint64(0xFF)).astype(np.uint8)]
    return {int(v) for v in values[distance <= 3].tolist()}


_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _counter(store: SimStore) -> Callable[[], int]:
    """Statements simstore sent since the last call: its compiled ones (``prepared``) and those
    through SQLAlchemy (counted by an event on the store's engine)."""
    through = {"n": 0}

    def count(*_args: object) -> None:
        through["n"] += 1

    sa.event.listen(store.engine, "before_cursor_execute", count)
    last = {"n": 0}

    def since() -> int:
        now = prepared.statements_run.get() + through["n"]
        done, last["n"] = now - last["n"], now
        return done

    since()
    return since


def _measure(store: SimStore, engine: sa.Engine, values: np.ndarray, asked: list[int]) -> None:
    mine: list[float] = []
    peer: list[float] = []
    raw_same: list[float] = []
    exact = peer_exact = 0
    statements = 0
    sent = _counter(store)
    with engine.connect() as conn:
        raw = conn.connection.driver_connection
        assert raw is not None
        cursor = raw.cursor()
        # simstore's own statement for one query at radius 3 (one value in each of 4 bands)
        shape = tuple((band, 1) for band in range(4))
        # (a simstore without near_rows, for a before/after run: its candidate lookup, the
        # distances then counted here)
        keeps_near = hasattr(prepared, "near_rows")
        lookup = prepared.near_rows if keeps_near else prepared.candidate_lookup
        own = lookup(conn.dialect, shape, windowed=False)
        truths = [_truth(values, query) for query in asked]  # before, not between the timings
        for i, (query, truth) in enumerate(zip(asked, truths, strict=True)):
            params = {"q": _signed(query), **_bands(query)}
            own_params = {
                "ns": store.ns_id,
                "fp": params["q"],
                "radius": 3,
                **{f"v{b}_0": params[f"b{b}"] for b in range(4)},
            }

            def simstore_query(value: int = query) -> set[int]:
                return {m.fingerprint for m in store.query(fingerprint=value, max_distance=3)}

            def peer_query(values_: dict[str, int] = params) -> set[int]:
                cursor.execute(PEER_SQL, values_)
                return {int(fp) & MASK for _id, fp in cursor.fetchall()}

            def raw_query(values_: dict[str, int] = own_params) -> set[int]:
                cursor.execute(own.sql, values_)
                if not keeps_near:
                    near_ = ((int(row[1]) ^ values_["fp"]) & MASK for row in cursor.fetchall())
                    return {
                        (value ^ values_["fp"]) & MASK for value in near_ if value.bit_count() <= 3
                    }
                return {int(row[4]) & MASK for row in cursor.fetchall()}  # rows_by_id's columns

            order = [(simstore_query, mine), (peer_query, peer), (raw_query, raw_same)]
            order = order[i % 3 :] + order[: i % 3]  # each system first a third of the time
            results = {}
            for call, samples in order:
                sent()
                results[id(samples)] = _timed(call, samples)
                if samples is mine:
                    statements += sent()
            exact += results[id(mine)] == truth
            peer_exact += results[id(peer)] == truth
            assert results[id(raw_same)] == truth
        cursor.close()
    base = percentile(peer, 0.5)
    print(f"\n{len(asked):,} queries at radius 3        p50 us    p99 us   mean us   p50/peer")
    print(_row("simstore query(fingerprint)", mine, base))
    print(_row("plain SQL peer (psycopg)", peer, base))
    print(_row("simstore's SQL, raw psycopg", raw_same, base))
    print(
        f"exact: simstore {exact}/{len(asked)}, peer {peer_exact}/{len(asked)}; simstore's own "
        f"statements a query: {statements / len(asked):.2f}; its Python around the SQL: "
        f"{percentile(mine, 0.5) - percentile(raw_same, 0.5):,.0f} us at p50"
    )


def _adds(store: SimStore, engine: sa.Engine, adds: int, rng: random.Random) -> None:
    if not adds:
        return
    mine: list[float] = []
    peer: list[float] = []
    statements = 0
    sent = _counter(store)
    with engine.connect() as conn:
        raw = conn.connection.driver_connection
        assert raw is not None
        for i in range(adds):
            value = rng.getrandbits(64)
            sent()
            _timed(lambda v=value, i=i: store.add(key=f"new{i}", fingerprint=v), mine)
            statements += sent()
            params = {"q": _signed(value), **_bands(value)}

            def insert(values_: dict[str, int] = params) -> None:
                with raw.cursor() as cursor:
                    cursor.execute(
                        "INSERT INTO peer (fp, b0, b1, b2, b3) "
                        "VALUES (%(q)s, %(b0)s, %(b1)s, %(b2)s, %(b3)s)",
                        values_,
                    )
                raw.commit()

            _timed(insert, peer)
    base = percentile(peer, 0.5)
    print(f"\n{adds:,} adds (new fingerprints)     p50 us    p99 us   mean us   p50/peer")
    print(_row("simstore add(fingerprint)", mine, base))
    print(_row("plain INSERT + COMMIT", peer, base))
    print(f"simstore's own statements an add (besides COMMIT): {statements / adds:.2f}")
