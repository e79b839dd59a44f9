"""The ``simstore`` command, run as a real subprocess against SQLite files in a temporary folder."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import click
import pytest

from simstore import fingerprint, to_hex
from simstore.io.records import text_key
from simstore.policy.policies import DEFAULT_POLICY, MinHashVerification
from simstore.storage import migrate
from simstore.store import SimStore
from simstore.text import minhash
from simstore.text.normalise import compare_normalise
from simstore.text.presets import presets
from simstore.text.similarity import char_ngrams
from tests.conftest import HANG

KEYS = minhash.LAYOUTS[DEFAULT_POLICY.minhash_bands][0]  # band keys a text (a key a band)

pytestmark = pytest.mark.slow  # CLI subprocess runs

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "corpus.jsonl"
CLI_GUIDE = ROOT / "docs" / "cli.md"
UNREACHABLE = "postgresql+psycopg://user:secret@127.0.0.1:1/x"
LONG_TEXT = (
    "The harbour ferry timetable changes on Monday: boats leave every twenty minutes from the "
    "north pier between six and nine in the morning, and every half hour for the rest of the "
    "day. Season tickets bought before the change stay valid until the end of the month, and "
    "the kiosk at the south pier will exchange them for the new cards free of charge. Bicycles "
    "travel free outside the morning rush, dogs on a lead are welcome on every deck, and the "
    "café on the upper deck opens half an hour after the first boat leaves the north pier. "
    "On public holidays the winter timetable applies, with the last boat leaving at eight in the "
    "evening; the ferry does not run on the first of January. Passengers with reduced mobility "
    "can ask the crew for the ramp at either pier, and the lift to the upper deck works again "
    "since the repairs in March. Lost property is kept at the north pier office for a month, "
    "and questions about the new cards go to the harbour office, open on weekdays from nine. "
    "Timetables are posted at both piers and on the board outside the harbour office."
)  # over 1,000 normalised characters: a long text, decided by the MinHash estimate


Ran = subprocess.CompletedProcess[str]


@dataclass
class Cli:
    """Runs ``python -m simstore.cli`` in ``folder`` with a SQLite file there as ``--db``."""

    folder: Path
    url: str

    def __call__(
        self,
        *args: str,
        stdin: str | None = None,
        db: str | None = "",
        env: dict[str, str] | None = None,
    ) -> Ran:
        environment = {k: v for k, v in os.environ.items() if k != "SIMSTORE_URL"}
        environment["PYTHONIOENCODING"] = "utf-8"
        environment.update(env or {})
        chosen = self.url if db == "" else db
        command = [sys.executable, "-m", "simstore.cli"]
        command += ["--db", chosen] if chosen is not None else []
        return subprocess.run(
            [*command, *args],
            input=stdin,
            capture_output=True,
            text=True,
            encoding="utf-8",
            cwd=self.folder,
            env=environment,
            timeout=HANG,
            check=False,
        )

    def json(self, *args: str, stdin: str | None = None) -> Any:
        return loads(self("--json", *args, stdin=stdin))

    def many(self, *calls: tuple[str, ...], stdin: str | None = None) -> list[Ran]:
        """Independent runs at the same time (each one costs a Python start-up)."""
        with ThreadPoolExecutor(max_workers=4) as pool:
            return list(pool.map(lambda args: self(*args, stdin=stdin), calls))


def loads(result: Ran) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path, f"sqlite:///{tmp_path / 'store.db'}")


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def decisions(cli: Cli) -> dict[str, str | None]:
    """key -> the key it duplicates (None: kept), read with plain SQL as an analyst would (the
    README's recipe: a kept row is the record of the decision that kept it)."""
    with contextlib.closing(sqlite3.connect(cli.folder / "store.db")) as connection:
        rows = connection.execute(
            "SELECT key, duplicate_of FROM simstore_decisions "
            "UNION ALL SELECT key, NULL FROM simstore_fingerprints"
        ).fetchall()
    return dict(rows)


def summary_numbers(stdout: str) -> dict[str, int]:
    """The counts of a text summary: ``records read  3,686`` -> {"records read": 3686}."""
    found = re.findall(r"^(records read|kept|duplicates|skipped)\s+([\d,]+)$", stdout, re.M)
    return {label: int(value.replace(",", "")) for label, value in found}


# --- ingest ------------------------------------------------------------------------------------


def test_ingest_corpus_is_consistent_and_a_rerun_changes_nothing(cli: Cli) -> None:
    lines = sum(1 for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip())
    first = cli("ingest", str(CORPUS))
    assert first.returncode == 0, first.stderr
    assert first.stderr == ""  # no progress bar when stderr is not a terminal
    numbers = summary_numbers(first.stdout)
    assert numbers["records read"] == lines
    assert numbers["kept"] + numbers["duplicates"] + numbers["skipped"] == lines
    assert numbers["skipped"] == 0
    assert numbers["kept"] > 0 and numbers["duplicates"] > 0
    assert "records/s" in first.stdout

    again = cli.json("ingest", str(CORPUS))
    assert again["read"] == lines
    assert (again["kept"], again["duplicates"]) == (numbers["kept"], numbers["duplicates"])
    decided = decisions(cli)
    assert len(decided) == lines
    assert sum(match is None for match in decided.values()) == numbers["kept"]


def test_ingest_with_workers_decides_as_without(cli: Cli, tmp_path: Path) -> None:
    alone = cli.json("ingest", "--batch-size", "500", str(CORPUS))
    pooled = Cli(tmp_path / "pooled", f"sqlite:///{tmp_path / 'pooled' / 'store.db'}")  # 1 worker
    pooled.folder.mkdir()
    with_workers = pooled.json("ingest", "--batch-size", "500", "--workers", "1", str(CORPUS))
    assert (with_workers["kept"], with_workers["duplicates"]) == (
        alone["kept"],
        alone["duplicates"],
    )
    assert decisions(pooled) == decisions(cli)
    refused = cli("ingest", "--workers", "-1", str(CORPUS))
    assert refused.returncode == 2 and "--workers" in refused.stderr


def test_bad_records_are_reported_with_file_and_line_and_skipped(cli: Cli) -> None:
    bad = write(
        cli.folder / "bad.jsonl",
        [
            json.dumps({"id": "good-1", "text": LONG_TEXT}),
            "{not json",
            json.dumps({"id": "no-text"}),
            json.dumps({"id": "empty", "text": "  "}),
            json.dumps({"id": "number", "text": 42}),
            "",
            json.dumps({"text": "a record without a key, so it is keyed by a hash of its text"}),
            json.dumps({"id": "good-1", "text": "the same key again with some other text"}),
            json.dumps({"id": 7, "text": "an integer key becomes a string key"}),
        ],
    )
    result = cli("--json", "ingest", bad.name)
    assert result.returncode == 1
    summary = json.loads(result.stdout)
    assert (summary["read"], summary["kept"], summary["skipped"]) == (8, 3, 5)
    for line in (2, 3, 4, 5, 8):
        assert f"bad.jsonl:{line}: " in result.stderr
    assert "simstore: error" not in result.stderr  # skipped records are not an error line
    keyless = text_key("a record without a key, so it is keyed by a hash of its text")
    assert sorted(decisions(cli)) == sorted(["7", keyless, "good-1"])


def test_strict_stops_at_the_first_bad_record_after_committing_the_good_ones(cli: Cli) -> None:
    lines = [
        json.dumps({"id": f"k{n}", "text": f"record number {n} {LONG_TEXT}"}) for n in range(3)
    ]
    bad = write(cli.folder / "bad.jsonl", [lines[0], lines[1], "[1, 2]", lines[2]])
    result = cli("ingest", "--strict", "--batch-size", "1000", str(bad))
    assert result.returncode == 1
    assert "bad.jsonl:3: a JSON list, not an object" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("simstore: error: stopped at ")
    assert summary_numbers(result.stdout)["records read"] == 3
    assert sorted(decisions(cli)) == ["k0", "k1"]


def test_csv_and_lines_formats(cli: Cli) -> None:
    table = cli.folder / "posts.csv"
    table.write_text(
        'id,text,author\n1,"A quoted text, with a comma,\nand a new line",ann\n2,,bob\n'
        f'3,"{LONG_TEXT}",cy\n4,"RT @ann: {LONG_TEXT}",dan\n',
        encoding="utf-8",
    )
    result = cli("--json", "ingest", str(table))
    assert result.returncode == 1  # row 2 has an empty text
    assert f"{table}:4: 'text' is empty" in result.stderr
    summary = json.loads(result.stdout)
    assert (summary["read"], summary["kept"], summary["duplicates"]) == (4, 2, 1)
    plain = write(cli.folder / "notes.txt", ["first line of notes here", "", LONG_TEXT])
    assert cli.json("ingest", plain.name)["read"] == 2
    decided = decisions(cli)
    notes = (text_key(LONG_TEXT), text_key("first line of notes here"))
    assert (decided["4"], decided[notes[0]], decided[notes[1]]) == ("3", "3", None)

    wrong = write(cli.folder / "wrong.csv", ["id,body", "1,hello"])
    result = cli("ingest", str(wrong))
    assert result.returncode == 4
    assert "no 'text' column" in result.stderr


def test_gzip_and_parquet_inputs(cli: Cli) -> None:
    import gzip

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {"id": f"g{n}", "text": f"record {n}: {LONG_TEXT}"[:: 1 if n % 2 else -1]} for n in range(4)
    ]
    with gzip.open(cli.folder / "posts.jsonl.gz", "wt", encoding="utf-8") as packed:
        packed.writelines(json.dumps(row) + "\n" for row in rows)
    with gzip.open(cli.folder / "posts.csv.gz", "wt", encoding="utf-8", newline="") as packed:
        writer = csv.DictWriter(packed, ["id", "text"])
        writer.writeheader()
        writer.writerows({"id": f"c{n}", "text": row["text"]} for n, row in enumerate(rows))
    pq.write_table(
        pa.Table.from_pylist([{"id": f"p{n}", "text": row["text"]} for n, row in enumerate(rows)]),
        cli.folder / "posts.parquet",
    )
    first = cli.json("ingest", "posts.jsonl.gz")
    assert (first["read"], first["skipped"]) == (4, 0)
    for name, prefix in (("posts.csv.gz", "c"), ("posts.parquet", "p")):
        again = cli.json("ingest", name)
        assert (again["read"], again["kept"], again["duplicates"]) == (4, 0, 4)  # the same texts
        assert {key for key in decisions(cli) if key.startswith(prefix)} == {
            f"{prefix}{n}" for n in range(4)
        }
    (cli.folder / "broken.jsonl.gz").write_bytes(b"not gzip at all\n")
    broken = cli("ingest", "broken.jsonl.gz")
    assert broken.returncode == 4 and "not a readable gzip file" in broken.stderr
    summary = cli("--json", "ingest", "broken.jsonl.gz")  # one document, the error in it
    assert summary.returncode == 4 and "not a readable gzip" in json.loads(summary.stdout)["error"]
    pq.write_table(pa.Table.from_pylist([{"id": "x", "body": "no text"}]), cli.folder / "x.parquet")
    wrong = cli("ingest", "x.parquet")
    assert wrong.returncode == 4 and "no 'text' column" in wrong.stderr


