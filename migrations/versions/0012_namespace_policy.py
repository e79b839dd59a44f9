"""Each namespace records its policy: the canonical JSON of the policy and every parameter.

Revision ID: 0012_namespace_policy
Revises: 0011_namespace_ids_never_reused
Create Date: 2026-12-04

Self-contained on purpose: a migration never imports live simstore code. A new nullable column
``simstore_namespaces.policy``. A namespace whose rows all carry MinHash signatures
(``unsigned_rows`` false) could only have been filled under the default policy of its time, and
gets that policy's recipe (``MinHashVerification()`` as simstore 0.3 made it). A namespace with
unsigned rows may have been filled under any policy: its recipe stays NULL, and the first store
that opens it records the policy it is opened with.

Resumable where DDL is not transactional (MySQL/MariaDB): the column is added only when missing,
and the backfill only writes NULL recipes. SQLite's batch mode keeps the table's AUTOINCREMENT
(revision 0011) when it rebuilds it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_namespace_policy"
down_revision: str | None = "0011_namespace_ids_never_reused"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DEFAULT_RECIPE_03 = (
    '{"params":{"cjk_long_threshold":0.65,"fold_traditional":false,"long_threshold":0.75,'
    '"max_replaced":1,"measure":"jaccard","min_bands":2,"numbers_matter":true,"prefilter":0.35,'
    '"short_length":300,"short_min_bands":1,"strip_markup":true,"strip_social":false,'
    '"threshold":0.55},"policy":"minhash","recipe":1}'
)

namespaces = sa.table(
    "simstore_namespaces", sa.column("policy"), sa.column("unsigned_rows", sa.Boolean)
)


def _has_column() -> bool:
    columns = sa.inspect(op.get_bind()).get_columns("simstore_namespaces")
    return any(column["name"] == "policy" for column in columns)


def upgrade() -> None:
    if not _has_column():
        with op.batch_alter_table(
            "simstore_namespaces", table_kwargs={"sqlite_autoincrement": True}
        ) as batch:
            batch.add_column(sa.Column("policy", sa.Text, nullable=True))
    op.execute(
        namespaces.update()
        .where(namespaces.c.policy.is_(None), namespaces.c.unsigned_rows == sa.false())
        .values(policy=DEFAULT_RECIPE_03)
    )


def downgrade() -> None:
    if _has_column():
        with op.batch_alter_table(
            "simstore_namespaces", table_kwargs={"sqlite_autoincrement": True}
        ) as batch:
            batch.drop_column("policy")
