"""Texts from which a preset makes no feature (emoji, punctuation, zero-width or kaomoji only) are
refused by every entry point: they all share one fingerprint, so storing them would make each a
duplicate of the first ("👍" of "😀😀😀 🎉🎉" at distance 0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from simstore.errors import BatchFailed, InvalidInput
from simstore.policy import batch
from simstore.policy.policies import SimHashOnly
from simstore.text.fingerprint import analyze
from tests.conftest import StoreFactory

FEATURELESS = {
    "emoji": "😀😀😀 🎉🎉",
    "thumb": "👍",
    "punctuation": "?!",
    "zero-width": "\u200b\u200c\u200d\ufeff",
    "kaomoji": "(╯°□°)╯︵ ┻━┻",
    "white space": " \t\u3000\n",
    "empty": "",
}
TEXT = "The harbour ferry timetable changes on Monday: boats leave every twenty minutes."


@pytest.mark.parametrize("policy", ["minhash", "simhash"])
def test_add_add_many_and_query_refuse_a_featureless_text(
    make_store: StoreFactory, policy: str
) -> None:
    with make_store(policy=None if policy == "minhash" else SimHashOnly()) as store:
        for key, text in FEATURELESS.items():
            with pytest.raises(InvalidInput, match="no words or characters simstore can compare"):
                store.add(text, key=key)
            with pytest.raises(InvalidInput, match="no words or characters"):
                store.query(text)
        assert store.add(TEXT, key="kept").inserted
        items = [("a", "a second text, nothing like the first one"), ("b", "👍"), ("c", "?!")]
        with pytest.raises(BatchFailed) as failure:
            list(store.add_many(items, batch_size=1))
        assert isinstance(failure.value.__cause__, InvalidInput)
        assert failure.value.committed == 1
        assert store.stats().kept == 2  # nothing of the refused texts was written
        assert [match.key for match in store.query(TEXT)] == ["kept"]


def test_the_batch_api_refuses_them_too() -> None:
    for text in FEATURELESS.values():
        with pytest.raises(InvalidInput, match="no words or characters"):
            batch.dedup([TEXT, text])


def test_a_preset_that_counts_any_token_keeps_a_lone_emoji() -> None:
    """tokens-strhash makes a feature of every whitespace-separated token, emoji included: the
    rule is "no feature", not "no letter"."""
    assert analyze("👍", preset="tokens-strhash").features == 1
    assert batch.dedup(["👍", "?!"], preset="tokens-strhash", policy=SimHashOnly())[1].kept


def test_ingest_rejects_the_record_and_goes_on(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    rows = [{"id": "good", "text": TEXT}, *({"id": k, "text": t} for k, t in FEATURELESS.items())]
    rows.append({"id": "good-2", "text": "another record with its own words, kept as well"})
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if k != "SIMSTORE_URL"}
    database = f"sqlite:///{tmp_path / 's.db'}"
    result = subprocess.run(
        [sys.executable, "-m", "simstore.cli", "--db", database, "--json", "ingest", str(source)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**environment, "PYTHONIOENCODING": "utf-8"},
        check=False,
    )
    assert result.returncode == 1, result.stderr  # some records were rejected
    summary = json.loads(result.stdout)
    assert (summary["read"], summary["kept"], summary["duplicates"]) == (9, 2, 0)
    assert summary["skipped"] == len(FEATURELESS)
    assert "Traceback" not in result.stderr
    for line in (2, 3, 4, 5, 6):  # white space and empty are refused by the reader already
        assert f"in.jsonl:{line}: " in result.stderr
    assert result.stderr.count("no words or characters simstore can compare") == 5
