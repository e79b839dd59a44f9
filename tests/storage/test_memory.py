"""The store's memory of boilerplate in ``simstore_segments``, on every dialect: the decisions of
``simstore.batch`` (no database), counts that follow the texts added, the keep window, purge and
drop."""

from __future__ import annotations

import uuid
import zlib
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

from simstore.errors import InvalidInput
from simstore.io import handover
from simstore.io.handover import LoadRow
from simstore.policy import batch
from simstore.policy.boilerplate import line_keys, stored_text
from simstore.policy.policies import MinHashVerification
from simstore.storage import memory, namespaces
from simstore.storage.retention import partition_of, utc_naive
from simstore.storage.schema import fingerprints, minhash_keys, segments
from simstore.store import SimStore
from simstore.text.edges import MARK, segment_key
from simstore.text.encoding import to_signed
from tests.conftest import StoreFactory, _fresh_database, need_module
from tests.policy.test_boilerplate import FOOTER, MESSAGES

POLICY = MinHashVerification(boilerplate_texts=3)
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
FOOTER_KEY = segment_key(POLICY.normalise(FOOTER.split("\n")[0]))


def _texts() -> list[str]:
    under = [message + "\n\n" + FOOTER for message in MESSAGES[:6]]
    # copies: bare, under the footer again, edited under it; then messages alone
    return [*under, MESSAGES[4], MESSAGES[5] + "\n\n" + FOOTER, MESSAGES[0], *MESSAGES[6:]]


def counted_lines(engine: Engine, ns_id: int) -> dict[int, int]:
    """The namespace's counts per line, over every partition."""
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(segments.c.segment, sa.func.sum(segments.c.texts))
            .where(segments.c.ns_id == ns_id)
            .group_by(segments.c.segment)
        ).all()
    return {int(key): int(texts) for key, texts in rows}


def test_adds_decide_as_the_batch_does_and_count_every_text_added(
    make_store: StoreFactory, engine: Engine
) -> None:
    texts = _texts()
    expected = [(v.kept, v.duplicate_of) for v in batch.dedup(texts, policy=POLICY)]
    assert (False, "4") in expected  # the bare copy is found: the memory is at work
    with make_store(policy=POLICY) as store:
        decided = [store.add(text, key=str(i), at=T0) for i, text in enumerate(texts)]
        ns_id = store.scope.ns_id
    assert [(d.inserted, d.recorded_as) for d in decided] == expected
    assert counted_lines(engine, ns_id) == independent_counts(texts)


def independent_counts(texts: list[str]) -> dict[int, int]:
    """Independent count (lines keyed by the policy's own normalisation, which is not what is
    tested here): each footer line is in every text that carries the footer, kept or not; a
    message's line in the texts of several lines that hold it (the bare copies and the lone
    messages have one line, and count nothing)."""
    lines: Counter[str] = Counter()
    for text in texts:
        if "\n" in text:
            lines.update({line for line in text.split("\n") if line})
    return {segment_key(POLICY.normalise(line)): n for line, n in lines.items()}


def test_add_many_decides_and_counts_as_the_adds_do(
    make_store: StoreFactory, engine: Engine
) -> None:
    texts = _texts()
    expected = [(v.kept, v.duplicate_of) for v in batch.dedup(texts, policy=POLICY)]
    with make_store(policy=POLICY) as store:
        decided = list(store.add_many([(str(i), t) for i, t in enumerate(texts)], at=T0))
        assert [(d.inserted, d.recorded_as) for d in decided] == expected
        ns_id = store.scope.ns_id
        before = counted_lines(engine, ns_id)
        # a key added again replays its decision and counts nothing
        again = store.add(texts[1], key="1", at=T0)
        assert again.replayed and counted_lines(engine, ns_id) == before
        # a query sees the memory and counts nothing
        found = store.query(MESSAGES[5], now=T0)
        assert [match.key for match in found] == ["5"]
        assert counted_lines(engine, ns_id) == before


def _four_under_the_footer(store: SimStore) -> None:
    """Four messages under one footer, added at ``T0`` as ``old0``..``old3``: the footer is
    boilerplate for the texts after them."""
    for i, message in enumerate(MESSAGES[:4]):
        store.add(message + "\n\n" + FOOTER, key=f"old{i}", at=T0)


