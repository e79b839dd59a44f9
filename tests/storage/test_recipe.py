"""A namespace remembers its whole recipe: the policy and every parameter it was made with.

Opened without a policy a store adopts the recorded one; opened with another it is refused
(``PolicyMismatch``), through the API on every dialect, the real CLI, Flask and Django.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from simstore.errors import InvalidInput, PolicyMismatch
from simstore.policy.policies import (
    MinHashVerification,
    SimHashOnly,
    SimHashVerification,
    policy_from_recipe,
    policy_with,
    recipe_summary,
)
from simstore.storage import migrate
from simstore.storage.schema import namespaces
from tests.conftest import SERVERS, StoreFactory, need_module, new_server_database

pytestmark = pytest.mark.slow  # the command-line recipe as subprocesses on every database

LONG = (
    "The harbour ferry timetable changes on Monday: boats leave every twenty minutes from the "
    "north pier between six and nine in the morning, and every half hour for the rest of the day."
)
# OpenCC's own t2s conversion of TRADITIONAL gives SIMPLIFIED (checked with opencc.OpenCC("t2s"))
SIMPLIFIED = "今天天气很好，我们一起去公园散步，顺便看看湖边新开的花。明天可能下雨，出门记得带伞。"
TRADITIONAL = "今天天氣很好，我們一起去公園散步，順便看看湖邊新開的花。明天可能下雨，出門記得帶傘。"


def test_a_recipe_makes_the_same_policy_again() -> None:
    for policy in (
        MinHashVerification(),
        MinHashVerification(threshold=0.7, fold_traditional=True, max_replaced=None),
        SimHashVerification(long_threshold=0.9),
        SimHashOnly(min_features=5),
    ):
        assert policy_from_recipe(policy.recipe()) == policy
    assert recipe_summary(MinHashVerification(threshold=0.7).recipe()) == "minhash threshold=0.7"
    assert recipe_summary(SimHashOnly().recipe()) == "simhash"


def test_options_from_strings_are_converted_and_unknown_ones_refused() -> None:
    policy = policy_with("minhash", {"threshold": "0.6", "fold_traditional": "true"})
    assert policy == MinHashVerification(threshold=0.6, fold_traditional=True)
    assert policy_with("minhash", {"max_replaced": "none"}).max_replaced is None  # type: ignore[attr-defined]
    with pytest.raises(InvalidInput, match="no option colour"):
        policy_with("minhash", {"colour": "red"})
    with pytest.raises(InvalidInput, match="takes float"):
        policy_with("minhash", {"threshold": "high"})
    with pytest.raises(InvalidInput, match="takes bool"):
        policy_with("minhash", {"strip_social": "maybe"})


def test_a_namespace_adopts_its_recipe_and_refuses_another(
    make_store: StoreFactory, engine: Engine
) -> None:
    made = make_store(policy=MinHashVerification(threshold=0.7))
    assert made.add(LONG, key="a").inserted
    namespace = made.namespace
    with engine.connect() as conn:
        recorded = conn.execute(
            sa.select(namespaces.c.policy).where(namespaces.c.name == namespace)
        ).scalar_one()
    assert json.loads(recorded)["params"]["threshold"] == 0.7  # plain SQL sees the recipe
    adopted = make_store()
    assert adopted.policy == MinHashVerification(threshold=0.7)
    assert adopted.add(LONG + " Updated.", key="b").duplicate_of is not None
    for other in (MinHashVerification(), SimHashOnly(), "simhash"):
        with pytest.raises(PolicyMismatch, match="refusing") as refused:
            make_store(policy=other)
        assert "another namespace" in str(refused.value)
    assert make_store(policy=MinHashVerification(threshold=0.7)).policy.threshold == 0.7  # type: ignore[attr-defined]


def cli(folder: Path, *args: str, database: str | None = None) -> subprocess.CompletedProcess[str]:
    """``simstore --db DATABASE ARGS`` in ``folder`` (default: a SQLite file there)."""
    database = database or f"sqlite:///{folder / 'store.db'}"
    return subprocess.run(
        [sys.executable, "-m", "simstore.cli", "--db", database, *args],
        cwd=folder,
        capture_output=True,
        text=True,
    )


def records(path: Path, texts: dict[str, str]) -> Path:
    lines = [
        json.dumps({"id": key, "text": text}, ensure_ascii=False) for key, text in texts.items()
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(params=["sqlite", *SERVERS])
def cli_database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database for the command line: a SQLite file, or a new database at the schema's head
    on each server (the CLI asks servers to be upgraded rather than upgrading them)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    url = new_server_database(str(request.param))
    migrate.upgrade(url)
    return url


def test_copies_are_never_silently_kept_whatever_policy_a_later_command_names(
    tmp_path: Path, cli_database: str
) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return cli(tmp_path, *args, database=cli_database)

    kept = {f"k{i}": f"{LONG} Notice number {i} of the harbour office." for i in range(5)}
    made = run("ingest", str(records(tmp_path / "kept.jsonl", kept)))
    assert made.returncode == 0, made.stderr
    copies = records(tmp_path / "copies.jsonl", {f"c{i}": t for i, t in enumerate(kept.values())})
    refused = run("--policy", "simhash", "ingest", str(copies))
    assert refused.returncode == 4, refused.stderr
    assert refused.stderr.startswith("simstore: error: namespace 'default'"), refused.stderr
    assert "refusing" in refused.stderr and "another namespace" in refused.stderr
    query = run("--policy", "simhash", "query", kept["k0"])
    assert query.returncode == 4 and "refusing" in query.stderr
    summary = json.loads(run("--json", "ingest", str(copies)).stdout)  # adopts its own
    assert (summary["kept"], summary["duplicates"]) == (0, 5)
    listed = json.loads(run("--json", "namespaces").stdout)
    assert listed[0]["policy"]["policy"] == "minhash"


def test_folding_traditional_chinese_works_from_the_command_line(tmp_path: Path) -> None:
    need_module("opencc", "zh")
    folded = ("--policy-option", "fold_traditional=true")
    made = cli(tmp_path, *folded, "ingest", str(records(tmp_path / "s.jsonl", {"s": SIMPLIFIED})))
    assert made.returncode == 0, made.stderr
    found = json.loads(cli(tmp_path, "--json", "query", TRADITIONAL).stdout)  # adopted: folds
    assert [match["key"] for match in found["matches"]] == ["s"]
    unfolded = tmp_path / "plain"
    unfolded.mkdir()
    off = ("--policy-option", "fold_traditional=false")  # folding is the default now
    cli(unfolded, *off, "ingest", str(records(unfolded / "s.jsonl", {"s": SIMPLIFIED})))
    assert json.loads(cli(unfolded, "--json", "query", TRADITIONAL).stdout)["matches"] == []
    default = tmp_path / "default"
    default.mkdir()
    cli(default, "ingest", str(records(default / "s.jsonl", {"s": SIMPLIFIED})))
    found = json.loads(cli(default, "--json", "query", TRADITIONAL).stdout)
    assert [match["key"] for match in found["matches"]] == ["s"]
    bad = cli(tmp_path, "--policy-option", "fold_traditional", "stats")
    assert bad.returncode == 2 and "KEY=VALUE" in bad.stderr


def test_flask_refuses_bad_settings_when_the_app_starts(tmp_path: Path) -> None:
    flask = need_module("flask", "flask")
    from simstore.contrib.flask import FlaskSimStore

    for setting, value, said in (
        ("SIMSTORE_KEEP", "2 days", "SIMSTORE_KEEP"),
        ("SIMSTORE_POLICY", "bogus", "SIMSTORE_POLICY"),
        ("SIMSTORE_THRESHOLD", "high", "SIMSTORE_THRESHOLD"),
        ("SIMSTORE_POLICY_OPTIONS", "colour=red", "SIMSTORE_POLICY_OPTIONS"),
        ("SIMSTORE_GROUP_COMMIT", "maybe", "SIMSTORE_GROUP_COMMIT"),
    ):
        app = flask.Flask(__name__)
        app.config.update(SIMSTORE_URL=f"sqlite:///{tmp_path / 'app.db'}", **{setting: value})
        with pytest.raises(InvalidInput, match=said):
            FlaskSimStore(app)
    app = flask.Flask(__name__)
    app.config.update(
        SIMSTORE_URL=f"sqlite:///{tmp_path / 'app.db'}",
        SIMSTORE_THRESHOLD="0.8",  # every environment variable is a string
        SIMSTORE_POLICY_OPTIONS="fold_traditional=false,strip_social=true",
        SIMSTORE_GROUP_COMMIT="yes",
    )
    ext = FlaskSimStore(app)
    with app.app_context():
        assert ext.store.policy == MinHashVerification(
            threshold=0.8, strip_social=True, fold_traditional=False
        )
        assert ext.store._writer._group is not None


def test_django_reports_a_bad_setting_in_its_system_check(tmp_path: Path) -> None:
    need_module("django", "django")
    (tmp_path / "settings.py").write_text(
        'SECRET_KEY = "test-only"\n'
        'INSTALLED_APPS = ["simstore.contrib.django"]\n'
        f'DATABASES = {{"default": {{"ENGINE": "django.db.backends.sqlite3", '
        f'"NAME": "{tmp_path / "site.db"}"}}}}\n'
        'SIMSTORE = {"POLICY": "minhash", "THRESHOLD": "0.8", "KEEP": "2 days"}\n'
    )
    check = subprocess.run(
        [sys.executable, "-m", "django", "check", "--settings", "settings"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path) + ":" + ":".join(sys.path)},
    )
    assert check.returncode != 0
    assert "simstore.E001" in check.stderr and 'SIMSTORE["KEEP"]' in check.stderr, check.stderr


def test_a_recipe_recorded_before_an_option_existed_keeps_its_rule() -> None:
    # the recipe migration 0012 records for 0.3's namespaces: no typos or containment option
    from simstore.policy.policies import _BEFORE_OPTION

    old = json.loads(MinHashVerification().recipe())
    for option in _BEFORE_OPTION["minhash"]:
        del old["params"][option]
    adopted = policy_from_recipe(json.dumps(old))
    assert adopted == MinHashVerification(
        typos=False,
        containment=None,
        long_containment=None,
        opening_length=None,
        keep_symbols=False,
        identity_rule=False,
        minhash_bands="16x4",  # the layout before it was an option
        shared_lines_rest=None,  # lines shared at the end set aside: after 0.4.0
        cjk_titles=False,  # a long CJK text's title words: after 0.4.0
        boilerplate_texts=None,  # the memory of boilerplate: after 0.4.0
        cjk_replaced=None,  # Chinese nouns told from other words: after 0.4.0
    )
    # a namespace made once typos and containment existed, before long texts' containment:
    # its long texts are still decided by the estimate alone
    newer = json.loads(MinHashVerification().recipe())
    del newer["params"]["long_containment"]
    assert policy_from_recipe(json.dumps(newer)) == MinHashVerification(long_containment=None)
    # one made before openings: long texts of one template are not told apart by them
    before_openings = json.loads(MinHashVerification().recipe())
    del (
        before_openings["params"]["opening_length"],
        before_openings["params"]["max_opening_replaced"],
    )
    assert policy_from_recipe(json.dumps(before_openings)) == MinHashVerification(
        opening_length=None
    )
    # under 0.3's rule two typos in short words make a look-alike; under today's they do not
    kept = "Meet me at the old mill on the river at noon, bring the map and the lamp."
    typo = kept.replace("mill", "mll").replace("lamp", "lmp")  # a letter dropped, twice
    from simstore.text.similarity import replacements

    # counted by hand: 0.3 took only words of four letters on both sides, so both are places
    assert replacements(kept, typo, typos=False)[0] == 2
    assert replacements(kept, typo)[0] == 0


def test_folding_traditional_chinese_works_from_flask_settings(tmp_path: Path) -> None:
    flask = need_module("flask", "flask")
    need_module("opencc", "zh")
    from simstore.contrib.flask import FlaskSimStore

    app = flask.Flask(__name__)
    app.config.update(
        SIMSTORE_URL=f"sqlite:///{tmp_path / 'app.db'}",
        SIMSTORE_POLICY_OPTIONS="fold_traditional=true",  # as an environment variable gives it
    )
    ext = FlaskSimStore(app)
    with app.app_context():
        assert ext.store.add(SIMPLIFIED, key="s").inserted
        copy = ext.store.add(TRADITIONAL, key="t")
        assert copy.duplicate_of is not None and copy.duplicate_of.key == "s"


def test_web_apps_adopt_the_namespaces_recipe_and_refuse_another(
    tmp_path: Path, cli_database: str
) -> None:
    flask = need_module("flask", "flask")
    need_module("django", "django")
    from simstore.contrib.flask import FlaskSimStore
    from simstore.store import SimStore

    if cli_database.startswith("sqlite"):
        migrate.upgrade(cli_database)  # the apps below do not upgrade a schema themselves
    with SimStore(cli_database, policy=MinHashVerification(threshold=0.7)) as made:
        assert made.add(LONG, key="a").inserted

    def flask_app(**settings: str) -> tuple[Any, FlaskSimStore]:
        app = flask.Flask(__name__)
        app.config.update(SIMSTORE_URL=cli_database, **settings)
        ext = FlaskSimStore(app)

        def add(key: str) -> dict[str, object]:
            decision = ext.store.add(flask.request.get_data(as_text=True), key=key)
            return {"kept": decision.inserted, "policy": ext.store.policy.recipe()}

        app.add_url_rule("/texts/<key>", view_func=add, methods=["POST"])
        return app, ext

    refusing, ext = flask_app(SIMSTORE_POLICY="simhash")
    with refusing.app_context(), pytest.raises(PolicyMismatch, match="refusing"):
        ext.store  # noqa: B018 - opening the store is what is refused
    adopting, ext = flask_app()
    try:
        answer = adopting.test_client().post("/texts/b", data=LONG + " Updated.")
        assert answer.status_code == 200 and answer.json is not None
        assert answer.json["kept"] is False
        assert json.loads(answer.json["policy"])["params"]["threshold"] == 0.7
    finally:
        with adopting.app_context():
            ext.store.close()

    (tmp_path / "settings.py").write_text(
        'SECRET_KEY = "test-only"\n'
        'INSTALLED_APPS = ["simstore.contrib.django"]\n'
        f'DATABASES = {{"default": {{"ENGINE": "django.db.backends.sqlite3", '
        f'"NAME": "{tmp_path / "site.db"}"}}}}\n'
        "import os\n"
        f"SIMSTORE = {{'URL': {cli_database!r}, 'POLICY': os.environ.get('POLICY') or None}}\n"
    )
    script = (
        "from simstore.contrib.django import get_store\n"
        "from simstore.errors import PolicyMismatch\n"
        "try:\n"
        "    store = get_store()\n"
        "except PolicyMismatch as error:\n"
        "    print('RESULT refused', 'refusing' in str(error))\n"
        "else:\n"
        f"    decision = store.add({LONG + ' Again.'!r}, key='c')\n"
        "    print('RESULT', store.policy.threshold, decision.inserted)\n"
    )
    results = []
    for policy in ("simhash", ""):
        shell = subprocess.run(
            [sys.executable, "-m", "django", "shell", "--settings", "settings", "-c", script],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={
                **os.environ,
                "PYTHONPATH": str(tmp_path) + ":" + ":".join(sys.path),
                "POLICY": policy,
            },
        )
        assert shell.returncode == 0, shell.stderr
        results += [line for line in shell.stdout.splitlines() if line.startswith("RESULT")]
    assert results == ["RESULT refused True", "RESULT 0.7 False"]
