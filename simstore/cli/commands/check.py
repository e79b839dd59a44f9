"""``check``: a new source decided against a namespace, read-only (``SimStore.query_many``)."""

from __future__ import annotations

import contextlib
import csv
import json
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from simstore.cli._app import EMITTED, Failure, Settings, main, open_store
from simstore.cli.commands.ingest import reading_options
from simstore.cli.output import emit, output_file, pairs
from simstore.errors import InvalidInput
from simstore.io.ingest import Rejected
from simstore.io.outputs import check_paths
from simstore.io.records import InputOptions, Record, read_records
from simstore.policy.batch import plan_items
from simstore.results import Match

if TYPE_CHECKING:
    from simstore.store import SimStore

CHECK_FIELDS = ("decision", "duplicate_of", "distance", "measure", "score")
"""The fields of a line after the key: those of ``spark dedup --dups`` and a decision."""
OUT_FORMATS = ("jsonl", "csv")
T = TypeVar("T")


def _out_format(path: str, given: str | None) -> str:
    if given is not None:
        return given
    return "csv" if path.lower().endswith(".csv") else "jsonl"


def check_row(key_field: str, key: str, match: Match | None) -> dict[str, Any]:
    """One output line: the key, ``new`` or ``duplicate``, and what the duplicate matched."""
    return {
        key_field: key,
        "decision": "new" if match is None else "duplicate",
        "duplicate_of": None if match is None else match.key,
        "distance": None if match is None else match.distance,
        "measure": None if match is None else match.measure,
        "score": None if match is None else match.score,
    }


def _rows(
    records: list[Record], best: dict[str, Match | None], key_field: str
) -> list[dict[str, Any]]:
    """A line per record; a key again (a copy of a text keyed by its text) is what its first
    record was, or when that one is new an exact duplicate of it, as ``dedup`` writes it."""
    seen: set[str] = set()
    rows = []
    for record in records:
        row = check_row(key_field, record.key, best[record.key])
        if record.key in seen and best[record.key] is None:
            row |= {"decision": "duplicate", "duplicate_of": record.key, "distance": 0,
                    "measure": "exact", "score": 1.0}  # fmt: skip
        seen.add(record.key)
        rows.append(row)
    return rows


def first_of_each_key(records: list[Record]) -> list[Record]:
    """The first record of each key; a key again with another text is refused (exit 4)."""
    first: dict[str, Record] = {}
    for record in records:
        seen = first.setdefault(record.key, record)
        if seen.text != record.text:
            raise InvalidInput(
                f"key {record.key!r} appears twice with different texts ({seen.source} line "
                f"{seen.line} and {record.source} line {record.line})"
            )
    return list(first.values())


def _query(store: SimStore, records: list[Record], batch_size: int) -> list[list[Match]]:
    texts, keys = [record.text for record in records], [record.key for record in records]
    return store.query_many(texts, keys=keys, in_order=True, batch_size=batch_size)


def without_refused(
    store: SimStore, records: list[Record], run: Callable[[list[Record]], T]
) -> tuple[list[Record], T, list[Rejected]]:
    """``run(records)``; when the store refuses a text in it (nothing to compare), each record
    is planned alone, DB-free, to find the refused ones, and ``run`` is given the others."""
    try:
        return records, run(records), []
    except InvalidInput as error:
        failed = error
    good: list[Record] = []
    refused: list[Rejected] = []
    for record in records:
        try:
            plan_items([(record.key, record.text, None)], preset=store.preset,
                       policy=store.policy, max_distance=store.max_distance,
                       max_text_length=store.max_text_length)  # fmt: skip
        except InvalidInput as reason:
            refused.append(Rejected(record.key, str(reason), record.source, record.line))
        else:
            good.append(record)
    if not refused:
        raise failed
    return good, run(good), refused


def report_refused(refused: list[Rejected], strict: bool) -> None:
    """Each refused record on stderr, skipped; with ``strict`` the first one stops the run."""
    for bad in refused:
        if strict:
            raise Failure(f"{bad} (--strict: nothing written)")
        click.echo(f"{bad} (skipped)", err=True)


