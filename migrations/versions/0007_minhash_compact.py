"""A smaller MinHash side: one byte a signature value, 32-bit band keys, no partition on them.

Revision ID: 0007_minhash_compact
Revises: 0006_minhash_no_purge_index
Create Date: 2026-12-01

Self-contained on purpose: a migration never imports live simstore code. The new scheme keeps of
each 32-bit minimum the top byte of its product with an odd constant (b-bit MinHash), so every
stored signature converts exactly to the one simstore now makes of the same text; a namespace's
band keys are then made again from the converted signatures (one 32-bit key per band of four
bytes) and its scheme is renamed. ``simstore_minhash`` loses its ``part`` column (the retention
window is checked on the fingerprint rows the keys lead to): the table is made again with the
primary key (band_key, ns_id, fp_id), and the keys of a namespace of any other scheme are carried
over as they are. ``band_key`` keeps its type: SQLite stores a 32-bit value in 4 bytes of a BIGINT
column. On PostgreSQL the band keys move into the fingerprint row instead: a new ``band_keys``
column (integer[]) under a GIN index with fastupdate off (its entries are compressed; 24 heap
tuples and their B-tree entries cost ~2.5 kB a text there), and ``simstore_minhash`` stays empty.
Other dialects get the column too, as a BLOB that stays NULL.

The conversion reads and rewrites every signed row of the namespaces of the old scheme, in id
order and batches of ``BATCH`` (about a minute a million rows on SQLite). It cannot be undone: the
discarded 24 bits of each value are gone, so ``downgrade`` refuses. On MySQL and MariaDB, whose
DDL is not transactional, the keys are built in a table of their own and swapped in, so that a
killed upgrade resumes with every key (``_upgrade_in_steps``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0007_minhash_compact"
down_revision: str | None = "0006_minhash_no_purge_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_SCHEME = "minhash-c5-96-24x4-v1"
NEW_SCHEME = "minhash-c5-96-24x4-b8-v2"
VALUES, BANDS = 96, 24
OLD_BYTES = VALUES * 4
BATCH = 5000

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_SEED = np.uint64(0x5EED5EED5EED5EED)
_TO_BYTE = np.uint32(0x2C1B3C6D)
GIN_INDEX = "ix_simstore_fingerprints_band_keys"

namespaces = sa.table("simstore_namespaces", sa.column("id"), sa.column("minhash_scheme"))
fingerprints = sa.table(
    "simstore_fingerprints",
    sa.column("id"),
    sa.column("ns_id"),
    sa.column("signature", sa.LargeBinary),
    sa.column("band_keys", postgresql.ARRAY(sa.Integer())),
)
old_minhash = sa.table(
    "simstore_minhash", sa.column("band_key"), sa.column("ns_id"), sa.column("fp_id")
)


def _mix64(z: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))  # type: ignore[no-any-return]


_BAND_SEEDS = _mix64(np.arange(BANDS, dtype=np.uint64) * _GOLDEN + _SEED)


def converted(old: list[bytes]) -> tuple[list[bytes], list[list[int]]]:
    """The new signatures of old ones and each one's distinct band keys."""
    full = np.frombuffer(b"".join(old), dtype="<u4").reshape(len(old), VALUES)
    small = ((full.astype(np.uint32) * _TO_BYTE) >> np.uint32(24)).astype(np.uint8)
    words = np.ascontiguousarray(small).view("<u4").reshape(len(old), BANDS)
    keys = _mix64(words.astype(np.uint64) ^ _BAND_SEEDS).view(np.int64) >> np.int64(32)
    return [row.tobytes() for row in small], [sorted(set(row)) for row in keys.tolist()]


