"""Hostile and bad input through every public entry point: random Unicode (control characters, lone
surrogates, huge texts), odd keys and namespaces, SQL injection strings and wrong types, through
the fingerprint functions, SimStore and the ``simstore`` command. The outcome is a result or an
error of simstore's own family, never a raw exception from a dependency and never a half-written
row; passwords never reach an error message or a log."""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import random
import subprocess
import sys
import traceback
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine, make_url

from simstore import analyze, fingerprint, fingerprint_many, from_hex, hamming, presets, to_hex
from simstore.cli import main
from simstore.errors import DatabaseUnavailable, InvalidInput, SimstoreError
from simstore.store import BatchFailed, SimStore
from tests._workers import PASSWORD, ROOT, START, audit, random_text, row_counts
from tests.conftest import HANG, StoreFactory, new_server_database

INJECTIONS = [
    "x'; DROP TABLE simstore_fingerprints; --",
    "Robert'); DROP TABLE simstore_namespaces;--",
    '"; DELETE FROM simstore_decisions; --',
    "' OR '1'='1",
    "' UNION SELECT id, fp FROM simstore_fingerprints --",
    "`key`",
    "%s",
    "%(ns)s",
    ":ns",
    "?",
    "$1",
    "\\",
    "/* */",
    "ns\n-- comment",
]
SIMSTORE_TABLES = {"simstore_namespaces", "simstore_fingerprints", "simstore_decisions"}
# every code point but the lone surrogates, which have tests of their own (a simstore bug below)
CHARACTERS = st.characters(exclude_categories=["Cs"])
ANY_CHARACTERS = st.characters(exclude_categories=())
_namespaces = itertools.count()

FUZZ = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _valid_key(key: str) -> bool:
    """simstore's documented key rule: 1 to 255 characters, no NUL."""
    return 1 <= len(key) <= 255 and "\x00" not in key


def _stored_keys(engine: Engine, namespace: str) -> list[str]:
    with engine.connect() as conn:
        return list(
            conn.execute(
                sa.text(
                    "SELECT f.key FROM simstore_fingerprints f JOIN simstore_namespaces n "
                    "ON n.id = f.ns_id WHERE n.name = :ns"
                ),
                {"ns": namespace},
            ).scalars()
        )


def _tables(engine: Engine) -> set[str]:
    return set(sa.inspect(engine).get_table_names()) & SIMSTORE_TABLES


def _cause(error: SimstoreError) -> BaseException | None:
    """What went wrong: for a failed add_many batch, the error that failed it."""
    return error.__cause__ if isinstance(error, BatchFailed) else error


def _unique(label: str) -> str:
    """A namespace no other example uses (MariaDB's PAD SPACE keys would otherwise collide)."""
    return f"{next(_namespaces)}-{label}"


# --- fingerprints -----------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(text=st.text(ANY_CHARACTERS, max_size=400), preset=st.sampled_from(presets()))
def test_every_text_gets_a_fingerprint_under_every_preset(text: str, preset: str) -> None:
    result = analyze(text, preset=preset)
    assert 0 <= result.fingerprint < 1 << 64 and result.features >= 0
    assert fingerprint(text, preset=preset) == result.fingerprint
    assert fingerprint_many([text, text], preset=preset) == [result.fingerprint] * 2


@pytest.mark.parametrize("preset", presets())
def test_a_huge_text_with_control_characters_and_surrogates(preset: str) -> None:
    text = ("Ünïcode 中文混合 text\x00\x07\x1b[31m\r\n\t\u200b\ufeff\ud800 " * 20_000)[:400_000]
    result = analyze(text, preset=preset)
    assert 0 <= result.fingerprint < 1 << 64 and result.features > 0