def test_stdin_is_json_lines_unless_a_format_is_given(cli: Cli) -> None:
    result = cli("--json", "ingest", "--format", "lines", "-", stdin=f"{LONG_TEXT}\nsecond\n")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["kept"] == 2
    assert decisions(cli) == {text_key(LONG_TEXT): None, text_key("second"): None}
    line = json.dumps({"id": "j1", "text": "a third record, read from stdin as JSON"})
    assert cli.json("ingest", "-", stdin=line + "\n")["kept"] == 1
    not_json = cli(
        "ingest", "-", stdin="x\n"
    )  # a bad record, said with its line, not a usage error
    assert not_json.returncode == 1 and "<stdin>:1" in not_json.stderr, not_json.stderr
    unknown = cli("ingest", "--bogus", "-", stdin="x\n")  # a usage error is one line too
    assert unknown.returncode == 2
    assert unknown.stderr == (
        "simstore: error: No such option '--bogus'. (see 'simstore ingest --help')\n"
    ), unknown.stderr


def test_records_without_a_key_are_keyed_by_their_text_whatever_the_path(cli: Cli) -> None:
    texts = [f"record {n} of a feed without keys: {LONG_TEXT}" for n in range(3)]
    feed = write(cli.folder / "a.jsonl", [json.dumps({"text": text}) for text in texts])
    first = cli.json("ingest", "./a.jsonl")
    assert (first["kept"] + first["duplicates"], first["replayed"]) == (3, 0)
    again = cli.json("ingest", str(feed))  # another spelling of the path: the same keys
    assert (again["kept"], again["duplicates"], again["replayed"]) == (0, 3, 3)
    piped = cli("--json", "ingest", "--format", "lines", "-", stdin="\n".join(texts) + "\n")
    assert piped.returncode == 0, piped.stderr  # a second feed on stdin is not rejected
    assert json.loads(piped.stdout)["replayed"] == 3
    assert set(decisions(cli)) == {text_key(text) for text in texts}

    # an exact copy of a kept text is a duplicate of it (a replay of its key), in and out of dedup
    copies = write(
        cli.folder / "b.jsonl", [json.dumps({"text": t}) for t in ("new text", "new text")]
    )
    unique, dups = cli.folder / "unique.jsonl", cli.folder / "dups.jsonl"
    summary = cli.json("dedup", str(copies), "--out", str(unique), "--dups", str(dups))
    assert (summary["kept"], summary["duplicates"]) == (1, 1)
    assert records(unique) == [{"text": "new text", "id": text_key("new text")}]
    assert [(r["duplicate_of"], r["measure"]) for r in records(dups)] == [
        (text_key("new text"), "exact")
    ]

    # --key-from line: <file>:<line>, the path normalised
    lines = ("ingest", "--key-from", "line")
    assert cli.json("--namespace", "by-line", *lines, "./a.jsonl")["replayed"] == 0
    assert cli.json("--namespace", "by-line", *lines, "a.jsonl")["replayed"] == 3
    with contextlib.closing(sqlite3.connect(cli.folder / "store.db")) as connection:
        keys = connection.execute(
            "SELECT d.key FROM (SELECT ns_id, key FROM simstore_decisions UNION ALL "
            "SELECT ns_id, key FROM simstore_fingerprints) d JOIN simstore_namespaces n "
            "ON n.id = d.ns_id WHERE n.name = 'by-line' ORDER BY d.key"
        ).fetchall()
    assert keys == [("a.jsonl:1",), ("a.jsonl:2",), ("a.jsonl:3",)]


