"""Connecting: URLs, engines and connections, and driver errors turned into simstore errors."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote

import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.pool import StaticPool

from simstore.errors import DatabaseUnavailable, InvalidInput, InvalidType, MissingExtra

log = logging.getLogger("simstore")

SQLITE_BUSY_TIMEOUT_S = 30.0


# query parameters that carry a password: ?password= (libpq), ?passwd= (MySQL drivers), and the
# like (sslpassword, a token); their values are never printed
_SECRET_PARAMETER = re.compile(r"pass|pwd|secret|token", re.IGNORECASE)
_UNPARSEABLE = "<unparseable database URL>"
_SHORTEST_SCRUBBED = 3  # shorter secrets are not searched for in free text (they hit words)


def _with_stray_at(url: str) -> tuple[str, str, str] | None:
    """(scheme, the part before '?', the query) of a server URL holding more than one '@': one
    is unescaped in a user name, password or query value, and SQLAlchemy would cut the URL at
    the wrong one (printing a piece of the password as the host); None otherwise."""
    scheme, found, rest = url.partition("://")
    if not found or scheme.split("+")[0] == "sqlite" or rest.count("@") < 2:
        return None
    head, _sep, query = rest.partition("?")
    return scheme, head, query


def _secrets(url: str | URL) -> list[str]:
    """Every password-like part of ``url``, wherever it sits, longest first."""
    found: list[str] = []
    if isinstance(url, str):  # as written: also right where SQLAlchemy would misread it
        _scheme, _found, rest = url.partition("://")
        head, _sep, query = rest.partition("?")
        if "@" in head:
            found.append(head.rpartition("@")[0].partition(":")[2])
        for name, value in parse_qsl(query, keep_blank_values=True):
            if _SECRET_PARAMETER.search(name):
                found.append(value)
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except (exc.ArgumentError, ValueError):  # ValueError: a port that is not a number
        return sorted({secret for secret in found if secret}, key=len, reverse=True)
    if parsed.password:
        found.append(str(parsed.password))
    if parsed.host and "@" in parsed.host:  # the tail of a password with an unescaped '@'
        found.append(parsed.host.rpartition("@")[0])
    for name, given in parsed.query.items():
        if _SECRET_PARAMETER.search(name):
            found.extend([given] if isinstance(given, str) else given)
    return sorted({secret for secret in found if secret}, key=len, reverse=True)


def redact(url: str | URL) -> str:
    """A URL fit to print: its password, wherever it sits (``user:***@``, ``?password=``,
    ``?passwd=``, or cut by an unescaped '@'), is replaced by ***."""
    if isinstance(url, str) and (stray := _with_stray_at(url)) is not None:
        scheme, head, query = stray
        if "@" in query:  # which value holds it cannot be told: show none of them
            return f"{redact(f'{scheme}://{head}')}?***"
        userinfo, _at, tail = head.rpartition("@")
        return redact(f"{scheme}://{userinfo.partition(':')[0]}:***@{tail}?{query}".rstrip("?"))
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except (exc.ArgumentError, ValueError):
        return _UNPARSEABLE
    hidden = {name: "***" for name in parsed.query if _SECRET_PARAMETER.search(name)}
    if hidden:
        parsed = parsed.update_query_dict(hidden)
    if parsed.host and "@" in parsed.host:
        parsed = parsed.set(host=parsed.host.rpartition("@")[2])
    return parsed.render_as_string(hide_password=True).replace("%2A%2A%2A", "***")


def scrub(message: str, url: str | URL) -> str:
    """``message`` with every password-like part of ``url`` (as written or URL-quoted) as ***;
    an unparseable URL is not shown at all."""
    if isinstance(url, str) and redact(url) == _UNPARSEABLE:
        return message.replace(url, _UNPARSEABLE)
    for secret in _secrets(url):
        if len(secret) >= _SHORTEST_SCRUBBED:
            for form in dict.fromkeys([secret, quote_plus(secret), quote(secret, safe="")]):
                message = message.replace(form, "***")
    return message


SQLITE_CACHE_KIB = 65536
SQLITE_MMAP_BYTES = 1 << 34


def _sqlite_pragmas(dbapi_connection: Any, _record: Any, *, read_only: bool = False) -> None:
    cursor = dbapi_connection.cursor()
    try:
        if not read_only:  # a read-only file keeps the journal mode it has
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        # 64 MiB of page cache (the default is 2 MiB): the four band indexes of a few million rows
        # stay in memory, which is what keeps inserts and lookups from going to disk at scale
        cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
        # read pages through a memory map (capped by SQLite's build, 2 GiB here): a lookup in a
        # file of tens of millions of rows costs page-cache hits instead of read() calls
        cursor.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
    finally:
        cursor.close()


def _postgresql_session(
    dbapi_connection: Any, _record: Any, *, synchronous_commit: bool = True
) -> None:
    # No JIT compilation: simstore's lookups are index probes of a millisecond, but the planner
    # guesses 0.5% of the table for each band-key probe (it cannot see the key), so past a few
    # hundred thousand rows their estimated cost passes jit_above_cost and every query spent ~20
    # ms compiling code to run 1 ms of work (window --url at 600k: p50 23.6 -> 1.0 ms).
    # Through pg_settings, so that a server without JIT (before 11) is left as it is.
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("SELECT set_config(name, 'off', false) FROM pg_settings WHERE name = 'jit'")
        if not synchronous_commit:  # the caller's choice (SimStore's synchronous_commit)
            cursor.execute("SET synchronous_commit = off")
    finally:
        cursor.close()
    dbapi_connection.commit()


def configure_sessions(engine: Engine, *, synchronous_commit: bool = True) -> Engine:
    """Apply simstore's session settings to every new connection of an engine it made
    (``synchronous_commit`` False: PostgreSQL's, off for the engine's sessions)."""
    if engine.dialect.name == "sqlite":
        read_only = engine.url.query.get("mode") == "ro"
        event.listen(engine, "connect", functools.partial(_sqlite_pragmas, read_only=read_only))
    elif engine.dialect.name == "postgresql":
        event.listen(
            engine,
            "connect",
            functools.partial(_postgresql_session, synchronous_commit=synchronous_commit),
        )
    return engine


_RELAXED_ELSEWHERE = {
    "sqlite": "SQLite, as simstore opens it (WAL, synchronous=NORMAL), already commits without "
    "waiting for the disk",
    "mysql": "MySQL/MariaDB have no such setting per session: the server's "
    "innodb_flush_log_at_trx_commit = 2 does this for all its clients",
}


def check_relaxed_commit(bind: object) -> None:
    """Refuse ``synchronous_commit=False`` where simstore cannot apply it (anything but a
    PostgreSQL URL)."""
    if not isinstance(bind, (str, URL)):
        raise InvalidInput(
            "synchronous_commit=False needs a database URL (simstore sets it on the sessions it "
            "opens); for an Engine of yours, set it on the engine, e.g. "
            "connect_args={'options': '-c synchronous_commit=off'}"
        )
    try:
        backend = (make_url(bind) if isinstance(bind, str) else bind).get_backend_name()
    except (exc.ArgumentError, ValueError):
        return  # create_engine_for says what is wrong with the URL
    if backend != "postgresql":
        why = _RELAXED_ELSEWHERE.get("mysql" if backend == "mariadb" else backend, "")
        raise InvalidInput(
            f"synchronous_commit=False is PostgreSQL's setting, not {backend}'s"
            + (f": {why}" if why else "")
        )


def parse_url(url: str | URL) -> URL:
    """``url`` parsed, or InvalidInput that says how a database URL is written."""
    try:
        return make_url(url) if isinstance(url, str) else url
    except exc.ArgumentError as error:
        raise InvalidInput(
            f"not a database URL: {redact(url)} (write e.g. sqlite:///simstore.db, "
            "postgresql+psycopg://user@host/db or mysql+pymysql://user@host/db)"
        ) from error
    except ValueError as error:  # SQLAlchemy reads the port with int()
        raise InvalidInput(
            f"not a database URL: {redact(url)}: its port is not a number ({error}); an IPv6 "
            "host goes in brackets before the port: postgresql+psycopg://user@[::1]:5432/db"
        ) from error


def create_engine_for(url: str | URL) -> Engine:
    """An Engine configured the way simstore needs for each dialect."""
    parsed = parse_url(url)
    if isinstance(url, str) and _with_stray_at(url) is not None:
        raise InvalidInput(
            f"{redact(url)} holds more than one '@': write an '@' inside the user name, password "
            "or a query value as %40 (: / ? # [ ] @ there must be percent-encoded)"
        )
    backend = parsed.get_backend_name()
    kwargs: dict[str, Any] = {}
    if backend == "sqlite":
        database = parsed.database or ""
        memory = (
            database in ("", ":memory:")
            or database.startswith("file::memory:")
            or (parsed.query.get("mode") == "memory" and bool(parsed.query.get("uri")))
        )
        busy_timeout = _busy_timeout(parsed)
        kwargs["connect_args"] = {"timeout": busy_timeout, "check_same_thread": False}
        if memory:
            kwargs["poolclass"] = StaticPool
        elif not _sqlite_path(database).parent.exists():
            raise DatabaseUnavailable(
                f"cannot open {redact(parsed)}: folder {_sqlite_path(database).parent} does not "
                "exist"
            )
        else:
            # SimStore keeps one connection per thread that uses it (SimStore._kept_connection):
            # never make other threads wait for the pool because of them
            kwargs["max_overflow"] = -1
            parsed = read_only_sqlite(parsed, database) or parsed
    else:
        kwargs["pool_pre_ping"] = True
        if backend in ("mysql", "mariadb") and "charset" not in parsed.query:
            parsed = parsed.update_query_dict({"charset": "utf8mb4"})
    try:
        engine = sa.create_engine(parsed, **kwargs)
    except (TypeError, ValueError) as error:  # the dialect reads the URL's query arguments
        raise InvalidInput(_bad_arguments(parsed, error)) from error
    except (exc.ArgumentError, exc.NoSuchModuleError, ImportError) as error:
        if parsed.drivername.split("+")[0] == "postgres":
            raise InvalidInput(
                f"{redact(parsed)}: SQLAlchemy names PostgreSQL 'postgresql': write "
                "postgresql+psycopg://..."
            ) from error
        hint = _driver_hint(error)
        kind = MissingExtra if hint else DatabaseUnavailable
        raise kind(f"cannot use {redact(parsed)}: {scrub(str(error), parsed)}{hint}") from error
    event.listen(engine, "do_connect", functools.partial(_connect, url=parsed))
    return configure_sessions(engine)


def _bad_arguments(url: URL, error: BaseException) -> str:
    """Why the driver refuses a URL's query arguments, for people."""
    given = ", ".join(f"{name}={'***' if _SECRET_PARAMETER.search(name) else value}"
                      for name, value in url.query.items())  # fmt: skip
    return (
        f"{redact(url)}: the {url.get_backend_name()} driver {url.get_driver_name()} refuses "
        f"the URL's arguments ({given or 'none'}): {scrub(str(error), url)}; check each "
        "?name=value against the driver's connection options"
    )


