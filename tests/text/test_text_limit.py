"""A text longer than ``max_text_length`` characters (default ``MAX_TEXT_LENGTH``, one million) is
refused with InvalidInput before it is analysed, by every entry point, and nothing of it is
written: a 100 MB text took 2 GB of memory and 10 s to plan."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from simstore.errors import BatchFailed, InvalidInput
from simstore.policy import batch
from simstore.validate import MAX_TEXT_LENGTH
from tests.conftest import StoreFactory

TEXT = "The harbour ferry timetable changes on Monday: boats leave every twenty minutes. "


def test_the_default_limit_refuses_a_longer_text_everywhere(make_store: StoreFactory) -> None:
    huge = "word " * (MAX_TEXT_LENGTH // 5) + "!"  # one character past the limit
    assert len(huge) == MAX_TEXT_LENGTH + 1
    with make_store() as store:
        assert store.max_text_length == MAX_TEXT_LENGTH
        with pytest.raises(InvalidInput, match="more than the limit of 1,000,000"):
            store.add(huge, key="huge")
        with pytest.raises(InvalidInput, match="max_text_length"):
            store.query(huge)
        with pytest.raises(BatchFailed) as failure:
            list(store.add_many([("a", TEXT), ("huge", huge)], batch_size=1))
        assert isinstance(failure.value.__cause__, InvalidInput)
        assert store.stats().kept == 1  # nothing of the refused text was written
        assert store.get("huge") is None


def test_the_limit_is_configurable_and_exact(make_store: StoreFactory) -> None:
    with make_store(max_text_length=len(TEXT)) as store:
        assert store.add(TEXT, key="at-the-limit").inserted
        with pytest.raises(InvalidInput, match=f"more than the limit of {len(TEXT)}"):
            store.add(TEXT + "x", key="one-more")
        rejected = list(store.ingest([{"key": "long", "text": TEXT * 2}]))
        assert [type(result).__name__ for result in rejected] == ["Rejected"]
        assert store.stats().kept == 1
    with pytest.raises(InvalidInput, match="max_text_length"):
        make_store(max_text_length=0)


def test_the_batch_api_and_workers_refuse_it_too(make_store: StoreFactory) -> None:
    with pytest.raises(InvalidInput, match="more than the limit"):
        batch.dedup([TEXT, "y" * (MAX_TEXT_LENGTH + 1)])
    with make_store(max_text_length=20) as store, pytest.raises(BatchFailed) as failure:
        list(store.add_many([("a", "short text here"), ("b", TEXT)], batch_size=1, workers=1))
    assert "more than the limit of 20" in str(failure.value)


def test_the_cli_option_rejects_the_record_and_goes_on(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    rows = [{"id": "short", "text": "a short record"}, {"id": "long", "text": TEXT}]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if k != "SIMSTORE_URL"}
    database = f"sqlite:///{tmp_path / 's.db'}"

    def simstore(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "simstore.cli", "--db", database, "--max-text-length"]
        return subprocess.run(
            [*command, "40", *args], capture_output=True, text=True, env=environment, check=False
        )

    ingested = simstore("--json", "ingest", str(source))
    assert ingested.returncode == 1, ingested.stderr  # a record was rejected
    summary = json.loads(ingested.stdout)
    assert (summary["read"], summary["kept"], summary["skipped"]) == (2, 1, 1)
    assert "in.jsonl:2: " in ingested.stderr and "more than the limit of 40" in ingested.stderr
    queried = simstore("query", TEXT)
    assert queried.returncode == 4, queried.stderr
    assert "more than the limit of 40" in queried.stderr and "Traceback" not in queried.stderr