def test_counts_outside_the_keep_window_do_not_count_and_purge_drops_them(
    make_store: StoreFactory, engine: Engine
) -> None:
    with make_store(policy=POLICY, keep="2h") as store:
        _four_under_the_footer(store)
        later = T0 + timedelta(hours=5)
        # five hours on, the footer's four texts are outside the window: not boilerplate, and
        # a copy under it of a message kept alone is not found (its message is half its text)
        store.add(MESSAGES[7], key="lone", at=later)
        assert store.add(MESSAGES[7] + "\n\n" + FOOTER, key="copy", at=later).inserted
        assert counted_lines(engine, store.scope.ns_id)[FOOTER_KEY] == 5
        store.purge(now=later)
        assert counted_lines(engine, store.scope.ns_id)[FOOTER_KEY] == 1


def test_a_dropped_namespace_leaves_no_counts(make_store: StoreFactory, engine: Engine) -> None:
    with make_store(policy=POLICY) as store:
        store.add(MESSAGES[0] + "\n" + FOOTER, key="a", at=T0)
        ns_id = store.scope.ns_id
        assert counted_lines(engine, ns_id)
        namespaces.drop(store.scope)
    assert counted_lines(engine, ns_id) == {}


def test_a_kept_text_keeps_its_whole_text_with_the_lines_set_aside_marked(
    make_store: StoreFactory, engine: Engine
) -> None:
    with make_store(policy=POLICY) as store:
        for i, message in enumerate(MESSAGES[:4]):
            store.add(message + "\n" + FOOTER, key=str(i), at=T0)
        whole = (
            POLICY.normalise(MESSAGES[3])
            + "\n"
            + "\n".join(POLICY.normalise(line) for line in FOOTER.split("\n"))
        )
        # what a user reads is the whole normalised text (the footer was set aside for "3")
        assert store.kept_text("3") == whole
        with engine.connect() as conn:
            packed = conn.execute(
                sa.select(fingerprints.c.packed_text).where(
                    fingerprints.c.key == "3", fingerprints.c.ns_id == store.scope.ns_id
                )
            ).scalar_one()
        assert zlib.decompress(packed).decode().count(MARK) == 2
        # and it is found by what it was compared by
        assert store.add(MESSAGES[3], key="bare", at=T0).recorded_as == "3"


def _gateway_footer(release: str) -> str:
    return (
        f"Sent through release {release} of the mail gateway.\n"
        "Unsubscribe from these notices at any time."
    )


def _releases() -> list[str]:
    """Four messages under release 4.2's footer, the fourth again under 4.3's, then under 4.2's
    (a copy)."""
    texts = [message + "\n" + _gateway_footer("4.2") for message in MESSAGES[:4]]
    return texts + [MESSAGES[3] + "\n" + _gateway_footer(release) for release in ("4.3", "4.2")]


def test_a_version_in_a_kept_texts_footer_set_aside_still_tells_a_new_release_apart(
    make_store: StoreFactory,
) -> None:
    # A footer four texts carried is set aside for the kept text, which is compared without it;
    # its whole text (the footer's release 4.2) still tells it from the same message under
    # release 4.3, whose first footer line nothing counted. The reference is the in-memory
    # decision (batch.dedup), which reads no stored row; the store must read the kept row's
    # whole text back (_finder._as_kept) to decide the same.
    texts = _releases()
    expected = [(v.kept, v.duplicate_of) for v in batch.dedup(texts, policy=POLICY)]
    assert expected[4:] == [(True, None), (False, "3")]
    with make_store(policy=POLICY) as store:
        decided = [store.add(text, key=str(i), at=T0) for i, text in enumerate(texts)]
        assert [(d.inserted, d.recorded_as) for d in decided] == expected


def test_near_misses_of_a_text_kept_with_lines_set_aside_judge_its_whole_text(
    make_store: StoreFactory,
) -> None:
    # The fourth message under release 4.3 was kept (the reference: batch.dedup, no database)
    # although what it was compared by, its footer's counted line set aside, is the kept fourth
    # message's: their whole texts differ in the release. Explained afterwards, the kept row is
    # read back with its whole text, so the candidate it was kept apart from is refused as a
    # look-alike for that number, as it was decided, not matched.
    texts = _releases()
    assert batch.dedup(texts, policy=POLICY)[4].kept
    with make_store(policy=POLICY) as store:
        for i, text in enumerate(texts):
            store.add(text, key=str(i), at=T0)
        judged = {j.key: j for j in store.near_misses("4")}
    assert not any(j.matched for j in judged.values()), judged
    assert judged["3"].reason == "look-alike: '4.2' -> '4.3' (number)"