def test_dedup_splits_the_corpus_by_group(cli: Cli) -> None:
    unique, dups = cli.folder / "unique.jsonl", cli.folder / "dups.jsonl"
    result = cli("--json", "dedup", str(CORPUS), "--out", str(unique), "--dups", str(dups))
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    kept, duplicates = records(unique), records(dups)
    assert (len(kept), len(duplicates)) == (summary["kept"], summary["duplicates"])
    assert len(kept) + len(duplicates) == summary["read"] == len(records(CORPUS))
    group = {record["id"]: record["group"] for record in kept}
    assert all(record["duplicate_of"] in group for record in duplicates)
    # Every duplicate is what the default policy says it is, re-checked with the exact measure:
    # short pairs by Jaccard over character 3-grams (simstore.text.similarity), long ones by the
    # MinHash estimate (their texts are not kept, so the recorded score is all there is).
    policy = MinHashVerification()
    texts = {record["id"]: record["text"] for record in kept}
    measures = Counter(record["measure"] for record in duplicates)
    assert {"jaccard", "minhash"} <= set(measures) <= {"jaccard", "containment", "minhash"}
    # the memory of boilerplate, counted here by hand: a line (normalised, 8 characters or more)
    # of a short text of several lines that 3 records before it carried is left out of it, and
    # out of the kept text it is compared with (which left out its own when it was kept)
    seen: Counter[str] = Counter()
    common: dict[str, set[str]] = {}
    for record in records(CORPUS):
        lines = [compare_normalise(line) for line in record["text"].splitlines()]
        present = [line for line in lines if line]
        several = len(present) > 1 and len(" ".join(present)) < policy.short_length
        held = {line for line in present if len(line) >= 8} if several else set()
        common[record["id"]] = {line for line in held if seen[line] >= 3}
        seen.update(held)

    def compared(text: str, aside: set[str]) -> str:
        lines = [compare_normalise(line) for line in text.splitlines()]
        rest = [line for line in lines if line and line not in aside]
        return " ".join(rest) if len("".join(rest)) >= 8 else compare_normalise(text)

    for record in duplicates:
        # the comparison text keeps the symbols that carry meaning (C++, .NET): compare_normalise
        aside = common[record["id"]]
        kept_aside = aside | common[record["duplicate_of"]]
        kept_grams = char_ngrams(compared(texts[record["duplicate_of"]], kept_aside), 3)
        new_grams = char_ngrams(compared(record["text"], aside), 3)
        if record["measure"] == "jaccard":
            score = len(kept_grams & new_grams) / len(kept_grams | new_grams)
            assert score >= policy.threshold and score == pytest.approx(record["score"], abs=1e-6)
        elif record["measure"] == "containment":  # the smaller's 3-grams held by the bigger
            shared = len(kept_grams & new_grams) / min(len(kept_grams), len(new_grams))
            assert policy.containment is not None and shared >= policy.containment
            assert shared == pytest.approx(record["score"], abs=1e-6)
        else:
            assert record["score"] >= policy.long_threshold
    # Most duplicates land in their own group. The corpus's look-alikes (one template, another
    # name or number) score as high as its edits by any text measure, so the default merges some;
    # the README's Detection quality section says how to keep them apart (a higher threshold).
    right = Counter(group[record["duplicate_of"]] == record["group"] for record in duplicates)
    assert right[True] > right[False]

    again = cli("--quiet", "dedup", str(CORPUS), "--out", "-")
    assert again.returncode == 0 and again.stderr == ""
    assert [json.loads(line)["id"] for line in again.stdout.splitlines()] == list(group)