def _connect(
    dialect: Any, _record: Any, cargs: list[Any], cparams: dict[str, Any], *, url: URL
) -> Any:
    """Connect as SQLAlchemy would, but a driver that trips over an argument of the URL (an
    unknown name, a charset it does not know) says so as InvalidInput, not as its TypeError."""
    try:
        return dialect.connect(*cargs, **cparams)
    except (TypeError, ValueError, AttributeError, LookupError) as error:
        if isinstance(error, dialect.loaded_dbapi.Error):
            raise  # the driver's own errors are translated by translate_errors
        raise InvalidInput(_bad_arguments(url, error)) from error


def _sqlite_path(database: str) -> Path:
    """The file a SQLite database names, also as a URI filename (``file:/path/a.db``)."""
    if database.startswith("file:"):
        return Path(unquote(database[len("file:") :].split("?", 1)[0]))
    return Path(database)


def read_only_sqlite(parsed: URL, database: str) -> URL | None:
    """The URL that opens an existing SQLite file for reading only, when this user cannot write
    the file or its folder (None: it can, or the URL is a URI of the caller's own).

    SQLite would otherwise fail every statement, reads too, with "attempt to write a readonly
    database" (opening a WAL file writes its -shm index). ``mode=ro`` reads it; where the folder
    cannot be written and holds no write-ahead log, ``immutable=1`` too, since no -shm file can
    be made: SQLite then takes the file as unchanging, so a writer elsewhere (another user
    that may write the folder) is not seen until the store is opened again. A write then fails
    with DatabaseUnavailable that says the database was opened read-only.
    """
    path = os.path.abspath(database)
    folder = os.path.dirname(path)
    if parsed.query.get("uri") or not os.path.isfile(path):
        return None
    if os.access(path, os.W_OK) and os.access(folder, os.W_OK):
        return None
    query = {"uri": "true", "mode": "ro"}
    if not os.access(folder, os.W_OK) and not os.path.exists(f"{path}-wal"):
        query["immutable"] = "1"
    return parsed.set(database=f"file:{quote(path)}").update_query_dict(query)