def _load_rows(texts: list[str]) -> list[LoadRow]:
    """``batch.dedup``'s verdicts with the items a store keeps (after the memory set lines
    aside) and each text's line keys, as a hand-over carries them."""
    items = batch.sign(texts, policy=POLICY)
    batch.remember_boilerplate(items, policy=POLICY)
    verdicts = batch.dedup(texts, policy=POLICY)
    return [
        LoadRow(
            *(v.key, v.kept, item.fingerprint, stored_text(item), item.signature, item.band_keys),
            *(v.duplicate_of, v.distance, v.measure, v.score, line_keys(item)),
        )
        for item, v in zip(items, verdicts, strict=True)
    ]


def test_a_loaded_batch_result_counts_its_lines_as_adding_the_texts_would(
    make_store: StoreFactory, engine: Engine
) -> None:
    texts = _texts()
    rows = _load_rows(texts)
    # a kept text with lines set aside is found by its whole text's band keys too
    assert any(row.kept and len(row.band_keys or ()) > 24 for row in rows)
    probes = [
        (MESSAGES[7] + "\n\n" + FOOTER, "under"),  # found by its message with the counts
        (MESSAGES[1], "bare"),
        (MESSAGES[8] + "\nsee you on Thursday, the team", "other"),
    ]
    with make_store(policy=POLICY, namespace="loaded") as loaded:
        report = loaded.load(rows, at=T0)
        assert report.kept + report.duplicates == len(texts)
        ns_id = loaded.scope.ns_id
        assert counted_lines(engine, ns_id) == independent_counts(texts)
        assert loaded.load(rows, at=T0).skipped == len(texts)  # skipped rows count nothing
        assert counted_lines(engine, ns_id) == independent_counts(texts)
        got = [loaded.add(text, key=key, at=T0) for text, key in probes]
    with make_store(policy=POLICY, namespace="added") as added:
        list(added.add_many([(str(i), t) for i, t in enumerate(texts)], at=T0))
        wanted = [added.add(text, key=key, at=T0) for text, key in probes]
    assert [(d.inserted, d.recorded_as) for d in got] == [
        (d.inserted, d.recorded_as) for d in wanted
    ]
    assert got[0].recorded_as == "10"  # MESSAGES[7], kept alone


def _band_keys_by_key(engine: Engine, ns_id: int) -> dict[str, set[int]]:
    """Each kept row's band keys as the database holds them (in the row on PostgreSQL)."""
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            rows = conn.execute(
                sa.select(fingerprints.c.key, fingerprints.c.band_keys).where(
                    fingerprints.c.ns_id == ns_id
                )
            ).all()
            return {key: set(keys or ()) for key, keys in rows}
        joined = sa.select(fingerprints.c.key, minhash_keys.c.band_key).join(
            minhash_keys, minhash_keys.c.fp_id == fingerprints.c.id
        )
        found: dict[str, set[int]] = {}
        for key, band_key in conn.execute(joined.where(fingerprints.c.ns_id == ns_id)):
            found.setdefault(key, set()).add(int(band_key))
        return found


def test_a_hand_over_without_band_keys_gets_those_an_add_makes(
    make_store: StoreFactory, engine: Engine
) -> None:
    # a text with lines set aside is found by its whole text's keys too: a hand-over row that
    # names no band keys gets them from its stored text, as its add would have made them
    rows = _load_rows(_texts())
    assert any(row.kept and len(row.band_keys or ()) > 24 for row in rows)
    with make_store(policy=POLICY, namespace="given") as given:
        given.load(rows, at=T0)
        wanted = _band_keys_by_key(engine, given.scope.ns_id)
    with make_store(policy=POLICY, namespace="bare") as bare:
        bare.load([row._replace(band_keys=None) for row in rows], at=T0)
        assert _band_keys_by_key(engine, bare.scope.ns_id) == wanted


