"""Reading a namespace out: its decisions, its kept rows and its clusters, streamed.

Each function yields plain dicts (JSON-ready: fingerprints as 16-hex strings, datetimes as
tz-aware UTC) from one query streamed in batches (``simstore.storage.audit``'s queries), so
memory stays bounded by a batch (``clusters``: by the largest cluster). ``recorded_duplicate_of``
reads the key a decision names even when that key has since been removed or purged
(``SimStore.get`` then has no ``Match`` to show for it). Each takes the namespace's ``Scope``
(``SimStore.scope``).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from simstore.storage import audit
from simstore.storage.scope import Scope
from simstore.text.encoding import from_signed, to_hex
from simstore.validate import check_key

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


def decisions(scope: Scope) -> Iterator[dict[str, Any]]:
    """Every recorded decision of the namespace (kept rows stand for theirs), by time; at one
    moment the kept before the duplicates, each in the order they were written."""
    for (
        key,
        fp,
        inserted,
        duplicate_of,
        distance,
        measure,
        score,
        decided_at,
    ) in audit.decision_rows(scope):
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


def kept(scope: Scope) -> Iterator[dict[str, Any]]:
    """Every kept row of the namespace (the normalised text only where it was kept: short texts)."""
    for key, fp, added_at, text in audit.kept_rows(scope):
        yield {
            "key": key,
            "fingerprint": to_hex(from_signed(fp)),
            "added_at": _utc(added_at),
            "text": text,
        }


def clusters(scope: Scope) -> Iterator[dict[str, Any]]:
    """Each kept key with the keys judged its duplicates (clusters of two or more), by key.

    ``keys`` starts with the cluster's kept key (absent if it was removed or purged), then its
    duplicates by key.
    """
    current: str | None = None
    members: list[str] = []
    for cluster, key in audit.cluster_members(scope):
        if cluster != current:
            if current is not None and len(members) > 1:
                yield {"cluster": current, "size": len(members), "keys": members}
            current, members = cluster, []
        members.append(key)
    if current is not None and len(members) > 1:
        yield {"cluster": current, "size": len(members), "keys": members}


def recorded_duplicate_of(scope: Scope, key: str) -> str | None:
    """The key that ``key``'s decision names as its match, as recorded (None: kept, or unknown)."""
    return audit.recorded_duplicate_of(scope, check_key(key))
