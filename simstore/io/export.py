"""Reading a namespace out: its decisions, its kept rows and its clusters, streamed.

Each function yields plain dicts (JSON-ready: fingerprints as 16-hex strings, datetimes as
tz-aware UTC) from one query streamed in batches of ``BATCH_ROWS`` rows, so memory stays bounded
by a batch (``clusters``: by the largest cluster). ``recorded_duplicate_of`` reads the key a
decision names even when that key has since been removed or purged (``SimStore.get`` then has no
``Match`` to show for it).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from simstore.storage.schema import decision_log, fingerprints, kept_text_of
from simstore.storage.schema import decisions as decisions_table
from simstore.text.encoding import from_signed, to_hex
from simstore.validate import check_key

if TYPE_CHECKING:
    from simstore.store import SimStore

BATCH_ROWS = 1000
FIELDS = {
    "decisions": (
        "key", "fingerprint", "inserted", "duplicate_of", "distance", "measure", "score",
        "decided_at",
    ),
    "kept": ("key", "fingerprint", "added_at", "text"),
    "clusters": ("cluster", "size", "keys"),
}  # fmt: skip


def _utc(moment: datetime | None) -> str | None:
    return None if moment is None else moment.replace(tzinfo=timezone.utc).isoformat()


def _rows(store: SimStore, statement: sa.Select[Any]) -> Iterator[tuple[Any, ...]]:
    with store.connections.reading() as conn:
        for row in conn.execution_options(yield_per=BATCH_ROWS).execute(statement):
            yield tuple(row)


def decisions(store: SimStore) -> Iterator[dict[str, Any]]:
    """Every recorded decision of the namespace (kept rows stand for theirs), by time; at one
    moment the kept before the duplicates, each in the order they were written."""
    table = decision_log(store.ns_id)
    statement = sa.select(
        table.c.key, table.c.fp, table.c.inserted, table.c.duplicate_of, table.c.distance,
        table.c.measure, table.c.score, table.c.decided_at,
    ).order_by(table.c.decided_at, sa.desc(table.c.inserted), table.c.id)  # fmt: skip
    for key, fp, inserted, duplicate_of, distance, measure, score, decided_at in _rows(
        store, statement
    ):
        yield {
            "key": key,
            "fingerprint": to_hex(from_signed(int(fp))),
            "inserted": bool(inserted),
            "duplicate_of": duplicate_of,
            "distance": distance,
            "measure": measure,
            "score": score,
            "decided_at": _utc(decided_at),
        }


def kept(store: SimStore) -> Iterator[dict[str, Any]]:
    """Every kept row of the namespace (the normalised text only where it was kept: short texts)."""
    statement = (
        sa.select(
            fingerprints.c.key,
            fingerprints.c.fp,
            fingerprints.c.added_at,
            fingerprints.c.text,
            fingerprints.c.packed_text,
        )
        .where(fingerprints.c.ns_id == store.ns_id)
        .order_by(fingerprints.c.id)
    )
    for key, fp, added_at, text, packed in _rows(store, statement):
        yield {
            "key": key,
            "fingerprint": to_hex(from_signed(int(fp))),
            "added_at": _utc(added_at),
            "text": kept_text_of(text, packed),
        }


def clusters(store: SimStore) -> Iterator[dict[str, Any]]:
    """Each kept key with the keys judged its duplicates (clusters of two or more), by key.

    ``keys`` starts with the cluster's kept key (absent if it was removed or purged), then its
    duplicates by key.
    """
    table = decision_log(store.ns_id)
    head = sa.func.coalesce(table.c.duplicate_of, table.c.key)
    statement = sa.select(head, table.c.key, table.c.inserted).order_by(
        head, sa.desc(table.c.inserted), table.c.key
    )
    current: str | None = None
    members: list[str] = []
    for cluster, key, _inserted in _rows(store, statement):
        if cluster != current:
            if current is not None and len(members) > 1:
                yield {"cluster": current, "size": len(members), "keys": members}
            current, members = cluster, []
        members.append(key)
    if current is not None and len(members) > 1:
        yield {"cluster": current, "size": len(members), "keys": members}


def recorded_duplicate_of(store: SimStore, key: str) -> str | None:
    """The key that ``key``'s decision names as its match, as recorded (None: kept, or unknown)."""
    checked = check_key(key)
    with store.connections.reading() as conn:
        found: str | None = conn.execute(
            sa.select(decisions_table.c.duplicate_of).where(
                decisions_table.c.ns_id == store.ns_id, decisions_table.c.key == checked
            )
        ).scalar()
    return found
