"""The store's memory of boilerplate in ``simstore_segments``, on every dialect: the decisions of
``simstore.batch`` (no database), counts that follow the texts added, the keep window, purge and
drop."""

from __future__ import annotations

import zlib
from collections import Counter
from datetime import datetime, timedelta, timezone

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from simstore.policy import batch
from simstore.policy.policies import MinHashVerification
from simstore.storage import namespaces
from simstore.storage.schema import fingerprints, segments
from simstore.text.edges import MARK, segment_key
from tests.conftest import StoreFactory
from tests.policy.test_boilerplate import FOOTER, MESSAGES

POLICY = MinHashVerification(boilerplate_texts=3)
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
FOOTER_KEY = segment_key(POLICY.normalise(FOOTER.split("\n")[0]))


def _texts() -> list[str]:
    under = [message + "\n\n" + FOOTER for message in MESSAGES[:6]]
    # copies: bare, under the footer again, edited under it; then messages alone
    return [*under, MESSAGES[4], MESSAGES[5] + "\n\n" + FOOTER, MESSAGES[0], *MESSAGES[6:]]


def _counts(engine: Engine, ns_id: int) -> dict[int, int]:
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
    # independent count (lines keyed by the policy's own normalisation, which is not what
    # is tested here): each footer line is in every text that carries the footer, kept or
    # not; a message's line in the texts of several lines that hold it (the bare copies and
    # the lone messages have one line, and count nothing)
    lines: Counter[str] = Counter()
    for text in texts:
        if "\n" in text:
            lines.update({line for line in text.split("\n") if line})
    expected_counts = {segment_key(POLICY.normalise(line)): n for line, n in lines.items()}
    assert _counts(engine, ns_id) == expected_counts


def test_add_many_decides_and_counts_as_the_adds_do(
    make_store: StoreFactory, engine: Engine
) -> None:
    texts = _texts()
    expected = [(v.kept, v.duplicate_of) for v in batch.dedup(texts, policy=POLICY)]
    with make_store(policy=POLICY) as store:
        decided = list(store.add_many([(str(i), t) for i, t in enumerate(texts)], at=T0))
        assert [(d.inserted, d.recorded_as) for d in decided] == expected
        ns_id = store.scope.ns_id
        before = _counts(engine, ns_id)
        # a key added again replays its decision and counts nothing
        again = store.add(texts[1], key="1", at=T0)
        assert again.replayed and _counts(engine, ns_id) == before
        # a query sees the memory and counts nothing
        found = store.query(MESSAGES[5], now=T0)
        assert [match.key for match in found] == ["5"]
        assert _counts(engine, ns_id) == before


def test_counts_outside_the_keep_window_do_not_count_and_purge_drops_them(
    make_store: StoreFactory, engine: Engine
) -> None:
    with make_store(policy=POLICY, keep="2h") as store:
        for i, message in enumerate(MESSAGES[:4]):
            store.add(message + "\n\n" + FOOTER, key=f"old{i}", at=T0)
        later = T0 + timedelta(hours=5)
        # five hours on, the footer's four texts are outside the window: not boilerplate, and
        # a copy under it of a message kept alone is not found (its message is half its text)
        store.add(MESSAGES[7], key="lone", at=later)
        assert store.add(MESSAGES[7] + "\n\n" + FOOTER, key="copy", at=later).inserted
        assert _counts(engine, store.scope.ns_id)[FOOTER_KEY] == 5
        store.purge(now=later)
        assert _counts(engine, store.scope.ns_id)[FOOTER_KEY] == 1


def test_a_dropped_namespace_leaves_no_counts(make_store: StoreFactory, engine: Engine) -> None:
    with make_store(policy=POLICY) as store:
        store.add(MESSAGES[0] + "\n" + FOOTER, key="a", at=T0)
        ns_id = store.scope.ns_id
        assert _counts(engine, ns_id)
        namespaces.drop(store.scope)
    assert _counts(engine, ns_id) == {}


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
