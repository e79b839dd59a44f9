"""Why a text was kept: its nearest refused candidates, from the API on every dialect and from
``simstore explain`` (a real subprocess). Expected reasons follow the default policy's documented
rule: short texts (< 300 normalised characters) are compared by 3-gram Jaccard >= 0.55, and a
number replaced by another makes a look-alike, not a duplicate."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from simstore import fingerprint, hamming
from simstore.policy.policies import SimHashVerification
from simstore.text._algorithms import default_normalise
from simstore.text.similarity import jaccard
from tests.conftest import StoreFactory

NOTICE = "The library on Elm Street opens at 9 tomorrow, with the new reading room upstairs."
OTHER_HOUR = NOTICE.replace("9", "11")  # a look-alike: the number differs
SHORTER = "The library on Elm Street opens tomorrow."  # shares words, under the threshold
T0 = datetime(2026, 1, 5, 8, 0, tzinfo=timezone.utc)


def test_a_kept_look_alike_names_the_text_it_was_not_merged_with(make_store: StoreFactory) -> None:
    store = make_store()
    assert store.add(NOTICE, key="nine", at=T0).inserted
    assert store.add(SHORTER, key="short", at=T0 + timedelta(minutes=1)).inserted
    assert store.add(OTHER_HOUR, key="eleven", at=T0 + timedelta(minutes=2)).inserted
    refused = store.near_misses("eleven")
    by_key = {judged.key: judged for judged in refused}
    assert "nine" in by_key and not by_key["nine"].matched
    nine = by_key["nine"]
    assert nine.measure == "jaccard" and nine.threshold == 0.55
    # the score is the documented measure of the two normalised texts (computed here directly)
    assert abs(nine.score - jaccard(NOTICE, OTHER_HOUR, n=3)) < 1e-6 and nine.score >= 0.55
    assert nine.reason == "look-alike: '9' -> '11' (number)"  # what differs, named
    # SHORTER shares a band key but its estimate is under the prefilter: refused too (it was
    # listed as matched before), and the nearest its bar comes first
    assert by_key["short"].reason == "estimate under the prefilter"
    assert not any(judged.matched for judged in refused)
    assert [j.margin for j in refused] == sorted(j.margin for j in refused)
    # the text kept first had no earlier candidate: nothing to name
    assert store.near_misses("nine") == []


def test_a_candidate_outside_the_window_is_said_to_be(make_store: StoreFactory) -> None:
    store = make_store(keep="1d")
    assert store.add(NOTICE, key="old", at=T0).inserted
    assert store.add(NOTICE + " Welcome!", key="new", at=T0 + timedelta(days=3)).inserted
    [old] = store.near_misses("new")
    assert (old.key, old.matched, old.reason) == ("old", False, "outside the retention window")


def test_a_candidate_exactly_as_old_as_the_window_is_judged_by_the_policy(
    make_store: StoreFactory,
) -> None:
    # pins the window's edge in near_misses: a row exactly as old as the window is inside it (as
    # add decides), so it is judged by the policy, not said to be outside the window
    store = make_store(keep="1d")
    assert store.add(NOTICE, key="nine", at=T0).inserted
    assert store.add(OTHER_HOUR, key="eleven", at=T0 + timedelta(days=1)).inserted
    [nine] = store.near_misses("eleven")
    assert (nine.key, nine.matched) == ("nine", False)
    assert nine.reason == "look-alike: '9' -> '11' (number)"


def test_a_fingerprint_is_judged_against_the_rows_kept_without_a_text_only(
    make_store: StoreFactory,
) -> None:
    # pins the SimHash candidates' filter in near_misses (Policy.by_radius): a fingerprint meets
    # only the rows kept without a signature (the band lookups leave signed rows out), and those
    # are judged, here the one outside the window; the text it equals is no candidate of it
    store = make_store(keep="1d")
    later = T0 + timedelta(days=3)
    value = fingerprint(NOTICE)
    assert store.add(NOTICE, key="text", at=later).inserted  # signed, found by band keys alone
    assert store.add(fingerprint=value ^ 1, key="old", at=T0).inserted  # outside the window
    assert store.add(fingerprint=value, key="new", at=later).inserted
    judged = store.near_misses("new")
    assert [(j.key, j.matched, j.reason) for j in judged] == [
        ("old", False, "outside the retention window")
    ]


def test_explain_of_a_kept_key_names_its_nearest_refused_candidate(tmp_path: Path) -> None:
    records = tmp_path / "in.jsonl"
    lines = [{"id": "nine", "text": NOTICE}, {"id": "eleven", "text": OTHER_HOUR}]
    records.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    db = ("--db", f"sqlite:///{tmp_path / 'store.db'}")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "simstore.cli", *db, *args]
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)

    assert cli("ingest", str(records)).returncode == 0
    shown = cli("explain", "eleven")
    assert shown.returncode == 0, shown.stderr
    assert "nearest refused 1  nine (look-alike" in shown.stdout, shown.stdout
    data = json.loads(cli("--json", "explain", "eleven").stdout)
    [near] = data["near_misses"]
    assert (near["key"], near["matched"], near["measure"]) == ("nine", False, "jaccard")
    before = (tmp_path / "store.db").stat().st_mtime_ns
    cli("explain", "eleven")
    assert (tmp_path / "store.db").stat().st_mtime_ns == before  # explaining writes nothing


def test_the_report_shows_the_refused_side_of_the_threshold(make_store: StoreFactory) -> None:
    store = make_store()
    store.add(NOTICE, key="nine", at=T0)
    store.add(OTHER_HOUR, key="eleven", at=T0 + timedelta(minutes=2))
    html = store.report()
    refused = html[html.index('id="refused"') :]
    assert "<code>eleven</code> kept apart from <code>nine</code>" in refused
    assert "look-alike" in refused and "(number)" in refused


def test_a_verified_short_texts_near_misses_are_judged_by_its_bar_and_radius(
    make_store: StoreFactory,
) -> None:
    # simhash-verified keeps a short text's normalised text and decides it by Jaccard >= 0.8
    # over candidates within 7 bits; read back for near_misses, the kept text was judged by the
    # store's radius alone (3 bits): a pair the store kept was called a duplicate, and a
    # candidate 7 bits away was not shown at all
    kept = "today cat lazy red slow brown fox tea"
    three_bits = "fox lazy red slow brown tea today cat"  # the same words in other orders
    seven_bits = "today brown fox slow cat lazy red tea"
    policy = SimHashVerification()
    # the preconditions, from the fingerprints and the documented measure (computed here)
    assert hamming(fingerprint(kept), fingerprint(three_bits)) == 3
    assert hamming(fingerprint(kept), fingerprint(seven_bits)) == 7
    for text in (three_bits, seven_bits):
        assert jaccard(default_normalise(kept), default_normalise(text), n=3) < policy.threshold
    store = make_store(policy="simhash-verified")
    for key, text in (("kept", kept), ("three", three_bits), ("seven", seven_bits)):
        assert store.add(text, key=key, at=T0).inserted  # each refused by its score: kept
    [judged] = store.near_misses("three")
    assert (judged.key, judged.matched, judged.measure, judged.threshold) == (
        "kept",
        False,
        "jaccard",
        0.8,
    )
    assert judged.reason == "score under the threshold"
    between = hamming(fingerprint(three_bits), fingerprint(seven_bits))
    expected = {"kept": 7} | ({"three": between} if between <= 7 else {})
    assert {j.key: j.distance for j in store.near_misses("seven")} == expected
    assert not any(j.matched for j in store.near_misses("seven"))