# a missing driver module -> (what to write instead, or ""; simstore's extra that installs one)
_DRIVER_HINTS = {
    "psycopg": ("", "postgresql"),
    "psycopg2": ("write postgresql+psycopg:// (psycopg 3)", "postgresql"),
    "pymysql": ("", "mysql"),
    "MySQLdb": ("mysql:// means the MySQLdb driver: write mysql+pymysql://", "mysql"),
}


def _driver_hint(error: BaseException) -> str:
    """What to install (and write) when a URL's driver is missing; empty when it is not that."""
    name = str(getattr(error, "name", None) or "").split(".")[0]
    if name not in _DRIVER_HINTS:
        return ""
    instead, extra = _DRIVER_HINTS[name]
    install = (
        f"install simstore[{extra}]: pip install 'simstore[{extra}]' "
        f"(from a checkout: pip install '.[{extra}]')"
    )
    return f"; {instead} and {install}" if instead else f"; {install}"


def _busy_timeout(url: URL) -> float:
    """Seconds a SQLite writer waits for the lock: the URL's ``?timeout=`` or 30."""
    given = url.query.get("timeout")
    if given is None:
        return SQLITE_BUSY_TIMEOUT_S
    try:
        seconds = float(given if isinstance(given, str) else given[0])
    except ValueError:
        raise InvalidInput(f"timeout must be a number of seconds, got {given!r}") from None
    if not 0 <= seconds <= 3600:
        raise InvalidInput(f"timeout must lie in 0..3600 seconds, got {seconds}")
    return seconds


