"""Reading ingest input: JSON lines, CSV, plain lines and Parquet into records, bad ones apart.

A file whose name ends in ``.gz`` is read through gzip, its format told by the name before it
(``posts.jsonl.gz``). Parquet needs pyarrow (the extra ``parquet``); its rows are numbered from 1
as lines are, and read a batch at a time.

A record without a key field is keyed by its text by default (``key_from="text"``): the 32 hex
digits of BLAKE2b-128 of the text exactly as read (UTF-8), so the same records fed again, from
another path or a second time on stdin, replay their decisions instead of clashing with or
duplicating themselves. The raw text is hashed, not simstore's normalised form, so that the key is
the same under every preset and version and anyone can recompute it
(``hashlib.blake2b(text.encode(), digest_size=16).hexdigest()``); two texts that differ only in
case or spacing are two records, and the second is decided as a near-duplicate of the first. A
record keyed by its text that comes again is an exact copy of the one stored under that key
(``Record.keyed_by_text`` lets the CLI count it so). ``key_from="line"`` keys such records
``<file>:<line>`` instead (the path as given, normalised: ``./a.jsonl`` and ``a.jsonl`` are one).

A bad record (invalid JSON, a missing or non-text field) becomes a ``simstore.io.ingest.Rejected``
with its file and line number instead of an exception, so that the good records around it are
never lost: ``simstore.io.ingest.ingest`` passes it through in its place.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import hashlib
import json
import os
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from simstore.errors import InvalidInput, missing_extra
from simstore.io.ingest import Rejected
from simstore.validate import MAX_TEXT_LENGTH

if TYPE_CHECKING:
    from simstore.io.handover import LoadRow

FORMATS = ("jsonl", "csv", "lines", "parquet")
_FORMAT_OF_SUFFIX = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".txt": "lines",
    ".parquet": "parquet",
}
PARQUET_BATCH_ROWS = 1000  # rows read from a Parquet file at a time (bounded memory)
STDIN_NAME = "<stdin>"
KEY_FROM = ("text", "line")
BINARY_PROBE = 8192  # bytes read to tell a binary file
MAX_DEPTH = 200  # JSON lines nested deeper are bad records: far inside what json reads and writes


def text_key(text: str) -> str:
    """The default key of a record without one: 32 hex digits of BLAKE2b-128 of its UTF-8 text."""
    data = text.encode("utf-8", "surrogatepass")  # a lone surrogate is refused later, by add
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass
class Record:
    """One input record that has a key and a non-empty text."""

    source: str
    line: int
    key: str
    text: str
    data: dict[str, Any]
    keyed_by_text: bool = False  # no key field: keyed by ``text_key`` of its text


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
    key_from: str = "text"  # for records without a key field: "text" (text_key) or "line"
    workers: int = 0  # processes that fingerprint and sign the next batches (SimStore.add_many)
    max_text_length: int | None = None  # the store's text limit (None: MAX_TEXT_LENGTH)


def gzipped(path: str) -> bool:
    """A file read through gzip: its name ends in ``.gz`` (``posts.jsonl.gz``, ``rows.csv.gz``)."""
    return path != "-" and path.lower().endswith(".gz")


def require_pyarrow() -> None:
    """``MissingExtra`` now, before a store is opened, when Parquet cannot be read."""
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        raise missing_extra("reading Parquet needs pyarrow", "parquet") from None


def format_of(path: str, given: str | None) -> str:
    """The --format, else a guess from the file name, ``.gz`` aside (usage error when there is
    none)."""
    name = Path(path[:-3] if gzipped(path) else path)
    # stdin has no name: JSON lines, the format the rest of simstore writes, unless told
    guessed = given or ("jsonl" if path == "-" else _FORMAT_OF_SUFFIX.get(name.suffix.lower()))
    if guessed is None:
        shown = "stdin" if path == "-" else repr(path)
        raise click.UsageError(
            f"cannot tell the format of {shown} from its name: give --format jsonl, csv or lines"
        )
    return guessed


@dataclass
class Meter:
    """How far the reading has come: bytes of the input files read so far (stdin not counted)."""

    read: int = 0

    @staticmethod
    def total(paths: Iterable[str]) -> int | None:
        """The bytes there are to read, or None when one of the inputs is stdin."""
        sizes = [None if path == "-" else os.path.getsize(path) for path in paths]
        return None if None in sizes else sum(size or 0 for size in sizes)


def _lines(path: str, meter: Meter | None = None) -> Iterator[tuple[int, str | None]]:
    """(line number, line without its end) for each line; None for a line that is not UTF-8."""
    with contextlib.ExitStack() as stack:
        file: IO[bytes] = sys.stdin.buffer if path == "-" else stack.enter_context(open(path, "rb"))
        stream: IO[bytes] | gzip.GzipFile = file
        if gzipped(path):
            stream = stack.enter_context(gzip.GzipFile(fileobj=file, mode="rb"))
        start = 0 if meter is None else meter.read
        number = 0
        while True:
            try:
                raw = stream.readline()
            except (OSError, EOFError, zlib.error) as error:  # gzip.BadGzipFile is an OSError
                raise InvalidInput(f"{path}: not a readable gzip file after line {number} "
                                   f"({error})") from error  # fmt: skip
            if not raw:
                return
            number += 1
            if meter is not None and path != "-":
                meter.read = start + file.tell()  # compressed bytes for a .gz, as its size is
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
        if options.key_from == "line":
            key = f"{source if source == STDIN_NAME else os.path.normpath(source)}:{line}"
        else:
            return Record(source, line, text_key(text), text, data, keyed_by_text=True)
    elif isinstance(key, int) and not isinstance(key, bool):
        key = str(key)
    elif not isinstance(key, str) or not key:
        return _bad(source, line, f"{options.key_field!r} must be a non-empty string or an integer")
    return Record(source, line, key, text, data)


def _read_jsonl(
    path: str, source: str, options: InputOptions, meter: Meter | None
) -> Iterator[Record | Rejected]:
    for number, line in _lines(path, meter):
        if line is None:
            yield _bad(source, number, "not UTF-8")
            continue
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            # "Unterminated string starting at" names its column itself
            what = error.msg.removesuffix(" at")
            yield _bad(source, number, f"invalid JSON: {what} at column {error.colno}")
            continue
        except RecursionError:
            yield _bad(source, number, f"invalid JSON: nested deeper than {MAX_DEPTH} levels")
            continue
        except ValueError:  # an integer longer than Python converts (int_max_str_digits)
            limit = sys.get_int_max_str_digits()
            yield _bad(source, number, f"invalid JSON: a number of more than {limit:,} digits")
            continue
        if not isinstance(data, dict):
            yield _bad(source, number, f"a JSON {type(data).__name__}, not an object")
            continue
        problem = _unwritable(line, data)
        if problem is not None:
            yield _bad(source, number, problem)
            continue
        yield _make(source, number, data, options)


def _unwritable(line: str, data: dict[str, Any]) -> str | None:
    """Why a parsed JSON line could not be written out again as UTF-8 JSON (dedup's --out), or
    None. A lone surrogate comes only from an escape (``"\\ud800"``: the line itself is valid
    UTF-8), so only lines with an escape are checked; only lines with many brackets are
    measured for depth."""
    if "\\u" in line:
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as error:
            point = ord(error.object[error.start])
            return f"a lone surrogate \\u{point:04x} (a JSON escape): not valid Unicode text"
        except RecursionError:
            return f"invalid JSON: nested deeper than {MAX_DEPTH} levels"
    if line.count("[") + line.count("{") > MAX_DEPTH and _deeper_than(data, MAX_DEPTH):
        return f"invalid JSON: nested deeper than {MAX_DEPTH} levels"
    return None


def _deeper_than(data: object, limit: int) -> bool:
    """Whether lists and objects nest in ``data`` more than ``limit`` levels (no recursion)."""
    pending: list[tuple[object, int]] = [(data, 1)]
    while pending:
        value, depth = pending.pop()
        if depth > limit:
            return True
        if isinstance(value, dict):
            pending.extend((child, depth + 1) for child in value.values())
        elif isinstance(value, list):
            pending.extend((child, depth + 1) for child in value)
    return False


def _read_lines(
    path: str, source: str, options: InputOptions, meter: Meter | None
) -> Iterator[Record | Rejected]:
    for number, line in _lines(path, meter):
        if line is None:
            yield _bad(source, number, "not UTF-8")
        elif line.strip():
            yield _make(source, number, {options.text_field: line}, options)


def _read_csv(
    path: str, source: str, options: InputOptions, meter: Meter | None
) -> Iterator[Record | Rejected]:
    undecodable: list[int] = []
    consumed = 0

    def decoded() -> Iterator[str]:
        nonlocal consumed
        for number, line in _lines(path, meter):
            consumed = number
            if line is None:
                undecodable.append(number)
                line = ""
            yield line + "\n"

    # a CSV field may be as long as a text may (the csv module's own limit is 131,072); one
    # character more, so that the store's text limit, not the CSV reader, refuses a long text
    limit = (options.max_text_length or MAX_TEXT_LENGTH) + 1
    if csv.field_size_limit() < limit:
        csv.field_size_limit(limit)
    reader = csv.reader(decoded())
    header: list[str] | None = None
    while True:
        start = consumed + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            reason = f"invalid CSV: {error}"
            if "field limit" in str(error):
                reason = (
                    f"a field of more than {limit - 1:,} characters, the text limit "
                    "(--max-text-length)"
                )
            yield _bad(source, start, reason)
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


def _read_parquet(
    path: str, source: str, options: InputOptions, meter: Meter | None
) -> Iterator[Record | Rejected]:
    """A Parquet file's rows (the extra ``parquet``: pyarrow), numbered from 1 as lines are."""
    if path == "-" or gzipped(path):
        raise InvalidInput(
            f"{source}: Parquet is read from a plain .parquet file, not stdin or gzip"
        )
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise missing_extra("reading Parquet needs pyarrow", "parquet") from None
    try:
        table = pq.ParquetFile(path)
        columns = table.schema_arrow.names
    except Exception as error:  # pyarrow's own errors (ArrowInvalid, OSError): not Parquet
        raise InvalidInput(f"{source}: not a Parquet file ({error})") from error
    if options.text_field not in columns:
        raise InvalidInput(
            f"{source}: no {options.text_field!r} column in the Parquet file "
            f"(columns: {', '.join(columns)}); give --text-field"
        )
    number = 0
    size = os.path.getsize(path)
    start = 0 if meter is None else meter.read
    for index, batch in enumerate(table.iter_batches(batch_size=PARQUET_BATCH_ROWS)):
        for row in batch.to_pylist():
            number += 1
            yield _make(source, number, row, options)
        if meter is not None:  # by row groups read, as far as the file tells
            meter.read = start + size * (index + 1) * PARQUET_BATCH_ROWS // max(
                table.metadata.num_rows, 1
            )
    if meter is not None:
        meter.read = start + size


