"""Write ``simstore/storage/sqlite_schema.sql``: the schema a new SQLite file is made with.

Run it from the repository root after adding or changing a migration:

    python tests/data/make_sqlite_schema.py

It runs every migration script on an empty SQLite file and writes down what SQLite recorded
(``migrate.sqlite_schema_script``). ``tests/storage/test_migrations.py`` does the same and fails
while the packaged file differs; until it is rewritten, a new file is made by the scripts (the
packaged file names its revision, and one that is not the head is never used).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from simstore.storage import migrate  # noqa: E402


def schema_from_scripts() -> str:
    """The text of ``sqlite_schema.sql`` for the scripts in this checkout."""
    import sqlalchemy as sa

    with tempfile.TemporaryDirectory() as folder:
        engine = sa.create_engine(f"sqlite:///{Path(folder) / 'scripts.db'}")
        try:
            migrate.upgrade_by_scripts(engine)
            with engine.connect() as connection:
                return migrate.sqlite_schema_script(connection)
        finally:
            engine.dispose()


def main() -> None:
    migrate.SQLITE_SCHEMA.write_text(schema_from_scripts(), encoding="utf-8")
    print(f"wrote {migrate.SQLITE_SCHEMA.relative_to(ROOT)} at {migrate.head()}")


if __name__ == "__main__":
    main()
