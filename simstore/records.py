"""Reading ingest input: JSON lines, CSV and plain lines into records, bad ones kept apart.

A bad record (invalid JSON, a missing or non-text field) becomes a ``simstore.ingest.Rejected``
with its file and line number instead of an exception, so that the good records around it are
never lost: ``simstore.ingest.ingest`` passes it through in its place.
"""

from __future__ import annotations

import contextlib
import csv
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from simstore.errors import InvalidInput
from simstore.ingest import Rejected

FORMATS = ("jsonl", "csv", "lines")
_FORMAT_OF_SUFFIX = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".txt": "lines"}
STDIN_NAME = "<stdin>"


@dataclass
class Record:
    """One input record that has a key and a non-empty text."""

    source: str
    line: int
    key: str
    text: str
    data: dict[str, Any]


def _bad(source: str, line: int, reason: str) -> Rejected:
    return Rejected(None, reason, source, line)


@dataclass(frozen=True)
class InputOptions:
    format: str | None
    text_field: str
    key_field: str
    strict: bool
    batch_size: int
    max_distance: int | None


def format_of(path: str, given: str | None) -> str:
    """The --format, else a guess from the file name (usage error when there is none)."""
    guessed = given or (None if path == "-" else _FORMAT_OF_SUFFIX.get(Path(path).suffix.lower()))
    if guessed is None:
        shown = "stdin" if path == "-" else repr(path)
        raise click.UsageError(
            f"cannot tell the format of {shown} from its name: give --format jsonl, csv or lines"
        )
    return guessed


def _lines(path: str) -> Iterator[tuple[int, str | None]]:
    """(line number, line without its end) for each line; None for a line that is not UTF-8."""
    with contextlib.ExitStack() as stack:
        stream = sys.stdin.buffer if path == "-" else stack.enter_context(open(path, "rb"))
        for number, raw in enumerate(stream, start=1):
            try:
                line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                yield number, None
                continue
            yield number, line.rstrip("\r\n")


def _make(source: str, line: int, data: dict[str, Any], options: InputOptions) -> Record | Rejected:
    text = data.get(options.text_field)
    if text is None:
        return _bad(source, line, f"no {options.text_field!r} field")
    if not isinstance(text, str):
        return _bad(source, line, f"{options.text_field!r} is {type(text).__name__}, not a string")
    if not text.strip():
        return _bad(source, line, f"{options.text_field!r} is empty")
    key = data.get(options.key_field)
    if key is None:
        key = f"{source}:{line}"
    elif isinstance(key, int) and not isinstance(key, bool):
        key = str(key)
    elif not isinstance(key, str) or not key:
        return _bad(source, line, f"{options.key_field!r} must be a non-empty string or an integer")
    return Record(source, line, key, text, data)


def _read_jsonl(path: str, source: str, options: InputOptions) -> Iterator[Record | Rejected]:
    for number, line in _lines(path):
        if line is None:
            yield _bad(source, number, "not UTF-8")
            continue
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            yield _bad(source, number, f"invalid JSON: {error.msg} at column {error.colno}")
            continue
        if not isinstance(data, dict):
            yield _bad(source, number, f"a JSON {type(data).__name__}, not an object")
            continue
        yield _make(source, number, data, options)


def _read_lines(path: str, source: str, options: InputOptions) -> Iterator[Record | Rejected]:
    for number, line in _lines(path):
        if line is None:
            yield _bad(source, number, "not UTF-8")
        elif line.strip():
            data = {options.key_field: f"{source}:{number}", options.text_field: line}
            yield _make(source, number, data, options)


def _read_csv(path: str, source: str, options: InputOptions) -> Iterator[Record | Rejected]:
    undecodable: list[int] = []
    consumed = 0

    def decoded() -> Iterator[str]:
        nonlocal consumed
        for number, line in _lines(path):
            consumed = number
            if line is None:
                undecodable.append(number)
                line = ""
            yield line + "\n"

    reader = csv.reader(decoded())
    header: list[str] | None = None
    while True:
        start = consumed + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            yield _bad(source, start, f"invalid CSV: {error}")
            continue
        while undecodable:
            yield _bad(source, undecodable.pop(0), "not UTF-8")
        if not row:
            continue
        if header is None:
            header = row
            if options.text_field not in header:
                raise InvalidInput(
                    f"{source}:{start}: no {options.text_field!r} column in the CSV header "
                    f"(columns: {', '.join(header)}); give --text-field"
                )
            continue
        if len(row) != len(header):
            yield _bad(source, start, f"{len(row)} fields, the header has {len(header)}")
            continue
        yield _make(source, start, dict(zip(header, row, strict=True)), options)


_READERS = {"jsonl": _read_jsonl, "csv": _read_csv, "lines": _read_lines}


def read_records(paths: Iterable[str], options: InputOptions) -> Iterator[Record | Rejected]:
    for path in paths:
        source = STDIN_NAME if path == "-" else path
        yield from _READERS[format_of(path, options.format)](path, source, options)
