"""Hostile records are bad records, never a crash (issue 34, item 7 and its list): a lone
surrogate escaped in a JSON line, a line nested 100,000 deep, and a hand-over whose fields the
store cannot hold. Real ``simstore`` subprocesses, on a SQLite file and, for ``db load``, on the
servers too."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from simstore.storage import migrate
from simstore.storage.db import create_engine_for
from tests.cli.test_commands import Cli, records, write
from tests.conftest import new_server_database

pytestmark = pytest.mark.slow  # CLI subprocess runs on every database

GOOD_A = '{"id": "a", "text": "the harbour ferry leaves every twenty minutes from the north pier"}'
GOOD_C = '{"id": "c", "text": "season tickets stay valid until the end of the month at the kiosk"}'


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path, f"sqlite:///{tmp_path / 'store.db'}")


def test_dedup_rejects_a_lone_surrogate_with_its_line_and_writes_every_other_record(
    cli: Cli,
) -> None:
    write(
        cli.folder / "in.jsonl",
        [
            GOOD_A,
            '{"id": "b", "text": "a text with a lone \\ud800 surrogate in it"}',
            GOOD_C,
            '{"id": "d", "text": "a good text with a bad title", "title": "x\\udfff"}',
            '{"id": "e", "text": "a proper pair \\ud83d\\ude00 is one character"}',
        ],
    )
    for run in range(2):  # a re-run works the same way (the kept records replay)
        ran = cli("dedup", "in.jsonl", "--out", "kept.jsonl", "--dups", "dups.jsonl")
        assert ran.returncode == 1, ran.stderr
        assert "unexpected" not in ran.stderr
        assert "in.jsonl:2: a lone surrogate \\ud800" in ran.stderr, run
        assert "in.jsonl:4: a lone surrogate \\udfff" in ran.stderr, run
        kept = records(cli.folder / "kept.jsonl")
        assert [record["id"] for record in kept] == ["a", "c", "e"], run
        assert kept[2]["text"] == "a proper pair \U0001f600 is one character"


def test_a_line_nested_too_deeply_is_a_bad_record_and_the_rest_is_read(cli: Cli) -> None:
    deep = '{"id": "x", "text": "nested", "v": ' + "[" * 100_000 + "]" * 100_000 + "}"
    just = '{"id": "y", "text": "nested 200 levels", "v": ' + "[" * 199 + "]" * 199 + "}"
    over = '{"id": "z", "text": "nested 201 levels", "v": ' + "[" * 200 + "]" * 200 + "}"
    write(cli.folder / "in.jsonl", [deep, GOOD_A, just, over, GOOD_C])
    ran = cli("ingest", "in.jsonl")
    assert ran.returncode == 1, ran.stderr
    assert "unexpected" not in ran.stderr
    assert "in.jsonl:1: invalid JSON: nested deeper than 200 levels" in ran.stderr
    assert "in.jsonl:4: invalid JSON: nested deeper than 200 levels" in ran.stderr
    assert cli.json("stats")["kept"] == 3
    out = cli("-q", "dedup", "in.jsonl", "--out", "kept.jsonl")
    assert out.returncode == 1, out.stderr
    assert [record["id"] for record in records(cli.folder / "kept.jsonl")] == ["a", "y", "c"]


def test_the_json_summary_stays_json_when_a_bad_record_has_a_lone_surrogate(cli: Cli) -> None:
    write(cli.folder / "in.jsonl", ['{"id": "\\udc00x", "text": "a bad key here"}', GOOD_A])
    ran = cli("--json", "ingest", "in.jsonl")
    assert ran.returncode == 1, ran.stderr
    summary = json.loads(ran.stdout)
    assert (summary["committed"], summary["skipped"]) == (1, 1)
    assert summary["skipped_records"][0]["where"] == "in.jsonl:1"
    assert "error" not in summary or summary["error"] is None


# --- db load: a hand-over's fields are input like any other ---------------------------------

KEPT: dict[str, Any] = {
    "key": "a",
    "kept": True,
    "duplicate_of": None,
    "distance": None,
    "measure": None,
    "score": None,
    "fingerprint": 7,
    "text": "a kept text",
    "signature": None,
    "band_keys": None,
}
DUPLICATE = {**KEPT, "key": "b", "kept": False, "duplicate_of": "a", "distance": 0,
             "measure": "jaccard", "score": 1.0, "text": None}  # fmt: skip


def handover(folder: Path, name: str, changes: dict[str, Any], row: int) -> Path:
    """A hand-over file of a kept row and its duplicate, ``changes`` made to row ``row``."""
    rows = [dict(KEPT), dict(DUPLICATE)]
    rows[row].update(changes)
    text: pa.Array = pa.array([r["text"] for r in rows], pa.string())
    if "text_bytes" in changes:  # Parquet string bytes that are not UTF-8 (a lone surrogate)
        raw = [changes["text_bytes"] if i == row else None for i in range(2)]
        text = pa.array(raw, pa.binary()).cast(pa.string(), safe=False)
        rows[row].pop("text_bytes")
    distance = pa.array([r["distance"] for r in rows])
    table = pa.table(
        {
            "key": pa.array([r["key"] for r in rows], pa.string()),
            "kept": pa.array([r["kept"] for r in rows], pa.bool_()),
            "duplicate_of": pa.array([r["duplicate_of"] for r in rows], pa.string()),
            "distance": distance,
            "measure": pa.array([r["measure"] for r in rows], pa.string()),
            "score": pa.array([r["score"] for r in rows], pa.float64()),
            "fingerprint": pa.array([r["fingerprint"] for r in rows], pa.int64()),
            "text": text,
            "signature": pa.array([None, None], pa.binary()),
            "band_keys": pa.array([None, None], pa.list_(pa.int64())),
        }
    )
    path = folder / f"{name}.parquet"
    pq.write_table(table, path)
    return path


BAD: dict[str, tuple[dict[str, Any], int, str]] = {
    "distance-zz": ({"distance": "zz"}, 1, "distance"),
    "distance-65": ({"distance": 65}, 1, "distance"),
    "measure-100": ({"measure": "m" * 100}, 1, "measure"),
    "score-nan": ({"score": math.nan}, 1, "score"),
    "text-surrogate": ({"text_bytes": b"bad \xed\xa0\x80 text"}, 0, "UTF-8"),
}


@pytest.fixture(params=["sqlite-file", "postgresql", "mysql"])
def load_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite-file":
        return f"sqlite:///{tmp_path / 'store.db'}"
    url = new_server_database(str(request.param))
    migrate.upgrade(url)
    return url


def stored_rows(url: str) -> int:
    engine = create_engine_for(url)
    try:
        with engine.connect() as connection:
            return sum(
                int(connection.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one())
                for table in ("simstore_fingerprints", "simstore_decisions")
            )
    finally:
        engine.dispose()


def test_db_load_refuses_a_hand_over_field_the_store_cannot_hold(
    load_url: str, tmp_path: Path
) -> None:
    cli = Cli(tmp_path, load_url)
    for name, (changes, row, field) in BAD.items():
        path = handover(tmp_path, name, changes, row)
        # batch size 1: the good row before the bad one is refused with it (nothing written)
        ran = cli("db", "load", str(path), "--batch-size", "1")
        assert ran.returncode == 4, (name, ran.stderr)
        assert ran.stderr.startswith("simstore: error:"), name
        assert field in ran.stderr, (name, ran.stderr)
        assert "unexpected" not in ran.stderr
        assert stored_rows(load_url) == 0, name
    good = cli("db", "load", str(handover(tmp_path, "good", {}, 0)))
    assert good.returncode == 0, good.stderr
    assert stored_rows(load_url) == 2
