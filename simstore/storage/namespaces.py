"""Namespaces: opening one (create it or adopt its recorded recipe, refusing a mismatch
clearly), and the read-only and dropping uses of a database's namespaces.

A namespace records the preset (name, version, parameters), the policy with every parameter
(``Policy.recipe``), the band layout, the partition length and the MinHash scheme its rows were
made with. A store opened without a preset or a policy adopts the recorded one; a store asking for
another preset or policy is refused (``PresetMismatch``, ``PolicyMismatch``), as is another
scheme; a database behind the code asks for an upgrade.

``SimStore(bind, namespace=...)`` creates a namespace it does not find, which is right for adding
and wrong for looking: a typo in a read-only command would make a namespace and report zeros.
``existing(bind, name)`` answers whether it is there without writing anything (on SQLite it does
not even create a missing file), ``listed(bind)`` lists them with their counts, and
``drop(...)`` deletes a namespace's rows from every simstore table and then the namespace.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from simstore._version import __version__
from simstore.errors import (
    DatabaseUnavailable,
    InvalidInput,
    PolicyMismatch,
    PresetMismatch,
    SchemaOutOfDate,
    SimstoreError,
)
from simstore.policy.policies import DEFAULT_POLICY, Policy, policy_from_recipe
from simstore.storage import _prepared as prepared
from simstore.storage import expiry, migrate, partitions
from simstore.storage._connections import Connections
from simstore.storage.db import connection_for, redact
from simstore.storage.locking import lock_for_write
from simstore.storage.retention import format_duration, parse_duration, utc_naive
from simstore.storage.schema import decisions, fingerprints, metadata, namespaces
from simstore.storage.scope import Scope
from simstore.text import minhash
from simstore.text.fingerprint import ensure_available
from simstore.text.presets import Preset, get_preset
from simstore.validate import DEFAULT_MAX_DISTANCE, MAX_NAMESPACE_LENGTH, check_name

log = logging.getLogger("simstore")

BAND_LAYOUT = "4x16"


@dataclass(frozen=True)
class Namespace:
    """An opened namespace: its id and the recipe its rows were made with."""

    id: int
    name: str
    preset: Preset
    policy: Policy
    partition_seconds: int
    max_distance: int = DEFAULT_MAX_DISTANCE  # recorded for a policy that decides texts by it


def open_scope(
    connections: Connections,
    name: str,
    *,
    preset: str | Preset | None,
    partition: str | timedelta | float,
    policy: Policy | None,
    keep: timedelta | None,
    max_distance: int | None,
    auto_upgrade: bool | None,
) -> Scope:
    """Open namespace ``name`` for a store (``open_namespace``, after the schema is checked or
    upgraded) and say so once if its retention window and partitions disagree."""
    name = check_name("namespace", name, MAX_NAMESPACE_LENGTH)
    partition_length = parse_duration(partition)
    if partition_length < timedelta(minutes=1):
        raise InvalidInput("partition must be at least one minute (partition numbers are INT)")
    if preset is not None:
        ensure_available(preset)  # before a file or a namespace is made
    prepare_schema(connections, auto_upgrade)
    seconds = max(int(partition_length.total_seconds()), 1)
    opened = open_namespace(connections, name, preset, seconds, policy, max_distance)
    warn_about_partitions(connections, name, keep)
    return Scope(
        connections, opened.id, name, opened.partition_seconds, keep, opened.preset,
        opened.policy, opened.max_distance,
    )  # fmt: skip


def prepare_schema(connections: Connections, auto_upgrade: bool | None) -> None:
    """Check the schema; upgrade it when asked (by default: SQLite files are upgraded on open)."""
    with connections.in_turn():
        _prepare_schema(connections, auto_upgrade)


def _prepare_schema(connections: Connections, auto_upgrade: bool | None) -> None:
    upgrade = connections.dialect == "sqlite" if auto_upgrade is None else auto_upgrade
    # on SQLite this thread's kept connection, which the namespace read reuses (one connection
    # opened, not two), left without a transaction for simstore's own to begin
    kept = connections.kept()
    try:
        try:
            migrate.check(connections.target if kept is None else kept)
        finally:
            if kept is not None and kept.in_transaction():
                kept.rollback()
    except SchemaOutOfDate:
        if not upgrade:
            raise
        log.info("upgrading simstore schema in %s", connections.url)
        migrate.upgrade(connections.target)


def open_namespace(
    connections: Connections,
    name: str,
    wanted: str | Preset | None,
    partition_seconds: int,
    policy: Policy | None = None,
    max_distance: int | None = None,
) -> Namespace:
    """The namespace ``name``, created with ``wanted`` (or the default preset) and ``policy`` (or
    the default policy) when it is new; an existing one adopts or checks its recorded recipe.

    ``max_distance`` (None: the recorded one, else ``DEFAULT_MAX_DISTANCE``) is part of the
    recipe of a policy that decides texts by the SimHash radius (``simhash``,
    ``simhash-verified``): another one is refused like another option. A namespace of such a
    policy whose recipe has no radius (made by simstore 0.4.0 or earlier) records the radius of
    the first store that opens it, this one's or the default.
    """
    requested = None if wanted is None else get_preset(wanted)
    for _attempt in range(3):
        row = _read_namespace(connections, name)
        if row is not None:
            preset = _adopt(row, requested, name, connections.url)
            if row.policy is None:  # made by 0.3 with unsigned rows: record the first policy
                first = _kept_layout(policy or DEFAULT_POLICY)
                _record_policy(connections, int(row.id), first, recipe_of(first, max_distance))
                continue
            adopted, radius = _adopt_policy(row.policy, policy, max_distance, name, connections.url)
            unrecorded = adopted.decides_texts_by_distance and recorded_radius(row.policy) is None
            if unrecorded and _record_radius(connections, row, adopted, radius):
                continue  # read it back: another store may have recorded its radius first
            return Namespace(int(row.id), name, preset, adopted, int(row.partition_seconds), radius)
        chosen = requested or get_preset("default")
        try:
            with connections.transaction() as conn:
                conn.execute(
                    sa.insert(namespaces).values(
                        name=name,
                        preset_name=chosen.name,
                        preset_version=chosen.version,
                        preset_params=chosen.params_json(),
                        band_layout=BAND_LAYOUT,
                        partition_seconds=partition_seconds,
                        created_with=__version__,
                        created_at=utc_naive(None),
                        unsigned_rows=False,
                        minhash_scheme=minhash.SCHEME,
                        policy=recipe_of(policy or DEFAULT_POLICY, max_distance),
                    )
                )
        except exc.IntegrityError:
            continue  # another process created it first: read theirs
    raise SimstoreError(f"could not open namespace {name!r}")  # pragma: no cover


def _read_namespace(connections: Connections, name: str) -> SimpleNamespace | None:
    """The namespace's row, read with one prepared SELECT on the cheapest connection (on SQLite
    this thread's kept one, without a transaction): an open of an existing namespace writes
    nothing."""
    found = connections.read(
        lambda conn: prepared.namespace_by_name(conn.dialect).run(conn, {"name": name})
    )
    if not found:
        return None
    return SimpleNamespace(**dict(zip(namespaces.c.keys(), found[0], strict=True)))


def _adopt(row: Any, requested: Preset | None, name: str, url: str) -> Preset:
    recorded = f"{row.preset_name}@{row.preset_version} {row.preset_params}"
    if requested is None:
        try:
            base = get_preset(row.preset_name)
        except SimstoreError as error:
            raise PresetMismatch(
                f"namespace {name!r} uses preset {recorded}, unknown to simstore {__version__}"
            ) from error
        requested = base
        if base.params_json() != row.preset_params:
            requested = base.with_params(**json.loads(row.preset_params))
    mine = f"{requested.name}@{requested.version} {requested.params_json()}"
    if mine != recorded:
        raise PresetMismatch(
            f"namespace {name!r} in {url} was made with preset {recorded}; "
            f"refusing fingerprints made with {mine}"
        )
    if row.band_layout != BAND_LAYOUT:
        raise SchemaOutOfDate(f"namespace uses band layout {row.band_layout}")
    if row.minhash_scheme != minhash.SCHEME:
        raise PresetMismatch(
            f"namespace {name!r} in {url} holds MinHash signatures of scheme "
            f"{row.minhash_scheme}; simstore {__version__} makes {minhash.SCHEME}, whose band "
            "keys would never meet them"
        )
    return requested


def recipe_of(policy: Policy, max_distance: int | None) -> str:
    """What a namespace records of its policy: ``Policy.recipe``, with the SimHash radius when
    the policy decides texts by it (``max_distance``; None: ``DEFAULT_MAX_DISTANCE``)."""
    recipe = policy.recipe()
    if not policy.decides_texts_by_distance:
        return recipe
    data = json.loads(recipe)
    data["max_distance"] = DEFAULT_MAX_DISTANCE if max_distance is None else max_distance
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def recorded_radius(recipe: str) -> int | None:
    """The SimHash radius a recorded recipe holds (None: none recorded)."""
    try:
        value = json.loads(recipe).get("max_distance")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _record_policy(connections: Connections, ns_id: int, policy: Policy, recipe: str) -> None:
    log.warning(
        "namespace %d records no policy (made by simstore 0.3): recording %s", ns_id, policy
    )
    with connections.transaction() as conn:
        conn.execute(
            sa.update(namespaces)
            .where(namespaces.c.id == ns_id, namespaces.c.policy.is_(None))
            .values(policy=recipe)
        )


def _record_radius(connections: Connections, row: Any, policy: Policy, radius: int) -> bool:
    """Record the radius in the recipe of a namespace that has none (only if the recipe is still
    the one read: a store that recorded another radius first wins, and this one is then checked
    against it). False when the database cannot be written (a read-only file): this store then
    decides with its radius, and the first store that can write records one."""
    log.warning(
        "namespace %r records no max_distance (made by simstore 0.4.0 or earlier): recording "
        "%d, this store's, which every later store must use",
        row.name,
        radius,
    )
    try:
        with connections.transaction() as conn:
            conn.execute(
                sa.update(namespaces)
                .where(namespaces.c.id == row.id, namespaces.c.policy == row.policy)
                .values(policy=recipe_of(policy, radius))
            )
    except DatabaseUnavailable as error:
        log.warning("could not record the radius of namespace %r: %s", row.name, error)
        return False
    return True


def _shown(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _differences(stored: Policy, requested: Policy) -> list[str]:
    """``option X: stored A, requested B`` for each option that differs (or the policy)."""
    if stored.name != requested.name or type(stored) is not type(requested):
        return [f"policy: stored {stored.name}, requested {requested.name}"]
    mine, theirs = json.loads(stored.recipe())["params"], json.loads(requested.recipe())["params"]
    return [
        f"option {option}: stored {_shown(mine.get(option))}, "
        f"requested {_shown(theirs.get(option))}"
        for option in sorted(set(mine) | set(theirs))
        if mine.get(option) != theirs.get(option)
    ]


def _kept_layout(policy: Policy) -> Policy:
    """``policy`` with the MinHash band layout of the rows a namespace kept before it recorded a
    policy (16 x 4: their band keys are those), when it signs with another; a store that asked
    for another layout is then refused, as for any other recorded option."""
    if policy.minhash_bands == minhash.LAYOUT or not dataclasses.is_dataclass(policy):
        return policy
    return dataclasses.replace(policy, minhash_bands=minhash.LAYOUT)


def _adopt_policy(
    recorded: str, requested: Policy | None, radius: int | None, name: str, url: str
) -> tuple[Policy, int]:
    """The recorded policy when none is requested, the requested one when it is the same; and
    the radius: the recorded one, or the requested one when it is the same (a policy that does
    not decide texts by the radius records none: the requested one or the default)."""
    stored = policy_from_recipe(recorded)
    chosen = stored
    if requested is not None:
        differ = _differences(stored, requested)
        if differ:
            raise PolicyMismatch(
                f"namespace {name!r} in {url}: refusing another policy: "
                + "; ".join(differ)
                + ". Open it without a policy (and without its options) to use its own, or "
                "give another namespace (--namespace NAME, SimStore(namespace=...)) for the "
                "new one"
            )
        chosen = requested
    kept = recorded_radius(recorded) if chosen.decides_texts_by_distance else None
    if kept is None:
        return chosen, DEFAULT_MAX_DISTANCE if radius is None else radius
    if radius is not None and radius != kept:
        raise PolicyMismatch(
            f"namespace {name!r} in {url}: refusing another radius: max_distance: stored "
            f"{kept}, requested {radius} (the {chosen.name} policy keeps a text only when no "
            "kept text lies within it). Open it without max_distance to use its own (a query "
            "may still search wider: query(text, max_distance=N), simstore query "
            "--max-distance N), or give another namespace for the new radius"
        )
    return chosen, kept


_warned: set[tuple[str, str, timedelta | None, timedelta]] = set()


def warn_about_partitions(connections: Connections, namespace: str, keep: timedelta | None) -> None:
    """PostgreSQL: warn when the database drops partitions before the store's window ends."""
    if connections.dialect != "postgresql":
        return
    with connections.transaction() as conn:
        layout = partitions.read(conn)
    if layout is None or (keep is not None and keep <= layout.keep):
        return
    said = (connections.url, namespace, keep, layout.keep)
    if said in _warned:  # once a process: a command may open its store more than once
        return
    _warned.add(said)
    log.warning(
        "namespace %r keeps %s, but the database's partitions are dropped after %s",
        namespace,
        "everything" if keep is None else format_duration(keep),
        format_duration(layout.keep),
    )