# --- policies and their knobs ------------------------------------------------------------------


def test_policy_and_threshold_change_decisions_and_the_summary_names_the_policy(cli: Cli) -> None:
    default, simhash, strict = (
        cli.json(*options, "ingest", str(CORPUS))
        for options in (
            ("--db", f"sqlite:///{cli.folder / 'default.db'}"),
            ("--db", f"sqlite:///{cli.folder / 'simhash.db'}", "--policy", "simhash"),
            ("--db", f"sqlite:///{cli.folder / 'strict.db'}", "--threshold", "0.99"),
        )
    )
    assert default["policy"].startswith("minhash (") and "0.55" in default["policy"]
    assert strict["policy"].startswith("minhash (") and "0.99" in strict["policy"]
    assert strict["duplicates"] < default["duplicates"]
    exact = cli.json(
        "--db", f"sqlite:///{cli.folder / 'exact.db'}", "--policy", "simhash",
        "ingest", "--max-distance", "0", str(CORPUS),
    )  # fmt: skip
    assert exact["policy"] == "simhash (distance <= 0)" and exact["max_distance"] == 0
    assert simhash["policy"] == "simhash (distance <= 3)"
    assert exact["duplicates"] < simhash["duplicates"]
    assert len({default["duplicates"], simhash["duplicates"], exact["duplicates"]}) == 3
    text = cli("--db", f"sqlite:///{cli.folder / 'text.db'}", "ingest", str(CORPUS))
    assert re.search(r"^policy\s+minhash \(", text.stdout, re.M), text.stdout
    assert "max distance" not in text.stdout


def test_a_radius_under_the_minhash_policy_is_refused_not_ignored(cli: Cli) -> None:
    posts = write(cli.folder / "posts.jsonl", [json.dumps({"id": "a", "text": LONG_TEXT})])
    calls = [
        ("ingest", "--max-distance", "5", str(posts)),
        ("dedup", str(posts), "--out", "out.jsonl", "--max-distance", "5"),
        ("query", "--max-distance", "5", LONG_TEXT),
        ("--policy", "simhash", "--threshold", "0.9", "stats"),
    ]
    for args, result in zip(calls, cli.many(*calls), strict=True):
        assert result.returncode == 4, (args, result.stderr)
        assert result.stderr.startswith("simstore: error: "), result.stderr
    for result in cli.many(*calls[:3]):
        assert "decides texts by similarity" in result.stderr and "--threshold" in result.stderr
    assert not (cli.folder / "out.jsonl").exists() or records(cli.folder / "out.jsonl") == []
    assert not (cli.folder / "store.db").exists()  # refused before the store was opened


