"""Looking things up and maintenance: ``query``, ``show``, ``explain``, ``purge``, ``stats``."""

from __future__ import annotations

import csv
import dataclasses
import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import click

from simstore.cli._app import (
    Failure,
    Settings,
    main,
    open_store,
    read_argument,
)
from simstore.cli.output import (
    decision_json,
    emit,
    iso,
    match_json,
    output_file,
    pairs,
    shown,
    table,
    verdict,
)
from simstore.storage.db import redact
from simstore.storage.expiry import Fill, check_max_kept
from simstore.text.encoding import to_hex

if TYPE_CHECKING:
    from simstore.results import Decision, Judged

TEXTS_NOT_STORED = (
    "not stored: simstore keeps the normalised text of short texts only (and never of a text "
    "judged a duplicate); look the key up in your source data"
)


@main.command()
@click.argument("text")
@click.option(
    "--max-distance",
    type=int,
    help="SimHash search radius of this query [default: the namespace's, 3 unless recorded "
    "otherwise]; only under the simhash or simhash-verified policy. A wider radius finds more "
    "without changing what the namespace keeps.",
)
@click.option("--limit", type=click.IntRange(min=1), help="At most this many matches.")
@click.pass_obj
def query(settings: Settings, text: str, max_distance: int | None, limit: int | None) -> None:
    """Kept fingerprints near TEXT, nearest first.

    TEXT '-' reads stdin; a text that starts with '-' goes after '--' (simstore query -- '-20%
    off'). Shows the policy that decided and, for each match, its key, distance,
    the measure and score that confirmed it ('-': the distance decided), its fingerprint and when
    it was added. Nothing is added.
    """
    # the query's own radius: the namespace's recorded radius stays what decides adds
    with open_store(settings, radius=max_distance) as store:
        found = store.search(read_argument(text), limit=limit, max_distance=max_distance)
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


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.4f}"


def judged_json(judged: Judged) -> dict[str, Any]:
    """A candidate the policy judged, as ``explain --json`` shows it."""
    return {
        "key": judged.key,
        "fingerprint": judged.hex,
        "distance": judged.distance,
        "added_at": iso(judged.added_at),
        "measure": judged.measure,
        "score": judged.score,
        "threshold": judged.threshold,
        "reason": judged.reason,
        "matched": judged.matched,
    }


def _score(score: float | None) -> str:
    return "-" if score is None else f"{score:.3f}"


@dataclasses.dataclass(frozen=True)
class _Looked:
    decision: Decision
    texts: dict[str, str | None]  # the normalised texts kept for the key and its match
    gone: str | None  # the recorded match of a duplicate whose kept row was removed or purged

    def json(self) -> dict[str, Any]:
        return decision_json(self.decision) | {"duplicate_of_removed": self.gone}

    def verdict(self) -> str:
        if self.gone is not None:
            return f"duplicate of {self.gone}, which has since been removed or purged"
        return verdict(self.decision)


def _look_up(settings: Settings, key: str) -> _Looked:
    """The decision of KEY, the texts kept for it and its match, and a match that is gone."""
    from simstore.io.export import recorded_duplicate_of
    from simstore.validate import check_key

    check_key(key)  # bad input is exit 4 before anything is opened
    with open_store(settings) as store:
        decision = store.get(key)
        texts: dict[str, str | None] = {}
        gone = None
        if decision is not None:
            texts[key] = store.kept_text(key)
            if decision.duplicate_of is not None:
                texts[decision.duplicate_of.key] = store.kept_text(decision.duplicate_of.key)
            elif not decision.inserted:
                gone = recorded_duplicate_of(store.scope, key)
    if decision is None:
        raise Failure(
            f"no key {key!r} in namespace {settings.namespace!r} of {redact(settings.url)}"
        )
    return _Looked(decision, texts, gone)


