"""``check``: a new source decided against a namespace, read-only (``SimStore.query_many``)."""

from __future__ import annotations

import contextlib
import csv
import json
from collections.abc import Iterable, Iterator
from typing import IO, Any

import click

from simstore.cli._app import EMITTED, Failure, Settings, main, open_store
from simstore.cli.commands.ingest import reading_options
from simstore.cli.output import emit, output_file, pairs
from simstore.errors import InvalidInput
from simstore.io.ingest import Rejected
from simstore.io.outputs import check_paths
from simstore.io.records import InputOptions, Record, read_records
from simstore.results import Match

CHECK_FIELDS = ("decision", "duplicate_of", "distance", "measure", "score")
"""The fields of a line after the key: those of ``spark dedup --dups`` and a decision."""
OUT_FORMATS = ("jsonl", "csv")


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


def _unique(records: list[Record]) -> list[Record]:
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


def _read(paths: Iterable[str], options: InputOptions) -> tuple[list[Record], list[Rejected]]:
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
    once; every record is held in memory until the end.

    A bad record is reported on stderr and skipped (exit 1 at the end), or with --strict stops
    the run. --out may not be an input or the database file (exit 4); it is replaced only once
    every record is decided.
    """
    check_paths({"--out": out}, inputs={f"FILE {path}": path for path in files},
                database=settings.url)  # fmt: skip
    options = InputOptions(format_, text_field, key_field, strict, batch_size, None, key_from,
                           max_text_length=settings.max_text_length)  # fmt: skip
    with open_store(settings) as store:
        records, rejected = _read(files, options)
        unique = _unique(records)
        found = store.query_many(
            [record.text for record in unique],
            keys=[record.key for record in unique],
            in_order=True,
            batch_size=batch_size,
        )
        summary = {
            "namespace": settings.namespace,
            "policy": store.policy.describe(store.max_distance),
        }
    best = {
        r.key: matches[0] if matches else None for r, matches in zip(unique, found, strict=True)
    }
    if out == "-":  # stdout holds the lines: the summary goes to stderr
        click.get_current_context().find_root().meta[EMITTED] = True
    with _writer(out, _out_format(out, out_format), key_field) as write:
        for record in records:
            write(check_row(key_field, record.key, best[record.key]))
    duplicates = sum(best[record.key] is not None for record in records)
    counts = {
        "read": len(records) + len(rejected),
        "new": len(records) - duplicates,
        "duplicates": duplicates,
        "skipped": len(rejected),
    }
    if not settings.quiet or settings.json:
        emit(settings, {**summary, **counts, "out": out}, pairs({**summary, **counts}),
             err=out == "-")  # fmt: skip
    if rejected:
        raise click.exceptions.Exit(1)