def resolve_bind(bind: object) -> tuple[Engine | None, Connection | None]:
    """Split a bind into (engine, connection); exactly one is set. URLs make a new engine."""
    if isinstance(bind, Connection):
        return None, bind
    if isinstance(bind, Engine):
        return bind, None
    if isinstance(bind, (str, URL)):
        return create_engine_for(bind), None
    raise InvalidType(
        f"bind must be a database URL, an Engine or a Connection, not {type(bind).__name__}"
    )


@contextlib.contextmanager
def connection_for(bind: object, *, begin: bool = False) -> Iterator[Connection]:
    """A Connection on ``bind``: the caller's own as it is (inside its transaction), else a new one.

    A new connection is closed afterwards, with its transaction committed on success when
    ``begin``; an engine made here from a URL is disposed. Driver errors become
    DatabaseUnavailable.
    """
    engine, connection = resolve_bind(bind)
    if connection is not None:
        yield connection
        return
    assert engine is not None  # noqa: S101 - resolve_bind sets exactly one
    try:
        with translate_errors(engine.url), engine.begin() if begin else engine.connect() as own:
            yield own
    finally:
        if isinstance(bind, (str, URL)):
            engine.dispose()


def default_url() -> str:
    """``SIMSTORE_URL`` if set, else ``sqlite:///simstore.db`` (used by the CLI only)."""
    return os.environ.get("SIMSTORE_URL") or "sqlite:///simstore.db"


_DRIVERS = frozenset({"sqlite3", "psycopg", "psycopg2", "pymysql", "MySQLdb", "mysql"})


def _raw_driver_error(error: BaseException) -> bool:
    """A driver's own error that SQLAlchemy did not wrap: raised while it set up a session (the
    isolation level of a pooled connection the server had dropped, with pymysql)."""
    return any(
        cls.__name__ == "Error" and cls.__module__.split(".")[0] in _DRIVERS
        for cls in type(error).__mro__
    )


@contextlib.contextmanager
def translate_errors(url: str | URL) -> Iterator[None]:
    """Re-raise driver errors about reaching or using the database as DatabaseUnavailable."""
    try:
        yield
    except exc.TimeoutError as error:  # a caller's engine whose pool has no connection free
        reason = str(error).split(" (Background", 1)[0]
        raise DatabaseUnavailable(
            f"database {redact(url)}: no free connection in the engine's pool ({reason})"
        ) from error
    except exc.DBAPIError as error:
        if isinstance(error, exc.IntegrityError):
            raise
        reason = str(error.orig).strip().splitlines()[0] if error.orig else str(error)
        if "readonly database" in reason:
            reason = (
                "the database is read-only (this user cannot write the file or its folder: "
                "reading works, adding, purging and upgrading do not)"
            )
        raise DatabaseUnavailable(f"database {redact(url)}: {scrub(reason, url)}") from error
    except Exception as error:
        if not _raw_driver_error(error):
            raise
        reason = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        raise DatabaseUnavailable(f"database {redact(url)}: {scrub(reason, url)}") from error
