"""Flask and Django check simstore's settings when the app starts, as their pages promise: a
database URL that cannot work (no URL at all, ``postgres://``, ``mysql://`` without a driver that
is installed) or a Django ``DATABASE`` alias that is not there fails then, not at the first
request; a misspelled setting is a warning, not silence. The docs pages name every setting."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from simstore.contrib._knobs import KNOBS
from simstore.errors import SimstoreError
from tests.conftest import need_module
from tests.frontends.test_django import make_project, manage

flask = need_module("flask", "flask", module=True)
need_module("django", "django", module=True)

from simstore.contrib.flask import FlaskSimStore  # noqa: E402 - after the extra's check

ROOT = Path(__file__).resolve().parents[2]
BAD_URLS = {
    "notaurl": "not a database URL",
    "postgres://u@localhost/db": "postgresql",
    "mysql://u@localhost/db": "MySQLdb",  # the mysqlclient driver, not installed here
}


@pytest.mark.parametrize("url", list(BAD_URLS))
def test_flask_refuses_a_bad_url_at_init_app(tmp_path: Path, url: str) -> None:
    app = flask.Flask(__name__, instance_path=str(tmp_path))
    app.config["SIMSTORE_URL"] = url
    with pytest.raises(SimstoreError, match="SIMSTORE_URL") as refused:
        FlaskSimStore(app)
    assert BAD_URLS[url] in str(refused.value)


def test_flask_warns_about_a_misspelled_setting(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = flask.Flask(__name__, instance_path=str(tmp_path))
    app.config.update(SIMSTORE_TRESHOLD=0.7, SIMSTORE_URL=f"sqlite:///{tmp_path / 's.db'}")
    with caplog.at_level(logging.WARNING, logger="simstore"):
        FlaskSimStore(app)
    assert "SIMSTORE_TRESHOLD is not a simstore setting" in caplog.text
    assert "did you mean SIMSTORE_THRESHOLD?" in caplog.text
    assert "SIMSTORE_URL is not" not in caplog.text


SQLITE: dict[str, object] = {"ENGINE": "django.db.backends.sqlite3", "NAME": "site.db"}


@pytest.mark.parametrize(
    ("simstore", "said"),
    [
        ({"URL": "notaurl"}, "not a database URL"),
        ({"URL": "postgres://u@localhost/db"}, "postgresql"),
        ({"URL": "mysql://u@localhost/db"}, "MySQLdb"),
        ({"DATABASE": "other"}, "no Django database 'other'"),
    ],
)
def test_the_django_check_refuses_a_database_that_cannot_work(
    tmp_path: Path, simstore: dict[str, object], said: str
) -> None:
    make_project(tmp_path, SQLITE, simstore)
    checked = manage(tmp_path, "check")
    assert checked.returncode != 0, checked.stdout
    assert said in checked.stderr and "simstore.E00" in checked.stderr, checked.stderr


def test_the_django_check_warns_about_a_misspelled_setting(tmp_path: Path) -> None:
    make_project(tmp_path, SQLITE, {"TRESHOLD": 0.7})
    with (tmp_path / "settings.py").open("a") as settings:
        settings.write('SIMSTORE_URL = "sqlite:///other.db"\n')
    checked = manage(tmp_path, "check")
    assert checked.returncode == 0, checked.stderr  # warnings only
    said = checked.stderr + checked.stdout
    assert 'SIMSTORE["TRESHOLD"] is not a simstore setting' in said, said
    assert 'did you mean SIMSTORE["THRESHOLD"]?' in said
    assert "SIMSTORE_URL is not read" in said


@pytest.mark.parametrize(("page", "form"), [("flask.md", "SIMSTORE_{}"), ("django.md", "{}")])
def test_the_docs_pages_name_every_setting(page: str, form: str) -> None:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    named = set(re.findall(r"`(?:SIMSTORE_)?([A-Z_]+)`", text))
    extra = ("URL", "AUTO_UPGRADE", "ERROR_HANDLERS") if page == "flask.md" else ("URL", "DATABASE")
    missing = [form.format(knob) for knob in (*KNOBS, *extra) if knob not in named]
    assert not missing, f"docs/{page} does not name {missing}"
