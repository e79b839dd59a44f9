"""A real Flask application with Flask-SQLAlchemy: simstore reuses its engine, a view rejects a
near-duplicate post, and ``flask simstore db upgrade`` works through Flask's CLI runner."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import need_module

need_module("flask", "flask", module=True)
need_module("flask_sqlalchemy", "flask", module=True)

from flask import Flask, request  # noqa: E402 - after the extra is known to be there
from flask_sqlalchemy import SQLAlchemy  # noqa: E402

from simstore.contrib.flask import FlaskSimStore  # noqa: E402

POST = "今天天气很好，我们一起去公园散步，顺便看看湖边新开的花。明天可能下雨，出门记得带伞。"
REPOST = "今天天气很好，我们一起去公园散步，顺便看看湖边新开的花!明天可能下雨，出门记得带伞"
EDITED = "今天天气很好，我们一起去公园散步，顺便看看河边新开的花。明天可能下雨，出门记得带伞。"


def make_app(database: Path, **config: object) -> tuple[Flask, FlaskSimStore, SQLAlchemy]:
    app = Flask(__name__)
    app.config["SQLALCHEMY_DATABASE_URI"] = f"sqlite:///{database}"
    app.config.update(config)
    db = SQLAlchemy(app)
    dedup = FlaskSimStore(app)

    @app.post("/posts/<key>")
    def create_post(key: str) -> tuple[dict[str, object], int]:
        decision = dedup.store.add(request.get_data(as_text=True), key=key)
        if not decision.inserted and decision.duplicate_of is not None:
            return {"duplicate_of": decision.duplicate_of.key}, 409
        return {"kept": key}, 201

    return app, dedup, db


def test_a_view_rejects_a_near_duplicate_post(tmp_path: Path) -> None:
    app, dedup, db = make_app(tmp_path / "app.db")
    client = app.test_client()
    first = client.post("/posts/p1", data=POST)
    assert first.status_code == 201
    second = client.post("/posts/p2", data=REPOST)
    assert second.status_code == 409 and second.get_json() == {"duplicate_of": "p1"}
    with app.app_context():
        assert dedup.store.engine is db.engine


@pytest.mark.parametrize(
    ("config", "status"),
    [
        ({}, 409),  # minhash: Jaccard 0.86 >= 0.55
        ({"SIMSTORE_THRESHOLD": 0.99}, 201),
        ({"SIMSTORE_POLICY": "simhash"}, 201),  # 8 bits apart, radius 3
        ({"SIMSTORE_POLICY": "simhash", "SIMSTORE_MAX_DISTANCE": 10}, 409),
    ],
    ids=["default", "threshold-0.99", "simhash", "simhash-radius-10"],
)
def test_policy_settings_decide(tmp_path: Path, config: dict[str, object], status: int) -> None:
    app, dedup, _db = make_app(tmp_path / "app.db", **config)
    client = app.test_client()
    assert client.post("/posts/p1", data=POST).status_code == 201
    assert client.post("/posts/p2", data=EDITED).status_code == status
    with app.app_context():
        assert dedup.store.policy.name == config.get("SIMSTORE_POLICY", "minhash")


def test_a_radius_under_the_minhash_policy_is_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app, dedup, _db = make_app(tmp_path / "app.db", SIMSTORE_MAX_DISTANCE=0)
    with app.app_context():
        assert dedup.store.max_distance == 0
    assert "SIMSTORE_MAX_DISTANCE is the SimHash radius" in caplog.text
    assert "SIMSTORE_THRESHOLD" in caplog.text


def test_a_key_conflict_is_409_and_invalid_input_422_with_the_message(tmp_path: Path) -> None:
    app, _dedup, _db = make_app(tmp_path / "app.db")
    client = app.test_client()
    assert client.post("/posts/p1", data=POST).status_code == 201
    conflict = client.post("/posts/p1", data="another text under the same key, not a replay")
    assert conflict.status_code == 409
    assert conflict.get_json()["type"] == "KeyConflict"
    assert "'p1'" in conflict.get_json()["error"]
    too_long = client.post(f"/posts/{'k' * 300}", data=POST)
    assert too_long.status_code == 422
    assert too_long.get_json()["type"] == "InvalidInput"
    assert "255" in too_long.get_json()["error"]
    for key, text in [("e1", "😀😀😀 🎉🎉"), ("e2", "👍"), ("e3", "?!")]:  # not one another's dups
        featureless = client.post(f"/posts/{key}", data=text.encode())
        assert featureless.status_code == 422, featureless.get_json()
        assert "no words or characters" in featureless.get_json()["error"]


def test_the_error_handlers_can_be_left_out(tmp_path: Path) -> None:
    app, _dedup, _db = make_app(tmp_path / "app.db", SIMSTORE_ERROR_HANDLERS=False)
    app.config["PROPAGATE_EXCEPTIONS"] = False  # answer 500 as in production
    client = app.test_client()
    assert client.post(f"/posts/{'k' * 300}", data=POST).status_code == 500


def test_flask_cli_upgrades_the_schema(tmp_path: Path) -> None:
    app, _dedup, _db = make_app(tmp_path / "cli.db")
    runner = app.test_cli_runner()
    result = runner.invoke(args=["simstore", "db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert runner.invoke(args=["simstore", "db", "check"]).exit_code == 0
    assert "kept: 0" in runner.invoke(args=["simstore", "stats"]).output


def test_importing_simstore_imports_no_framework() -> None:
    code = "import sys, simstore; print('flask' in sys.modules, 'django' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_a_text_past_simstore_max_text_length_is_422(tmp_path: Path) -> None:
    app, dedup, _db = make_app(tmp_path / "app.db", SIMSTORE_MAX_TEXT_LENGTH="30")
    with app.app_context():
        assert dedup.store.max_text_length == 30
    refused = app.test_client().post("/posts/long", data=POST * 2)
    assert refused.status_code == 422
    assert "more than the limit of 30" in refused.get_json()["error"]
    assert app.test_client().post("/posts/short", data=POST[:30]).status_code == 201
