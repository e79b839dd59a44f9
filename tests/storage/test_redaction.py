"""A password never appears in what simstore prints, wherever it sat in the URL: ``user:pw@``,
``?password=`` (libpq), ``?passwd=`` (MySQL drivers), or cut in two by an unescaped '@'. Run
through the real CLI with --json against unreachable ports and the real servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from simstore.storage.db import redact, scrub
from tests.conftest import new_server_database

HIDDEN = "Hq4xWv9Lm2"
QUERY_SECRETS = ["password", "passwd", "pwd", "secret", "token", "PASSWORD", "api_token", "sslpass"]

FIRST, SECOND = "Pw9xKq", "Zq7vRt"  # the two halves of a password with an unescaped '@'
PASSWORD = f"{FIRST}@{SECOND}"
UNREACHABLE = {
    "user-password": f"postgresql+psycopg://bob:{FIRST}{SECOND}@127.0.0.1:1/x",
    "pg-query": f"postgresql+psycopg://bob@127.0.0.1:1/x?password={FIRST}{SECOND}",
    "mysql-query": f"mysql+pymysql://bob@127.0.0.1:1/x?passwd={FIRST}{SECOND}",
    "pg-unescaped-at": f"postgresql+psycopg://bob:{PASSWORD}@127.0.0.1:1/x",
    "mysql-unescaped-at": f"mysql+pymysql://bob:{PASSWORD}@127.0.0.1:1/x",
    "at-and-slash": f"postgresql+psycopg://bob:{FIRST}@Q/{SECOND}@127.0.0.1:1/x",
    "unescaped-at-in-query": f"postgresql+psycopg://bob@127.0.0.1:1/x?password={PASSWORD}",
    "mysql-both": f"mysql+pymysql://bob:{PASSWORD}@127.0.0.1:1/x?passwd={FIRST}{SECOND}",
}


def run(url: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "SIMSTORE_URL"}
    return subprocess.run(
        [sys.executable, "-m", "simstore.cli", "--db", url, "--json", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=environment,
        check=False,
    )


def assert_hidden(result: subprocess.CompletedProcess[str]) -> None:
    shown = result.stdout + result.stderr
    assert FIRST not in shown and SECOND not in shown, shown
    assert "Traceback" not in shown


@pytest.mark.slow  # CLI subprocesses
@pytest.mark.parametrize("url", UNREACHABLE.values(), ids=UNREACHABLE.keys())
@pytest.mark.parametrize("command", [("stats",), ("db", "upgrade"), ("query", "some text")])
def test_errors_never_show_the_password(url: str, command: tuple[str, ...]) -> None:
    result = run(url, *command)
    assert result.returncode in (3, 4), result.stderr  # database unavailable / invalid URL
    assert_hidden(result)
    assert json.loads(result.stdout)["error"]
    if url.count("@") > 1:  # refused before any connection, with the fix
        assert result.returncode == 4 and "%40" in result.stderr


def test_the_url_of_a_callers_engine_is_redacted_too() -> None:
    """A URL object SQLAlchemy parsed from an unescaped '@' carries half the password as host."""
    parsed = make_url(UNREACHABLE["pg-unescaped-at"])
    assert parsed.host == f"{SECOND}@127.0.0.1"
    message = f"database {redact(parsed)}: failed to resolve host '{parsed.host}'"
    assert FIRST not in scrub(message, parsed) and SECOND not in scrub(message, parsed)
    assert redact(parsed) == "postgresql+psycopg://bob:***@127.0.0.1:1/x"


@pytest.mark.slow  # CLI subprocesses
def test_a_query_password_is_hidden_in_the_json_output_of_a_working_server() -> None:
    """PostgreSQL: a trusted user logs in whatever the password; the answer still names the db."""
    url = make_url(new_server_database("postgresql"))
    with_password = url.update_query_dict({"password": FIRST + SECOND})
    written = with_password.render_as_string(hide_password=False)
    upgraded = run(written, "db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    assert_hidden(upgraded)
    ingested = run(written, "ingest", "--format", "lines", "-", stdin="a text to keep here\n")
    assert ingested.returncode == 0, ingested.stderr
    assert_hidden(ingested)
    assert json.loads(ingested.stdout)["db"].endswith("?password=***")


@pytest.mark.slow  # a CLI subprocess
def test_a_wrong_mysql_password_in_the_query_is_not_shown(tmp_path: Path) -> None:
    url = make_url(new_server_database("mysql")).update_query_dict({"passwd": FIRST + SECOND})
    result = run(url.render_as_string(hide_password=False), "stats")
    assert result.returncode == 3, result.stderr  # access denied
    assert_hidden(result)


@pytest.mark.parametrize("name", QUERY_SECRETS)
def test_every_password_like_query_parameter_is_hidden(name: str) -> None:
    # libpq's password and sslpassword, MySQL drivers' passwd, ODBC's PWD, tokens and secrets
    url = f"postgresql+psycopg://bob@db.example:5432/x?{name}={HIDDEN}&sslmode=require"
    shown = redact(url)
    assert HIDDEN not in shown
    assert f"{name}=***" in shown and "sslmode=require" in shown  # the rest is still shown
    message = f"could not connect with {name}={HIDDEN} to db.example"
    assert HIDDEN not in scrub(message, url)


@pytest.mark.parametrize("name", ["sslmode", "user_name", "application_name", "charset"])
def test_other_query_parameters_are_shown(name: str) -> None:
    url = f"postgresql+psycopg://bob:{HIDDEN}@db.example:5432/x?{name}=visible"
    assert redact(url) == f"postgresql+psycopg://bob:***@db.example:5432/x?{name}=visible"


def test_the_user_password_and_a_query_token_are_hidden_together() -> None:
    url = f"mysql+pymysql://bob:{FIRST}{SECOND}@db.example/x?token={HIDDEN}"
    shown = redact(url)
    assert FIRST not in shown and SECOND not in shown and HIDDEN not in shown
    assert shown == "mysql+pymysql://bob:***@db.example/x?token=***"


@pytest.mark.parametrize(
    ("url", "message", "scrubbed"),
    [
        (  # an unescaped '@' and a ':' in the password: the whole of it is one secret
            "postgresql+psycopg://bob:Pw9:x@Zq7v@127.0.0.1:1/x",
            "login Pw9:x@Zq7v refused by Zq7v@127.0.0.1",
            "login *** refused by ***@127.0.0.1",
        ),
        (  # SQLAlchemy cannot read this one (a port 'abc@...'): the URL as written still can
            "postgresql+psycopg://bob:Pw9x@Zq7v:abc@127.0.0.1:1/x?password=Zq7v",
            "login as bob:Pw9x@Zq7v:abc refused",
            "login as bob:*** refused",
        ),
        (  # an unescaped '@' in a query password, which SQLAlchemy reads as the user's
            "postgresql+psycopg://bob@127.0.0.1:1/x?password=Pw9x@Zq7v",
            "password=Pw9x@Zq7v wrong",
            "password=*** wrong",
        ),
        (  # as written, as quote_plus and as quote with nothing safe
            "postgresql+psycopg://bob:a b/c@h/x",
            "a%20b%2Fc a+b%2Fc a b/c",
            "*** *** ***",
        ),
        (  # three characters are searched for, two are not (they would hit words)
            "postgresql+psycopg://bob:abc@h/x",
            "abc ab",
            "*** ab",
        ),
        ("postgresql+psycopg://bob:ab@h/x", "ab x", "ab x"),
        (  # a URL that cannot be read is not shown at all
            "postgresql+psycopg://u:pw@[::1:5432/x",
            "cannot reach postgresql+psycopg://u:pw@[::1:5432/x now",
            "cannot reach <unparseable database URL> now",
        ),
    ],
    ids=["at-and-colon", "unreadable-port", "query-at", "quoted", "three", "two", "unparseable"],
)
def test_scrub_masks_each_whole_secret_once(url: str, message: str, scrubbed: str) -> None:
    # expected: each password-like part replaced by one *** (worked out by hand from the URL)
    assert scrub(message, url) == scrubbed


def test_scrub_masks_the_secrets_of_a_url_object_sqlalchemy_parsed() -> None:
    """A caller's engine's URL: its password, the tail of a password SQLAlchemy read as the host
    (two unescaped '@'), and every value of a repeated secret query parameter."""
    url = make_url(
        "postgresql+psycopg://bob:P1x@P2y@P3z@127.0.0.1:1/x?token=a1b2&token=c3d4&password=Hq4x"
    )
    message = "P1x then P2y@P3z@127.0.0.1 then a1b2 c3d4 Hq4x"
    assert scrub(message, url) == "*** then ***@127.0.0.1 then *** *** ***"


def test_an_unescaped_at_is_told_from_the_rest_of_the_url() -> None:
    # a SQLite path may hold '@' (there is no password to hide): shown whole, nothing masked
    said = redact("sqlite+pysqlite:////data/a@b@c.db")
    assert "***" not in said and make_url(said).database == "/data/a@b@c.db", said
    # a '://' in a query value does not move where the scheme ends: the password cut by its
    # '@' is hidden and the host is the host
    said = redact("postgresql://app:p@ss@127.0.0.1/db?application_name=https://x")
    assert "p@ss" not in said and "ss@" not in said and make_url(said).host == "127.0.0.1", said
    # and in a driver's message, the password cut there is masked whole, not as pieces too
    # short to search for
    url = "postgresql://app:p@ss@127.0.0.1/db?application_name=https://x"
    assert scrub("failed for p@ss", url) == "failed for ***"
    # a URL object (a caller's engine's) whose host SQLAlchemy cut after the password's first of
    # two unescaped '@': none of the password's pieces is shown
    parsed = make_url("postgresql://app:p@s@s@127.0.0.1/db")
    assert redact(parsed) == "postgresql://app:***@127.0.0.1/db", parsed.host
    # with no query, nothing of the database's name is trimmed with the '?' left over
    assert redact("postgresql://app:p@ss@127.0.0.1/DBX") == "postgresql://app:***@127.0.0.1/DBX"