WRONG: dict[str, Callable[[], object]] = {
    "bytes text": lambda: fingerprint(b"bytes"),  # type: ignore[arg-type]
    "None text": lambda: fingerprint(None),  # type: ignore[arg-type]
    "int text": lambda: analyze(42),  # type: ignore[arg-type]
    "one string as texts": lambda: fingerprint_many("a string"),
    "ints as texts": lambda: fingerprint_many([1, 2]),  # type: ignore[list-item]
    "None as texts": lambda: fingerprint_many(None),  # type: ignore[arg-type]
    "bytes in texts": lambda: fingerprint_many(iter(["ok", b"x"])),  # type: ignore[arg-type]
    "None preset": lambda: fingerprint("text", preset=None),  # type: ignore[arg-type]
    "int preset": lambda: fingerprint("text", preset=123),  # type: ignore[arg-type]
    "unknown preset": lambda: fingerprint("text", preset="nope"),
    "injection preset": lambda: fingerprint("text", preset=INJECTIONS[0]),
    "bool bits": lambda: fingerprint("text", bits=True),
    "32 bits": lambda: fingerprint("text", bits=32),
    "str bits": lambda: fingerprint("text", bits="64"),  # type: ignore[arg-type]
    "negative to_hex": lambda: to_hex(-1),
    "huge to_hex": lambda: to_hex(1 << 64),
    "float to_hex": lambda: to_hex(1.5),  # type: ignore[arg-type]
    "bad from_hex": lambda: from_hex("xyz"),
    "long from_hex": lambda: from_hex("1" * 17),
    "bytes from_hex": lambda: from_hex(b"ff"),  # type: ignore[arg-type]
    "str hamming": lambda: hamming("a", 1),  # type: ignore[arg-type]
    "negative hamming": lambda: hamming(-1, 1),
}


@pytest.mark.parametrize("call", WRONG.values(), ids=WRONG.keys())
def test_wrong_types_and_values_for_the_fingerprint_functions(call: Callable[[], object]) -> None:
    with pytest.raises(InvalidInput):
        call()


@settings(max_examples=60, deadline=None)
@given(
    value=st.one_of(
        st.none(),
        st.integers(),
        st.floats(),
        st.binary(),
        st.lists(st.text(max_size=3), max_size=2),
        st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
    )
)
def test_any_non_text_is_refused_by_the_fingerprint_functions(value: object) -> None:
    with pytest.raises(InvalidInput):
        fingerprint(value)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        fingerprint_many(["fine", value])  # type: ignore[list-item]


# --- the store --------------------------------------------------------------------------------


@FUZZ
@given(
    key=st.one_of(st.text(CHARACTERS, max_size=300), st.sampled_from(INJECTIONS)),
    value=st.integers(0, (1 << 64) - 1),
)
def test_any_key_round_trips_or_is_refused_without_a_row(
    make_store: StoreFactory, engine: Engine, key: str, value: int
) -> None:
    store = make_store(namespace=_unique("keys"))
    try:
        decision = store.add(key=key, fingerprint=value)
    except SimstoreError as error:
        assert not _valid_key(key), error
        assert not isinstance(error, DatabaseUnavailable)
        assert row_counts(engine, store.namespace) == (0, 0)
        return
    assert _valid_key(key)
    assert decision.key == key and decision.inserted and decision.fingerprint == value
    again = store.get(key)
    assert again is not None and again.key == key and again.fingerprint == value
    assert [m.key for m in store.query(fingerprint=value, max_distance=0)] == [key]
    assert _stored_keys(engine, store.namespace) == [key]  # stored verbatim
    assert store.remove(key) and store.get(key) is None
    assert row_counts(engine, store.namespace) == (0, 0)


@FUZZ
@given(namespace=st.one_of(st.text(CHARACTERS, max_size=300), st.sampled_from(INJECTIONS)))
def test_any_namespace_is_its_own_or_is_refused(
    make_store: StoreFactory, engine: Engine, namespace: str
) -> None:
    name = _unique(namespace)
    try:
        store = make_store(namespace=name)
    except SimstoreError as error:
        assert not _valid_key(name), error  # namespaces follow the key rule
        assert not isinstance(error, DatabaseUnavailable)
        return
    assert _valid_key(name)
    assert store.add(key="k", fingerprint=12345).inserted
    assert store.stats().namespace == name and row_counts(engine, name) == (1, 0)  # kept: no log
    assert _tables(engine) == SIMSTORE_TABLES


