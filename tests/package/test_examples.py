"""The shipped examples: the corpus is what its generator writes, and the Python tour runs."""

from __future__ import annotations

import json
import runpy
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import need_module

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_corpus_is_what_the_generator_writes() -> None:
    generator = runpy.run_path(str(EXAMPLES / "make_corpus.py"))
    shipped = (EXAMPLES / "corpus.jsonl").read_text(encoding="utf-8")
    assert generator["render"](generator["build"]()) == shipped, (
        "examples/corpus.jsonl is stale: run python examples/make_corpus.py"
    )


def test_corpus_shape() -> None:
    path = EXAMPLES / "corpus.jsonl"
    assert path.stat().st_size < 2_000_000
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len({record["id"] for record in records}) == len(records) > 2000
    kinds = Counter(
        (record["lang"], "short" if len(record["text"]) < 140 else "long")
        for record in records
        if len(record["text"]) < 140 or len(record["text"]) > 500
    )
    assert len(kinds) == 4 and min(kinds.values()) > 200  # zh/en x short/long, nothing between
    assert sum(kinds.values()) == len(records)
    sizes = Counter(Counter(record["group"] for record in records).values())
    assert sizes[1] > 0 and sum(count for size, count in sizes.items() if size > 1) > 300


def test_python_tour_runs(capsys: pytest.CaptureFixture[str]) -> None:
    runpy.run_path(str(EXAMPLES / "python_api.py"), run_name="__main__")
    printed = capsys.readouterr().out
    assert "article-2: duplicate of article-1" in printed
    assert "zh-2: duplicate of zh-1" in printed


POST = "今天天气很好，我们一起去公园散步，顺便看看湖边新开的花。明天可能下雨，出门记得带伞。"
REPOST = "今天天气很好，我们一起去公园散步，顺便看看湖边新开的花!明天可能下雨，出门记得带伞"


def test_flask_example_refuses_a_near_duplicate(tmp_path: Path) -> None:
    need_module("flask", "flask")
    module = runpy.run_path(str(EXAMPLES / "flask_app.py"))
    app = module["create_app"]({"SIMSTORE_URL": f"sqlite:///{tmp_path / 'flask.db'}"})
    client = app.test_client()
    assert client.post("/posts/p1", data=POST).status_code == 201
    second = client.post("/posts/p2", data=REPOST)
    assert second.status_code == 409 and second.get_json()["duplicate_of"] == "p1"


def test_django_example_site_migrates_and_refuses_a_near_duplicate(tmp_path: Path) -> None:
    need_module("django", "django")
    site = tmp_path / "site"
    shutil.copytree(EXAMPLES / "django_site", site)
    manage = [sys.executable, "manage.py"]
    migrated = subprocess.run([*manage, "migrate"], cwd=site, capture_output=True, text=True)
    assert migrated.returncode == 0, migrated.stderr
    script = (
        "from django.test import Client\n"
        "c = Client()\n"
        f"a = c.post('/comments/c1', data={POST!r}, content_type='text/plain')\n"
        f"b = c.post('/comments/c2', data={REPOST!r}, content_type='text/plain')\n"
        "print('RESULT', a.status_code, b.status_code, b.json()['duplicate_of'])\n"
    )
    shell = subprocess.run(
        [*manage, "shell", "-c", script], cwd=site, capture_output=True, text=True
    )
    assert shell.returncode == 0, shell.stderr
    assert [line for line in shell.stdout.splitlines() if line.startswith("RESULT")] == [
        "RESULT 201 409 c1"
    ]
