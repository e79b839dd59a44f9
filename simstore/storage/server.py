"""What a server database's settings leave to be desired for simstore (``simstore db check``).

simstore answers its lookups from indexes alone (index-only scans on PostgreSQL), which holds
only for table pages that VACUUM has marked all-visible, and is fast only while those indexes
sit in memory. ``warnings`` names the settings that work against that; MariaDB and SQLite have
nothing to report here.
"""

from __future__ import annotations

from simstore.storage.db import connection_for

# the tables whose indexes answer lookups: autovacuum keeps their visibility maps current
_LOOKUP_TABLES = ("simstore_fingerprints", "simstore_minhash")


def warnings(bind: object) -> list[str]:
    """Settings of the database ``bind`` (a URL, an Engine or a Connection) that slow simstore's
    lookups, one sentence each (empty: none, or not PostgreSQL)."""
    with connection_for(bind) as conn:
        if conn.dialect.name != "postgresql":
            return []
        found: list[str] = []
        setting = conn.exec_driver_sql(
            "SELECT current_setting('autovacuum'), current_setting('track_counts')"
        ).one()
        if setting[0] != "on" or setting[1] != "on":
            found.append(
                "autovacuum is off on the server (or track_counts is): nothing marks the tables' "
                "pages all-visible, so every lookup visits the tables; turn it on"
            )
        # per-table opt-outs (a partitioned table's partitions carry their own)
        off = conn.exec_driver_sql(
            "SELECT c.relname FROM pg_class c WHERE c.relkind = 'r' AND c.reloptions IS NOT NULL "
            "AND 'autovacuum_enabled=false' = ANY(c.reloptions) "
            "AND c.relname ~ '^(simstore_fingerprints|simstore_minhash)' ORDER BY c.relname"
        ).scalars()
        tables = [str(name) for name in off]
        if tables:
            found.append(
                f"autovacuum is disabled on {', '.join(tables)}: their lookups visit the table "
                "for every row found; ALTER TABLE ... RESET (autovacuum_enabled)"
            )
        sizes = conn.exec_driver_sql(
            "SELECT pg_size_bytes(current_setting('shared_buffers')), "
            "COALESCE(SUM(pg_relation_size(i.indexrelid)), 0) FROM pg_index i "
            "JOIN pg_class t ON t.oid = i.indrelid "
            "WHERE t.relname ~ '^(simstore_fingerprints|simstore_minhash)'"
        ).one()
        buffers, indexes = int(sizes[0]), int(sizes[1])
        if buffers < indexes:
            found.append(
                f"shared_buffers ({buffers / 2**20:,.0f} MB) is smaller than simstore's lookup "
                f"indexes ({indexes / 2**20:,.0f} MB): lookups read from the OS cache or the "
                "disk; consider raising it (a quarter of the machine's memory is common)"
            )
        return found
