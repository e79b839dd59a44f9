"""``db upgrade``, ``db current``, ``db check`` and ``db partition``: simstore's schema."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from simstore.cli._app import Failure, Settings, main
from simstore.cli.output import emit
from simstore.db import redact

if TYPE_CHECKING:
    from simstore.migrate import Status


@main.group()
def db() -> None:
    """Create, inspect and check simstore's schema.

    simstore's migrations keep their own alembic version table (simstore_alembic_version), so a
    host application's alembic history is never touched.
    """


def _status_json(status: Status) -> dict[str, Any]:
    return {
        "db": status.url,
        "revision": status.revision,
        "head": status.head,
        "up_to_date": status.up_to_date,
    }


@db.command()
@click.pass_obj
def upgrade(settings: Settings) -> None:
    """Bring the schema to the newest revision.

    Needed once (and after upgrading simstore) for server databases; SQLite files are upgraded
    on open.
    """
    from simstore import migrate

    migrate.upgrade(settings.url)
    status = migrate.status(settings.url)
    emit(settings, _status_json(status), status.message)


def _status(settings: Settings) -> Status:
    """``migrate.status`` of the database; a missing SQLite file is reported, never created."""
    from simstore import migrate
    from simstore.namespaces import missing_sqlite_file

    path = missing_sqlite_file(settings.url)
    if path is None:
        return migrate.status(settings.url)
    url = redact(settings.url)
    fix = f"no database file at {path} yet: run {migrate.upgrade_command(url)} to create it"
    return migrate.Status(url, None, migrate.head(), fix)


@db.command()
@click.pass_obj
def current(settings: Settings) -> None:
    """The revision the database is at.

    'none' before the first 'simstore db upgrade' (a missing SQLite file is not created).
    """
    status = _status(settings)
    emit(settings, _status_json(status), status.message)


@db.command()
@click.pass_obj
def check(settings: Settings) -> None:
    """Exit 0 if the schema is up to date, else 1.

    On failure the error line names the command that fixes it.
    """
    status = _status(settings)
    data = _status_json(status) | {"error": status.error}
    if status.error is not None:
        emit(settings, data, None)
        raise Failure(status.error)
    emit(settings, data, status.message)


@db.command()
@click.option("--interval", default="1d", show_default=True, help="Time span of one partition.")
@click.option(
    "--keep",
    default="2d",
    show_default=True,
    help="The database's retention: purge drops partitions that end before now - keep.",
)
@click.pass_obj
def partition(settings: Settings, interval: str, keep: str) -> None:
    """Partition the tables by time (PostgreSQL), or make the partitions ahead.

    The first run turns the tables into range-partitioned ones (the existing rows become the
    first partition, without a copy); later runs with the same interval update --keep and make
    the partitions of the next intervals (a cron job may run it daily). 'simstore purge' then
    drops whole partitions instead of deleting rows.
    """
    from simstore import partitions

    layout = partitions.enable(settings.url, interval=interval, keep=keep)
    made = partitions.partition_names(settings.url, "simstore_fingerprints")
    data = {
        "db": redact(settings.url),
        "interval_seconds": int(layout.interval.total_seconds()),
        "keep_seconds": int(layout.keep.total_seconds()),
        "first_boundary": layout.first_boundary.isoformat(),
        "partitions": made,
    }
    lines = [f"{data['db']}: partitioned by {layout.interval}, keep {layout.keep}"]
    lines += [f"  {name}" for name in made]
    emit(settings, data, "\n".join(lines))