@FUZZ
@given(text=st.one_of(st.text(CHARACTERS, max_size=500), st.sampled_from(INJECTIONS)))
def test_any_text_is_added_or_refused_without_a_row(
    make_store: StoreFactory, engine: Engine, text: str
) -> None:
    store = make_store(namespace=_unique("texts"))
    try:
        decision = store.add(text, key="k")
    except SimstoreError as error:
        assert not isinstance(error, DatabaseUnavailable), error
        assert row_counts(engine, store.namespace) == (0, 0)
        return
    assert decision.inserted
    assert store.add(text, key="k") == store.get("k")  # a replay, no second row
    assert "k" in [m.key for m in store.query(text)]
    assert row_counts(engine, store.namespace) == (1, 0)  # a kept row is its decision's record


def _bad_calls(store: SimStore, engine: Engine) -> dict[str, Callable[[], object]]:
    def many(items: Any, **options: Any) -> Callable[[], object]:
        return lambda: list(store.add_many(items, **options))

    return {
        "bytes text": lambda: store.add(b"bytes", key="k"),  # type: ignore[arg-type]
        "int text": lambda: store.add(123, key="k"),  # type: ignore[arg-type]
        "int key": lambda: store.add("a text long enough", key=5),  # type: ignore[arg-type]
        "None key": lambda: store.add("a text long enough", key=None),  # type: ignore[arg-type]
        "empty key": lambda: store.add("a text long enough", key=""),
        "long key": lambda: store.add("a text long enough", key="x" * 256),
        "NUL key": lambda: store.add("a text long enough", key="a\x00b"),
        "text and fingerprint": lambda: store.add("text", key="k", fingerprint=1),
        "neither": lambda: store.add(key="k"),
        "negative fingerprint": lambda: store.add(key="k", fingerprint=-1),
        "65-bit fingerprint": lambda: store.add(key="k", fingerprint=1 << 64),
        "float fingerprint": lambda: store.add(key="k", fingerprint=1.5),  # type: ignore[arg-type]
        "str fingerprint": lambda: store.add(key="k", fingerprint="ff"),  # type: ignore[arg-type]
        "bool fingerprint": lambda: store.add(key="k", fingerprint=True),
        "str time": lambda: store.add(key="k", fingerprint=1, at="now"),  # type: ignore[arg-type]
        "str distance": lambda: store.add(key="k", fingerprint=1, max_distance="3"),  # type: ignore[arg-type]
        "distance 33": lambda: store.add(key="k", fingerprint=1, max_distance=33),
        "limit 0": lambda: store.query("text", limit=0),
        "query nothing": lambda: store.query(),
        "get None": lambda: store.get(None),  # type: ignore[arg-type]
        "remove bytes": lambda: store.remove(b"k"),  # type: ignore[arg-type]
        "items not pairs": many([("k",)]),
        "items with unknown field": many([{"key": "k", "txt": "x"}]),
        "items with str time": many([{"key": "k", "fingerprint": 1, "at": "now"}]),
        "batch size 0": many([], batch_size=0),
        "injection keep": lambda: store.purge(keep="1d'; DROP TABLE simstore_decisions; --"),
        "negative keep": lambda: store.purge(keep=timedelta(seconds=-5)),
        "str now": lambda: store.purge(now="now"),  # type: ignore[arg-type]
        "injection preset": lambda: SimStore(engine, preset=INJECTIONS[0]),
        "int namespace": lambda: SimStore(engine, namespace=5),  # type: ignore[arg-type]
        "bad keep": lambda: SimStore(engine, keep="soon"),
        "bad bind": lambda: SimStore(5),
    }


