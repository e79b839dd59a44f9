"""Flask integration: ``FlaskSimStore(app)`` or ``ext.init_app(app)``.

Configuration keys (all optional):

- ``SIMSTORE_URL``: the database; default is Flask-SQLAlchemy's engine when the app has one (no
  second engine), else ``sqlite:///<instance folder>/simstore.db``.
- ``SIMSTORE_NAMESPACE`` (``"default"``), ``SIMSTORE_PRESET``, ``SIMSTORE_KEEP`` (e.g. ``"2d"``),
  ``SIMSTORE_AUTO_UPGRADE`` (None: SQLite yes, servers no).
- ``SIMSTORE_POLICY`` (``"minhash"``, ``"simhash-verified"`` or ``"simhash"``; None: the
  namespace's recorded policy, ``minhash`` for a new one), ``SIMSTORE_THRESHOLD`` and
  ``SIMSTORE_LONG_THRESHOLD`` (short and long texts' similarity; None: the policy's own),
  ``SIMSTORE_POLICY_OPTIONS`` (any other option, a dict or ``"fold_traditional=true,..."``),
  ``SIMSTORE_MAX_DISTANCE`` (None: 3), the SimHash radius, which decides texts only under the
  SimHash policies (under ``minhash`` only bare fingerprints, and setting it logs a warning).
- ``SIMSTORE_GROUP_COMMIT`` (False): adds that the app's threads make at the same time share one
  transaction; ``SIMSTORE_SYNCHRONOUS_COMMIT`` (True; False on PostgreSQL only): commit without
  waiting for the server's WAL flush. As ``SimStore``'s ``group_commit`` and
  ``synchronous_commit``.
  Strings are converted (``"0.8"``, ``"true"``), and every setting is checked by ``init_app``:
  a bad one raises ``InvalidInput`` naming it, when the app starts. So is ``SIMSTORE_URL``,
  without connecting (it parses, its dialect and driver are there: ``postgres://`` or a
  ``mysql://`` without ``+pymysql`` fails then); a ``SIMSTORE_*`` key that is no setting (a
  misspelling) is logged as a warning that names the nearest one.

- ``SIMSTORE_ERROR_HANDLERS`` (True): answer simstore's client errors raised in a view as JSON,
  409 for a ``KeyConflict`` and 422 for ``InvalidInput`` (``simstore.contrib._errors``); other
  errors stay Flask's (500).

``ext.store`` is the app's SimStore (made on first use, inside an app context). The ``flask
simstore`` command group offers ``db upgrade``, ``db current``, ``db check`` and ``stats``.
"""

from __future__ import annotations

import logging
import os
from typing import Any

try:
    import click
    from flask import Flask, current_app
except ImportError as error:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "simstore.contrib.flask needs Flask: pip install 'simstore[flask]' "
        "(from a checkout: pip install '.[flask]')"
    ) from error

from simstore.contrib._errors import STATUS, error_response
from simstore.contrib._knobs import (
    KNOBS,
    check_database_url,
    store_options,
    unknown_settings,
    warn_about_radius,
)
from simstore.storage import migrate
from simstore.store import SimStore

EXTENSION_KEY = "simstore"
_FLASK_ONLY = ("URL", "AUTO_UPGRADE", "ERROR_HANDLERS")  # read here, besides KNOBS
log = logging.getLogger("simstore")


class FlaskSimStore:
    """A Flask extension holding one SimStore per application."""

    def __init__(self, app: Flask | None = None) -> None:
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        app.config.setdefault("SIMSTORE_URL", None)
        app.config.setdefault("SIMSTORE_NAMESPACE", "default")
        app.config.setdefault("SIMSTORE_PRESET", None)
        for knob in KNOBS:
            app.config.setdefault(f"SIMSTORE_{knob}", "default" if knob == "NAMESPACE" else None)
        app.config.setdefault("SIMSTORE_AUTO_UPGRADE", None)
        app.config.setdefault("SIMSTORE_ERROR_HANDLERS", True)
        # a bad setting fails here, when the app starts, not at its first request
        _settings(app)
        if app.config["SIMSTORE_URL"] is not None:
            check_database_url(app.config["SIMSTORE_URL"], "SIMSTORE_URL")
        given = [key[len("SIMSTORE_") :] for key in app.config if key.startswith("SIMSTORE_")]
        for line in unknown_settings(given, (*KNOBS, *_FLASK_ONLY), "SIMSTORE_{}"):
            log.warning("%s", line)
        app.extensions[EXTENSION_KEY] = _State()
        app.cli.add_command(_command_group())
        if app.config["SIMSTORE_ERROR_HANDLERS"]:
            for kind in STATUS:
                app.register_error_handler(kind, _answer)

    @property
    def store(self) -> SimStore:
        """The current application's store (needs an application context)."""
        return store_for(current_app)


def _answer(error: Exception) -> tuple[dict[str, Any], int]:
    answer = error_response(error)
    if answer is None:  # pragma: no cover - registered for the mapped errors only
        raise error
    return answer


class _State:
    def __init__(self) -> None:
        self.store: SimStore | None = None


def bind_for(app: Flask) -> Any:
    """What the app's store binds to: SIMSTORE_URL, Flask-SQLAlchemy's engine, or a SQLite file."""
    url = app.config.get("SIMSTORE_URL")
    if url:
        return url
    sqlalchemy_extension = app.extensions.get("sqlalchemy")
    if sqlalchemy_extension is not None:
        with app.app_context():
            return sqlalchemy_extension.engine
    os.makedirs(app.instance_path, exist_ok=True)
    return f"sqlite:///{os.path.join(app.instance_path, 'simstore.db')}"


def store_for(app: Flask) -> SimStore:
    state: _State | None = app.extensions.get(EXTENSION_KEY)
    if state is None:
        raise RuntimeError("FlaskSimStore.init_app(app) was not called for this application")
    if state.store is None:
        options = _settings(app)
        state.store = SimStore(
            bind_for(app), auto_upgrade=app.config["SIMSTORE_AUTO_UPGRADE"], **options
        )
        warn_about_radius(state.store.policy, options.get("max_distance"), "SIMSTORE_{}")
    return state.store


def _settings(app: Flask) -> dict[str, Any]:
    return store_options(lambda knob: app.config.get(f"SIMSTORE_{knob}"), "SIMSTORE_{}")


def _command_group() -> click.Group:
    from flask.cli import AppGroup

    group = AppGroup("simstore", help="simstore near-duplicate store commands.")
    database = AppGroup("db", help="simstore's schema (its own alembic migrations).")
    group.add_command(database)

    @database.command("upgrade", help="Upgrade simstore's tables to this version's schema.")
    def upgrade() -> None:
        bind = bind_for(current_app)
        migrate.upgrade(bind)
        click.echo(migrate.status(bind).message)

    @database.command("current", help="Show the schema revision of the database.")
    def current() -> None:
        click.echo(migrate.status(bind_for(current_app)).message)

    @database.command("check", help="Exit non-zero unless the schema is up to date.")
    def check() -> None:
        status = migrate.status(bind_for(current_app))
        if status.error is not None:
            raise click.ClickException(status.error)
        click.echo(status.message)

    @group.command("stats", help="Counts of kept fingerprints and decisions.")
    def stats() -> None:
        for name, value in vars(store_for(current_app).stats()).items():
            click.echo(f"{name}: {value}")

    return group
