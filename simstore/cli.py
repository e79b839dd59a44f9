"""The ``simstore`` command: a thin shell over the public API.

Each command opens the store (or the migration helpers), calls one public method and prints the
result, as text for people or as one JSON document with ``--json``. What lives here is only reading
input files, showing results and turning errors into exit codes. ``SIMSTORE_URL`` is read here and
nowhere else (through ``simstore.db.default_url``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import IO, TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote_plus

import click

from simstore.db import default_url, redact
from simstore.encoding import to_hex
from simstore.errors import (
    DatabaseUnavailable,
    InvalidInput,
    KeyConflict,
    PresetMismatch,
    SchemaOutOfDate,
    SimstoreError,
)
from simstore.records import (
    FORMATS,
    STDIN_NAME,
    BadRecord,
    InputOptions,
    Record,
    format_of,
    read_records,
)

if TYPE_CHECKING:
    from rich.progress import Progress

    from simstore.store import Decision, SimStore

F = TypeVar("F", bound=Callable[..., Any])


# --- settings, errors and output -------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """The global options, resolved once by the ``main`` group."""

    url: str
    namespace: str
    preset: str | None
    json: bool
    quiet: bool
    debug: bool


class Failure(click.ClickException):
    """An error shown as one line ``simstore: error: ...``; exit 1 (bad records, check failed)."""

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"simstore: error: {self.format_message()}", err=True)


class DatabaseFailure(Failure):
    """The database is unavailable or its schema is out of date."""

    exit_code = 3


class InputFailure(Failure):
    """Invalid input: a text, key, preset, distance or duration simstore refuses."""

    exit_code = 4


def failure_for(error: SimstoreError) -> type[Failure]:
    """How a simstore error is shown: exit 3 for the database, 4 for invalid input, else 1."""
    cause = error.__cause__ if isinstance(error.__cause__, SimstoreError) else error
    if isinstance(cause, (DatabaseUnavailable, SchemaOutOfDate)):
        return DatabaseFailure
    if isinstance(cause, (InvalidInput, PresetMismatch, KeyConflict)):
        return InputFailure
    return Failure


def _without_password(message: str, url: str) -> str:
    """Belt and braces: the library redacts URLs, and a password never reaches the terminal."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        password = make_url(url).password
    except ArgumentError:
        return message.replace(url, "<unparseable database URL>")
    if password and len(str(password)) >= 4:
        for form in {str(password), quote_plus(str(password))}:
            message = message.replace(form, "***")
    return message


class _Main(click.Group):
    """Turns simstore's errors into one line on stderr and an exit code (traceback: --debug)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SimstoreError as error:
            settings = ctx.find_object(Settings)
            url = settings.url if settings else default_url()
            if settings and settings.debug:
                traceback.print_exc()
            raise failure_for(error)(_without_password(str(error), url)) from error
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except OSError as error:
            raise InputFailure(str(error)) from error
        except Exception as error:
            settings = ctx.find_object(Settings)
            if settings and settings.debug:
                raise
            message = f"unexpected {type(error).__name__}: {error} (--debug shows the traceback)"
            raise Failure(message) from error


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.replace(tzinfo=timezone.utc).isoformat()


def _shown(moment: datetime | None) -> str:
    return "-" if moment is None else f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def _width(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def _table(headers: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> str:
    """Left-aligned columns (wide CJK characters counted as two cells)."""
    body = [headers, *rows]
    widths = [max(_width(row[column]) for row in body) for column in range(len(headers))]
    return "\n".join(
        "  ".join(
            cell + " " * (widths[column] - _width(cell)) for column, cell in enumerate(row)
        ).rstrip()
        for row in body
    )


def _shown_value(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _pairs(rows: Mapping[str, object]) -> str:
    """``label  value`` lines, labels padded to one width."""
    width = max(len(label) for label in rows)
    return "\n".join(f"{label:<{width}}  {_shown_value(value)}" for label, value in rows.items())


def _emit(
    settings: Settings,
    data: Mapping[str, Any] | list[Any],
    text: str | None = "",
    *,
    err: bool = False,
) -> None:
    """One JSON document with --json, else ``text`` (by default the data as label/value lines)."""
    if text == "" and isinstance(data, Mapping):
        text = _pairs(data)
    if settings.json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2), err=err)
    elif text is not None:
        click.echo(text, err=err)


def _read_argument(value: str) -> str:
    """A TEXT argument, or all of stdin for ``-``."""
    if value != "-":
        return value
    try:
        return sys.stdin.buffer.read().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InvalidInput(f"stdin is not UTF-8: {error}") from error


@contextlib.contextmanager
def _store(settings: Settings, **options: Any) -> Iterator[SimStore]:
    from simstore.store import SimStore

    given = {name: value for name, value in options.items() if value is not None}
    with SimStore(
        settings.url, namespace=settings.namespace, preset=settings.preset, **given
    ) as store:
        yield store


def _match_json(
    key: str, fingerprint: int, distance: int, added_at: datetime | None
) -> dict[str, Any]:
    return {
        "key": key,
        "fingerprint": to_hex(fingerprint),
        "distance": distance,
        "added_at": _iso(added_at),
    }


def _decision_json(decision: Decision) -> dict[str, Any]:
    match = decision.duplicate_of
    return {
        "key": decision.key,
        "fingerprint": decision.hex,
        "inserted": decision.inserted,
        "duplicate_of": None
        if match is None
        else _match_json(match.key, match.fingerprint, match.distance, match.added_at)
        | {"measure": match.measure, "score": match.score},
    }


def _verdict(decision: Decision) -> str:
    match = decision.duplicate_of
    if decision.inserted:
        return "kept"
    if match is None:
        return "duplicate of an entry that has since been purged"
    return f"duplicate of {match.key} at distance {match.distance}"


# --- the main group ----------------------------------------------------------------------------


@click.group(
    cls=_Main,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="""\b