def test_a_hand_over_without_line_keys_loads_and_counts_nothing(
    make_store: StoreFactory, engine: Engine
) -> None:
    rows = _load_rows(_texts())
    bare = [row._replace(segments=None) for row in rows if not row.kept or not row.segments]
    with make_store(policy=POLICY, namespace="older") as older:
        assert older.load(bare, at=T0).kept == sum(row.kept for row in bare)
        assert counted_lines(engine, older.scope.ns_id) == {}
    # band keys beyond the signature's are a text's with lines set aside: one of several lines
    widened = next(r for r in rows if r.kept and r.segments and len(r.band_keys or ()) > 24)
    with pytest.raises(InvalidInput, match="band_keys are not its signature's"):
        handover.check_rows([widened._replace(segments=())])
    with pytest.raises(InvalidInput, match="segments"):
        handover.check_rows([{**widened._asdict(), "segments": ["footer"]}])
    # a store without the memory counts no lines
    forgetting = MinHashVerification(boilerplate_texts=None)
    with make_store(namespace="forgets", policy=forgetting) as forgets:
        forgets.load([widened], at=T0)
        assert counted_lines(engine, forgets.scope.ns_id) == {}


def test_a_hand_over_file_carries_line_keys_and_one_without_them_still_reads(
    tmp_path: Path, make_store: StoreFactory, engine: Engine
) -> None:
    pq = need_module("pyarrow.parquet", "parquet")
    pa = need_module("pyarrow", "parquet")

    texts = _texts()
    rows = _load_rows(texts)
    columns = {
        "key": [r.key for r in rows], "kept": [r.kept for r in rows],
        "duplicate_of": [r.duplicate_of for r in rows], "distance": [r.distance for r in rows],
        "measure": [r.measure for r in rows], "score": [r.score for r in rows],
        "order": list(range(len(rows))),
        "fingerprint": [to_signed(r.fingerprint) for r in rows], "text": [r.text for r in rows],
        "signature": [r.signature for r in rows],
        "band_keys": [list(r.band_keys or ()) for r in rows],
        "segments": [list(r.segments or ()) for r in rows],
    }  # fmt: skip
    assert set(columns) == set(handover.HANDOVER_COLUMNS) - {"made_with"}
    table = pa.table(columns)
    pq.write_table(table, tmp_path / "with.parquet")
    read = list(handover.read_parquet(tmp_path / "with.parquet"))
    assert [tuple(row.segments or ()) for row in read] == [row.segments for row in rows]
    with make_store(policy=POLICY, namespace="file") as loaded:
        loaded.load(read, at=T0)
        assert counted_lines(engine, loaded.scope.ns_id) == independent_counts(texts)
    pq.write_table(table.drop_columns(["segments"]), tmp_path / "older.parquet")
    assert {row.segments for row in handover.read_parquet(tmp_path / "older.parquet")} == {None}


def test_purge_and_remove_leave_no_band_keys_of_texts_with_lines_set_aside(
    make_store: StoreFactory, engine: Engine
) -> None:
    # such a text's row holds its whole text's band keys beside its signature's; both go
    texts = [message + "\n" + FOOTER for message in MESSAGES]
    with make_store(policy=POLICY, keep="1h") as store:
        list(store.add_many([(str(i), text) for i, text in enumerate(texts)], at=T0))
        ns_id = store.scope.ns_id
        assert MARK in zlib.decompress(_packed(engine, ns_id, "9")).decode()
        assert store.remove("9")
        store.purge(now=T0 + timedelta(days=1))
        with engine.connect() as conn:
            left = conn.execute(
                sa.select(sa.func.count()).where(minhash_keys.c.ns_id == ns_id)
            ).scalar_one()
        assert left == 0


def _packed(engine: Engine, ns_id: int, key: str) -> bytes:
    with engine.connect() as conn:
        return bytes(
            conn.execute(
                sa.select(fingerprints.c.packed_text).where(
                    fingerprints.c.key == key, fingerprints.c.ns_id == ns_id
                )
            ).scalar_one()
        )


