"""``simstore check`` and ``simstore whatif`` run as a user runs them, on each dialect: read-only,
their output what ``ingest`` (for check) and the batch decision (for whatif) give, bad input
refused with simstore's own errors and exit codes."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from simstore.policy import whatif
from simstore.policy.policies import DEFAULT_POLICY
from simstore.storage import migrate
from simstore.store import SimStore
from tests.cli.test_commands import CORPUS, Cli, loads, records
from tests.conftest import new_server_database
from tests.policy.test_whatif import TEXTS

pytestmark = pytest.mark.slow  # CLI subprocess runs

WHERE = ["sqlite", "postgresql", "mysql"]


@pytest.fixture(params=WHERE)
def cli_on(request: pytest.FixtureRequest, tmp_path: Path) -> Cli:
    """The CLI on a new SQLite file, or a new database on a server (upgraded)."""
    if request.param == "sqlite":
        return Cli(tmp_path, f"sqlite:///{tmp_path / 'store.db'}")
    url = new_server_database(str(request.param))
    migrate.upgrade(url)
    return Cli(tmp_path, url)


def jsonl(path: Path, rows: list[tuple[str, str]]) -> Path:
    lines = [json.dumps({"id": key, "text": text}, ensure_ascii=False) for key, text in rows]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def corpus(count: int) -> list[tuple[str, str]]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()[:count]
    return [(str(record["id"]), record["text"]) for record in map(json.loads, lines)]


def contents(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of simstore's tables, sorted: the database as a whole, to see nothing changed."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            tables = sa.inspect(conn).get_table_names()
            return {
                name: sorted(
                    tuple(map(repr, row)) for row in conn.execute(sa.text(f"SELECT * FROM {name}"))
                )
                for name in tables
                if name.startswith("simstore_")
            }
    finally:
        engine.dispose()


def test_check_says_what_ingest_would_decide_and_writes_nothing(cli_on: Cli) -> None:
    cli, folder = cli_on, cli_on.folder
    rows = corpus(300)
    base, new = rows[:150], rows[150:]
    new += [(f"re-{key}", text + " (updated)") for key, text in rows[:10]]  # of the namespace
    new += [(f"again-{key}", "Fwd: " + text) for key, text in rows[150:155]]  # of the new file
    new.append(new[0])  # a record given twice: decided once
    jsonl(folder / "base.jsonl", base)
    source = jsonl(folder / "new.jsonl", new)
    for namespace in ("base", "ingested"):
        loads(cli("--json", "--namespace", namespace, "ingest", str(folder / "base.jsonl")))
    before = contents(cli.url)
    ran = cli.many(
        ("--namespace", "base", "check", str(source), "--out", str(folder / "out.jsonl")),
        ("--namespace", "base", "check", str(source), "--out", str(folder / "out.csv")),
        ("--namespace", "base", "--quiet", "check", str(source)),
    )
    assert [r.returncode for r in ran] == [0, 0, 0], [r.stderr for r in ran]
    assert contents(cli.url) == before  # nothing written, in any table
    assert "duplicates" in ran[0].stdout and ran[2].stderr == ""
    # the reference: the same file ingested into a copy of the namespace, decision by decision
    loads(cli("--json", "--namespace", "ingested", "ingest", str(source)))
    with SimStore(cli.url, namespace="ingested") as store:
        expected = []
        for key, _text in new:
            decision = store.get(key)
            assert decision is not None
            match = decision.duplicate_of
            expected.append((key, "new" if decision.inserted else "duplicate",
                             None if match is None else match.key))  # fmt: skip
    if expected[0][1] == "new":  # the record given again: an exact duplicate of its first
        expected[-1] = (new[0][0], "duplicate", new[0][0])
    lines = records(folder / "out.jsonl")
    assert [(r["id"], r["decision"], r["duplicate_of"]) for r in lines] == expected
    assert [json.loads(line) for line in ran[2].stdout.splitlines()] == lines
    counted = {kind: sum(r["decision"] == kind for r in lines) for kind in ("new", "duplicate")}
    assert counted["duplicate"] >= 15 and counted["new"] >= 100
    assert all(r["measure"] and r["score"] is not None for r in lines if r["duplicate_of"])
    with open(folder / "out.csv", encoding="utf-8", newline="") as stream:
        table = list(csv.DictReader(stream))
    as_text = [{k: "" if v is None else str(v) for k, v in r.items()} for r in lines]
    assert table == as_text


def test_whatif_shows_the_flips_both_ways_and_the_options_of_a_new_namespace(
    cli_on: Cli,
) -> None:
    cli, folder = cli_on, cli_on.folder
    keys = [f"k{i}" for i in range(len(TEXTS))]
    source = jsonl(folder / "texts.jsonl", list(zip(keys, TEXTS, strict=True)))
    loads(cli("--json", "ingest", str(source)))
    before = contents(cli.url)
    report = folder / "whatif.html"
    shown = loads(cli("--json", "--threshold", "0.45", "whatif", str(source),
                      "--report", str(report)))  # fmt: skip
    looser = whatif.proposal(DEFAULT_POLICY, options={"threshold": 0.45})
    expected = whatif.compare(TEXTS, keys=keys, current=DEFAULT_POLICY, proposed=looser)
    merged = [f.key for f in expected.of_kind("merged")]
    assert merged and [f["key"] for f in shown["flipped"]] == merged
    assert shown["flips"] == {"merged": len(merged), "split": 0, "moved": 0}
    assert shown["changes"] == [{"option": "threshold", "now": 0.55, "proposed": 0.45}]
    assert shown["duplicates"]["jaccard"]["proposed"] == expected.duplicates["jaccard"][1]
    assert contents(cli.url) == before  # nothing written
    page = report.read_text(encoding="utf-8")
    assert "Would become duplicates" in page and all(f"<code>{k}</code>" in page for k in merged)
    assert "--policy-option threshold=0.45" in page
    # the other way: the looser recipe's namespace, the default proposed
    options = shown["new_namespace"]
    loads(cli("--json", "--namespace", "loose", *options, "ingest", str(source)))
    back = loads(cli("--json", "--namespace", "loose", "--policy-option", "threshold=0.55",
                     "whatif", str(source)))  # fmt: skip
    assert [f["key"] for f in back["flipped"] if f["kind"] == "split"] == merged
    with SimStore(cli.url, namespace="loose") as store:
        assert store.policy.recipe() == looser.recipe()  # the options make the recipe exactly
    # without a file: the namespace's kept texts (short texts keep theirs)
    before = contents(cli.url)
    sampled = cli("--threshold", "0.45", "whatif", "--sample", "100")
    assert sampled.returncode == 0, sampled.stderr
    assert f"{len(merged)} would become duplicates" in sampled.stdout
    assert "latest kept texts" in sampled.stdout
    assert "--policy-option threshold=0.45" in sampled.stdout
    assert contents(cli.url) == before


def test_bad_input_is_refused_with_a_clear_message(cli_on: Cli) -> None:
    cli, folder = cli_on, cli_on.folder
    source = jsonl(folder / "texts.jsonl", [(f"k{i}", t) for i, t in enumerate(TEXTS)])
    loads(cli("--json", "ingest", str(source)))
    with SimStore(cli.url, namespace="empty", auto_upgrade=False):
        pass  # a namespace without a row
    cases = [
        # a missing namespace is exit 1, as for every command that reads one (stats, query)
        (("--namespace", "nowhere", "check", str(source)), 1, "no namespace 'nowhere'"),
        (("--namespace", "nowhere", "--threshold", "0.4", "whatif"), 1, "no namespace 'nowhere'"),
        (("whatif", str(source)), 4, "give the change to try"),
        (("--policy-option", "thresold=0.4", "whatif"), 4, "has no option thresold"),
        (("--policy-option", "threshold=high", "whatif"), 4, "takes float, not 'high'"),
        (("--policy-option", "threshold", "whatif"), 2, "'threshold' is not KEY=VALUE"),
        (("--policy", "lsh", "whatif"), 2, "'lsh' is not one of"),
        (("check", str(source), "--out", str(source)), 4, "same file as the input"),
        (("--threshold", "0.4", "whatif", "--report", str(source), str(source)), 4, "same file"),
        (("--threshold", "0.4", "whatif", "--sample", "0"), 2, "--sample"),
        (("--namespace", "empty", "--threshold", "0.4", "whatif"), 4, "keeps no text to sample"),
        (("check", str(source), "--out-format", "xml"), 2, "'xml' is not one of"),
    ]
    ran = cli.many(*(arguments for arguments, _code, _message in cases))
    for (arguments, code, message), result in zip(cases, ran, strict=True):
        assert (result.returncode, message in result.stderr) == (code, True), (arguments, result)
        assert "Traceback" not in result.stderr
        # (a bad global option is click's usage error, shown by the group as for every command)
        assert code == 2 or result.stderr.startswith("simstore: error: ")
    bad = folder / "bad.jsonl"
    bad.write_text(
        '{"id": "x", "text": "A new bridge over the river."}\nnot json\n{"id": "y"}\n'
        '{"id": "z", "text": "!!! ???"}\n{"id": "w", "text": "A new bridge over the river!"}\n'
    )
    skipped = cli("check", str(bad))
    assert skipped.returncode == 1 and skipped.stderr.count("(skipped)") == 3
    assert "bad.jsonl:4: the text of key 'z' has no words" in skipped.stderr
    lines = [json.loads(line) for line in skipped.stdout.splitlines()]
    assert [(r["id"], r["duplicate_of"]) for r in lines] == [("x", None), ("w", "x")]
    strict = cli("check", str(bad), "--strict")
    assert strict.returncode == 1 and "--strict" in strict.stderr and strict.stdout == ""