def test_query_shows_the_policy_measure_and_score(cli: Cli) -> None:
    short = "Just tried the new hiking boots from Pelham. Looks nice, stopped working after a week!"
    posts = write(
        cli.folder / "posts.jsonl",
        [json.dumps({"id": "long", "text": LONG_TEXT}), json.dumps({"id": "short", "text": short})],
    )
    assert cli("ingest", str(posts)).returncode == 0
    found, data = cli.many(("query", short + " Really."), ("--json", "query", "转发: " + LONG_TEXT))
    assert found.stdout.startswith("policy: minhash ("), found.stdout
    assert re.search(r"^key\s+distance\s+measure\s+score\s+fingerprint", found.stdout, re.M)
    assert re.search(r"^short\s+\d+\s+jaccard\s+0\.\d{3}\s+[0-9a-f]{16}", found.stdout, re.M)
    matched = loads(data)
    assert matched["policy"].startswith("minhash (")
    [match] = matched["matches"]
    assert (match["key"], match["measure"]) == ("long", "minhash") and match["score"] >= 0.55


# --- looking things up -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    """A store with a kept text, a repost of it and an unrelated Chinese text (read-only use)."""
    folder = tmp_path_factory.mktemp("filled")
    cli = Cli(folder, f"sqlite:///{folder / 'store.db'}")
    posts = write(
        cli.folder / "posts.jsonl",
        [
            json.dumps({"id": "a", "text": LONG_TEXT}),
            json.dumps({"id": "b", "text": "转发: " + LONG_TEXT}),
            json.dumps({"id": "c", "text": "今天天气很好，我们一起去公园散步，顺便买点水果回家。"}),
        ],
    )
    assert cli("ingest", str(posts)).returncode == 0
    return cli


def test_query_show_and_explain(filled: Cli) -> None:
    found, piped, nothing, shown, missing, explained, data, explained_kept = filled.many(
        ("query", LONG_TEXT),
        ("--json", "query", "-"),
        ("query", "something else entirely, not stored anywhere"),
        ("--json", "show", "b"),
        ("show", "nope"),
        ("explain", "b"),
        ("--json", "explain", "b"),
        ("explain", "a"),
        stdin=LONG_TEXT,
    )
    assert re.search(r"^a\s+0\s+minhash\s+1\.000\s+[0-9a-f]{16}\s+\d{4}-", found.stdout, re.M)
    matched = loads(piped)
    assert matched["fingerprint"] == to_hex(fingerprint(LONG_TEXT))
    assert [match["key"] for match in matched["matches"]][:1] == ["a"]
    assert "no match" in nothing.stdout

    decision = loads(shown)
    assert decision["inserted"] is False and decision["duplicate_of"]["key"] == "a"
    assert missing.returncode == 1
    assert missing.stderr.startswith("simstore: error: no key 'nope'")

    assert "duplicate of a at distance" in explained.stdout
    assert "differing bits" in explained.stdout and "not stored" in explained.stdout
    why = loads(data)
    xor = int(why["fingerprint"], 16) ^ int(why["duplicate_of"]["fingerprint"], 16)
    assert why["differing_bits"] == [bit for bit in range(64) if xor >> bit & 1]
    assert len(why["differing_bits"]) == why["duplicate_of"]["distance"]
    assert "kept" in explained_kept.stdout


def test_stats_purge_and_db_commands(filled: Cli) -> None:
    stats, text, purged, current = filled.many(
        ("--json", "stats"),
        ("stats",),
        ("--json", "purge", "--keep", "2d"),
        ("--json", "db", "current"),
    )
    assert (loads(stats)["kept"], loads(stats)["decisions"], loads(stats)["duplicates"]) == (
        2,
        3,
        1,
    )
    assert re.search(r"^kept\s+2$", text.stdout, re.M)
    assert loads(purged)["deleted"] == 0
    revision = loads(current)
    assert revision["revision"] == revision["head"] and revision["up_to_date"] is True


def table_counts(cli: Cli) -> dict[str, int]:
    with contextlib.closing(sqlite3.connect(cli.folder / "store.db")) as connection:
        return {
            table: connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("simstore_fingerprints", "simstore_decisions", "simstore_minhash")
        }


def test_purge_has_no_window_unless_given_a_dry_run_and_counts_per_table(cli: Cli) -> None:
    old = datetime.now(timezone.utc) - timedelta(days=3)
    with SimStore(cli.url) as store:
        for n in range(3):
            store.add(f"old text number {n}: {LONG_TEXT}"[:: -1 if n else 1], key=f"old{n}", at=old)
        assert not store.add(f"old text number 0: {LONG_TEXT}!", key="old-copy", at=old).inserted
        store.add("a new text, added today, that the window keeps", key="new")
    before = table_counts(cli)
    assert before["simstore_minhash"] > 0

    nothing = cli("purge")  # the library's default: no window, nothing deleted
    assert nothing.returncode == 0, nothing.stderr
    assert "no retention window: nothing purged" in nothing.stdout
    assert table_counts(cli) == before

    dry = cli.json("purge", "--keep", "2d", "--dry-run")
    assert table_counts(cli) == before  # nothing written
    expected = {
        "simstore_fingerprints": before["simstore_fingerprints"] - 1,
        "simstore_decisions": before["simstore_decisions"],  # old-copy's: the one logged
        "simstore_minhash": before["simstore_minhash"] - KEYS,  # the new text's stay
    }
    assert (dry["dry_run"], dry["tables"], dry["partition"]) == (True, expected, "1h")
    assert dry["deleted"] == expected["simstore_fingerprints"] + expected["simstore_decisions"]

    done = cli.json("--keep", "2d", "purge")  # the global window is purge's default
    assert (done["dry_run"], done["tables"]) == (False, expected)
    assert table_counts(cli) == {"simstore_fingerprints": 1, "simstore_decisions": 0,
                                 "simstore_minhash": KEYS}  # fmt: skip

    short = cli("purge", "--keep", "1m")
    assert short.returncode == 0, short.stderr
    assert "shorter than a partition (1h)" in short.stdout
    assert re.search(r"^simstore_fingerprints\s+0$", short.stdout, re.M)