Exit codes:
  0  ok
  1  bad records (skipped, or the run stopped at one with --strict),
     db check failed, key not found, or an unexpected error
  2  usage error (unknown option, missing argument, unreadable file)
  3  database unavailable, or its schema is out of date (run: simstore db upgrade)
  4  invalid input (bad text, key, preset, distance or duration)

Errors are one line on stderr: "simstore: error: ..."; --debug adds the traceback.""",
)
@click.version_option(package_name="simstore", prog_name="simstore")
@click.option(
    "--db",
    "url",
    metavar="URL",
    help="SQLAlchemy database URL [default: $SIMSTORE_URL, else sqlite:///simstore.db here]. "
    "SQLite files are created and upgraded on open; servers need 'simstore db upgrade' first.",
)
@click.option("--namespace", default="default", show_default=True, help="Namespace in the store.")
@click.option(
    "--preset",
    help="Fingerprint preset (see 'simstore presets'); default: the namespace's own, or "
    "'default' for a new namespace.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no ingest/dedup summary.")
@click.option("--debug", is_flag=True, help="Log to stderr and show tracebacks of errors.")
@click.pass_context
def main(
    ctx: click.Context,
    url: str | None,
    namespace: str,
    preset: str | None,
    as_json: bool,
    quiet: bool,
    debug: bool,
) -> None:
    """simstore: durable near-duplicate detection of text with 64-bit SimHash in SQL.

    Add texts with 'ingest', filter a file with 'dedup', ask with 'query', and see why a record
    was judged a duplicate with 'explain'.
    """
    if debug:
        logging.basicConfig(
            level=logging.DEBUG, stream=sys.stderr, format="%(name)s %(levelname)s: %(message)s"
        )
    ctx.obj = Settings(url or default_url(), namespace, preset, as_json, quiet, debug)


# --- reading records ---------------------------------------------------------------------------


@dataclass
class Tally:
    """What a run did. Every record read is kept, a duplicate or skipped."""

    kept: int = 0
    duplicates: int = 0
    skipped: int = 0
    seconds: float = 0.0
    stopped_at: BadRecord | None = None
    stop_error: SimstoreError | None = None

    @property
    def read(self) -> int:
        return self.kept + self.duplicates + self.skipped

    def counts(self) -> dict[str, int]:
        return {
            "records read": self.read,
            "kept": self.kept,
            "duplicates": self.duplicates,
            "skipped": self.skipped,
        }

    @property
    def rate(self) -> float:
        return self.read / self.seconds if self.seconds > 0 else 0.0


@dataclass
class _Run:
    """Feeds records to SimStore.add_many and pairs each Decision with its record."""

    store: SimStore
    options: InputOptions
    on_decision: Callable[[Record, Decision], None]
    progress: Progress | None
    tally: Tally = field(default_factory=Tally)
    pending: deque[Record] = field(default_factory=deque)

    def warn(self, message: str) -> None:
        if self.progress is not None:
            self.progress.console.print(message, markup=False, highlight=False, soft_wrap=True)
        else:
            click.echo(message, err=True)

    def _advance(self) -> None:
        if self.progress is not None:
            self.progress.update(self.progress.task_ids[0], completed=self.tally.read)

    def bad(self, record: BadRecord) -> bool:
        """Count a bad record; False when the run must stop (--strict)."""
        self.tally.skipped += 1
        self._advance()
        if self.options.strict:
            self.warn(f"{record}")
            self.tally.stopped_at = record
            return False
        self.warn(f"{record} (skipped)")
        return True

    def decided(self, record: Record, decision: Decision) -> None:
        if decision.inserted:
            self.tally.kept += 1
        else:
            self.tally.duplicates += 1
        self.on_decision(record, decision)
        self._advance()

    def _feed(self, items: Iterator[Record | BadRecord]) -> Iterator[tuple[str, str]]:
        try:
            for item in items:
                if isinstance(item, BadRecord):
                    if not self.bad(item):
                        return
                    continue
                self.pending.append(item)
                yield item.key, item.text
        except InvalidInput as error:  # a file that cannot be read at all: stop after the rest
            self.tally.stop_error = error

    def _one_by_one(self) -> None:
        """After a failed batch: add its records singly so that only the bad ones are lost."""
        while self.pending and self.tally.stopped_at is None:
            record = self.pending.popleft()
            try:
                decision = self.store.add(record.text, key=record.key)
            except (InvalidInput, KeyConflict) as error:
                self.bad(BadRecord(record.source, record.line, str(error)))
                continue
            self.decided(record, decision)
        self.pending.clear()

    def run(self, items: Iterator[Record | BadRecord]) -> Tally:
        from simstore.store import BatchFailed

        started = time.perf_counter()
        while True:
            try:
                for decision in self.store.add_many(
                    self._feed(items), batch_size=self.options.batch_size
                ):
                    self.decided(self.pending.popleft(), decision)
                break
            except BatchFailed as failure:
                if isinstance(failure.__cause__, (DatabaseUnavailable, SchemaOutOfDate)):
                    raise failure.__cause__ from failure
                self._one_by_one()
                if self.tally.stopped_at or self.tally.stop_error:
                    break
        self.tally.seconds = time.perf_counter() - started
        return self.tally


def _progress(settings: Settings) -> contextlib.AbstractContextManager[Progress | None]:
    if settings.quiet or not sys.stderr.isatty():
        return contextlib.nullcontext()
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description} {task.completed:,} records"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    progress.add_task("adding", total=None)
    return progress


def _add_records(
    settings: Settings,
    paths: tuple[str, ...],
    options: InputOptions,
    on_decision: Callable[[Record, Decision], None],
    describe: dict[str, Any],
    *,
    summary_to_stderr: bool = False,
) -> None:
    """The shared body of ingest and dedup: add, print the summary, exit 1 on bad records."""
    for path in paths:
        format_of(path, options.format)  # a usage error before anything is opened
    with (
        _store(settings, max_distance=options.max_distance) as store,
        _progress(settings) as progress,
    ):
        tally = _Run(store, options, on_decision, progress).run(read_records(paths, options))
        label, distance = store.preset.label, store.max_distance
    data = {
        **describe,
        "db": redact(settings.url),
        "namespace": settings.namespace,
        "preset": label,
        "max_distance": distance,
        "read": tally.read,
        "kept": tally.kept,
        "duplicates": tally.duplicates,
        "skipped": tally.skipped,
        "seconds": round(tally.seconds, 3),
        "rate": round(tally.rate, 1),
        "stopped_at": None if tally.stopped_at is None else str(tally.stopped_at),
    }
    sources = ", ".join(STDIN_NAME if path == "-" else path for path in paths)
    counts = {
        "namespace": f"{settings.namespace} (preset {label}, max distance {distance})",
        **{name: f"{count:>9,}" for name, count in tally.counts().items()},
        "rate": f"{tally.rate:>9,.0f} records/s ({tally.seconds:.2f} s)",
    }
    text = None if settings.quiet else f"{sources} -> {redact(settings.url)}\n{_pairs(counts)}"
    _emit(settings, data, text, err=summary_to_stderr)
    if tally.stop_error is not None:
        raise tally.stop_error
    if tally.stopped_at is not None:
        good = tally.kept + tally.duplicates
        raise Failure(
            f"stopped at {tally.stopped_at.source}:{tally.stopped_at.line} (--strict); "
            f"{good} good record{'' if good == 1 else 's'} before it committed"
        )
    if tally.skipped:
        raise click.exceptions.Exit(1)  # the bad records were reported above


def input_options(command: F) -> F:
    """The options ingest and dedup share, declared once."""
    decorators = [
        click.option(
            "--format",
            "format_",
            type=click.Choice(FORMATS),
            help="Input format [default: from the extension: .jsonl/.ndjson, .csv, .txt]. "
            "'lines' makes one record per non-blank line, keyed <file>:<line>.",
        ),
        click.option(
            "--text-field", default="text", show_default=True, help="Field with the text."
        ),
        click.option(
            "--key-field",
            default="id",
            show_default=True,
            help="Field with the record's key; records without it get <file>:<line>.",
        ),
        click.option(
            "--max-distance",
            type=int,
            help="Largest Hamming distance that counts as a duplicate [default: 3].",
        ),
        click.option(
            "--strict",
            is_flag=True,
            help="Stop at the first bad record (exit 1) instead of skipping it; the good "
            "records before it are committed.",
        ),
        click.option(
            "--batch-size",
            type=click.IntRange(min=1),
            default=1000,
            show_default=True,
            help="Records per transaction.",
        ),
    ]
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


_PATHS = click.Path(exists=True, dir_okay=False, allow_dash=True)


@main.command()
@click.argument("files", metavar="FILE...", nargs=-1, required=True, type=_PATHS)
@input_options
@click.pass_obj
def ingest(settings: Settings, /, files: tuple[str, ...], format_: str | None, **opts: Any) -> None:
    """Add the records of files (or stdin) and print a summary.

    FILE '-' reads stdin (give --format). Each record is kept or judged a near-duplicate of an
    earlier one. A bad record (invalid JSON, missing or empty text) is reported on stderr with its
    file and line and skipped (exit 1 at the end), or with --strict stops the run. Re-adding a key
    with the same text replays its first decision, so running the same ingest twice changes nothing.
    """
    options = InputOptions(format_, **opts)
    _add_records(settings, files, options, lambda _record, _decision: None, {"files": list(files)})


@main.command()
@click.argument("source", metavar="IN", type=_PATHS)
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Where the first occurrences go (JSON lines; '-' is stdout).",
)
@click.option(
    "--dups",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Where the duplicates go, with the fields duplicate_of and distance added.",
)
@input_options
@click.pass_obj
def dedup(
    settings: Settings,
    /,
    source: str,
    out: str,
    dups: str | None,
    format_: str | None,
    **opts: Any,
) -> None:
    """Copy IN without its near-duplicates (a streaming filter).

    First occurrences go to --out, duplicates to --dups. A streaming filter (records are written in
    input order, a batch at a time). The store remembers what it has seen, so a second run, or a run
    on another file, also drops what earlier runs kept. Records are written as JSON lines, whatever
    the input format.
    """
    options = InputOptions(format_, **opts)
    with contextlib.ExitStack() as stack:
        unique = stack.enter_context(click.open_file(out, "w", encoding="utf-8"))
        duplicates = (
            stack.enter_context(click.open_file(dups, "w", encoding="utf-8")) if dups else None
        )

        def write(record: Record, decision: Decision) -> None:
            data = dict(record.data)
            if decision.inserted:
                target: IO[str] | None = unique
            else:
                target = duplicates
                match = decision.duplicate_of
                data["duplicate_of"] = None if match is None else match.key
                data["distance"] = None if match is None else match.distance
                data["measure"] = None if match is None else match.measure
                data["score"] = None if match is None else match.score
            if target is not None:
                target.write(json.dumps(data, ensure_ascii=False) + "\n")

        describe = {"input": source, "out": out, "dups": dups}
        to_stderr = "-" in (out, dups)
        _add_records(settings, (source,), options, write, describe, summary_to_stderr=to_stderr)


# --- looking things up -------------------------------------------------------------------------


@main.command()
@click.argument("text")
@click.option("--max-distance", type=int, help="Search radius [default: 3].")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many matches.")
@click.pass_obj
def query(settings: Settings, text: str, max_distance: int | None, limit: int | None) -> None:
    """Kept fingerprints near TEXT, nearest first.

    TEXT '-' reads stdin. Shows each match's key, distance, fingerprint and when it was added.
    Nothing is added.
    """
    from simstore.fingerprint import analyze

    text = _read_argument(text)
    with _store(settings, max_distance=max_distance) as store:
        matches = store.query(text, limit=limit)
        own = analyze(text, preset=store.preset).fingerprint
        radius = store.max_distance
    data = {
        "fingerprint": to_hex(own),
        "max_distance": radius,
        "matches": [_match_json(m.key, m.fingerprint, m.distance, m.added_at) for m in matches],
    }
    rows = [(m.key, str(m.distance), m.hex, _shown(m.added_at)) for m in matches]
    if rows:
        text_out = _table(("key", "distance", "fingerprint", "added_at"), rows)
    else:
        text_out = f"no match within distance {radius} of {to_hex(own)}"
    _emit(settings, data, text_out)


def _decision_of(settings: Settings, key: str) -> Decision:
    return _decision_and_texts(settings, key)[0]


def _decision_and_texts(settings: Settings, key: str) -> tuple[Decision, dict[str, str | None]]:
    """The decision of KEY and the normalised texts the store kept for it and its match."""
    with _store(settings) as store:
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
    decision = _decision_of(settings, key)
    rows = {"key": decision.key, "fingerprint": decision.hex, "decision": _verdict(decision)}
    if decision.duplicate_of is not None:
        rows["matched added"] = _shown(decision.duplicate_of.added_at)
    _emit(settings, _decision_json(decision), _pairs(rows))


TEXTS_NOT_STORED = (
    "not stored: simstore keeps the normalised text of short texts only (and never of a text "
    "judged a duplicate); look the key up in your source data"
)


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
    data = _decision_json(decision) | {"texts": texts, "texts_note": TEXTS_NOT_STORED}
    rows = {"key": decision.key, "decision": _verdict(decision)}
    if decision.inserted:
        rows["why"] = "no kept fingerprint was within the max distance when it was added"
    rows["fingerprint"] = f"{decision.hex}  ({decision.key})"
    if match is not None:
        xor = decision.fingerprint ^ match.fingerprint
        bits = [bit for bit in range(64) if xor >> bit & 1]
        bands = ", ".join(sorted({f"b{3 - bit // 16}" for bit in bits}))
        data |= {"xor": to_hex(xor), "differing_bits": bits}
        rows["matched"] = f"{match.hex}  ({match.key}, added {_shown(match.added_at)})"
        rows["xor"] = to_hex(xor)
        rows["differing bits"] = f"{', '.join(map(str, bits))} (bands {bands})" if bits else "none"
        if match.measure is not None:
            rows["confirmed by"] = f"{match.measure} similarity {match.score:.3f}"
    for text_key, text in texts.items():
        rows[f"text of {text_key}"] = TEXTS_NOT_STORED if text is None else text
    _emit(settings, data, _pairs(rows))


# --- maintenance -------------------------------------------------------------------------------


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
    with _store(settings) as store:
        deleted = store.purge(keep=keep)
    data = {"namespace": settings.namespace, "keep": keep, "deleted": deleted}
    _emit(settings, data, f"purged {deleted:,} rows older than {keep} from {settings.namespace}")


@main.command()
@click.pass_obj
def stats(settings: Settings) -> None:
    """Counts and time span of the namespace."""
    with _store(settings) as store:
        result = store.stats()
    data = {"db": redact(settings.url), **dataclasses.asdict(result)}
    data["oldest"], data["newest"] = _iso(result.oldest), _iso(result.newest)
    _emit(settings, data)


@main.command()
@click.argument("text")
@click.pass_obj
def fingerprint(settings: Settings, text: str) -> None:
    """The fingerprint of TEXT (no database needed).

    TEXT '-' reads stdin. Prints the hex fingerprint and the number of features. Uses --preset, or
    'default' (a namespace may use another preset: see 'simstore stats').
    """
    from simstore.fingerprint import analyze
    from simstore.presets import get_preset

    preset = get_preset(settings.preset or "default")
    result = analyze(_read_argument(text), preset=preset)
    hexed = to_hex(result.fingerprint)
    data = {"fingerprint": hexed, "value": result.fingerprint, "features": result.features}
    data["preset"] = preset.label
    line = f"{to_hex(result.fingerprint)}  {result.features} features  ({preset.label})"
    _emit(settings, data, line)


@main.command()
@click.pass_obj
def presets(settings: Settings) -> None:
    """The fingerprint presets.

    Name, version and what each one does; the default is marked.
    """
    from simstore.presets import get_preset
    from simstore.presets import presets as preset_names

    default = get_preset("default").name
    listed = [get_preset(name) for name in preset_names()]
    data = [
        {"name": p.name, "version": p.version, "default": p.name == default,
         "params": dict(p.params), "summary": p.summary}
        for p in listed
    ]  # fmt: skip
    rows = [
        (p.name + " (default)" * (p.name == default), str(p.version), p.summary) for p in listed
    ]
    _emit(settings, data, _table(("name", "version", "summary"), rows))


# --- schema ------------------------------------------------------------------------------------


@main.group()
def db() -> None:
    """Create, inspect and check simstore's schema.

    simstore's migrations keep their own alembic version table (simstore_alembic_version), so a
    host application's alembic history is never touched.
    """


def _revision_json(settings: Settings, revision: str | None) -> dict[str, Any]:
    from simstore import migrate

    head = migrate.head()
    return {
        "db": redact(settings.url),
        "revision": revision,
        "head": head,
        "up_to_date": revision == head,
    }


def _revision_text(data: dict[str, Any]) -> str:
    revision = data["revision"] or "none (no simstore schema yet)"
    state = "head" if data["up_to_date"] else f"head is {data['head']}"
    return f"{data['db']}: {revision} ({state})"


@db.command()
@click.pass_obj
def upgrade(settings: Settings) -> None:
    """Bring the schema to the newest revision.

    Needed once (and after upgrading simstore) for server databases; SQLite files are upgraded
    on open.
    """
    from simstore import migrate

    data = _revision_json(settings, migrate.upgrade(settings.url))
    _emit(settings, data, _revision_text(data))


@db.command()
@click.pass_obj
def current(settings: Settings) -> None:
    """The revision the database is at.

    'none' before the first 'simstore db upgrade'.
    """
    from simstore import migrate

    data = _revision_json(settings, migrate.current(settings.url))
    _emit(settings, data, _revision_text(data))


@db.command()
@click.pass_obj
def check(settings: Settings) -> None:
    """Exit 0 if the schema is up to date, else 1.

    On failure the error line names the command that fixes it.
    """
    from simstore import migrate

    try:
        data = _revision_json(settings, migrate.check(settings.url)) | {"error": None}
    except SchemaOutOfDate as error:
        data = _revision_json(settings, migrate.current(settings.url)) | {"error": str(error)}
        _emit(settings, data, None)
        raise Failure(str(error)) from error
    _emit(settings, data, _revision_text(data))


@db.command()
@click.option("--interval", default="1d", show_default=True, help="Time span of one partition.")
@click.option(
    "--keep",
    default="2d",
    show_default=True,
    help="The database's retention: purge drops partitions that end before now - keep.",
)
@click.pass_obj
def partition(settings: Settings, interval: str, keep: str) -> None:
    """Partition the tables by time (PostgreSQL), or make the partitions ahead.

    The first run turns the tables into range-partitioned ones (the existing rows become the
    first partition, without a copy); later runs with the same interval update --keep and make
    the partitions of the next intervals (a cron job may run it daily). 'simstore purge' then
    drops whole partitions instead of deleting rows.
    """
    from simstore import migrate, partitions
    from simstore.db import create_engine_for, translate_errors

    migrate.check(settings.url)
    engine = create_engine_for(settings.url)
    try:
        with translate_errors(engine.url), engine.begin() as conn:
            layout = partitions.enable(conn, interval=interval, keep=keep)
            made = partitions.partition_names(conn, "simstore_fingerprints")
    finally:
        engine.dispose()
    data = {
        "db": redact(settings.url),
        "interval_seconds": int(layout.interval.total_seconds()),
        "keep_seconds": int(layout.keep.total_seconds()),
        "first_boundary": layout.first_boundary.isoformat(),
        "partitions": made,
    }
    lines = [f"{data['db']}: partitioned by {layout.interval}, keep {layout.keep}"]
    lines += [f"  {name}" for name in made]
    _emit(settings, data, "\n".join(lines))


if __name__ == "__main__":
    main(prog_name="simstore")