def _new_minhash(name: str) -> sa.Table:
    return op.create_table(
        name,
        sa.Column("band_key", sa.BigInteger, nullable=False),
        sa.Column("ns_id", sa.Integer, nullable=False),
        sa.Column("fp_id", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("band_key", "ns_id", "fp_id", name="pk_simstore_minhash"),
        sqlite_with_rowid=False,
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
    )


def _old_namespaces(bind: sa.Connection) -> list[int]:
    query = sa.select(namespaces.c.id).where(namespaces.c.minhash_scheme == OLD_SCHEME)
    return [int(ns_id) for ns_id in bind.execute(query).scalars()]


def _convert_rows(bind: sa.Connection, ns_id: int, keys_into: sa.TableClause | None) -> None:
    """Convert the namespace's old signatures in place, BATCH rows at a time, writing each batch's
    band keys into ``keys_into`` (None: into the rows' ``band_keys``, PostgreSQL) in the same
    transaction. A row converted is one whose signature has the new length: a run killed and
    started again (MySQL) converts only the rest."""
    array = postgresql.ARRAY(sa.Integer())
    last = 0
    while True:
        rows = bind.execute(
            sa.select(fingerprints.c.id, fingerprints.c.signature)
            .where(
                fingerprints.c.ns_id == ns_id,
                fingerprints.c.id > last,
                fingerprints.c.signature.is_not(None),
            )
            .order_by(fingerprints.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        last = rows[-1].id
        # a signature of another length was never read (simstore ignores it): left as it is
        signed = [row for row in rows if len(row.signature) == OLD_BYTES]
        if not signed:
            continue
        signatures, keys = converted([bytes(row.signature) for row in signed])
        new = {"signature": sa.bindparam("new_signature")}
        if keys_into is None:
            new["band_keys"] = sa.bindparam("new_keys", type_=array)
        bind.execute(
            sa.update(fingerprints).where(fingerprints.c.id == sa.bindparam("row_id")).values(new),
            [
                {"row_id": row.id, "new_signature": signature, "new_keys": row_keys}
                for row, signature, row_keys in zip(signed, signatures, keys, strict=True)
            ],
        )
        if keys_into is not None:
            bind.execute(
                sa.insert(keys_into),
                [
                    {"band_key": key, "ns_id": ns_id, "fp_id": row.id}
                    for row, row_keys in zip(signed, keys, strict=True)
                    for key in row_keys
                ],
            )


def _rename_schemes(bind: sa.Connection, chosen: list[int]) -> None:
    if chosen:
        bind.execute(
            sa.update(namespaces)
            .where(namespaces.c.id.in_(chosen))
            .values(minhash_scheme=NEW_SCHEME)
        )


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name in ("mysql", "mariadb"):
        _upgrade_in_steps(bind)
        return
    # transactional DDL (SQLite, PostgreSQL): the whole step commits or none of it
    old_namespaces = _old_namespaces(bind)
    carried = [
        dict(row._mapping)
        for row in bind.execute(
            sa.select(old_minhash).where(old_minhash.c.ns_id.not_in(old_namespaces))
        )
    ]
    op.drop_table("simstore_minhash")
    minhash = _new_minhash("simstore_minhash")
    if carried:
        bind.execute(sa.insert(minhash), carried)
    in_row = bind.dialect.name == "postgresql"
    array = postgresql.ARRAY(sa.Integer())
    with op.batch_alter_table("simstore_fingerprints") as batch:
        batch.add_column(sa.Column("band_keys", sa.LargeBinary().with_variant(array, "postgresql")))
    for ns_id in old_namespaces:
        _convert_rows(bind, ns_id, None if in_row else minhash)
    _rename_schemes(bind, old_namespaces)
    if in_row:
        op.create_index(
            GIN_INDEX,
            "simstore_fingerprints",
            ["band_keys"],
            postgresql_using="gin",
            postgresql_with={"fastupdate": "off"},
        )


STAGED, RETIRED = "simstore_minhash_new", "simstore_minhash_old"


def _upgrade_in_steps(bind: sa.Connection) -> None:
    """MySQL and MariaDB commit every DDL statement, so a kill -9 can stop this step anywhere and
    ``db upgrade`` runs it again from the top. It never destroys a key before its replacement is
    written: the new keys go into ``simstore_minhash_new`` (the other schemes' keys copied as they
    are, each converted batch's keys in the batch's transaction), one atomic ``RENAME TABLE``
    swaps it in, and only then are the schemes renamed and the old table dropped. Each stage
    looks at what is there first (tables, columns, which signatures have the new length)."""
    inspector = sa.inspect(bind)
    tables = set(inspector.get_table_names())
    if "band_keys" not in {c["name"] for c in inspector.get_columns("simstore_fingerprints")}:
        op.add_column("simstore_fingerprints", sa.Column("band_keys", sa.LargeBinary))
    old_namespaces = _old_namespaces(bind)
    swapped = "part" not in {c["name"] for c in inspector.get_columns("simstore_minhash")}
    if not swapped:
        staged = (
            sa.table(STAGED, *(sa.column(name) for name in ("band_key", "ns_id", "fp_id")))
            if STAGED in tables
            else _new_minhash(STAGED)
        )
        # the other schemes' keys, as they are (copied again in full on a second run)
        bind.execute(sa.delete(staged).where(staged.c.ns_id.not_in(old_namespaces)))
        bind.execute(
            sa.insert(staged).from_select(
                ["band_key", "ns_id", "fp_id"],
                sa.select(old_minhash).where(old_minhash.c.ns_id.not_in(old_namespaces)),
            )
        )
        for ns_id in old_namespaces:
            _convert_rows(bind, ns_id, staged)
        # commits the rows above, then swaps both names at once
        op.execute(f"RENAME TABLE simstore_minhash TO {RETIRED}, {STAGED} TO simstore_minhash")
    else:
        # swapped by an earlier run, which converted every row first; but a database left by a
        # kill under simstore 0.x (the table made again and emptied, the revision still 0006)
        # has its old signatures back: their keys are made again here from them
        for ns_id in old_namespaces:
            _convert_rows(bind, ns_id, old_minhash)
    _rename_schemes(bind, old_namespaces)
    if RETIRED in set(sa.inspect(bind).get_table_names()):
        op.drop_table(RETIRED)


def downgrade() -> None:
    raise NotImplementedError(
        "0007_minhash_compact cannot be undone: the signatures kept one byte of each "
        "value; restore a backup taken before the upgrade"
    )