def namespace_names(cli: Cli) -> list[str]:
    with contextlib.closing(sqlite3.connect(cli.folder / "store.db")) as connection:
        rows = connection.execute("SELECT name FROM simstore_namespaces ORDER BY name").fetchall()
    return [name for (name,) in rows]


def test_read_only_commands_never_write_and_refuse_an_unknown_namespace(cli: Cli) -> None:
    missing = cli.folder / "store.db"
    calls = [("stats",), ("show", "a"), ("query", "x"), ("explain", "a"), ("export",)]
    for args, result in zip(calls, cli.many(*calls), strict=True):
        assert result.returncode == 1, (args, result.stderr)
        assert result.stderr.startswith("simstore: error: no database at "), result.stderr
    current = cli.json("db", "current")
    assert current["revision"] is None and not current["up_to_date"]
    assert cli("db", "check").returncode == 1
    assert not missing.exists()  # neither the reads nor db current/check created the file

    posts = write(cli.folder / "posts.jsonl", [json.dumps({"id": "a", "text": LONG_TEXT})])
    assert cli("ingest", str(posts)).returncode == 0
    before = missing.read_bytes()
    typo = [("--namespace", "typo", *args) for args in (*calls, ("purge", "--keep", "1d"))]
    for args, result in zip(typo, cli.many(*typo), strict=True):
        assert result.returncode == 1, (args, result.stderr)
        assert "no namespace 'typo'" in result.stderr and "'default'" in result.stderr
    assert namespace_names(cli) == ["default"]
    assert missing.read_bytes() == before


def ingest_a_and_its_repost(cli: Cli, *options: str) -> Path:
    """Ingest a kept text "a" and "b", a repost of it; the file they were read from."""
    lines = [
        json.dumps({"id": "a", "text": LONG_TEXT}),
        json.dumps({"id": "b", "text": "转发 " + LONG_TEXT}),
    ]
    posts = write(cli.folder / "posts.jsonl", lines)
    assert cli(*options, "ingest", str(posts)).returncode == 0
    return posts


def test_namespaces_are_listed_and_dropped_only_with_yes(cli: Cli) -> None:
    ingest_a_and_its_repost(cli)
    ingest_a_and_its_repost(cli, "--namespace", "other", "--preset", "pypi-simhash")
    listed = cli.json("namespaces")
    assert [(n["name"], n["kept"], n["decisions"]) for n in listed] == [
        ("default", 1, 2),
        ("other", 1, 2),
    ]
    assert listed[1]["preset"].startswith("pypi-simhash@") and listed[0]["created_at"].endswith(
        "+00:00"
    )
    text = cli("namespaces", "list")
    assert re.search(r"^other\s+pypi-simhash@\d+\s+minhash\s+1\s+2\s+\d{4}-", text.stdout, re.M), (
        text.stdout
    )

    refused = cli("namespaces", "drop", "other")
    assert refused.returncode == 1 and "without --yes" in refused.stderr
    assert namespace_names(cli) == ["default", "other"]
    dropped = cli.json("namespaces", "drop", "other", "--yes")
    assert dropped["deleted"]["simstore_fingerprints"] == 1
    assert dropped["deleted"]["simstore_decisions"] == 1  # its duplicate's; the kept row is its own
    assert namespace_names(cli) == ["default"]
    assert cli("namespaces", "drop", "other", "--yes").returncode == 1
    assert cli.json("stats")["kept"] == 1  # the other namespace is untouched


def test_remove_a_kept_key_leaves_the_decisions_that_named_it(cli: Cli) -> None:
    ingest_a_and_its_repost(cli)
    removed = cli("remove", "a")
    assert removed.returncode == 0 and "removed a" in removed.stdout
    assert cli("remove", "a").returncode == 1
    shown = cli("show", "b")
    assert "duplicate of a, which has since been removed or purged" in shown.stdout
    data = cli.json("show", "b")
    assert data["duplicate_of"] is None and data["duplicate_of_removed"] == "a"
    assert decisions(cli) == {"b": "a"}  # the table keeps what was decided
    assert cli("show", "a").returncode == 1
    again = write(cli.folder / "again.jsonl", [json.dumps({"id": "a2", "text": LONG_TEXT})])
    assert cli.json("ingest", str(again))["kept"] == 1  # nothing matches a removed key


