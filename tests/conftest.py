"""Shared fixtures: one store factory parametrized over SQLite (file and memory), PostgreSQL and
MySQL/MariaDB. Server URLs come from SIMSTORE_TEST_POSTGRESQL_URL and SIMSTORE_TEST_MYSQL_URL; each
test session works in a fresh database of its own on each server, dropped at the end. An unset or
unreachable server skips with a reason, unless SIMSTORE_REQUIRE_SERVERS=1 (CI), where it fails.

Every test case that needs a server is marked ``server`` at collection (``pytest -m "not server"``
runs without one): the cases given a server by a parameter (``dialect``, ``kind``, a fixture's
own), those using ``server_url``, and those whose code reaches ``new_server_database`` or a server
URL's environment variable.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import CodeType, FunctionType
from typing import Any, NoReturn

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

from simstore.storage import migrate
from simstore.storage.db import create_engine_for
from simstore.store import SimStore

SERVER_ENV = {
    "postgresql": "SIMSTORE_TEST_POSTGRESQL_URL",
    "mysql": "SIMSTORE_TEST_MYSQL_URL",
}
DIALECTS = ["sqlite-file", "sqlite-memory", "postgresql", "mysql"]
SERVERS = ["postgresql", "mysql"]
StoreFactory = Callable[..., SimStore]
# Every JVM the suite starts (the Spark tests' sessions, the CLI's and the docs' spark runs)
# runs a few seconds on small inputs: the client compiler alone and a serial collector do that
# with ~40% less CPU (13 against 21 core-seconds a `simstore spark dedup` of 300 records), which
# the other worker gets. Spark's launcher adds SPARK_SUBMIT_OPTS to the driver's command line; a
# value the caller set is kept.
os.environ.setdefault("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
# how long a test waits for a process, thread or queue before calling it hung: far above what a
# loaded machine needs (a test under load is slower, not wrong), never a pace to keep
HANG = 900


def unavailable(reason: str, *, needed: str = "server", module: bool = False) -> NoReturn:
    """Skip for ``reason`` locally; under SIMSTORE_REQUIRE_SERVERS=1 (CI) fail instead.
    ``needed`` names what is missing; ``module``: called while a test module is imported."""
    if os.environ.get("SIMSTORE_REQUIRE_SERVERS") == "1":
        pytest.fail(f"{needed} required in CI: {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=module)


def need_module(name: str, extra: str, *, module: bool = False) -> Any:
    """Import ``name``, an optional dependency of the ``extra`` extra: without it, skip locally,
    and under SIMSTORE_REQUIRE_SERVERS=1 (CI, where ``.[test]`` installs every extra) fail."""
    try:
        return importlib.import_module(name)
    except ImportError as error:
        unavailable(
            f"{name} is not installed ({error})", needed=f"the {extra} extra", module=module
        )


_session_databases: dict[str, str] = {}
_created: list[tuple[str, str]] = []


def _fresh_database(kind: str) -> str:
    """A URL of a database created for this test session on the ``kind`` server."""
    if kind not in _session_databases:
        _session_databases[kind] = new_server_database(kind)
    return _session_databases[kind]


def new_server_database(kind: str) -> str:
    """Create an empty database on the ``kind`` server (dropped when the session ends)."""
    base = os.environ.get(SERVER_ENV[kind])
    if not base:
        unavailable(f"{SERVER_ENV[kind]} is not set")
    name = f"simstore_test_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(sa.text(f"CREATE DATABASE {name}"))
    except sa.exc.OperationalError as error:
        unavailable(f"{kind} server unreachable at {make_url(base).host}: {error.orig}")
    finally:
        admin.dispose()
    url = make_url(base).set(database=name).render_as_string(hide_password=False)
    _created.append((kind, url))
    return url


@contextlib.contextmanager
def lock_waiting_engines(url: str) -> Iterator[tuple[Engine, Engine]]:
    """simstore's engine for a PostgreSQL ``url``, and a plain one whose sessions give up a lock
    wait after a second (lock_timeout: a wait becomes an error, never a clock)."""
    engine = create_engine_for(url)
    impatient = sa.create_engine(url, connect_args={"options": "-c lock_timeout=1000"})
    try:
        yield engine, impatient
    finally:
        engine.dispose()
        impatient.dispose()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for kind, url in _created:
        admin = sa.create_engine(os.environ[SERVER_ENV[kind]], isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as connection:
                if kind == "postgresql":
                    connection.execute(
                        sa.text(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE datname = :name AND pid <> pg_backend_pid()"
                        ),
                        {"name": make_url(url).database},
                    )
                connection.execute(sa.text(f"DROP DATABASE IF EXISTS {make_url(url).database}"))
        except sa.exc.SQLAlchemyError:
            pass
        finally:
            admin.dispose()
    # another session in this process (pytest.main called again, as mutmut does) makes its own
    _session_databases.clear()
    _created.clear()


@pytest.hookimpl(tryfirst=True)  # before -m selects by these marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _needs_a_server(item):
            item.add_marker(pytest.mark.server)
    # the full soak (minutes per server) runs only when asked for: deselected, never skipped, so
    # that a CI run shows no skipped server case
    if not full_soak_selected(config):
        soaks = [item for item in items if item.get_closest_marker("soak")]
        if soaks:
            config.hook.pytest_deselected(items=soaks)
            items[:] = [item for item in items if not item.get_closest_marker("soak")]


def full_soak_selected(config: pytest.Config) -> bool:
    """Whether ``-m`` asks for the full soak (``-m soak``, or ``-m slow`` without ``not``)."""
    expression = str(config.getoption("markexpr") or "")
    return "soak" in expression or ("slow" in expression and "not slow" not in expression)


def _needs_a_server(item: pytest.Item) -> bool:
    if "server_url" in getattr(item, "fixturenames", ()):
        return True
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec else {}
    values = [value for value in params.values() if isinstance(value, str)]
    if any(value in SERVERS for value in values):
        return True
    if any(value.startswith("sqlite") for value in values):
        return False  # a SQLite case of a test whose other cases make a server database
    function = getattr(item, "obj", None)
    return isinstance(function, FunctionType) and _reaches_a_server(function, set())


def _reaches_a_server(function: FunctionType, seen: set[FunctionType]) -> bool:
    """Whether the test, or a helper of the test suite it calls, makes or reads a server URL."""
    seen.add(function)
    for code in _code_objects(function.__code__):
        if {"new_server_database", "SERVER_ENV"} & set(code.co_names):
            return True
        if any(isinstance(const, str) and const in SERVER_ENV.values() for const in code.co_consts):
            return True
        for name in code.co_names:
            helper = function.__globals__.get(name)
            if (
                isinstance(helper, FunctionType)
                and helper.__module__.startswith("tests.")
                and helper not in seen
                and _reaches_a_server(helper, seen)
            ):
                return True
    return False


def _code_objects(code: CodeType) -> Iterator[CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _code_objects(const)


@pytest.fixture(params=DIALECTS)
def dialect(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database_url(dialect: str, tmp_path: Path) -> str:
    """A URL for the dialect, already at the packaged schema head (SQLite memory: plain URL)."""
    if dialect == "sqlite-file":
        return f"sqlite:///{tmp_path / 'store.db'}"
    if dialect == "sqlite-memory":
        return "sqlite://"
    url = _fresh_database(dialect)
    migrate.upgrade(url)
    return url


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """One engine per test: stores made from it share a SQLite memory database too."""
    made = create_engine_for(database_url)
    yield made
    made.dispose()


@pytest.fixture
def make_store(engine: Engine) -> StoreFactory:
    """Build stores on the test's database, each test in a namespace of its own."""
    namespace = f"t-{uuid.uuid4().hex[:12]}"

    def build(**options: Any) -> SimStore:
        options.setdefault("namespace", namespace)
        options.setdefault("auto_upgrade", True)
        return SimStore(engine, **options)

    return build


@pytest.fixture(params=SERVERS)
def server_url(request: pytest.FixtureRequest) -> str:
    url = _fresh_database(str(request.param))
    migrate.upgrade(url)
    return url
