"""A real minimal Django project on SQLite and PostgreSQL: ``manage.py migrate`` creates simstore's
schema, ``manage.py simstore`` works, and ``get_store()`` rejects a near-duplicate."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.conftest import need_module, new_server_database, unavailable

pytestmark = pytest.mark.slow  # a Django project made and migrated in subprocesses, per database

need_module("django", "django", module=True)

TEXT = "今天天气很好，我们一起去公园散步，顺便看看湖边新开的花。明天可能下雨，出门记得带伞。"
EDITED = "今天天气很好，我们一起去公园散步，顺便看看湖边新开的花!明天可能下雨，出门记得带伞"


def make_project(
    folder: Path, database: dict[str, object], simstore: dict[str, object] | None = None
) -> None:
    options = {"NAMESPACE": "comments", "KEEP": "2d", **(simstore or {})}
    (folder / "settings.py").write_text(
        textwrap.dedent(
            f"""
            SECRET_KEY = "test-only"
            INSTALLED_APPS = ["simstore.contrib.django"]
            DATABASES = {{"default": {database!r}}}
            USE_TZ = True
            SIMSTORE = {options!r}
            """
        )
    )
    (folder / "manage.py").write_text(
        textwrap.dedent(
            """
            import os, sys
            from django.core.management import execute_from_command_line
            os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")
            execute_from_command_line(sys.argv)
            """
        )
    )


def manage(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=folder, capture_output=True, text=True
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    if request.param == "sqlite":
        database: dict[str, object] = {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(tmp_path / "django.db"),
        }
    else:
        url = make_url(new_server_database("postgresql"))
        database = {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": url.database,
            "USER": url.username or "",
            "PASSWORD": url.password or "",
            "HOST": url.host or "",
            "PORT": str(url.port or ""),
        }
    make_project(tmp_path, database)
    return tmp_path


def test_migrate_creates_the_schema_and_the_store_works(project: Path) -> None:
    before = manage(project, "simstore", "db", "check")
    assert before.returncode != 0 and "db upgrade" in before.stderr
    migrated = manage(project, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    assert manage(project, "simstore", "db", "check").returncode == 0
    script = (
        "from simstore.contrib.django import get_store\n"
        "store = get_store()\n"
        f"first = store.add({TEXT!r}, key='c1')\n"
        f"second = store.add({EDITED!r}, key='c2')\n"
        "print('RESULT', first.inserted, second.inserted, second.duplicate_of.key)\n"
    )
    shell = manage(project, "shell", "-c", script)
    assert shell.returncode == 0, shell.stderr
    result = [line for line in shell.stdout.splitlines() if line.startswith("RESULT")]
    assert result == ["RESULT True False c1"]
    stats = manage(project, "simstore", "stats")
    assert "namespace: comments" in stats.stdout and "kept: 1" in stats.stdout


OTHER = "今天天气很好，我们一起去公园散步，顺便看看河边新开的花。明天可能下雨，出门记得带伞。"


@pytest.mark.parametrize(
    ("options", "kept"),
    [
        ({}, False),  # minhash: Jaccard 0.86 >= 0.55
        ({"THRESHOLD": 0.99}, True),
        ({"POLICY": "simhash"}, True),  # 8 bits apart, radius 3
        ({"POLICY": "simhash", "MAX_DISTANCE": 10}, False),
    ],
    ids=["default", "threshold-0.99", "simhash", "simhash-radius-10"],
)
def test_policy_settings_decide(tmp_path: Path, options: dict[str, object], kept: bool) -> None:
    database: dict[str, object] = {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(tmp_path / "django.db"),
    }
    make_project(tmp_path, database, options)
    assert manage(tmp_path, "migrate").returncode == 0
    script = (
        "from simstore.contrib.django import get_store\n"
        "store = get_store()\n"
        f"store.add({TEXT!r}, key='c1')\n"
        f"print('RESULT', store.policy.name, store.add({OTHER!r}, key='c2').inserted)\n"
    )
    shell = manage(tmp_path, "shell", "-c", script)
    assert shell.returncode == 0, shell.stderr
    result = [line for line in shell.stdout.splitlines() if line.startswith("RESULT")]
    assert result == [f"RESULT {options.get('POLICY', 'minhash')} {kept}"]


def test_the_middleware_answers_a_key_conflict_409_and_invalid_input_422(tmp_path: Path) -> None:
    database: dict[str, object] = {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(tmp_path / "django.db"),
    }
    make_project(tmp_path, database)
    with (tmp_path / "settings.py").open("a") as settings:
        settings.write(
            'ROOT_URLCONF = "urls"\nALLOWED_HOSTS = ["testserver"]\n'
            'MIDDLEWARE = ["simstore.contrib.django.middleware.SimstoreErrorsMiddleware"]\n'
        )
    (tmp_path / "urls.py").write_text(
        textwrap.dedent(
            """
            from django.http import JsonResponse
            from django.urls import path
            from simstore.contrib.django import get_store

            def create_comment(request, key):
                decision = get_store().add(request.body.decode(), key=key)
                if not decision.inserted:
                    return JsonResponse({"duplicate_of": decision.recorded_as}, status=409)
                return JsonResponse({"kept": key}, status=201)

            urlpatterns = [path("comments/<str:key>", create_comment)]
            """
        )
    )
    assert manage(tmp_path, "migrate").returncode == 0
    script = (
        "import json\n"
        "from django.test import Client\n"
        "client = Client()\n"
        "def post(key, text):\n"
        "    answer = client.post(f'/comments/{key}', text, content_type='text/plain')\n"
        "    print('RESULT', answer.status_code, json.dumps(json.loads(answer.content)))\n"
        f"post('c1', {TEXT!r})\n"
        "post('c1', 'another text under the same key, not a replay')\n"
        f"post('k' * 300, {TEXT!r})\n"
        "for key, text in [('e1', '😀😀😀 🎉🎉'), ('e2', '👍'), ('e3', '?!')]:\n"
        "    post(key, text)\n"
    )
    shell = manage(tmp_path, "shell", "-c", script)
    assert shell.returncode == 0, shell.stderr
    results = [line.split(" ", 2)[1:] for line in shell.stdout.splitlines() if "RESULT" in line]
    assert [status for status, _body in results] == ["201", "409", "422", "422", "422", "422"]
    conflict, invalid = json.loads(results[1][1]), json.loads(results[2][1])
    assert conflict["type"] == "KeyConflict" and "'c1'" in conflict["error"]
    assert invalid["type"] == "InvalidInput" and "255" in invalid["error"]
    for _status, body in results[3:]:  # emoji or punctuation only: not a duplicate of e1
        assert "no words or characters" in json.loads(body)["error"]


def test_max_text_length_is_a_setting(tmp_path: Path) -> None:
    database: dict[str, object] = {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(tmp_path / "django.db"),
    }
    make_project(tmp_path, database, {"MAX_TEXT_LENGTH": "30"})
    assert manage(tmp_path, "migrate").returncode == 0
    script = (
        "from simstore.contrib.django import get_store\n"
        "from simstore.errors import InvalidInput\n"
        "store = get_store()\n"
        "try:\n"
        f"    store.add({TEXT * 2!r}, key='long')\n"
        "except InvalidInput as error:\n"
        "    print('RESULT', store.max_text_length, error)\n"
    )
    shell = manage(tmp_path, "shell", "-c", script)
    assert shell.returncode == 0, shell.stderr
    result = [line for line in shell.stdout.splitlines() if line.startswith("RESULT")]
    assert len(result) == 1 and result[0].startswith("RESULT 30 ")
    assert "more than the limit of 30" in result[0]


def test_a_unix_socket_host_reaches_the_real_postgresql_socket(tmp_path: Path) -> None:
    """``HOST: "/var/run/postgresql"`` made the database name "var/run/postgresql/NAME"."""
    socket = Path("/var/run/postgresql")
    if not any(socket.glob(".s.PGSQL.*")):
        unavailable(f"no PostgreSQL socket in {socket}")
    url = make_url(new_server_database("postgresql"))
    database: dict[str, object] = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": url.database,
        "USER": url.username or "",
        "HOST": str(socket),
        "PORT": str(url.port or 5432),
    }
    make_project(tmp_path, database)
    migrated = manage(tmp_path, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    script = (
        "from simstore.contrib.django import database_url, get_store\n"
        "store = get_store()\n"
        f"first = store.add({TEXT!r}, key='c1')\n"
        f"second = store.add({EDITED!r}, key='c2')\n"
        "print('URL', database_url())\n"
        "print('RESULT', first.inserted, second.duplicate_of.key)\n"
        "print('SERVER', store.engine.connect().exec_driver_sql('select inet_server_addr()')"
        ".scalar())\n"
    )
    shell = manage(tmp_path, "shell", "-c", script)
    assert shell.returncode == 0, shell.stderr
    lines = dict(line.split(" ", 1) for line in shell.stdout.splitlines() if " " in line)
    assert lines["RESULT"] == "True c1"
    assert lines["URL"].endswith(f"/{url.database}?host=%2Fvar%2Frun%2Fpostgresql&port={url.port}")
    assert lines["SERVER"] == "None"  # a Unix socket, not TCP
    stats = manage(tmp_path, "simstore", "stats")
    assert "kept: 1" in stats.stdout, stats.stderr