class NoSuchNamespace(SimstoreError):
    """A namespace (or the database itself) that a read-only use expected is not there."""


@dataclass(frozen=True)
class NamespaceInfo:
    """One namespace: its name, the preset its rows were made with, and what it holds."""

    name: str
    preset: str  # name@version
    policy: str | None  # the recorded recipe (Policy.recipe); None: made by 0.3, not yet opened
    kept: int
    decisions: int
    created_at: datetime


def missing_sqlite_file(url: str | URL) -> Path | None:
    """The file a SQLite URL names when it does not exist (opening it would create it)."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except (ArgumentError, ValueError):
        return None
    if parsed.get_backend_name() != "sqlite":
        return None
    database = parsed.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return None
    path = Path(database)
    return None if path.exists() else path


def _no_database(url: str | URL, path: Path) -> SimstoreError:
    if not path.parent.is_dir():  # not even the folder: the database cannot be reached
        return DatabaseUnavailable(f"database {redact(url)}: no folder {path.parent}")
    return NoSuchNamespace(f"no database at {path} ({redact(url)}): nothing was added there yet")


def listed(bind: str | URL) -> list[NamespaceInfo]:
    """Every namespace of the database with its preset and counts, by name (nothing is written).

    The schema must be up to date (``SchemaOutOfDate`` names the fix); a missing SQLite file is
    ``NoSuchNamespace``, not a new empty database.
    """
    path = missing_sqlite_file(bind)
    if path is not None:
        raise _no_database(bind, path)
    migrate.check(bind)
    kept = (
        sa.select(sa.func.count()).where(fingerprints.c.ns_id == namespaces.c.id).scalar_subquery()
    )
    logged = (
        sa.select(sa.func.count()).where(decisions.c.ns_id == namespaces.c.id).scalar_subquery()
    )
    statement = sa.select(
        namespaces.c.name,
        namespaces.c.preset_name,
        namespaces.c.preset_version,
        namespaces.c.policy,
        kept,
        logged,
        namespaces.c.created_at,
    ).order_by(namespaces.c.name)
    with connection_for(bind) as conn:
        rows = conn.execute(statement).all()
    return [
        # a kept row is its own decision's record: the decisions are the kept and the logged
        NamespaceInfo(
            str(name), f"{preset}@{version}", policy, int(count), int(count) + int(made), created
        )
        for name, preset, version, policy, count, made, created in rows
    ]


def existing(bind: str | URL, name: str) -> None:
    """Raise ``NoSuchNamespace`` unless the database has namespace ``name`` (writes nothing)."""
    path = missing_sqlite_file(bind)
    if path is not None:
        raise _no_database(bind, path)
    migrate.check(bind)
    with connection_for(bind) as conn:
        found = conn.execute(sa.select(namespaces.c.id).where(namespaces.c.name == name)).scalar()
        names = (
            []
            if found is not None
            else list(
                conn.execute(sa.select(namespaces.c.name).order_by(namespaces.c.name)).scalars()
            )
        )
    if found is None:
        known = ", ".join(repr(known) for known in names[:10]) or "none"
        raise NoSuchNamespace(
            f"no namespace {name!r} in {redact(bind)} (namespaces: {known}; "
            "'simstore namespaces' lists them)"
        )


def drop(scope: Scope) -> dict[str, int]:
    """Delete an open store's namespace (``SimStore.scope``): its rows in every simstore table,
    then the namespace row.

    One transaction that takes the namespace's exclusive write lock, so an add either finishes
    before it or fails after it with ``NamespaceDropped`` (its check under the lock finds the row
    gone; ids are never reused, so no later namespace can take this one's rows or writes).
    Returns the rows deleted per table; ``NamespaceDropped`` if it was dropped already.
    """
    deleted: dict[str, int] = {}
    with scope.connections.transaction() as conn:
        lock_for_write(conn, scope.ns_id, None, namespace=scope.namespace)
        for table in metadata.sorted_tables:
            if table is namespaces or "ns_id" not in table.c:
                continue
            result = conn.execute(sa.delete(table).where(table.c.ns_id == scope.ns_id))
            deleted[table.name] = int(result.rowcount)
        conn.execute(sa.delete(namespaces).where(namespaces.c.id == scope.ns_id))
        expiry.set_max_kept(conn, scope.ns_id, None)
    return deleted