def test_wrong_types_and_values_for_the_store_write_nothing(
    make_store: StoreFactory, engine: Engine
) -> None:
    store = make_store(keep="2d")
    for name, call in _bad_calls(store, engine).items():
        with pytest.raises(SimstoreError) as failure:
            call()
        assert isinstance(_cause(failure.value), InvalidInput), (name, failure.value)
    assert row_counts(engine, store.namespace) == (0, 0)
    assert _tables(engine) == SIMSTORE_TABLES


def test_injection_strings_through_every_store_entry_point(
    make_store: StoreFactory, engine: Engine
) -> None:
    rng = random.Random(1)
    for number, injection in enumerate(INJECTIONS):
        store = make_store(namespace=_unique(injection))
        text = f"{injection} {random_text(rng)}"
        assert store.add(text, key=injection).inserted
        assert store.add(key=injection + " fp", fingerprint=number).inserted
        batch = [(f"{injection}#{i}", random_text(rng)) for i in range(3)]
        assert len(list(store.add_many(batch))) == 3
        assert injection in [m.key for m in store.query(text)]
        decision = store.get(injection)
        assert decision is not None and decision.key == injection
        assert store.remove(injection + " fp")
        assert store.stats().decisions == 4 and store.stats().namespace == store.namespace
        assert sorted(_stored_keys(engine, store.namespace)) == sorted(
            [injection] + [key for key, _text in batch]
        )
    assert _tables(engine) == SIMSTORE_TABLES


# --- simstore bugs found here -----------------------------------------------------------------


def test_a_key_with_a_lone_surrogate_is_invalid_input(
    make_store: StoreFactory, engine: Engine
) -> None:
    store = make_store()
    for call in (
        lambda: store.add(key="a\ud800", fingerprint=1),
        lambda: store.add("a text long enough", key="\udcff"),
        lambda: store.get("\udfff"),
        lambda: store.remove("\ud800"),
        lambda: list(store.add_many([("\ud800", "a text long enough")])),
    ):
        with pytest.raises(SimstoreError) as failure:
            call()
        assert isinstance(_cause(failure.value), InvalidInput), failure.value
    assert row_counts(engine, store.namespace) == (0, 0)


def test_a_namespace_with_a_lone_surrogate_is_invalid_input(make_store: StoreFactory) -> None:
    with pytest.raises(InvalidInput):
        make_store(namespace="ns\ud800")


# MySQL-family binary collations are PAD SPACE; the migration gives key columns a NO PAD one.
@pytest.mark.parametrize("dialect", ["sqlite-file", "postgresql", "mysql"], indirect=True)
def test_keys_differing_by_trailing_spaces_are_different_keys(
    make_store: StoreFactory,
) -> None:
    store = make_store()
    assert store.add(key="a", fingerprint=0x0123_4567_89AB_CDEF).inserted
    assert store.add(key="a ", fingerprint=0xFEDC_BA98_7654_3210).inserted
    spaced = store.get("a ")
    assert spaced is not None and spaced.fingerprint == 0xFEDC_BA98_7654_3210


@pytest.mark.parametrize("dialect", ["sqlite-file", "postgresql", "mysql"], indirect=True)
def test_namespaces_differing_by_trailing_spaces_are_different_namespaces(
    make_store: StoreFactory,
) -> None:
    name = _unique("pad")
    assert make_store(namespace=name).add(key="a", fingerprint=1).inserted
    spaced = make_store(namespace=name + " ")
    assert spaced.stats().decisions == 0
    assert spaced.add(key="a", fingerprint=1).inserted