def test_export_streams_decisions_kept_rows_and_clusters(cli: Cli) -> None:
    assert cli("ingest", str(CORPUS)).returncode == 0
    stats = cli.json("stats")
    exported, kept_csv, clusters, clusters_csv = cli.many(
        ("export",),
        ("export", "--what", "kept", "--format", "csv"),
        ("export", "--what", "clusters"),
        ("export", "--what", "clusters", "--format", "csv", "--out", "clusters.csv"),
    )
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    assert len(rows) == stats["decisions"]
    assert {row["key"]: row["duplicate_of"] for row in rows} == decisions(cli)
    assert all(row["decided_at"].endswith("+00:00") for row in rows)
    table = list(csv.DictReader(kept_csv.stdout.splitlines()))
    assert len(table) == stats["kept"] and set(table[0]) == {
        "key",
        "fingerprint",
        "added_at",
        "text",
    }
    groups = [json.loads(line) for line in clusters.stdout.splitlines()]
    assert sum(group["size"] - 1 for group in groups) == stats["duplicates"]
    assert all(group["keys"][0] == group["cluster"] for group in groups)
    assert "exported" in clusters_csv.stderr
    members = list(csv.DictReader((cli.folder / "clusters.csv").read_text().splitlines()))
    assert len(members) == sum(group["size"] for group in groups)


def test_db_check_fails_until_upgrade(cli: Cli) -> None:
    checked = cli("db", "check")
    assert checked.returncode == 1
    assert f"simstore --db '{cli.url}' db upgrade" in checked.stderr
    assert cli.json("db", "current")["revision"] is None
    assert not (cli.folder / "store.db").exists()  # neither check nor current made the file
    upgraded = cli.json("db", "upgrade")
    assert upgraded["revision"] == upgraded["head"]
    assert cli("db", "check").returncode == 0


def test_fingerprint_and_presets_need_no_database(tmp_path: Path) -> None:
    nowhere = Cli(tmp_path, "sqlite:////no/such/folder/x.db")
    data, text, listed = nowhere.many(
        ("--json", "fingerprint", "今天天气很好"),
        ("--preset", "pypi-simhash", "fingerprint", "-"),
        ("--json", "presets"),
        stdin="hello world",
    )
    result = loads(data)
    assert result["fingerprint"] == to_hex(fingerprint("今天天气很好")) and result["features"] > 0
    assert text.stdout.startswith(to_hex(fingerprint("hello world", preset="pypi-simhash")))
    names = loads(listed)
    assert [preset["name"] for preset in names] == presets()
    assert sum(preset["default"] for preset in names) == 1
    assert not [p["name"] for p in names if "seed" in p["summary"]]  # meaningful to a user


def test_a_text_that_starts_with_a_dash_goes_after_double_dash(filled: Cli) -> None:
    refused, printed, found, helped = filled.many(
        ("fingerprint", "-20% off everything"),
        ("--json", "fingerprint", "--", "-20% off everything"),
        ("--json", "query", "--", "-" + LONG_TEXT),
        ("--help",),
    )
    assert refused.returncode == 2 and "No such option" in refused.stderr
    assert loads(printed)["fingerprint"] == to_hex(fingerprint("-20% off everything"))
    assert [match["key"] for match in loads(found)["matches"]][:1] == ["a"]
    assert "goes after '--'" in helped.stdout


def test_a_missing_extra_is_exit_5_with_its_install_line_before_anything_is_made(
    tmp_path: Path,
) -> None:
    fake = tmp_path / "fake"
    for module in ("jieba", "pyarrow", "pyspark"):  # each import fails as if not installed
        (fake / module).mkdir(parents=True)
        (fake / module / "__init__.py").write_text(f'raise ImportError("no {module} here")\n')
    (tmp_path / "in.parquet").write_bytes(b"PAR1")
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'store.db'}")
    env = {"PYTHONPATH": str(fake)}
    calls = [
        (("--preset", "jieba-tfidf", "fingerprint", "今天天气很好"), "zh"),
        (("--preset", "jieba-tfidf", "ingest", str(CORPUS)), "zh"),
        (("ingest", str(tmp_path / "in.parquet")), "parquet"),
        (("spark", "dedup", str(CORPUS), "--out", str(tmp_path / "out")), "spark"),
    ]
    for args, extra in calls:
        result = cli(*args, env=env)
        assert result.returncode == 5, (args, result.stderr)
        assert result.stderr.startswith("simstore: error: "), result.stderr
        assert f"pip install 'simstore[{extra}]'" in result.stderr
        assert f"from a checkout: pip install '.[{extra}]'" in result.stderr
        assert "unexpected" not in result.stderr
    assert not (tmp_path / "store.db").exists()  # nothing was made before the error


# --- errors and exit codes ---------------------------------------------------------------------


def test_unreachable_database_is_one_line_exit_3_without_password(tmp_path: Path) -> None:
    unreachable = Cli(tmp_path, UNREACHABLE)
    calls = [("stats",), ("db", "check"), ("ingest", str(CORPUS))]
    for args, result in zip(calls, unreachable.many(*calls), strict=True):
        assert result.returncode == 3, (args, result.stderr)
        assert result.stderr.startswith("simstore: error: ")
        assert len(result.stderr.strip().splitlines()) == 1
        assert "secret" not in result.stdout + result.stderr