def test_the_window_counts_the_texts_of_its_first_partition(
    make_store: StoreFactory, engine: Engine
) -> None:
    # hour partitions: two hours on, the window starts in the footer's texts' partition (they
    # count, and the copy is found by its message); three hours on, it starts after it
    with make_store(policy=POLICY, keep="2h") as store:
        _four_under_the_footer(store)
        at_edge, past = T0 + timedelta(hours=2), T0 + timedelta(hours=3)
        store.add(MESSAGES[7], key="lone", at=at_edge)
        copy = MESSAGES[7] + "\n\n" + FOOTER
        assert [match.key for match in store.query(copy, now=at_edge)] == ["lone"]
        assert [match.key for match in store.query(copy, now=past)] == []
        # what a batch decided elsewhere starts from (simstore.spark): the same window
        scope = store.scope
        under = [message + "\n\n" + FOOTER for message in MESSAGES[:4]]
        assert memory.window_counts(scope, utc_naive(at_edge)) == independent_counts(under)
        assert memory.window_counts(scope, utc_naive(past)) == {}  # queries count nothing


def test_read_counts_reads_the_lines_asked_for_only(
    make_store: StoreFactory, engine: Engine
) -> None:
    with make_store(policy=POLICY) as store:
        for i, message in enumerate(MESSAGES[:3]):
            store.add(message + "\n" + FOOTER, key=str(i), at=T0)
        ns_id = store.scope.ns_id
    message_key = segment_key(POLICY.normalise(MESSAGES[0]))
    with engine.connect() as conn:
        assert memory.read_counts(conn, ns_id, [FOOTER_KEY], None) == {FOOTER_KEY: 3}
        assert memory.read_counts(conn, ns_id, {message_key, 12345}, None) == {message_key: 1}


def test_purge_counts_deletes_the_namespace_s_partitions_before_the_cutoff_only(
    make_store: StoreFactory, engine: Engine
) -> None:
    text = MESSAGES[0] + "\n" + FOOTER  # three lines: three rows a partition
    with make_store(policy=POLICY) as purged:
        for hours in range(3):
            purged.add(text, key=str(hours), at=T0 + timedelta(hours=hours))
        ns_id = purged.scope.ns_id
    with make_store(policy=POLICY, namespace="purge-counts-other") as other:
        other.add(text, key="0", at=T0)
        other_id = other.scope.ns_id
    cutoff = partition_of(utc_naive(T0 + timedelta(hours=2)), 3600)
    with engine.begin() as conn:
        assert memory.purge_counts(conn, ns_id, cutoff) == 6
    with engine.connect() as conn:
        left = conn.execute(
            sa.select(segments.c.ns_id, segments.c.part, sa.func.count())
            .group_by(segments.c.ns_id, segments.c.part)
            .where(segments.c.ns_id.in_([ns_id, other_id]))
        ).all()
    assert sorted(left) == sorted([(ns_id, cutoff, 3), (other_id, cutoff - 2, 3)])


def test_a_key_added_again_in_a_batch_leaves_the_texts_after_it_counted(
    make_store: StoreFactory, engine: Engine
) -> None:
    with make_store(policy=POLICY) as store:
        first = MESSAGES[0] + "\n\n" + FOOTER
        store.add(first, key="0", at=T0)
        ns_id = store.scope.ns_id
        after = [message + "\n\n" + FOOTER for message in MESSAGES[1:5]]
        pairs = [("0", first)] + [(str(i), text) for i, text in enumerate(after, start=1)]
        decided = list(store.add_many(pairs, at=T0))
        assert decided[0].replayed
        assert counted_lines(engine, ns_id) == independent_counts([first, *after])
        # the footer was boilerplate for the fifth text: it was kept as its message
        assert store.add(MESSAGES[4], key="bare", at=T0).recorded_as == "4"


def test_a_batch_s_counts_are_upserted_in_key_order_then_partition(
    make_store: StoreFactory, engine: Engine
) -> None:
    # one order for every batch (the module's docstring): adds that carry one line in several
    # partitions lock its rows alike, never in a cycle; seen in the statements sent
    with make_store(policy=POLICY) as store:
        ns_id = store.scope.ns_id
    sent: list[tuple[int, int]] = []

    def upserted(*args: Any) -> None:
        context = args[4]
        if "simstore_segments" in args[2] and context.compiled_parameters:
            values = context.compiled_parameters[0]
            rows = sum(name.startswith("segment_m") for name in values)
            sent.extend((values[f"segment_m{i}"], values[f"part_m{i}"]) for i in range(rows))

    added = Counter({(2, 5): 1, (1, 9): 1, (1, 5): 2, (3, -4): 1})
    sa.event.listen(engine, "before_cursor_execute", upserted)
    try:
        with engine.begin() as conn:
            memory.write_counts(conn, ns_id, added)
    finally:
        sa.event.remove(engine, "before_cursor_execute", upserted)
    assert sent == [(-4, 3), (5, 1), (5, 2), (9, 1)]
    assert counted_lines(engine, ns_id) == {-4: 1, 5: 3, 9: 1}