@pytest.mark.parametrize("dialect", ["sqlite-memory"], indirect=True)  # validation: no database
@pytest.mark.parametrize(
    "call",
    [
        lambda s, _e: s.add(key="k", fingerprint=1, at=datetime.min),
        lambda s, _e: s.query(fingerprint=1, now=datetime(1, 1, 1, 12)),
        lambda s, _e: s.purge(now=datetime.min),
        lambda s, _e: list(s.add_many([{"key": "k", "fingerprint": 1, "at": datetime.min}])),
        lambda s, _e: s.purge(keep=float("inf")),
        lambda s, _e: s.purge(keep=float("nan")),
        lambda s, _e: s.purge(keep=1e30),
        lambda s, e: SimStore(e, keep="99999999999d"),
        lambda s, e: SimStore(e, partition=float("inf")),
        lambda s, _e: list(s.add_many(5)),
        lambda s, _e: list(s.add_many(None)),
    ],
    ids=[
        "add at datetime.min",
        "query now year 1",
        "purge now datetime.min",
        "add_many at datetime.min",
        "keep inf",
        "keep nan",
        "keep 1e30 s",
        "keep 99999999999d",
        "partition inf",
        "add_many of an int",
        "add_many of None",
    ],
)
def test_values_at_the_edge_of_their_type_are_simstore_errors_or_results(
    make_store: StoreFactory, engine: Engine, call: Callable[[SimStore, Engine], object]
) -> None:
    store = make_store(keep="1d")
    with contextlib.suppress(SimstoreError):  # a clear refusal is as good as a result
        call(store, engine)
    assert audit(engine, store.namespace).problems == []


# --- the command line -------------------------------------------------------------------------


