"""``simstore cap``, the fill in ``stats`` and ``db check``, a capped ``purge`` and the option
``expire_by_last_seen``, run as real subprocesses against a SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_commands import Cli, loads, write

pytestmark = pytest.mark.slow  # CLI subprocess runs

TEXTS = [
    "The ferry to the islands leaves at seven every morning from the north pier.",
    "Quarterly figures show the bakery sold more rye bread than ever before in March.",
    "Volunteers repainted the old library's reading room over two long weekends.",
    "A storm closed the mountain pass overnight and the snowploughs are out again.",
]


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path, f"sqlite:///{tmp_path / 'store.db'}")


def _jsonl(folder: Path, name: str, texts: list[tuple[str, str]]) -> Path:
    lines = [json.dumps({"id": key, "text": text}) for key, text in texts]
    return write(folder / name, lines)


def test_a_cap_is_set_shown_and_enforced_by_purge(cli: Cli) -> None:
    source = _jsonl(cli.folder, "in.jsonl", [(f"k{i}", t) for i, t in enumerate(TEXTS)])
    assert cli("--quiet", "ingest", str(source), "--key-field", "id").returncode == 0
    assert cli("cap").stdout.strip() == "default: no cap"
    shown = cli("cap", "3")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == "default: 4 of 3 kept (133%)"
    stats = cli.json("stats")
    assert (stats["kept"], stats["max_kept"], stats["fill"]) == (4, 3, "4 of 3 kept (133%)")
    check = cli("db", "check")
    assert check.returncode == 0 and "namespace default: 4 of 3 kept (133%)" in check.stdout
    assert cli.json("db", "check")["capped"] == [
        {"namespace": "default", "kept": 4, "max_kept": 3, "fill": "4 of 3 kept (133%)"}
    ]
    dry = cli.json("purge", "--dry-run")
    assert (dry["evicted"], dry["max_kept"]) == (1, 3)
    purged = cli.json("purge")
    assert (purged["evicted"], purged["deleted"]) == (1, 1)
    # every text was kept in one batch, at one moment: the oldest by id goes, k0
    assert cli("show", "k0").returncode != 0
    assert cli.json("stats")["fill"] == "3 of 3 kept (100%)"
    assert cli("cap", "none").stdout.strip() == "default: no cap"
    assert cli.json("stats")["max_kept"] is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("-1", "max_kept must be a positive int, got -1"),
        ("0", "max_kept must be a positive int, got 0"),
        ("many", "max_kept must be an int, not str"),
    ],
)
def test_a_bad_cap_is_refused_with_simstores_message(cli: Cli, value: str, message: str) -> None:
    refused = cli("cap", value)  # bad input first: before the missing database
    assert refused.returncode == 4 and refused.stderr.strip() == f"simstore: error: {message}"
    source = _jsonl(cli.folder, "in.jsonl", [("k", TEXTS[0])])
    assert cli("--quiet", "ingest", str(source), "--key-field", "id").returncode == 0
    assert cli("cap", "5").returncode == 0
    refused = cli("cap", value)
    assert refused.returncode == 4, refused.stderr
    assert refused.stderr.strip() == f"simstore: error: {message}"
    assert "Traceback" not in refused.stderr
    assert cli.json("cap")["max_kept"] == 5  # unchanged


def test_expire_by_last_seen_moves_the_kept_text_and_is_recorded(cli: Cli) -> None:
    option = ("--policy-option", "expire_by_last_seen=true")
    first = _jsonl(cli.folder, "first.jsonl", [("a", TEXTS[0])])
    assert cli("--quiet", *option, "ingest", str(first), "--key-field", "id").returncode == 0
    before = cli.json("stats")["oldest"]
    again = _jsonl(cli.folder, "again.jsonl", [("a-again", TEXTS[0] + " ")])
    # opened without the option: the namespace's recorded recipe has it
    assert cli("--quiet", "ingest", str(again), "--key-field", "id").returncode == 0
    stats = cli.json("stats")
    assert (stats["kept"], stats["duplicates"]) == (1, 1)
    assert stats["oldest"] > before  # the kept text now carries its last sighting

    refused = cli("--policy-option", "expire_by_last_seen=false", "stats")
    assert refused.returncode == 4
    assert "expire_by_last_seen" in refused.stderr and "refusing another policy" in refused.stderr


def test_a_bad_option_value_is_refused(cli: Cli) -> None:
    refused = cli("--policy-option", "expire_by_last_seen=maybe", "stats")
    assert refused.returncode == 4
    assert refused.stderr.strip() == (
        "simstore: error: policy option expire_by_last_seen of minhash takes bool, not 'maybe'"
    )
    assert not (cli.folder / "store.db").exists() or loads(cli("--json", "namespaces")) == []