def test_a_missing_driver_names_the_extra_and_the_url_to_write(cli: Cli) -> None:
    blocked = cli.folder / "blocked"
    blocked.mkdir()
    (blocked / "psycopg.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'psycopg'\", name='psycopg')\n"
    )
    environment = {"PYTHONPATH": str(blocked)}
    no_psycopg, mysqldb = (
        cli("stats", db="postgresql+psycopg://u@127.0.0.1:1/x", env=environment),
        cli("stats", db="mysql://u@127.0.0.1:1/x"),
    )
    assert no_psycopg.returncode == 5, no_psycopg.stderr  # a missing extra
    assert "No module named 'psycopg'" in no_psycopg.stderr
    assert "pip install 'simstore[postgresql]'" in no_psycopg.stderr
    assert "pip install '.[postgresql]'" in no_psycopg.stderr
    assert mysqldb.returncode == 5
    assert "write mysql+pymysql://" in mysqldb.stderr and "simstore[mysql]" in mysqldb.stderr


def test_password_from_the_environment_is_never_shown(cli: Cli) -> None:
    env = {"SIMSTORE_URL": UNREACHABLE}
    with ThreadPoolExecutor() as pool:
        running = pool.submit(cli, "--debug", "stats", db=None, env=env)
        helped = cli("--help", db=None, env=env)
        result = running.result()
    assert result.returncode == 3
    assert "Traceback" in result.stderr  # --debug shows it
    assert "secret" not in result.stdout + result.stderr + helped.stdout


def test_without_db_the_database_is_simstore_url_else_simstore_db_here(cli: Cli) -> None:
    # docs/cli.md: --db defaults to $SIMSTORE_URL, else sqlite:///simstore.db in the current folder
    feed = write(cli.folder / "feed.jsonl", [json.dumps({"id": "a", "text": "ferry times"})])
    named = cli.folder / "named.db"
    ran = cli("ingest", str(feed), db=None, env={"SIMSTORE_URL": f"sqlite:///{named}"})
    assert ran.returncode == 0, ran.stderr
    assert not (cli.folder / "simstore.db").exists()
    ran = cli("ingest", str(feed), db=None)
    assert ran.returncode == 0, ran.stderr
    for path in (named, cli.folder / "simstore.db"):
        with SimStore(f"sqlite:///{path}") as store:
            assert store.stats().kept == 1, path


EXIT_CODES = {
    ("query", "--max-distance", "99", "x"): 4,
    ("--preset", "no-such-preset", "stats"): 4,
    ("purge", "--keep", "soon"): 4,
    ("ingest", "missing.jsonl"): 2,
}


def test_exit_codes(cli: Cli) -> None:
    migrate.upgrade(cli.url)  # several processes must not create a fresh file's schema at once
    for (args, code), result in zip(EXIT_CODES.items(), cli.many(*EXIT_CODES), strict=True):
        assert result.returncode == code, (args, result.stderr)
        assert "Traceback" not in result.stderr
        if code != 2:  # click's usage errors have their own format
            assert result.stderr.startswith("simstore: error: ")


def test_preset_mismatch_is_refused(filled: Cli) -> None:
    result = filled("--preset", "pypi-simhash", "stats")
    assert result.returncode == 4
    assert "was made with preset" in result.stderr


# --- docs --------------------------------------------------------------------------------------


def command_paths() -> list[str]:
    from simstore.cli import main

    paths = []
    for name, command in sorted(main.commands.items()):
        if isinstance(command, click.Group):
            paths += [f"{name} {sub}" for sub in sorted(command.commands)]
        else:
            paths.append(name)
    return paths


def test_every_command_has_help_and_the_main_help_lists_exit_codes(cli: Cli) -> None:
    from simstore.cli import main

    for path in command_paths():
        command: click.Command = main
        for part in path.split():
            assert isinstance(command, click.Group)
            command = command.commands[part]
        assert command.help and len(command.help) > 20, path
    helped = cli("--help", db=None).stdout
    assert "Exit codes" in helped and "database unavailable" in helped


def _command_line_section() -> str | None:
    text = CLI_GUIDE.read_text(encoding="utf-8") if CLI_GUIDE.exists() else ""
    found = re.search(r"^## The commands\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    return found.group(1) if found else None


@pytest.mark.skipif(
    _command_line_section() is None, reason="docs/cli.md has no '## The commands' section yet"
)
def test_every_command_appears_in_the_readme() -> None:
    section = _command_line_section() or ""
    missing = [path for path in command_paths() if not re.search(rf"\b{path}\b", section)]
    assert not missing, f"commands missing from docs/cli.md's 'The commands' table: {missing}"


def test_urls_a_newcomer_types_get_a_message_that_says_what_to_write(cli: Cli) -> None:
    calls = [
        ("--db", "postgres://root@127.0.0.1/test", "stats"),
        ("--db", "notaurl", "stats"),
        ("--db", "sqlite://", "ingest", "-"),
    ]
    said = ["write postgresql+psycopg://", "write e.g. sqlite:///", "in-memory database"]
    for args, result, words in zip(calls, cli.many(*calls, stdin="{}\n"), said, strict=True):
        assert result.returncode == 4, (args, result.stderr)
        assert result.stderr.startswith("simstore: error: ") and words in result.stderr, args
    assert not (cli.folder / "store.db").exists()