_READERS = {"jsonl": _read_jsonl, "csv": _read_csv, "lines": _read_lines, "parquet": _read_parquet}


def read_records(
    paths: Iterable[str], options: InputOptions, meter: Meter | None = None
) -> Iterator[Record | Rejected]:
    """The records of ``paths`` in order (``-`` is stdin), a ``Rejected`` in a bad one's place;
    ``meter`` follows the bytes read."""
    if options.key_from not in KEY_FROM:
        raise InvalidInput(
            f"key_from must be one of {', '.join(KEY_FROM)}, got {options.key_from!r}"
        )
    paths = list(paths)
    for path in paths:  # before the first record: a binary file is refused with nothing kept
        if format_of(path, options.format) in ("lines", "csv"):
            _refuse_binary(path)
    for path in paths:
        source = STDIN_NAME if path == "-" else path
        yield from _READERS[format_of(path, options.format)](path, source, options, meter)


def _refuse_binary(path: str) -> None:
    """InvalidInput when the file starts with a NUL byte in its first ``BINARY_PROBE`` bytes (as
    git and grep tell binary files): lines of an image or an archive would be kept as texts."""
    if path == "-":
        return  # stdin is read once: its lines are checked one by one (NUL is refused by add)
    try:
        with gzip.open(path, "rb") if gzipped(path) else open(path, "rb") as file:
            head = file.read(BINARY_PROBE)
    except (OSError, EOFError, zlib.error):
        return  # told line by line, with its line number
    at = head.find(b"\x00")
    if at >= 0:
        raise InvalidInput(
            f"{path}: a binary file (a NUL byte at byte {at}), not UTF-8 text: nothing of it "
            "was read"
        )


