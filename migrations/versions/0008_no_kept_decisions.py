"""A kept text's row is its own decision record: no ``simstore_decisions`` row for kept adds.

Revision ID: 0008_no_kept_decisions
Revises: 0007_minhash_compact
Create Date: 2026-12-01

A kept add wrote the same key, fingerprint, moment and partition twice: into its
``simstore_fingerprints`` row and into a ``simstore_decisions`` row with ``inserted`` true and
nothing else (~105 bytes a kept text on SQLite with the row's three indexes, ~200 on PostgreSQL).
From this revision on ``simstore_decisions`` holds the duplicates' decisions only; simstore reads a
key's decision from either table (the README's audit recipes read both). The upgrade deletes the
``inserted`` rows whose kept row is still there; one whose kept row is gone (a purge that stopped
between the two tables, under older versions) stays, and still reads back as kept.

``downgrade`` writes a kept decision back for every kept row that has none.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_no_kept_decisions"
down_revision: str | None = "0007_minhash_compact"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

fingerprints = sa.table(
    "simstore_fingerprints",
    sa.column("ns_id"),
    sa.column("key"),
    sa.column("fp"),
    sa.column("added_at"),
    sa.column("part"),
)
decisions = sa.table(
    "simstore_decisions",
    sa.column("ns_id"),
    sa.column("key"),
    sa.column("fp"),
    sa.column("decided_at"),
    sa.column("part"),
    sa.column("inserted", sa.Boolean),
)


def upgrade() -> None:
    kept_row = sa.exists().where(
        fingerprints.c.ns_id == decisions.c.ns_id, fingerprints.c.key == decisions.c.key
    )
    op.execute(sa.delete(decisions).where(decisions.c.inserted == sa.true(), kept_row))


def downgrade() -> None:
    logged = sa.exists().where(
        decisions.c.ns_id == fingerprints.c.ns_id, decisions.c.key == fingerprints.c.key
    )
    op.execute(
        sa.insert(decisions).from_select(
            ["ns_id", "key", "fp", "decided_at", "part", "inserted"],
            sa.select(
                fingerprints.c.ns_id,
                fingerprints.c.key,
                fingerprints.c.fp,
                fingerprints.c.added_at,
                fingerprints.c.part,
                sa.true(),
            ).where(~logged),
        )
    )
