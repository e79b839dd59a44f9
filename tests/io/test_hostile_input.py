"""Input that used to stop a run or slip through, each a real ``simstore`` subprocess: a JSON
integer past Python's 4,300-digit conversion limit, a CSV field past the csv module's 131,072
characters, a binary file read as lines, and a hand-over whose rows would leave a decision
pointing nowhere or a text the store refuses."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.cli.test_commands import Cli, records, summary_numbers, write
from tests.cli.test_hostile_records import handover, load_url, stored_rows

pytestmark = pytest.mark.slow  # CLI subprocess runs

__all__ = ["load_url"]  # the fixture, used by name

GOOD = [
    '{"id": "a", "text": "the harbour ferry leaves every twenty minutes from the north pier"}',
    '{"id": "c", "text": "season tickets stay valid until the end of the month at the kiosk"}',
]
# one more digit than int() converts by default (sys.get_int_max_str_digits() is 4,300)
HUGE = '{"id": "b", "text": "a record with a huge number", "n": ' + "9" * 4301 + "}"


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path, f"sqlite:///{tmp_path / 'store.db'}")


def test_a_huge_json_integer_is_one_rejected_line_and_the_rest_is_read(cli: Cli) -> None:
    write(cli.folder / "in.jsonl", [GOOD[0], HUGE, GOOD[1], '{"id": "d", "text": "open}'])
    ran = cli("ingest", "in.jsonl")
    assert ran.returncode == 1, ran.stderr  # bad records: exit 1, the others are added
    assert "unexpected" not in ran.stderr
    assert "in.jsonl:2: invalid JSON: a number of more than 4,300 digits" in ran.stderr
    # json's own message ends in "starting at"; the column is said once (21: the quote that
    # opens "open}, counted by hand)
    assert "in.jsonl:4: invalid JSON: Unterminated string starting at column 21" in ran.stderr
    assert "at at" not in ran.stderr
    assert summary_numbers(ran.stdout) == {"records read": 4, "kept": 2, "duplicates": 0,
                                           "skipped": 2}  # fmt: skip
    dedup = cli("dedup", "in.jsonl", "--out", "kept.jsonl")
    assert dedup.returncode == 1 and "unexpected" not in dedup.stderr, dedup.stderr
    assert [record["id"] for record in records(cli.folder / "kept.jsonl")] == ["a", "c"]


def test_a_csv_field_may_be_as_long_as_a_text(cli: Cli) -> None:
    path = cli.folder / "in.csv"
    with path.open("w", newline="", encoding="utf-8") as file:
        out = csv.writer(file)
        out.writerow(["id", "text"])
        # 200,000 characters: past the csv module's 131,072, inside the text limit
        out.writerow(["long", " ".join(f"word{i}" for i in range(25_000))[:200_000]])
        out.writerow(["toolong", "y" * 1_000_002])  # past the text limit (1,000,000)
        out.writerow(["short", "a short text after the long ones"])
    ran = cli("ingest", "in.csv")
    assert ran.returncode == 1, ran.stderr
    assert "in.csv:3: a field of more than 1,000,000 characters" in ran.stderr
    assert "in.csv:2" not in ran.stderr and "unexpected" not in ran.stderr
    assert summary_numbers(ran.stdout)["kept"] == 2
    # the limit follows --max-text-length
    small = cli("--namespace", "small", "--max-text-length", "150000", "ingest", "in.csv")
    assert "in.csv:2: " in small.stderr and "characters" in small.stderr, small.stderr


def test_a_binary_file_read_as_lines_is_refused_and_nothing_is_kept(cli: Cli) -> None:
    # a PNG's first bytes, then lines of printable bytes that decode as UTF-8
    (cli.folder / "image.txt").write_bytes(
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\n" + b"printable garbage line\n" * 200
    )
    ran = cli("ingest", "--format", "lines", "image.txt")
    assert ran.returncode == 4, ran.stderr
    assert "image.txt: a binary file" in ran.stderr and "unexpected" not in ran.stderr
    stats = cli.json("stats")
    assert stats["kept"] == 0
    # a text file of the same lines is read
    write(cli.folder / "plain.txt", ["printable garbage line"])
    assert cli("ingest", "--format", "lines", "plain.txt").returncode == 0


def test_db_load_refuses_rows_that_would_point_nowhere_or_hold_too_much(
    load_url: str, tmp_path: Path
) -> None:
    cli = Cli(tmp_path, load_url)
    cases = {
        "long-text": (handover(tmp_path, "long", {"text": "x" * 1_200_000}, 0), "1,200,000"),
        "null-fingerprint": (
            handover(tmp_path, "null", {"fingerprint": None}, 0),
            "fingerprint is null",
        ),
        "missing-target": (
            handover(tmp_path, "missing", {"duplicate_of": "nowhere"}, 1),
            "'nowhere', which is kept neither",
        ),
        "itself": (handover(tmp_path, "itself", {"duplicate_of": "b"}, 1), "of itself"),
    }
    for name, (path, said) in cases.items():
        ran = cli("db", "load", str(path))
        assert ran.returncode == 4, (name, ran.stderr)
        assert said in ran.stderr, (name, ran.stderr)
        assert "unexpected" not in ran.stderr, name
        assert stored_rows(load_url) == 0, name
    # a duplicate of a row kept in the namespace before the load is fine
    assert cli("db", "load", str(handover(tmp_path, "good", {}, 0))).returncode == 0
    later = handover(tmp_path, "later", {"key": "b2"}, 1)
    table = pq.read_table(later).slice(1, 1)  # the duplicate only, of 'a' kept by the first load
    pq.write_table(table, later)
    ran = cli("--json", "db", "load", str(later))
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["duplicates"] == 1