@contextlib.contextmanager
def _writer(path: str, kind: str, key_field: str) -> Iterator[Any]:
    """A function writing one row to ``path`` as JSON lines or CSV (stdout for ``-``)."""
    with output_file(path) as stream:
        if kind == "csv":
            writer = csv.DictWriter(stream, fieldnames=(key_field, *CHECK_FIELDS))
            writer.writeheader()
            yield writer.writerow
        else:
            yield lambda row: _json_line(stream, row)


def _json_line(stream: IO[str], row: dict[str, Any]) -> None:
    stream.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_all(paths: Iterable[str], options: InputOptions) -> tuple[list[Record], list[Rejected]]:
    records: list[Record] = []
    rejected: list[Rejected] = []
    for item in read_records(paths, options):
        if isinstance(item, Record):
            records.append(item)
            continue
        if options.strict:
            raise Failure(f"{item} (--strict: nothing written)")
        click.echo(f"{item} (skipped)", err=True)
        rejected.append(item)
    return records, rejected


@main.command()
@click.argument(
    "files",
    metavar="FILE...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
)
@click.option(
    "--out",
    default="-",
    show_default=True,
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Where the decisions go, one line per record ('-' is stdout).",
)
@click.option(
    "--out-format",
    type=click.Choice(OUT_FORMATS),
    help="JSON lines or CSV with a header [default: csv for a --out ending in .csv, else jsonl].",
)
@reading_options
@click.option(
    "--strict", is_flag=True, help="Stop at the first bad record (exit 1) instead of skipping it."
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Records looked up at a time.",
)
@click.pass_obj
def check(
    settings: Settings,
    /,
    files: tuple[str, ...],
    out: str,
    out_format: str | None,
    format_: str | None,
    text_field: str,
    key_field: str,
    key_from: str,
    strict: bool,
    batch_size: int,
) -> None:
    """Decide the records of files against the namespace, read-only: one line per record.

    Each record is 'new' or a 'duplicate', as 'ingest' would decide it now (in input order: a
    record is compared with the namespace's kept texts and with the earlier records it would
    keep), with the key it would duplicate (duplicate_of), the SimHash distance, and the
    measure and score that confirmed it. Nothing is written to the store. The fields are those
    of 'spark dedup --against URL --dups'. A key given twice with the same text is decided
    once (a text given again without a key field is an exact duplicate of its first record,
    as 'dedup' writes it); every record is held in memory until the end.

    A bad record (unreadable, without a text, or a text with nothing to compare) is reported
    on stderr and skipped (exit 1 at the end), or with --strict stops the run. A record whose
    key the namespace has decided already is decided by its text like the others (where
    'ingest' would replay its decision): a kept text is a duplicate of itself.

    --out may not be an input or the database file (exit 4); it is replaced only once every
    record is decided.
    """
    check_paths({"--out": out}, inputs={f"FILE {path}": path for path in files},
                database=settings.url)  # fmt: skip
    options = InputOptions(format_, text_field, key_field, strict, batch_size, None, key_from,
                           max_text_length=settings.max_text_length)  # fmt: skip
    with open_store(settings) as store:
        records, rejected = read_all(files, options)
        unique, found, refused = without_refused(
            store, first_of_each_key(records), lambda chosen: _query(store, chosen, batch_size)
        )
        report_refused(refused, strict)
        summary = {
            "namespace": settings.namespace,
            "policy": store.policy.describe(store.max_distance),
        }
    best = {
        r.key: matches[0] if matches else None for r, matches in zip(unique, found, strict=True)
    }
    if out == "-":  # stdout holds the lines: the summary goes to stderr
        click.get_current_context().find_root().meta[EMITTED] = True
    decided = [record for record in records if record.key in best]
    rows = _rows(decided, best, key_field)
    with _writer(out, _out_format(out, out_format), key_field) as write:
        for row in rows:
            write(row)
    duplicates = sum(row["decision"] == "duplicate" for row in rows)
    skipped = len(records) - len(decided) + len(rejected)
    counts = {
        "read": len(records) + len(rejected),
        "new": len(decided) - duplicates,
        "duplicates": duplicates,
        "skipped": skipped,
    }
    if not settings.quiet or settings.json:
        emit(settings, {**summary, **counts, "out": out}, pairs({**summary, **counts}),
             err=out == "-")  # fmt: skip
    if skipped:
        raise click.exceptions.Exit(1)
