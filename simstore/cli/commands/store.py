"""Looking things up and maintenance: ``query``, ``show``, ``explain``, ``purge``, ``stats``."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import click

from simstore.cli._app import Failure, Settings, main, open_store, read_argument, text_radius
from simstore.cli.output import decision_json, emit, iso, match_json, pairs, shown, table, verdict
from simstore.db import redact
from simstore.encoding import to_hex

if TYPE_CHECKING:
    from simstore.results import Decision

TEXTS_NOT_STORED = (
    "not stored: simstore keeps the normalised text of short texts only (and never of a text "
    "judged a duplicate); look the key up in your source data"
)


@main.command()
@click.argument("text")
@click.option(
    "--max-distance",
    type=int,
    help="SimHash search radius [default: 3]; only with --policy simhash or simhash-verified.",
)
@click.option("--limit", type=click.IntRange(min=1), help="At most this many matches.")
@click.pass_obj
def query(settings: Settings, text: str, max_distance: int | None, limit: int | None) -> None:
    """Kept fingerprints near TEXT, nearest first.

    TEXT '-' reads stdin. Shows the policy that decided and, for each match, its key, distance,
    the measure and score that confirmed it ('-': the distance decided), its fingerprint and when
    it was added. Nothing is added.
    """
    radius = text_radius(settings, max_distance)
    with open_store(settings, max_distance=radius) as store:
        found = store.search(read_argument(text), limit=limit)
    data = {
        "fingerprint": found.hex,
        "policy": found.policy,
        "max_distance": found.max_distance,
        "matches": [match_json(match) for match in found.matches],
    }
    rows = [
        (m.key, str(m.distance), m.measure or "-", _score(m.score), m.hex, shown(m.added_at))
        for m in found.matches
    ]
    headers = ("key", "distance", "measure", "score", "fingerprint", "added_at")
    found_text = table(headers, rows) if rows else f"no match for {found.hex}"
    emit(settings, data, f"policy: {found.policy}\n{found_text}")


def _score(score: float | None) -> str:
    return "-" if score is None else f"{score:.3f}"


def _decision_and_texts(settings: Settings, key: str) -> tuple[Decision, dict[str, str | None]]:
    """The decision of KEY and the normalised texts the store kept for it and its match."""
    with open_store(settings) as store:
        decision = store.get(key)
        texts: dict[str, str | None] = {}
        if decision is not None:
            texts[key] = store.kept_text(key)
            if decision.duplicate_of is not None:
                texts[decision.duplicate_of.key] = store.kept_text(decision.duplicate_of.key)
    if decision is None:
        raise Failure(
            f"no key {key!r} in namespace {settings.namespace!r} of {redact(settings.url)}"
        )
    return decision, texts


@main.command()
@click.argument("key")
@click.pass_obj
def show(settings: Settings, key: str) -> None:
    """The decision recorded for KEY.

    Kept, or a duplicate of which key at what distance; exit 1 when there is no such key.
    """
    decision = _decision_and_texts(settings, key)[0]
    rows = {"key": decision.key, "fingerprint": decision.hex, "decision": verdict(decision)}
    if decision.duplicate_of is not None:
        rows["matched added"] = shown(decision.duplicate_of.added_at)
    emit(settings, decision_json(decision), pairs(rows))


@main.command()
@click.argument("key")
@click.pass_obj
def explain(settings: Settings, key: str) -> None:
    """Why KEY was kept or judged a duplicate.

    Shows the key it matched, the distance, the bits that differ, the exact measure that confirmed
    a short text and its score, and the normalised texts where the store kept them (short texts).
    The differing bits are those set in the XOR of the two fingerprints (bit 0 is the least
    significant; band b0 holds bits 63..48, b3 bits 15..0).
    """
    decision, texts = _decision_and_texts(settings, key)
    match = decision.duplicate_of
    data = decision_json(decision) | {"texts": texts, "texts_note": TEXTS_NOT_STORED}
    rows = {"key": decision.key, "decision": verdict(decision)}
    if decision.inserted:
        rows["why"] = "no kept text was near enough, by the policy, when it was added"
    rows["fingerprint"] = f"{decision.hex}  ({decision.key})"
    if match is not None:
        xor = decision.fingerprint ^ match.fingerprint
        bits = [bit for bit in range(64) if xor >> bit & 1]
        bands = ", ".join(sorted({f"b{3 - bit // 16}" for bit in bits}))
        data |= {"xor": to_hex(xor), "differing_bits": bits}
        rows["matched"] = f"{match.hex}  ({match.key}, added {shown(match.added_at)})"
        rows["xor"] = to_hex(xor)
        rows["differing bits"] = f"{', '.join(map(str, bits))} (bands {bands})" if bits else "none"
        if match.measure is not None:
            rows["confirmed by"] = f"{match.measure} similarity {match.score:.3f}"
    for text_key, text in texts.items():
        rows[f"text of {text_key}"] = TEXTS_NOT_STORED if text is None else text
    emit(settings, data, pairs(rows))


@main.command()
@click.option(
    "--keep",
    default="2d",
    show_default=True,
    help="Retention window (30m, 12h, 2d, 1w): whole partitions older than it are deleted.",
)
@click.pass_obj
def purge(settings: Settings, keep: str) -> None:
    """Delete what is older than the retention window.

    Whole time partitions older than --keep are deleted in bounded batches, while readers and
    writers go on.
    """
    with open_store(settings) as store:
        deleted = store.purge(keep=keep)
    data = {"namespace": settings.namespace, "keep": keep, "deleted": deleted}
    emit(settings, data, f"purged {deleted:,} rows older than {keep} from {settings.namespace}")


@main.command()
@click.pass_obj
def stats(settings: Settings) -> None:
    """Counts and time span of the namespace."""
    with open_store(settings) as store:
        result = store.stats()
    data = {"db": redact(settings.url), **dataclasses.asdict(result)}
    data["oldest"], data["newest"] = iso(result.oldest), iso(result.newest)
    emit(settings, data)
