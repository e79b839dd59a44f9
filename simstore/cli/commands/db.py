"""``db upgrade``, ``db current``, ``db check``, ``db partition``: simstore's schema; ``db load``:
the hand-over of a batch result (``simstore.io.handover``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from simstore.cli._app import Failure, Settings, main, open_store
from simstore.cli.output import emit, pairs
from simstore.storage.db import redact

if TYPE_CHECKING:
    from simstore.storage.migrate import Status


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
    from simstore.storage import migrate

    migrate.upgrade(settings.url)
    status = migrate.status(settings.url)
    emit(settings, _status_json(status), status.message)


def _status(settings: Settings) -> Status:
    """``migrate.status`` of the database; a missing SQLite file is reported, never created."""
    from simstore.storage import migrate
    from simstore.storage.namespaces import missing_sqlite_file

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

    On failure the error line names the command that fixes it. Each capped namespace's fill
    (kept texts of its max_kept) follows.
    """
    status = _status(settings)
    data = _status_json(status) | {"error": status.error}
    if status.error is not None:
        emit(settings, data, None)
        raise Failure(status.error)
    from simstore.storage import expiry

    fills = expiry.fills(settings.url)
    data["capped"] = [fill._asdict() | {"fill": fill.shown()} for fill in fills]
    lines = [f"namespace {fill.namespace}: {fill.shown()}" for fill in fills]
    emit(settings, data, "\n".join([status.message, *lines]))


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
    from simstore.storage import partitions
    from simstore.storage.retention import format_duration

    layout = partitions.enable(settings.url, interval=interval, keep=keep)
    made = partitions.partition_names(settings.url, "simstore_fingerprints")
    data = {
        "db": redact(settings.url),
        "interval_seconds": int(layout.interval.total_seconds()),
        "keep_seconds": int(layout.keep.total_seconds()),
        "first_boundary": layout.first_boundary.isoformat(),
        "partitions": made,
    }
    shown = f"{format_duration(layout.interval)}, keep {format_duration(layout.keep)}"
    lines = [f"{data['db']}: partitioned by {shown}"]
    lines += [f"  {name}" for name in made]
    emit(settings, data, "\n".join(lines))


@db.command("load")
@click.argument("source", metavar="DIR_OR_FILE")
@click.option(
    "--batch-size",
    default=5_000,
    show_default=True,
    type=click.IntRange(min=1),
    help="Rows written per transaction.",
)
@click.pass_obj
def load_command(settings: Settings, source: str, batch_size: int) -> None:
    """Write a batch result into the namespace in bulk (the hand-over).

    DIR_OR_FILE is what 'simstore spark dedup --handover DIR' wrote (Parquet): every kept text
    with its fingerprint, kept text and band keys, and every decision, so that online dedup
    continues from it and adding one of the corpus's records again replays its decision. The
    namespace is created if it is new; its preset and policy (the global options) must be those
    the result was made with. Keys the namespace already holds are skipped, so a load that
    stopped is simply run again. Every row is checked before the first is written: a bad or too
    long text, a null fingerprint, a bad distance, measure or score, or a duplicate_of that names
    no kept row (of the hand-over or the namespace) is refused (exit 4) and nothing is loaded.
    """
    from simstore.io import handover
    from simstore.io.records import checked_handover

    with open_store(settings, create=True) as store:
        expect = handover.made_with(store.preset, store.policy, store.max_distance)

        def is_kept(key: str) -> bool:
            decision = store.get(key)
            return decision is not None and decision.duplicate_of is None

        # every row checked first: a bad one is refused before anything is written
        read = handover.read_parquet(source, expect=expect, batch_size=batch_size)
        handover.check_rows(
            checked_handover(read, max_text_length=store.max_text_length, is_kept=is_kept)
        )
        rows = handover.read_parquet(source, expect=expect, batch_size=batch_size)
        report = store.load(rows, batch_size=batch_size)
    data = {
        "db": redact(settings.url),
        "namespace": settings.namespace,
        "source": source,
        "made_with": expect,
        "loaded": report.kept + report.duplicates,
        "kept": report.kept,
        "duplicates": report.duplicates,
        "skipped": report.skipped,
    }
    counts = {name: f"{data[name]:>9,}" for name in ("loaded", "kept", "duplicates", "skipped")}
    lines = [f"{source} -> {data['db']} (namespace {settings.namespace})", pairs(counts)]
    emit(settings, data, None if settings.quiet else "\n".join(lines))