@main.command()
@click.argument("key")
@click.pass_obj
def show(settings: Settings, key: str) -> None:
    """The decision recorded for KEY.

    Kept, or a duplicate of which key at what distance; exit 1 when there is no such key.
    """
    looked = _look_up(settings, key)
    decision = looked.decision
    rows = {"key": decision.key, "fingerprint": decision.hex, "decision": looked.verdict()}
    if decision.duplicate_of is not None:
        rows["matched added"] = shown(decision.duplicate_of.added_at)
    emit(settings, looked.json(), pairs(rows))


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
    looked = _look_up(settings, key)
    decision, texts, match = looked.decision, looked.texts, looked.decision.duplicate_of
    data = looked.json() | {"texts": texts, "texts_note": TEXTS_NOT_STORED}
    rows = {"key": decision.key, "decision": looked.verdict()}
    if match is not None:
        rows["decided by"] = (
            f"{match.measure} similarity {match.score:.3f}"
            if match.measure is not None and match.score is not None
            else f"SimHash distance {match.distance} alone"
        )
    if decision.inserted:
        rows["why"] = "no kept text was near enough, by the policy, when it was added"
        with open_store(settings) as store:
            refused = store.near_misses(key)
            rows["policy"] = store.policy.describe(store.max_distance)
        data["near_misses"] = [judged_json(judged) for judged in refused]
        for rank, judged in enumerate(refused, 1):
            rows[f"nearest refused {rank}"] = (
                f"{judged.key} ({judged.reason}: {judged.measure} {_number(judged.score)}, "
                f"needs {'<=' if judged.measure == 'distance' else '>='} "
                f"{_number(judged.threshold)}; added {shown(judged.added_at)})"
            )
        if not refused:
            rows["nearest refused"] = "none: no kept text shared a band key or the radius with it"
    rows["fingerprint"] = f"{decision.hex}  ({decision.key})"
    if match is not None:
        xor = decision.fingerprint ^ match.fingerprint
        bits = [bit for bit in range(64) if xor >> bit & 1]
        bands = ", ".join(sorted({f"b{3 - bit // 16}" for bit in bits}))
        data |= {"xor": to_hex(xor), "differing_bits": bits}
        rows["matched"] = f"{match.hex}  ({match.key}, added {shown(match.added_at)})"
        rows["xor"] = to_hex(xor)
        rows["differing bits"] = f"{', '.join(map(str, bits))} (bands {bands})" if bits else "none"
    for text_key, text in texts.items():
        rows[f"text of {text_key}"] = TEXTS_NOT_STORED if text is None else text
    emit(settings, data, pairs(rows))


@main.command()
@click.option(
    "--keep",
    metavar="DURATION",
    help="Retention window (30m, 12h, 2d, 1w) [default: the global --keep; without either "
    "nothing is purged, as SimStore.purge() keeps everything when it has no window].",
)
@click.option(
    "--dry-run", is_flag=True, help="Count what would be deleted, per table; delete nothing."
)
@click.pass_obj
def purge(settings: Settings, keep: str | None, dry_run: bool) -> None:
    """Delete what is older than the retention window.

    Whole time partitions older than the window are deleted in bounded batches, while readers
    and writers go on; the counts are per table (kept rows, decisions, their MinHash band keys).
    Partitions are as long as the namespace's partition length (1h by default), so a window
    shorter than that still deletes only whole partitions.
    """
    from simstore.storage import partitions
    from simstore.storage.retention import format_duration, parse_duration

    window = keep if keep is not None else settings.keep
    if window is not None:
        parse_duration(window)  # a bad duration is invalid input, whatever the namespace

    with open_store(settings) as store:
        purged = store.purge_counts(keep=keep, dry_run=dry_run)
        partition = format_duration(timedelta(seconds=store.partition_seconds))
        layout = partitions.layout(store.engine)
    data: dict[str, Any] = {"namespace": settings.namespace, "keep": window, "dry_run": dry_run}
    data["partition"] = partition
    data["database_partitions"] = None
    if layout is not None:  # PostgreSQL partitioned by 'db partition': whole tables dropped
        interval, kept_for = format_duration(layout.interval), format_duration(layout.keep)
        data["database_partitions"] = {"interval": interval, "keep": kept_for}
    if purged is None:
        data |= {"deleted": 0, "tables": None}
        note = "no retention window: nothing purged (give --keep, e.g. --keep 2d)"
        emit(settings, data, f"{settings.namespace}: {note}")
        return
    tables = {
        "simstore_fingerprints": purged.fingerprints,
        "simstore_decisions": purged.decisions,
        "simstore_minhash": purged.band_keys,
    }
    if purged.partition_rows:
        tables["dropped partitions (every namespace)"] = purged.partition_rows
    if purged.max_kept is not None:
        tables[f"kept texts past the cap of {purged.max_kept}"] = purged.evicted
    before = None if purged.before is None else iso(purged.before)
    data |= {"deleted": purged.rows, "before": before, "tables": tables}
    data |= {"max_kept": purged.max_kept, "evicted": purged.evicted}
    verb = "would delete" if dry_run else "deleted"
    lines = []
    if purged.before is not None:
        lines.append(
            f"{settings.namespace}: {verb} the rows added before {shown(purged.before)} "
            f"(window {window}, in whole partitions of {partition})"
        )
    if purged.max_kept is not None:
        lines.append(
            f"{settings.namespace}: {verb} {purged.evicted} kept texts past the cap of "
            f"{purged.max_kept}, oldest first"
        )
    if layout is not None:
        lines.append(
            f"and the database's partitions of {interval} that end before now - {kept_for} "
            f"{'would be' if dry_run else 'are'} dropped whole, with the rows of every "
            "namespace (simstore db partition)"
        )
    if purged.keep is not None and purged.keep < timedelta(seconds=store.partition_seconds):
        lines.append(
            f"note: the window {window} is shorter than a partition ({partition}): rows stay "
            "until their whole partition is older than the window"
        )
    emit(settings, data, "\n".join([*lines, pairs(tables)]))


