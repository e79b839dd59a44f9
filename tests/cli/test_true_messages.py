"""What the command line says is true: the upgrade command it names works, the purge names the
partitions it drops, a warning comes once, the policies the help points to are listed, and a bad
URL argument is a clear error rather than "unexpected". Real ``simstore`` subprocesses."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from simstore.policy.policies import POLICIES, policy_options
from tests.cli.test_commands import Cli, write
from tests.conftest import new_server_database

pytestmark = pytest.mark.slow  # CLI subprocess runs


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path, f"sqlite:///{tmp_path / 'store.db'}")


def test_the_upgrade_command_a_message_names_works(cli: Cli) -> None:
    checked = cli("db", "check")
    assert checked.returncode == 1
    named = checked.stderr.split("run ", 1)[1].split(" to create it")[0].strip()
    words = shlex.split(named)
    assert words[0] == "simstore" and "--db" in words, named
    ran = subprocess.run(
        [sys.executable, "-m", "simstore.cli", *words[1:]],
        capture_output=True,
        text=True,
        cwd=cli.folder,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr  # 'simstore db upgrade --db URL' failed here
    assert cli("db", "check").returncode == 0


def test_the_policies_command_lists_every_option_with_its_default_and_meaning(cli: Cli) -> None:
    help_text = cli("--help", db=None).stdout
    assert "'simstore policies'" in " ".join(help_text.split())
    listed = cli.json("policies")
    assert [policy["name"] for policy in listed] == list(POLICIES)
    for policy in listed:
        options = {option["name"]: option for option in policy["options"]}
        assert {name: o["default"] for name, o in options.items()} == policy_options(policy["name"])
        assert all(option["meaning"] for option in options.values()), policy["name"]
    text = cli("policies", "minhash", db=None)
    assert text.returncode == 0 and "threshold" in text.stdout and "0.55" in text.stdout
    assert cli("policies", "nosuch").returncode == 2


def stated(pattern: str, text: str) -> str:
    """The value a help text states where ``pattern``'s group is (an assertion if it is gone)."""
    found = re.search(pattern, text)
    assert found, (pattern, text)
    return found[1]


def test_the_defaults_the_help_states_are_the_declared_ones(cli: Cli) -> None:
    # the reference is the declarations themselves: the policies' dataclass defaults and
    # simstore.validate's constants (the help said 0.75 and 0.65 after the bars moved to 0.7, 0.6)
    from simstore.policy.policies import MinHashVerification, SimHashVerification
    from simstore.validate import DEFAULT_MAX_DISTANCE, MAX_TEXT_LENGTH

    minhash, verified = MinHashVerification(), SimHashVerification()
    said = " ".join(cli("--help", db=None).stdout.split())
    assert stated(r"--threshold .*?minhash: jaccard, default ([\d.]+);", said) == str(
        minhash.threshold
    )
    assert stated(r"--threshold .*?verified: default ([\d.]+)\)", said) == str(verified.threshold)
    long_help = stated(r"--long-threshold (.*?) --policy-option", said)
    assert stated(r"minhash: default ([\d.]+);", long_help) == str(minhash.long_threshold)
    assert stated(r"cjk_long_threshold, default ([\d.]+),", long_help) == str(
        minhash.cjk_long_threshold
    )
    assert stated(r"--max-text-length .*?\[default: ([\d,]+)\]", said) == f"{MAX_TEXT_LENGTH:,}"
    ingest_said = " ".join(cli("ingest", "--help", db=None).stdout.split())
    assert stated(r"--max-distance .*?\[default: (\d+)\]", ingest_said) == str(DEFAULT_MAX_DISTANCE)


def test_every_policy_option_has_a_meaning() -> None:
    from simstore.policy.options import MEANINGS

    for name in POLICIES:
        assert set(MEANINGS[name]) == set(policy_options(name)), name


def test_a_refused_policy_says_which_option_in_one_line(cli: Cli) -> None:
    write(cli.folder / "in.jsonl", ['{"id": "a", "text": "a text to make the namespace"}'])
    assert cli("ingest", "in.jsonl").returncode == 0
    refused = cli("--threshold", "0.7", "ingest", "in.jsonl")
    assert refused.returncode == 4
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and len(lines[0]) < 400, refused.stderr
    assert "option threshold: stored 0.55, requested 0.7" in lines[0]
    assert '{"policy"' not in lines[0] and "another namespace" in lines[0]


@pytest.fixture
def partitioned(tmp_path: Path) -> Cli:
    """A PostgreSQL database partitioned by day, keeping two days, holding one text."""
    url = new_server_database("postgresql")
    cli = Cli(tmp_path, url)
    assert cli("db", "upgrade").returncode == 0
    made = cli("db", "partition", "--interval", "1d", "--keep", "2d")
    assert made.returncode == 0, made.stderr
    write(tmp_path / "in.jsonl", ['{"id": "a", "text": "the first text of the day"}'])
    assert cli("ingest", "in.jsonl").returncode == 0
    return cli


def test_purge_names_the_databases_partitions(partitioned: Cli) -> None:
    for dry in ((), ("--dry-run",)):
        ran = partitioned("purge", "--keep", "5d", *dry)
        assert ran.returncode == 0, ran.stderr
        assert "the database's partitions of 1d that end before now - 2d" in ran.stdout, ran.stdout
    data = json.loads(partitioned("--json", "purge", "--keep", "5d").stdout)
    assert data["database_partitions"] == {"interval": "1d", "keep": "2d"}


def test_the_keep_window_warning_comes_once_a_command(partitioned: Cli) -> None:
    for command in (("explain", "a"), ("query", "the first text"), ("stats",)):
        ran = partitioned("--keep", "5d", *command)
        assert ran.returncode == 0, ran.stderr
        assert ran.stderr.count("but the database's partitions are dropped after 2d") == 1, (
            command,
            ran.stderr,
        )


BAD_URLS = {
    # argument -> what the one-line error must say
    "mysql+pymysql://u@127.0.0.1:1/x?charset=bogus": "charset=bogus",
    "mysql+pymysql://u@127.0.0.1:1/x?connect_timeout=abc": "connect_timeout=abc",
    "mysql+pymysql://u@127.0.0.1:1/x?colour=red": "colour=red",
    "postgresql+psycopg://u@[::1:5432/x": "port is not a number",
}


@pytest.mark.parametrize("url", list(BAD_URLS))
def test_a_bad_url_argument_is_a_clear_error(cli: Cli, url: str) -> None:
    for command in (("db", "upgrade"), ("stats",)):
        ran = cli(*command, db=url)
        assert ran.returncode == 4, ran.stderr
        assert "error: unexpected" not in ran.stderr and BAD_URLS[url] in ran.stderr, ran.stderr
        assert ran.stderr.startswith("simstore: error:") and ran.stderr.count("\n") == 1


def test_a_sqlite_memory_uri_is_refused_like_memory(cli: Cli) -> None:
    ran = cli("stats", db="sqlite:///file:m?mode=memory&cache=shared&uri=true")
    assert ran.returncode == 4 and "in-memory database" in ran.stderr, ran.stderr
