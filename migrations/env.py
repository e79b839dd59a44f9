"""Alembic environment for simstore's own schema.

Run by simstore itself (``simstore.storage.migrate``): it uses the caller's connection when one is
given,
keeps its own version table (``simstore_alembic_version``) so a host application's alembic history
is never touched, limits autogenerate to ``simstore_`` tables, and never configures logging.
"""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy import create_engine, pool

from simstore.storage.migrate import VERSION_TABLE, compared

config = context.config


def _configure_and_run(connection: Any) -> None:
    context.configure(
        connection=connection,
        target_metadata=config.attributes.get("target_metadata"),
        version_table=VERSION_TABLE,
        include_object=compared,
        compare_type=True,
        transaction_per_migration=False,
    )
    with context.begin_transaction():
        context.run_migrations()


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure_and_run(connection)
        return
    url = config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("simstore migrations need a connection or sqlalchemy.url")
    engine = create_engine(url, poolclass=pool.NullPool)
    try:
        with engine.begin() as connection:
            _configure_and_run(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise RuntimeError("simstore migrations run online only (simstore db upgrade)")
run()
