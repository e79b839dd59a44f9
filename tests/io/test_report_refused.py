"""The report's refused pairs: with ``--texts`` both sides are shown whatever their length, and
each pair names the option that would have merged it, which a store made with that option
confirms by merging the two texts (the CLI as a subprocess; a longer window in process)."""

from __future__ import annotations

import json
import random
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from simstore.io.report import NO_OPTION, gather
from simstore.policy.policies import MinHashVerification
from simstore.store import SimStore
from tests.cli.test_commands import Cli

WORDS = 2_000


def corpus(seed: int = 50) -> list[tuple[str, str]]:
    """Pairs of texts, the first of each kept before the second: twelve long texts (about 1,000
    normalised characters, past the policy's ``short_length`` of 700) with 12-16% of their words
    replaced (half of them past their openings), which the default policy refuses by their
    estimate, and by their openings where those differ too; and four short ones with three words
    and a number replaced (look-alikes)."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(WORDS)]
    out = []
    for i in range(12):
        base = [rng.choice(words) for _ in range(170)]
        # the odd ones keep their openings (the first 90 words) and replace as many words in
        # the rest: only the estimate refuses them
        opening = 90 if i % 2 else 0
        rate = (0.12 + 0.01 * (i % 5)) * len(base) / (len(base) - opening)
        edited = [
            rng.choice(words) if j >= opening and rng.random() < rate else word
            for j, word in enumerate(base)
        ]
        out += [(f"long-{i}-a", " ".join(base)), (f"long-{i}-b", " ".join(edited))]
    for i in range(4):
        base = [rng.choice(words) for _ in range(14)]
        edited = [rng.choice(words) if j in (3, 8, 11) else word for j, word in enumerate(base)]
        out += [
            (f"short-{i}-a", " ".join(base) + f" order {100 + i}"),
            (f"short-{i}-b", " ".join(edited) + f" order {200 + i}"),
        ]
    return out


PAIR = re.compile(
    r'<div class="pair"><div class="head"><b><code>(?P<key>[^<]*)</code> kept apart from '
    r"<code>(?P<candidate>[^<]*)</code></b>(?P<head>.*?)</div>"
    r'<div class="sides">(?P<sides>.*?)</div></div>(?=<div class="pair">|$)',
    re.S,
)
OPTION = re.compile(r"(\w+)=(\S+) \(now [^)]*\)")


def refused_pairs(html: str) -> list[dict[str, str]]:
    section = html.split('<section id="refused">', 1)[1].split("</section>", 1)[0]
    return [match.groupdict() for match in PAIR.finditer(section)]


def options_of(head: str) -> dict[str, Any]:
    """``would merge: name=value (now ...) and ...`` as policy options (and ``max_distance``)."""
    merge = re.search(r'<span class="merge">would merge: (.*?)</span>', head)
    assert merge is not None, f"the pair names no option: {head}"
    assert merge.group(1) != NO_OPTION, head
    return {name: json.loads(value) for name, value in OPTION.findall(merge.group(1))}


@pytest.mark.slow
def test_refused_pairs_show_both_texts_and_the_option_that_merges_them(tmp_path: Path) -> None:
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'store.db'}")
    texts = dict(corpus())
    records = tmp_path / "records.jsonl"
    records.write_text(
        "".join(json.dumps({"id": key, "text": text}) + "\n" for key, text in texts.items()),
        encoding="utf-8",
    )
    ingested = cli("ingest", str(records))
    assert ingested.returncode == 0, ingested.stderr
    ran = cli("report", "--out", "report.html", "--texts", str(records))
    assert ran.returncode == 0, ran.stderr
    pairs = refused_pairs((tmp_path / "report.html").read_text(encoding="utf-8"))

    keys = {pair["key"] for pair in pairs}
    assert len([key for key in keys if key.startswith("long-")]) >= 6, keys
    assert any(key.startswith("short-") for key in keys), keys
    named = [options_of(pair["head"]) for pair in pairs]
    assert {"long_threshold"} in [set(options) for options in named]  # one option alone
    assert any(len(options) > 1 for options in named)  # and two rules to pass
    for pair in pairs:
        # every side came from the records given: nothing says a text is missing
        assert "not stored" not in pair["sides"], pair
        assert "not in the source records" not in pair["sides"], pair
        options = options_of(pair["head"])
        # the independent check: a store made with that option merges the two texts
        radius = options.pop("max_distance", 3)
        with SimStore(
            "sqlite://", policy=MinHashVerification(**options), max_distance=radius
        ) as store:
            assert store.add(texts[pair["candidate"]], key=pair["candidate"]).inserted
            decision = store.add(texts[pair["key"]], key=pair["key"])
            assert decision.duplicate_of is not None, (pair["key"], options)
            assert decision.duplicate_of.key == pair["candidate"]
        with SimStore("sqlite://") as store:  # and the default refuses them, as the page says
            store.add(texts[pair["candidate"]], key=pair["candidate"])
            assert store.add(texts[pair["key"]], key=pair["key"]).inserted, pair["key"]


@pytest.mark.slow
def test_without_texts_a_long_refused_pair_says_where_its_texts_are(tmp_path: Path) -> None:
    cli = Cli(tmp_path, f"sqlite:///{tmp_path / 'store.db'}")
    records = tmp_path / "records.jsonl"
    records.write_text(
        "".join(json.dumps({"id": key, "text": text}) + "\n" for key, text in corpus()[:20]),
        encoding="utf-8",
    )
    assert cli("ingest", str(records)).returncode == 0
    assert cli("report", "--out", "report.html").returncode == 0
    pairs = refused_pairs((tmp_path / "report.html").read_text(encoding="utf-8"))
    assert pairs
    for pair in pairs:
        assert "give the source records (--texts) to see it" in pair["sides"], pair
        options_of(pair["head"])


def test_a_candidate_outside_the_window_names_the_keep_that_merges_it() -> None:
    words = [word for _, text in corpus()[:2] for word in text.split()][:30]
    text, start = " ".join(words), datetime(2030, 1, 1)
    later = start + timedelta(days=3)
    with SimStore("sqlite://", keep="2d") as store:
        store.add(text, key="old", at=start)
        assert store.add(text + " again", key="new", at=later).inserted
        [refused] = gather(store.scope, near_misses=store.near_misses, now=later).refused
    assert refused.reason == "outside the retention window"
    assert refused.merged_by == "keep=4d (now 2d)"
    with SimStore("sqlite://", keep="4d") as store:  # the independent check
        store.add(text, key="old", at=start)
        decision = store.add(text + " again", key="new", at=later)
        assert decision.duplicate_of is not None and decision.duplicate_of.key == "old"


def test_chinese_words_at_two_places_name_the_count_that_merges_them() -> None:
    note = (
        "周末我们在学校的操场上举行了一场足球比赛，同学们都踢得非常认真，最后大家一起去吃了晚饭。"
    )
    reworded = note.replace("举行", "组织").replace("认真", "努力")  # two verbs/adjectives
    with SimStore("sqlite://") as store:
        store.add(note, key="old")
        assert store.add(reworded, key="new").inserted
        [refused] = gather(store.scope, near_misses=store.near_misses).refused
    assert refused.merged_by == "cjk_replaced=2 (now 1)"
    # the independent check: a store with that option merges them
    with SimStore("sqlite://", policy=MinHashVerification(cjk_replaced=2)) as store:
        store.add(note, key="old")
        decision = store.add(reworded, key="new")
        assert decision.duplicate_of is not None and decision.duplicate_of.key == "old"