def test_counts_add_up_on_a_mariadb_url_too() -> None:
    # SQLAlchemy names the dialect "mariadb" for a mariadb:// URL ("mysql" for mysql://); the
    # session's MariaDB database, in a namespace of this test's own
    url = make_url(_fresh_database("mysql")).set(drivername="mariadb+pymysql")
    mariadb = url.render_as_string(hide_password=False)
    namespace = f"t-{uuid.uuid4().hex[:12]}"
    with SimStore(mariadb, namespace=namespace, policy=POLICY, auto_upgrade=True) as store:
        for i, message in enumerate(MESSAGES[:2]):
            store.add(message + "\n" + FOOTER, key=str(i), at=T0)
        assert store.scope.connections.dialect == "mariadb"
        texts = [message + "\n" + FOOTER for message in MESSAGES[:2]]
        with store.scope.connections.reading() as conn:
            assert memory.read_counts(conn, store.scope.ns_id, [FOOTER_KEY], None) == {
                FOOTER_KEY: 2
            }
        assert memory.window_counts(store.scope, utc_naive(T0)) == independent_counts(texts)


def test_counts_of_more_rows_than_one_upsert_holds_are_all_written(
    make_store: StoreFactory, engine: Engine
) -> None:
    with make_store(policy=POLICY) as store:
        ns_id = store.scope.ns_id
    rows = 2 * memory._UPSERT_ROWS + 1  # three statements
    added = Counter({(1 + key % 2, key): 1 + key % 3 for key in range(rows)})
    with engine.begin() as conn:
        memory.write_counts(conn, ns_id, added)
        memory.write_counts(conn, ns_id, added)  # added to those there
    assert counted_lines(engine, ns_id) == {key: 2 * n for (_part, key), n in added.items()}


def test_a_store_without_the_memory_adds_and_queries_texts_of_several_lines_uncounted(
    make_store: StoreFactory, engine: Engine
) -> None:
    forgetting = MinHashVerification(boilerplate_texts=None)
    texts = [message + "\n\n" + FOOTER for message in MESSAGES[:5]]
    with make_store(policy=forgetting) as store:
        decided = list(store.add_many([(str(i), t) for i, t in enumerate(texts)], at=T0))
        assert all(d.inserted for d in decided)
        assert store.add(texts[0], key="again", at=T0).recorded_as == "0"
        found = store.query(MESSAGES[4] + "\n\n" + FOOTER, now=T0)
        assert [match.key for match in found] == ["4"]
        assert counted_lines(engine, store.scope.ns_id) == {}


def test_queries_of_one_call_count_each_other_only_in_order(
    make_store: StoreFactory, engine: Engine
) -> None:
    # the footer is under two stored texts: a third text under it makes it boilerplate for a
    # fourth; queries decided apart count nothing, queries in order count the ones before
    with make_store(policy=POLICY) as store:
        for i, message in enumerate(MESSAGES[:2]):
            store.add(message + "\n\n" + FOOTER, key=str(i), at=T0)
        store.add(MESSAGES[7], key="lone", at=T0)
        queries = [MESSAGES[5] + "\n\n" + FOOTER, MESSAGES[7] + "\n\n" + FOOTER]
        apart = store.query_many(queries, now=T0)
        assert [[match.key for match in found] for found in apart] == [[], []]
        ordered = store.query_many(queries, now=T0, in_order=True)
        assert [[match.key for match in found] for found in ordered] == [[], ["lone"]]
        # a batch at a time, the memory of the batches before carries over (mutmut: the counts
        # not handed to the finder survived, the call above being one batch)
        assert store.query_many(queries, now=T0, in_order=True, batch_size=1) == ordered
        assert counted_lines(engine, store.scope.ns_id) == independent_counts(
            [MESSAGES[0] + "\n\n" + FOOTER, MESSAGES[1] + "\n\n" + FOOTER]
        )