def checked_handover(
    rows: Iterable[LoadRow], *, max_text_length: int, is_kept: Callable[[str], bool]
) -> Iterator[LoadRow]:
    """The rows of a hand-over (``simstore.io.handover.read_parquet``), each checked for what
    the store would refuse or what would leave a decision pointing nowhere: a fingerprint that
    is null, a text longer than ``max_text_length``, a duplicate of itself. After the last row,
    every ``duplicate_of`` must name a kept row of the hand-over or, asked through ``is_kept``,
    of the store; else InvalidInput. The kept keys are held in memory for that."""
    kept: set[str] = set()
    wanted: dict[str, str] = {}  # a duplicate's target -> the first key that names it
    for row in rows:
        key = row.key
        if row.fingerprint is None:
            raise InvalidInput(f"key {key!r}: its fingerprint is null")
        if isinstance(row.text, str) and len(row.text) > max_text_length:
            raise InvalidInput(
                f"key {key!r}: the text has {len(row.text):,} characters, more than the limit "
                f"of {max_text_length:,} (--max-text-length)"
            )
        if row.kept:
            kept.add(key)
        elif row.duplicate_of is not None:
            if row.duplicate_of == key:
                raise InvalidInput(f"key {key!r} is a duplicate of itself")
            wanted.setdefault(row.duplicate_of, key)
        yield row
    for target, key in wanted.items():
        if target not in kept and not is_kept(target):
            raise InvalidInput(
                f"key {key!r} is a duplicate of {target!r}, which is kept neither in the "
                "hand-over nor in the namespace"
            )