@main.command()
@click.pass_obj
def stats(settings: Settings) -> None:
    """Counts and time span of the namespace."""
    with open_store(settings) as store:
        result = store.stats()
    data = {"db": redact(settings.url), **dataclasses.asdict(result)}
    data["oldest"], data["newest"] = iso(result.oldest), iso(result.newest)
    if result.max_kept is not None:
        data["fill"] = Fill(result.namespace, result.kept, result.max_kept).shown()
    emit(settings, data)


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("max_kept", metavar="[MAX_KEPT|none]", required=False)
@click.pass_obj
def cap(settings: Settings, max_kept: str | None) -> None:
    """Cap the namespace at MAX_KEPT kept texts ('none' removes the cap); without it, show it.

    'simstore purge' evicts the kept texts past the cap, oldest first (whole time partitions,
    then the oldest rows of the one that crosses it); adds do not check it.
    """
    value: object = max_kept
    if max_kept is not None:
        text = max_kept.strip().lower()
        value = None if text in ("none", "off") else _as_int(text)
        check_max_kept(value)  # bad input first, whatever the namespace
    with open_store(settings) as store:
        if max_kept is not None:
            store.set_max_kept(value)  # type: ignore[arg-type]  # checked there
        result = store.stats()
    data: dict[str, Any] = {"namespace": settings.namespace, "max_kept": None, "kept": None}
    if result.max_kept is None:
        emit(settings, data, f"{settings.namespace}: no cap")
        return
    fill = Fill(settings.namespace, result.kept, result.max_kept)
    data |= {"max_kept": fill.max_kept, "kept": fill.kept, "fill": fill.shown()}
    emit(settings, data, f"{settings.namespace}: {fill.shown()}")


def _as_int(text: str) -> object:
    """A command line's number as an int (else the text, which ``set_max_kept`` refuses)."""
    try:
        return int(text)
    except ValueError:
        return text


@main.command()
@click.argument("key")
@click.pass_obj
def remove(settings: Settings, key: str) -> None:
    """Forget KEY: its kept row (so nothing matches it any more) and its decision.

    Decisions of other keys that named KEY as their match are left as they were recorded: 'show'
    says they duplicate a key that has since been removed. Exit 1 when there is no such key.
    """
    with open_store(settings) as store:
        removed = store.remove(key)
    if not removed:
        raise Failure(
            f"no key {key!r} in namespace {settings.namespace!r} of {redact(settings.url)}"
        )
    emit(settings, {"key": key, "removed": True}, f"removed {key} from {settings.namespace}")


@main.command()
@click.option(
    "--what",
    type=click.Choice(("decisions", "clusters", "kept")),
    default="decisions",
    show_default=True,
    help="decisions: one per key; kept: the kept rows; clusters: a kept key with its duplicates.",
)
@click.option(
    "--format", "format_", type=click.Choice(("jsonl", "csv")), default="jsonl", show_default=True
)
@click.option(
    "--out",
    default="-",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Where to write [default: stdout].",
)
@click.pass_obj
def export(settings: Settings, what: str, format_: str, out: str) -> None:
    """Write the namespace's decisions, kept rows or clusters as JSON lines or CSV.

    Streams in batches (bounded memory), nothing is written to the store. CSV of clusters has
    one row per member (cluster, size, key); JSON lines one line per cluster with its keys.
    --out may not be the database file (exit 4); it is written to a temporary file renamed into
    place at the end, so a failed export leaves an existing file as it was.
    """
    from simstore.io import export as exporting
    from simstore.io.outputs import check_paths

    check_paths({"--out": out}, database=settings.url)
    with open_store(settings) as store, output_file(out) as stream:
        rows = {
            "decisions": exporting.decisions,
            "kept": exporting.kept,
            "clusters": exporting.clusters,
        }[what](store.scope)
        count = _write(stream, rows, what, format_)
    if out != "-" and not settings.quiet:
        click.echo(f"exported {count:,} {what} to {out}", err=True)


def _write(stream: Any, rows: Any, what: str, format_: str) -> int:
    from simstore.io.export import FIELDS

    count = 0
    if format_ == "jsonl":
        for row in rows:
            stream.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
        return count
    fields = ("cluster", "size", "key") if what == "clusters" else FIELDS[what]
    writer = csv.DictWriter(stream, fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        count += 1
        if what == "clusters":
            writer.writerows({"cluster": row["cluster"], "size": row["size"], "key": key}
                             for key in row["keys"])  # fmt: skip
        else:
            writer.writerow(row)
    return count
