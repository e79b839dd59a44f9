"""Django integration: add ``"simstore.contrib.django"`` to INSTALLED_APPS.

Configuration: an optional ``SIMSTORE`` setting, a dict with any of ``URL`` (default: the Django
database named by ``DATABASE``, itself ``"default"``, translated to an SQLAlchemy URL),
``NAMESPACE``, ``PRESET``, ``KEEP``, ``POLICY`` (``"minhash"``, ``"simhash-verified"`` or
``"simhash"``; None: the namespace's recorded policy, ``minhash`` for a new one), ``THRESHOLD``
and ``LONG_THRESHOLD`` (short and long texts' similarity; default: the policy's own),
``POLICY_OPTIONS`` (any other option: a dict or ``"fold_traditional=true,..."``) and
``MAX_DISTANCE`` (3, the SimHash radius: it decides texts only under the SimHash policies; under
``minhash`` only bare fingerprints, and setting it logs a warning), ``GROUP_COMMIT`` (False:
concurrent adds share one transaction when True) and ``SYNCHRONOUS_COMMIT`` (True; False on
PostgreSQL commits without waiting for the WAL flush), with the meanings of
``simstore.contrib._knobs``. A system check (``manage.py check``, run by ``runserver`` and
``migrate``) reports a bad setting by name when the project starts: a ``URL`` that does not parse
or whose driver is missing (``postgres://``, ``mysql://`` without ``+pymysql``) and a ``DATABASE``
that ``DATABASES`` lacks are errors; a key of ``SIMSTORE`` that is no setting, or a top-level
``SIMSTORE_*`` setting (read by nothing), is a warning.

Schema: ``manage.py migrate`` creates and upgrades simstore's tables, through a Django migration
of this app that runs simstore's own alembic upgrade (simstore keeps its own version table, so
Django's and simstore's histories never mix). ``manage.py simstore db upgrade|current|check`` and
``manage.py simstore stats`` are there too. ``get_store()`` returns the project's SimStore.
"""

from __future__ import annotations

import threading
from typing import Any

try:
    from django.conf import settings
    from django.db import connections
except ImportError as error:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "simstore.contrib.django needs Django: pip install 'simstore[django]' "
        "(from a checkout: pip install '.[django]')"
    ) from error

from sqlalchemy.engine import URL

from simstore.contrib._knobs import store_options, warn_about_radius
from simstore.errors import InvalidInput
from simstore.store import SimStore

_DRIVERS = {
    "sqlite3": "sqlite",
    "postgresql": "postgresql+psycopg",
    "mysql": "mysql+pymysql",
}
DJANGO_ONLY = ("URL", "DATABASE")  # the SIMSTORE keys read here, besides _knobs.KNOBS
_lock = threading.Lock()
_stores: dict[str, SimStore] = {}


def _options() -> dict[str, Any]:
    return dict(getattr(settings, "SIMSTORE", {}) or {})


def store_settings() -> dict[str, Any]:
    """``SimStore`` keyword arguments from ``settings.SIMSTORE``, checked (``InvalidInput``)."""
    options = _options()
    return store_options(options.get, 'SIMSTORE["{}"]')


def configured_alias() -> str:
    """The Django database simstore lives in (``SIMSTORE["DATABASE"]``, default ``"default"``)."""
    return str(_options().get("DATABASE", "default"))


def database_url(alias: str | None = None) -> str:
    """The SQLAlchemy URL of a Django database (the one the process really uses, test DBs too).

    A ``HOST`` that starts with ``/`` is a Unix socket, as Django reads it: PostgreSQL's socket
    directory goes in the URL's query (``?host=/var/run/postgresql``, as psycopg expects), MySQL's
    socket file as ``?unix_socket=``; in the URL's host part it would become the database name.
    """
    config = connections[alias or configured_alias()].settings_dict
    backend = str(config["ENGINE"]).rsplit(".", 1)[-1]
    driver = _DRIVERS.get(backend)
    if driver is None:
        raise InvalidInput(f"simstore cannot use Django's database engine {config['ENGINE']}")
    if driver == "sqlite":
        name = str(config["NAME"])
        return "sqlite://" if name in ("", ":memory:") else f"sqlite:///{name}"
    host = str(config.get("HOST") or "") or None
    port = int(config["PORT"]) if config.get("PORT") else None
    query: dict[str, str] = {}
    if host is not None and host.startswith("/"):  # a Unix socket's directory (or MySQL's file)
        query = {"unix_socket": host} if driver.startswith("mysql") else {"host": host}
        if port is not None and not driver.startswith("mysql"):
            query["port"] = str(port)  # PostgreSQL names the socket file by it
        host = port = None
    url = URL.create(
        driver,
        username=config.get("USER") or None,
        password=config.get("PASSWORD") or None,
        host=host,
        port=port,
        database=config.get("NAME") or None,
        query=query,
    )
    return url.render_as_string(hide_password=False)


def store_url() -> str:
    return str(_options().get("URL") or database_url())


def get_store() -> SimStore:
    """The project's SimStore, made on first use and shared by the process."""
    url = store_url()
    with _lock:
        store = _stores.get(url)
        if store is None:
            options = store_settings()
            store = _stores[url] = SimStore(
                url,
                auto_upgrade=False,  # manage.py migrate (or simstore db upgrade) owns the schema
                **options,
            )
            warn_about_radius(store.policy, options.get("max_distance"), 'SIMSTORE["{}"]')
        return store