def _cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def _clean_failure(result: Any, codes: tuple[int, ...]) -> None:
    """A result of the CLI: an expected exit code and, when it failed, one plain error line."""
    assert result.exit_code in codes, (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    if result.exit_code not in (0, 2):
        assert result.stderr.startswith("simstore: error: "), result.stderr
        assert "unexpected" not in result.stderr and "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def cli_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    url = f"sqlite:///{tmp_path_factory.mktemp('cli') / 'hostile.db'}"
    SimStore(url).close()
    return url


@settings(max_examples=40, deadline=None)
@given(
    namespace=st.one_of(st.text(CHARACTERS, max_size=40), st.sampled_from(INJECTIONS)),
    key=st.one_of(st.text(CHARACTERS, max_size=40), st.sampled_from(INJECTIONS)),
    text=st.text(CHARACTERS, max_size=200),
)
def test_the_cli_with_any_namespace_key_and_text(
    cli_db: str, namespace: str, key: str, text: str
) -> None:
    ns = f"--namespace={namespace}"
    # read-only commands refuse a namespace that does not exist with exit 1 (issue 17)
    _clean_failure(_cli("--db", cli_db, ns, "show", "--", key), (1, 4))
    _clean_failure(_cli("--db", cli_db, ns, "explain", "--", key), (1, 4))
    _clean_failure(_cli("--db", cli_db, ns, "query", "--", text), (0, 1, 4))
    _clean_failure(_cli("--db", cli_db, ns, "stats"), (0, 1, 4))
    _clean_failure(_cli("fingerprint", "--", text), (0,))


def test_injection_strings_through_the_cli(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    corpus = tmp_path / "in.jsonl"
    rng = random.Random(2)
    texts = {injection: f"{injection} {random_text(rng)}" for injection in INJECTIONS}
    corpus.write_text(
        "".join(json.dumps({"id": key, "text": text}) + "\n" for key, text in texts.items()),
        encoding="utf-8",
    )
    for namespace in INJECTIONS[:4]:
        ingested = _cli("--db", url, f"--namespace={namespace}", "--json", "ingest", str(corpus))
        _clean_failure(ingested, (0,))
        assert json.loads(ingested.stdout)["kept"] == len(INJECTIONS)
        for key in INJECTIONS:
            shown = _cli("--db", url, f"--namespace={namespace}", "--json", "show", "--", key)
            _clean_failure(shown, (0,))
            assert json.loads(shown.stdout)["key"] == key
        found = _cli("--db", url, f"--namespace={namespace}", "--json", "query", texts["?"])
        assert [m["key"] for m in json.loads(found.stdout)["matches"]] == ["?"]
    engine = sa.create_engine(url)
    assert _tables(engine) == SIMSTORE_TABLES
    assert len(_stored_keys(engine, INJECTIONS[0])) == len(INJECTIONS)
    engine.dispose()


@pytest.mark.parametrize(
    ("db", "code"),
    [
        ("not a url", 4),
        ("nosuchdialect://host/db", 3),
        ("postgresql+nosuchdriver://u:{pw}@127.0.0.1/x", 3),
        ("sqlite:////no/such/folder/x.db", 3),
        ("postgresql+psycopg://u:{pw}@127.0.0.1:1/x", 3),
        ("mysql+pymysql://u:{pw}@127.0.0.1:1/x", 3),
        ("x'; DROP TABLE simstore_fingerprints; --", 4),
    ],
)
def test_a_bad_db_is_one_line_and_an_exit_code_without_the_password(db: str, code: int) -> None:
    result = _cli("--db", db.format(pw=PASSWORD), "stats")
    _clean_failure(result, (code,))
    assert PASSWORD not in result.output + result.stderr


def test_a_non_utf8_key_on_the_command_line_is_invalid_input(tmp_path: Path) -> None:
    run = subprocess.run(
        [
            *(sys.executable, "-m", "simstore.cli", "--db", f"sqlite:///{tmp_path / 'x.db'}"),
            *("show", os.fsdecode(b"\xff\xfe")),
        ],
        capture_output=True,
        text=True,
        timeout=HANG,
        check=False,
        cwd=tmp_path,
    )
    assert run.returncode == 4, run.stderr
    assert run.stderr.startswith("simstore: error: ") and "unexpected" not in run.stderr


# --- passwords --------------------------------------------------------------------------------


def _server_url_with_password() -> str:
    # new_server_database skips without a server (fails under SIMSTORE_REQUIRE_SERVERS=1); the
    # test server trusts loopback connections, so a password in the URL is accepted and unused
    url = make_url(new_server_database("postgresql"))
    return url.set(password=PASSWORD).render_as_string(hide_password=False)


def test_no_password_in_logs_errors_or_reprs(caplog: pytest.LogCaptureFixture) -> None:
    url = _server_url_with_password()
    caplog.set_level(logging.DEBUG)  # every logger: simstore's, alembic's, SQLAlchemy's
    store = SimStore(url, auto_upgrade=True, keep="1d")  # logs the upgrade, with the URL
    assert store.add("a text with a password nearby, long enough", key="a").inserted
    # unrelated texts: a thousand texts of one template differing by a number would each be held
    # against every kept one (half a million look-alike checks, a minute of the test's time)
    rng = random.Random(505)
    list(store.add_many([(f"k{i}", random_text(rng)) for i in range(1_000)]))
    store.query("a text with a password nearby")
    store.purge(now=START + timedelta(days=1))
    store.stats()
    assert PASSWORD not in store.url + repr(store)
    store.close()
    unreachable = make_url(url).set(port=1).render_as_string(hide_password=False)
    with pytest.raises(DatabaseUnavailable) as failure:
        SimStore(unreachable)
    assert PASSWORD not in "".join(traceback.format_exception(failure.value))
    assert any(record.name == "simstore" for record in caplog.records)
    assert PASSWORD not in caplog.text


def test_no_password_in_the_debug_output_of_the_cli() -> None:
    url = _server_url_with_password()
    environment = {**os.environ, "SIMSTORE_URL": url}
    unreachable = make_url(url).set(port=1).render_as_string(hide_password=False)
    for args in (["db", "upgrade"], ["stats"], ["--db", unreachable, "stats"]):
        run = subprocess.run(
            [sys.executable, "-m", "simstore.cli", "--debug", *args],
            capture_output=True,
            text=True,
            timeout=HANG,
            check=False,
            cwd=ROOT,
            env=environment,
        )
        assert PASSWORD not in run.stdout + run.stderr, args


def test_ruff_security_rules_are_clean_over_the_package() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--select", "S", "simstore", "migrations"],
        capture_output=True,
        text=True,
        timeout=HANG,
        check=False,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout + run.stderr
