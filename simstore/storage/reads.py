"""What the facade reads of one namespace outside a decision: a kept text, a kept row as the
item it stands for (``SimStore.near_misses``, the report's refused pairs) and the counts of
``SimStore.stats``.

Each function takes the namespace's ``Scope`` (or a connection and the scope, where the caller
reads more in the same connection) and checks that the namespace still exists, as a read of the
facade does.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from simstore.policy._base import Whole
from simstore.policy.decide import as_kept
from simstore.policy.policies import Item, Kept
from simstore.results import Stats
from simstore.storage import expiry
from simstore.storage.locking import require_namespace
from simstore.storage.schema import decisions, fingerprints, kept_text_of, stored_text_of
from simstore.storage.scope import Scope
from simstore.text import minhash
from simstore.text.edges import unmarked
from simstore.text.encoding import from_signed


class KeptRow(NamedTuple):
    """A kept row as the planned item it stands for, with its row id and time."""

    id: int  # rows are numbered in the order they were written
    item: Item
    added_at: datetime

    def as_kept(self) -> Kept:
        """The row as a candidate of a later text (``Policy.judge``'s ``kept``)."""
        return as_kept(self.item, self.added_at)


def kept_text(scope: Scope, key: str) -> str | None:
    """The normalised text kept for ``key`` (kept short texts only; None otherwise)."""
    with scope.connections.reading() as conn:
        row = conn.execute(
            sa.select(fingerprints.c.text, fingerprints.c.packed_text).where(
                fingerprints.c.key == key, fingerprints.c.ns_id == scope.ns_id
            )
        ).first()
        require_namespace(conn, scope.ns_id, scope.namespace)
    return None if row is None else kept_text_of(row.text, row.packed_text)


def kept_row(conn: Connection, scope: Scope, key: str) -> KeptRow | None:
    """Kept ``key`` as the planned item it stands for (its fingerprint, kept text, signature and
    band keys; radius the store's unless the policy says otherwise: ``Policy.plan_kept``), None
    when it is not a kept key. The namespace is checked."""
    row = conn.execute(
        sa.select(
            fingerprints.c.id,
            fingerprints.c.fp,
            fingerprints.c.text,
            fingerprints.c.packed_text,
            fingerprints.c.signature,
            fingerprints.c.added_at,
        ).where(fingerprints.c.ns_id == scope.ns_id, fingerprints.c.key == key)
    ).first()
    require_namespace(conn, scope.ns_id, scope.namespace)
    if row is None:
        return None
    stored = stored_text_of(row.text, row.packed_text)
    text, whole, common = (None, None, frozenset[int]()) if stored is None else unmarked(stored)
    item = Item(key, from_signed(int(row.fp)), None, scope.max_distance, text=text, planned=True)
    scope.policy.plan_kept(item, scope.max_distance)
    if row.signature is not None:
        item.signature = bytes(row.signature)
        item.band_keys = minhash.stored_band_keys([item.signature], scope.policy.minhash_bands)[0]
    if whole is not None:  # (lines set aside when it was added: judged as it was decided)
        item.whole, item.boilerplate = Whole(whole, item.band_keys), common
    return KeptRow(int(row.id), item, row.added_at)


def stats(scope: Scope) -> Stats:
    """Counts and time span of the namespace."""
    with scope.connections.reading() as conn:
        kept, oldest, newest, parts = conn.execute(
            sa.select(
                sa.func.count(),
                sa.func.min(fingerprints.c.added_at),
                sa.func.max(fingerprints.c.added_at),
                sa.func.count(sa.distinct(fingerprints.c.part)),
            ).where(fingerprints.c.ns_id == scope.ns_id)
        ).one()
        logged, duplicates = conn.execute(
            sa.select(
                sa.func.count(),
                sa.func.coalesce(sa.func.sum(sa.case((decisions.c.inserted, 0), else_=1)), 0),
            ).where(decisions.c.ns_id == scope.ns_id)
        ).one()
        require_namespace(conn, scope.ns_id, scope.namespace)
        cap = expiry.max_kept_of(conn, scope.ns_id)
    return Stats(
        scope.namespace,
        scope.preset.label,
        int(kept),
        int(kept) + int(logged),  # a kept row is its own decision's record
        int(duplicates),
        oldest,
        newest,
        int(parts),
        cap,
    )


def kept_texts(scope: Scope, limit: int) -> list[tuple[str, str]]:
    """The latest ``limit`` kept rows that keep their normalised text (short texts), as
    (key, text) in the order they were kept. The namespace is checked."""
    with scope.connections.reading() as conn:
        rows = conn.execute(
            sa.select(fingerprints.c.key, fingerprints.c.text, fingerprints.c.packed_text)
            .where(
                fingerprints.c.ns_id == scope.ns_id,
                sa.or_(fingerprints.c.text.is_not(None), fingerprints.c.packed_text.is_not(None)),
            )
            .order_by(fingerprints.c.id.desc())
            .limit(limit)
        ).all()
        require_namespace(conn, scope.ns_id, scope.namespace)
    texts: list[tuple[str, str]] = []
    for row in reversed(rows):
        text = kept_text_of(row.text, row.packed_text)
        if text:
            texts.append((str(row.key), text))
    return texts
